"""Services the Spark sink's cluster-scale tests run against, each a set of subprocesses with its logs in a directory
of its own: :class:`S3Server`, an S3-compatible server (moto's ``moto_server``), and :class:`SparkCluster`, a Spark
standalone cluster (one master, one worker) started with pyspark's own ``spark-class``."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from headwater.harness.broker import free_ports

START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
POLL_INTERVAL_S = 0.1
LOG_TAIL_CHARS = 4_000

_RUNNING_ON = re.compile(r"Running on http://127\.0\.0\.1:(\d+)")
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ServiceError(RuntimeError):
    """A service did not start: a process of it exited or it did not answer in time (the message ends with the
    tail of its log)."""


def application_conf(master: str, cores: int, executor_memory: str = "512m") -> dict[str, str]:
    """The settings of a Spark application on ``master``: the master, and on a standalone master (``spark://``) the
    cores it may take, its executors' memory and its driver's loopback address."""
    conf = {"spark.master": master}
    if master.startswith("spark://"):
        conf["spark.cores.max"] = str(cores)
        conf["spark.executor.memory"] = executor_memory
        conf["spark.driver.host"] = conf["spark.driver.bindAddress"] = "127.0.0.1"
    return conf


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    if Path("/proc/self/stat").exists():
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return False
        return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def bucket_name(base: str) -> str:
    """A bucket name no other test uses: ``base`` (a test's name) in lowercase letters, digits and hyphens, cut to
    fit S3's 63 characters, with a random suffix."""
    slug = re.sub(r"[^a-z0-9]+", "-", base.lower()).strip("-")[-40:].strip("-")
    suffix = uuid.uuid4().hex[:8]
    return f"t-{slug}-{suffix}" if slug else f"t-{suffix}"


def get_json(url: str, timeout_s: float = 5.0) -> Any:
    """The JSON document at ``url`` (no proxy)."""
    with _NO_PROXY.open(url, timeout=timeout_s) as response:
        return json.loads(response.read())


def _answers(url: str) -> bool:
    """Whether an HTTP server answers a GET of ``url`` at all (an error status counts as an answer)."""
    try:
        with _NO_PROXY.open(url, timeout=5.0) as response:
            response.read()
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True


class ServiceProcess:
    """One process of a service: ``command`` run in ``cwd`` (made if missing) in a session of its own, its stdout and
    stderr appended to ``log_path``."""

    def __init__(self, name: str, command: Sequence[str], cwd: Path, env: Mapping[str, str], log_path: Path) -> None:
        self.name = name
        self.command = list(command)
        self.cwd = cwd
        self.env = dict(env)
        self.log_path = log_path
        self.popen: subprocess.Popen[bytes] | None = None
        self.attached_pid: int | None = None
        """The pid of a process another process started (:meth:`attach`): known, but not a child of this one."""

    @classmethod
    def attach(cls, name: str, pid: int, cwd: Path, log_path: Path) -> ServiceProcess:
        """The process ``pid`` that another process started as a service process (with ``cwd`` and ``log_path``)."""
        found = cls(name, [], cwd, {}, log_path)
        found.attached_pid = pid
        return found

    def start(self) -> None:
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.popen = subprocess.Popen(
                self.command,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def pid(self) -> int | None:
        return self.attached_pid if self.popen is None else self.popen.pid

    @property
    def running(self) -> bool:
        if self.popen is None:
            return self.attached_pid is not None and pid_alive(self.attached_pid)
        return self.popen.poll() is None

    def log(self) -> str:
        """Everything the process wrote so far."""
        if not self.log_path.exists():
            return ""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def tail(self) -> str:
        """The end of the log, headed by its path."""
        return f"the end of {self.log_path}:\n{self.log()[-LOG_TAIL_CHARS:]}"

    def failure(self, what: str) -> ServiceError:
        """An error saying ``what`` went wrong, with the exit code and the tail of the log."""
        code = None if self.popen is None else self.popen.poll()
        exited = f" (exit code {code})" if code is not None else ""
        return ServiceError(f"{self.name} {what}{exited}; {self.tail()}")

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM, then SIGKILL to its whole process group after ``timeout_s``; processes of the group still left
        once it exited (children it did not stop) are killed too."""
        if self.popen is None:
            if self.attached_pid is not None:
                stop_process_group(self.attached_pid, timeout_s)
            return
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(timeout_s)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped" if self.popen is not None else "not started"
        return f"<{self.name} pid={self.pid} {state}>"


def stop_process_group(pid: int, timeout_s: float = STOP_TIMEOUT_S) -> None:
    """Stops a service process another process started (the leader of its own process group): SIGTERM, then SIGKILL
    to its whole group after ``timeout_s``; processes of the group still left once it exited are killed too."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(POLL_INTERVAL_S)  # not a child of this process: nothing to wait on but the pid
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(POLL_INTERVAL_S)


def stop_recorded(state: Mapping[str, Any]) -> None:
    """Stops, from any process, the service whose :meth:`S3Server.state` or :meth:`SparkCluster.state` is
    ``state``: each of its ``pids`` in order, as :func:`stop_process_group` does."""
    for pid in state["pids"]:
        stop_process_group(int(pid))


def _wait_for(condition: Callable[[], bool], what: str, processes: Sequence[ServiceProcess], timeout_s: float) -> None:
    """Poll ``condition`` until true; raise :class:`ServiceError` with the tail of the logs when one of ``processes``
    exits or ``timeout_s`` passes first."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        for process in processes:
            if not process.running:
                raise process.failure(f"exited before {what}")
        if time.monotonic() > deadline:
            tails = "\n".join(process.tail() for process in processes)
            raise ServiceError(f"waited {timeout_s:.0f} s in vain for {what}; {tails}")
        time.sleep(POLL_INTERVAL_S)


class S3Server:
    """An S3-compatible server (``moto_server`` from the running Python's environment, see :mod:`.moto_server`) on
    127.0.0.1, its log in ``directory``; :meth:`start` returns once it answers HTTP. The same port answers DynamoDB's
    API (:meth:`aws_env` gives its credentials to a process's AWS SDK)."""

    access_key = "headwater-test-access-key"
    secret_key = "headwater-test-secret-key"
    region = "us-east-1"

    def __init__(self, directory: str | os.PathLike[str], timeout_s: float = 60.0) -> None:
        self.directory = Path(directory)
        self.timeout_s = timeout_s
        self.port: int | None = None
        script = Path(__file__).with_name("moto_server.py")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        command = [sys.executable, str(script), "--host", "127.0.0.1", "--port", "0"]
        self.process = ServiceProcess("moto_server", command, self.directory, env, self.directory / "moto_server.log")
        self._client: Any = None

    def start(self) -> S3Server:
        """Start the server (moto picks a free port, read from its log) and wait until it answers."""
        self.process.start()

        def answering() -> bool:
            if self.port is None:
                found = _RUNNING_ON.search(self.process.log())
                if found is None:
                    return False
                self.port = int(found.group(1))
            return _answers(self.endpoint + "/")

        try:
            _wait_for(answering, "an answer to HTTP GET", [self.process], self.timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def state(self) -> dict[str, Any]:
        """What :meth:`attach` and :func:`stop_recorded` need, in another process (pytest-xdist's workers share one
        server this way)."""
        return {"directory": str(self.directory), "port": self.port, "pids": [self.process.pid]}

    @classmethod
    def attach(cls, state: Mapping[str, Any]) -> S3Server:
        """The server another process started, from its :meth:`state`."""
        found = cls(state["directory"])
        found.port = int(state["port"])
        found.process = ServiceProcess.attach(
            "moto_server", int(state["pids"][0]), found.directory, found.process.log_path
        )
        return found

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:PORT``, once started."""
        if self.port is None:
            raise RuntimeError(f"{self!r} has not started")
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.process.running

    def client(self) -> Any:
        """A boto3 S3 client of this server (path-style addressing), made once."""
        if self._client is None:
            import boto3  # type: ignore[import-untyped]
            from botocore.config import Config  # type: ignore[import-untyped]

            self._client = boto3.client(
                "s3",
                endpoint_url=self.endpoint,
                aws_access_key_id=self.access_key,
                aws_secret_access_key=self.secret_key,
                region_name=self.region,
                config=Config(s3={"addressing_style": "path"}),
            )
        return self._client

    def dynamodb(self) -> Any:
        """A boto3 DynamoDB client of this server."""
        import boto3

        return boto3.client(
            "dynamodb",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
        )

    def create_bucket(self, name: str) -> None:
        self.client().create_bucket(Bucket=name)

    def list_keys(self, bucket: str, prefix: str = "", page_size: int = 1000) -> list[str]:
        """Every key in ``bucket`` starting with ``prefix``, in S3's order, read ``page_size`` keys a request."""
        pages = (
            self.client()
            .get_paginator("list_objects_v2")
            .paginate(Bucket=bucket, Prefix=prefix, PaginationConfig={"PageSize": page_size})
        )
        return [str(item["Key"]) for page in pages for item in page.get("Contents", [])]

    def hadoop_conf(self) -> dict[str, str]:
        """The settings a SparkSession needs to reach this server through s3a (the hadoop-aws jar not included)."""
        return {
            "spark.hadoop.fs.s3a.endpoint": self.endpoint,
            "spark.hadoop.fs.s3a.endpoint.region": self.region,
            "spark.hadoop.fs.s3a.access.key": self.access_key,
            "spark.hadoop.fs.s3a.secret.key": self.secret_key,
            "spark.hadoop.fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
        }

    def aws_env(self) -> dict[str, str]:
        """The environment that gives an AWS SDK in another process (Delta's DynamoDB client, through its default
        credentials chain) this server's credentials and region."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": self.region,
        }

    def stop(self) -> None:
        """Stop the server (SIGTERM, SIGKILL after a deadline); its buckets are gone with it."""
        if self._client is not None:
            self._client.close()
            self._client = None
        self.process.stop()

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        endpoint = "no endpoint" if self.port is None else self.endpoint
        return f"S3Server({endpoint}, {'running' if self.running else 'not running'})"


def hiding(directory: str | os.PathLike[str]) -> list[str]:
    """A command prefix that runs its command in a mount namespace of its own where ``directory`` is an empty tmpfs:
    the command and its children (a Spark worker's executors) do not see what others write there, like a process on
    another host with a disk of its own. Needs ``unshare`` and the right to mount (root)."""
    script = 'mount -t tmpfs headwater-hidden "$0" && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(directory)]


def spark_home() -> Path:
    """The installed pyspark package's directory, which holds ``bin/spark-class`` and ``jars/``."""
    import pyspark

    return Path(pyspark.__file__).parent


class SparkCluster:
    """A Spark standalone cluster on 127.0.0.1: one master and one worker (``cores`` cores, ``memory``), each a
    ``spark-class`` JVM running in its own directory under ``directory`` (never the test process's working
    directory); executors run in ``work_dir``. :meth:`start` returns once the master counts the worker ALIVE."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        cores: int = 1,
        memory: str = "1g",
        timeout_s: float = START_TIMEOUT_S,
        worker_wrapper: Sequence[str] = (),
    ) -> None:
        self.directory = Path(directory)
        self.cores = cores
        self.memory = memory
        self.worker_wrapper = list(worker_wrapper)
        """A command the worker's ``spark-class`` runs under (its arguments appended), like :func:`hiding`."""
        self.timeout_s = timeout_s
        self.spark_home = spark_home()
        self.work_dir = self.directory / "worker" / "work"
        self.port: int | None = None
        self.webui_port: int | None = None
        self.master: ServiceProcess | None = None
        self.worker: ServiceProcess | None = None

    def _env(self) -> dict[str, str]:
        # a port that is taken fails the start instead of Spark moving on to the next one unnoticed; the master's REST
        # submission server (fixed port 6066, so a second master could not start it) is not used
        fixed_ports = "-Dspark.port.maxRetries=0 -Dspark.master.rest.enabled=false"
        return {
            **os.environ,
            "SPARK_HOME": str(self.spark_home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(self.directory / "logs"),
            "SPARK_WORKER_DIR": str(self.work_dir),
            "SPARK_MASTER_OPTS": fixed_ports,
            "SPARK_WORKER_OPTS": fixed_ports,
        }

    def start(self) -> SparkCluster:
        """Start the master, then the worker, and wait until the master's JSON status lists the worker ALIVE."""
        spark_class = str(self.spark_home / "bin" / "spark-class")
        self.port, self.webui_port, worker_webui_port = free_ports(3)
        env = self._env()
        master_command = [
            *(spark_class, "org.apache.spark.deploy.master.Master"),
            *("--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.webui_port)),
        ]
        worker_command = [
            *self.worker_wrapper,
            *(spark_class, "org.apache.spark.deploy.worker.Worker", self.master_url),
            *("--host", "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory),
            *("--work-dir", str(self.work_dir), "--webui-port", str(worker_webui_port)),
        ]
        master_dir, worker_dir = self.directory / "master", self.directory / "worker"
        self.master = ServiceProcess("spark master", master_command, master_dir, env, master_dir / "master.log")
        self.worker = ServiceProcess("spark worker", worker_command, worker_dir, env, worker_dir / "worker.log")
        self.work_dir.mkdir(parents=True, exist_ok=True)
        try:
            self.master.start()
            self.worker.start()
            _wait_for(
                lambda: len(self.alive_workers()) >= 1,
                "an ALIVE worker in the master's status",
                [self.master, self.worker],
                self.timeout_s,
            )
        except BaseException:
            self.stop()
            raise
        return self

    def state(self) -> dict[str, Any]:
        """What :meth:`attach` and :func:`stop_recorded` need, in another process (the worker's pid first: it stops
        its executors before the master goes)."""
        return {
            "directory": str(self.directory),
            "cores": self.cores,
            "memory": self.memory,
            "port": self.port,
            "webui_port": self.webui_port,
            "pids": [process.pid for process in (self.worker, self.master) if process is not None],
        }

    @classmethod
    def attach(cls, state: Mapping[str, Any]) -> SparkCluster:
        """The cluster another process started, from its :meth:`state`."""
        found = cls(state["directory"], cores=int(state["cores"]), memory=str(state["memory"]))
        found.port, found.webui_port = int(state["port"]), int(state["webui_port"])
        worker_pid, master_pid = (int(pid) for pid in state["pids"])
        master_dir, worker_dir = found.directory / "master", found.directory / "worker"
        found.master = ServiceProcess.attach("spark master", master_pid, master_dir, master_dir / "master.log")
        found.worker = ServiceProcess.attach("spark worker", worker_pid, worker_dir, worker_dir / "worker.log")
        return found

    @property
    def master_url(self) -> str:
        """``spark://127.0.0.1:PORT``, once started."""
        if self.port is None:
            raise RuntimeError(f"{self!r} has not started")
        return f"spark://127.0.0.1:{self.port}"

    @property
    def webui_url(self) -> str:
        if self.webui_port is None:
            raise RuntimeError(f"{self!r} has not started")
        return f"http://127.0.0.1:{self.webui_port}"

    def status(self) -> dict[str, Any]:
        """The master's status (``/json/``: ``status``, ``workers`` with their ``state``, ``aliveworkers``,
        ``activeapps``, ...)."""
        found: dict[str, Any] = get_json(self.webui_url + "/json/")
        return found

    def alive_workers(self) -> list[dict[str, Any]]:
        """The workers the master counts ALIVE (empty while the master does not answer)."""
        try:
            workers: list[dict[str, Any]] = self.status()["workers"]
        except (OSError, ValueError):
            return []
        return [worker for worker in workers if worker.get("state") == "ALIVE"]

    @property
    def pids(self) -> list[int]:
        """The master's and the worker's process ids (those started)."""
        return [process.pid for process in (self.master, self.worker) if process is not None and process.pid]

    @property
    def running(self) -> bool:
        return self.master is not None and self.master.running and self.worker is not None and self.worker.running

    def stop(self) -> None:
        """Stop the worker (which stops its executors), then the master: SIGTERM, SIGKILL after a deadline."""
        for process in (self.worker, self.master):
            if process is not None:
                process.stop()

    def __enter__(self) -> SparkCluster:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        master = "not started" if self.port is None else self.master_url
        return f"SparkCluster({master}, master={self.master!r}, worker={self.worker!r})"
