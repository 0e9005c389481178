"""A table directory seen through Hadoop's ``FileSystem`` API in the driver's JVM, so that the sink's own files go
wherever Spark's do: the local file system, HDFS, s3a, abfs or gs, the path's scheme kept as it is.

Paths are Hadoop path strings (``s3a://lake/orders/_headwater/...``), never :mod:`pathlib` paths, which fold
``s3a://`` into ``s3a:/``. A relative table path is qualified against the driver's working directory once, so the
executors of a cluster write where the driver looks.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from headwater.sdk import ConnectError


def join(*parts: str) -> str:
    return "/".join(part.strip("/") if n else part.rstrip("/") for n, part in enumerate(parts))


class HadoopFiles:
    """The file operations a table needs, on the file system of ``root``."""

    def __init__(self, session: SparkSession, root: str) -> None:
        jvm = session._jvm
        assert jvm is not None
        self.jvm = jvm
        self._path = jvm.org.apache.hadoop.fs.Path
        """Hadoop's ``Path`` class, looked up once: each step of ``jvm.org.apache...`` is a call to the JVM."""
        root_path = self._path(root)
        self.fs: Any = root_path.getFileSystem(session._jsc.hadoopConfiguration())
        self.root = str(self.fs.makeQualified(root_path).toString())
        """``root`` made absolute, with its file system's scheme and authority (``orders`` -> ``file:/cwd/orders``)."""

    def path(self, path: str) -> Any:
        return self._path(path)

    def exists(self, path: str) -> bool:
        return bool(self.fs.exists(self.path(path)))

    def names(self, directory: str) -> list[str]:
        """The names of the entries of ``directory``; empty when it does not exist."""
        if not self.exists(directory):
            return []
        return sorted(str(status.getPath().getName()) for status in self.fs.listStatus(self.path(directory)))

    def files_under(self, directory: str) -> list[str]:
        """Every file below ``directory``, as paths relative to it."""
        if not self.exists(directory):
            return []
        prefix = str(self.fs.makeQualified(self.path(directory)).toString()).rstrip("/") + "/"
        found = []
        listing = self.fs.listFiles(self.path(directory), True)
        while listing.hasNext():
            name = str(listing.next().getPath().toString())
            if not name.startswith(prefix):
                raise ConnectError(f"{name} was listed under {directory} but is not below {prefix}")
            found.append(name[len(prefix) :])
        return sorted(found)

    def read(self, path: str) -> bytes:
        stream = self.fs.open(self.path(path))
        try:
            return bytes(self.jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def write_atomically(self, path: str, content: bytes) -> None:
        """``content`` at ``path``, all of it or nothing (written under a hidden name, synced where the stream can
        sync, then renamed: atomic on HDFS and local disks; on an object store the rename is a copy of one object,
        which also appears whole)."""
        hidden = path.rsplit("/", 1)
        temporary = self.path(f"{hidden[0]}/.{hidden[1]}.tmp")
        stream = self.fs.create(temporary, True)
        try:
            stream.write(bytearray(content))
            if stream.hasCapability("hsync"):
                stream.hsync()
        finally:
            stream.close()
        if not self.fs.rename(temporary, self.path(path)):
            raise ConnectError(f"could not rename {temporary} to {path}")

    def move(self, source: str, target: str) -> bool:
        """Move a file into place; idempotent: a move a crash interrupted after the copy is finished by dropping the
        source. Return whether the file is at ``target`` now."""
        source_path, target_path = self.path(source), self.path(target)
        source_exists = bool(self.fs.exists(source_path))
        if self.fs.exists(target_path):
            if source_exists:
                self.fs.delete(source_path, False)
            return True
        if not source_exists:
            return False
        self.fs.mkdirs(target_path.getParent())
        if not self.fs.rename(source_path, target_path):
            raise ConnectError(f"could not rename {source} to {target}")
        return True

    def mkdirs(self, directory: str) -> None:
        self.fs.mkdirs(self.path(directory))

    def delete(self, path: str) -> None:
        self.fs.delete(self.path(path), True)
