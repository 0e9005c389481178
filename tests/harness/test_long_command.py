"""A long command (``mvn`` fetching the broker's jars, ``apt-get`` installing a database) says in the log what it
does, how far it has got while it runs, and how it ended."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from headwater.harness.long_command import apt_progress, maven_progress, run_logged

log = logging.getLogger("test.long_command")

CENTRAL = "https://repo.example.org/maven2/org/apache/kafka/kafka_2.13/4.3.1"  # any repository: only the line counts
MAVEN_OUTPUT = [
    "[INFO] Scanning for projects...\n",
    f"Downloading from central: {CENTRAL}/kafka_2.13-4.3.1.pom\n",
    f"Downloaded from central: {CENTRAL}/kafka_2.13-4.3.1.pom (4.1 kB at 20 kB/s)\n",
    f"Downloaded from central: {CENTRAL}/kafka_2.13-4.3.1.jar (6.5 MB at 3.1 MB/s)\n",
]

APT_OUTPUT = [
    "The following NEW packages will be installed:\n",
    "  libpq5 postgresql postgresql-15\n",
    "0 upgraded, 3 newly installed, 0 to remove and 12 not upgraded.\n",
    "Need to get 19.6 MB of archives.\n",
    "Get:1 http://deb.debian.org/debian bookworm/main amd64 libpq5 amd64 15.14-0+deb12u1 [193 kB]\n",
    "Get:2 http://deb.debian.org/debian bookworm/main amd64 postgresql-15 amd64 15.14-0+deb12u1 [16.8 MB]\n",
    "Setting up libpq5:amd64 (15.14-0+deb12u1) ...\n",
]


def test_maven_progress_counts_the_files_downloaded_and_their_size() -> None:
    assert maven_progress(MAVEN_OUTPUT) == "2 files downloaded (6.5 MB)"
    assert maven_progress([]) == "0 files downloaded (0.0 MB)"


def test_apt_progress_counts_packages_downloaded_and_set_up_out_of_the_total() -> None:
    assert apt_progress(APT_OUTPUT) == "2 of 3 packages downloaded, 1 of 3 set up"
    assert apt_progress(APT_OUTPUT[3:]) == "2 packages downloaded, 1 set up"


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_a_command_that_ends_logs_what_it_does_and_how_far_it_got(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, log.name)
    printing = "import sys; sys.stdout.write(" + repr("".join(MAVEN_OUTPUT)) + ")"
    done = run_logged(python(printing), "fetching jars", maven_progress, log, timeout_s=60)
    assert done.returncode == 0
    assert done.stdout == "".join(MAVEN_OUTPUT)
    first, last = caplog.messages[0], caplog.messages[-1]
    assert first.startswith("fetching jars (")
    assert last.startswith("fetching jars: done, 2 files downloaded (6.5 MB) in ")


def test_a_failed_command_is_an_error_in_the_log_and_its_output_is_kept(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, log.name)
    done = run_logged(
        python("print('no such package'); raise SystemExit(100)"), "installing", apt_progress, log, timeout_s=60
    )
    assert done.returncode == 100
    assert "no such package" in done.stdout
    [error] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert error.getMessage().startswith("installing: exited with 100 after ")


def test_a_running_command_reports_its_progress_until_it_is_killed_at_its_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, log.name)
    waiting = "import sys, time; print('Get:1 http://deb.debian.org/debian x [1 kB]', flush=True); time.sleep(60)"
    with pytest.raises(subprocess.TimeoutExpired):
        run_logged(python(waiting), "installing", apt_progress, log, timeout_s=2, every_s=0.05)
    progress = [m for m in caplog.messages if m.startswith("installing: ") and "killed" not in m]
    assert progress, caplog.messages
    assert progress[-1].startswith("installing: 1 packages downloaded, 0 set up after "), progress
    assert caplog.records[-1].levelno == logging.ERROR
    assert caplog.messages[-1].startswith("installing: no end after 2 s; killed (1 packages downloaded")
