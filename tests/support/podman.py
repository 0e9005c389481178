"""Container images built and run with podman on this machine, for the image's test (``tests/deploy/``).

There is no Docker engine and no image registry here: podman and runc from Debian's packages build the image of
``deploy/container/`` on a base made locally by ``deploy/container/debian-base.sh`` (mmdebstrap, then ``podman
import``). :func:`ensure_podman` installs the three packages with apt-get when they are missing (as root;
``HEADWATER_INSTALL_CONTAINERS=0`` forbids it) and gives podman a containers.conf of its own through
``CONTAINERS_CONF`` (runc rather than crun, cgroupfs, no default ulimits: crun and the default rlimits are refused
on these machines), so nothing system-wide changes.

The base is cached by its recipe: the tarball at ``<cache>/container-base/<key>.tar`` and the image
``localhost/headwater-base:<key>``, ``key`` a digest of the script that makes it. A second run reuses the image
(or imports the tarball again); a changed script makes a new one.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from headwater.harness.long_command import run_logged
from headwater.harness.maven import cache_root
from support.databases import DatabaseUnavailable, ensure_package

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "container"
BASE_SCRIPT = DEPLOY / "debian-base.sh"
INSTALL_ENV = "HEADWATER_INSTALL_CONTAINERS"
TOOLS = (("podman", "podman"), ("runc", "runc"), ("mmdebstrap", "mmdebstrap"))
"""Each program and the Debian package that brings it."""
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
"""Mounted read-only over the build's own bundle, so that pip in the build trusts what the host trusts (a proxy's
certificate authority, say); the image keeps none of it."""
CONTAINERS_CONF = """\
[containers]
default_ulimits = []

[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
"""

log = logging.getLogger(__name__)


class ContainersUnavailable(RuntimeError):
    """podman cannot build or run images here; the message says why and what to install."""


@dataclass
class Podman:
    """The podman command with this suite's containers.conf; ``timings`` records how long the slow steps took."""

    env: dict[str, str]
    timings: dict[str, float] = field(default_factory=dict)

    def run(
        self, *args: str, timeout_s: float = 120, check: bool = True, what: str = ""
    ) -> subprocess.CompletedProcess[str]:
        """``podman ARGS``, output captured; raises AssertionError with its output when it fails and ``check``."""
        done = subprocess.run(
            ["podman", *args], env=self.env, capture_output=True, text=True, timeout=timeout_s, check=False
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"{what or 'podman ' + ' '.join(args[:2])} failed ({done.returncode}):\n"
                f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
            )
        return done

    def image_exists(self, image: str) -> bool:
        return self.run("image", "exists", image, check=False).returncode == 0

    def build(self, tag: str, containerfile: Path, context: Path, build_args: Mapping[str, str]) -> float:
        """Build ``containerfile`` in the docker format (which keeps HEALTHCHECK); the seconds it took."""
        command = ["build", "--format", "docker", "-f", str(containerfile), "-t", tag]
        for name, value in build_args.items():
            command += ["--build-arg", f"{name}={value}"]
        if HOST_CA_BUNDLE.is_file():
            command += ["--volume", f"{HOST_CA_BUNDLE}:{HOST_CA_BUNDLE}:ro"]
        started = time.monotonic()
        done = self._logged([*command, str(context)], f"building {tag} from {containerfile.name}", 1800)
        if done.returncode != 0:
            raise AssertionError(f"podman build of {tag} failed ({done.returncode}):\n{done.stdout[-6000:]}")
        return self.timings.setdefault(f"build {tag}", time.monotonic() - started)

    def _logged(self, command: Sequence[str], what: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
        def progress(lines: Sequence[str]) -> str:
            steps = [line for line in lines if line.startswith("STEP ")]
            return steps[-1][:100] if steps else f"{len(lines)} lines"

        return run_logged(["podman", *command], what, progress, log, timeout_s=timeout_s, env=self.env)


def ensure_podman() -> Podman:
    """podman, runc and mmdebstrap, installed when missing, and podman answering with this suite's
    containers.conf; raises ContainersUnavailable saying why not."""
    if os.geteuid() != 0:
        raise ContainersUnavailable(
            "building the image needs root here (mmdebstrap and podman run as root): run the tests as root"
        )
    for program, package in TOOLS:
        try:
            ensure_package(program, package, install_env=INSTALL_ENV)
        except DatabaseUnavailable as error:
            raise ContainersUnavailable(f"{error}; the image's test needs podman, runc and mmdebstrap") from None
    conf = cache_root() / "podman" / "containers.conf"
    conf.parent.mkdir(parents=True, exist_ok=True)
    if not conf.exists() or conf.read_text() != CONTAINERS_CONF:
        conf.write_text(CONTAINERS_CONF)
    podman = Podman(env={**os.environ, "CONTAINERS_CONF": str(conf)})
    info = podman.run("info", check=False)
    if info.returncode != 0:
        raise ContainersUnavailable(f"podman info failed ({info.returncode}): {info.stderr.strip()[-2000:]}")
    return podman


def base_key() -> str:
    """The base's cache key: a digest of the script that makes it."""
    return hashlib.sha256(BASE_SCRIPT.read_bytes()).hexdigest()[:16]


def base_image(podman: Podman) -> str:
    """The Debian base image of this recipe, made (and its tarball cached) unless podman has it already."""
    key = base_key()
    image = f"localhost/headwater-base:{key}"
    started = time.monotonic()
    if podman.image_exists(image):
        podman.timings["base (cached image)"] = time.monotonic() - started
        return image
    tarball = cache_root() / "container-base" / f"{key}.tar"
    step = "base (import of the cached tarball)" if tarball.is_file() else "base (mmdebstrap and import)"
    done = run_logged(
        ["sh", str(BASE_SCRIPT), image, str(tarball)],
        f"making the image's Debian base {image}",
        lambda lines: lines[-1][:100] if lines else "starting",
        log,
        timeout_s=1800,
        env=podman.env,
    )
    if done.returncode != 0:
        raise ContainersUnavailable(f"{BASE_SCRIPT.name} failed ({done.returncode}):\n{done.stdout[-4000:]}")
    podman.timings[step] = time.monotonic() - started
    return image
