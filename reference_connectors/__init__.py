"""Headwater's reference connectors, each behind an install extra of its own."""

from headwater import release


def headwater_version() -> str:
    """The installed Headwater's version, which every reference connector and its tasks report as their own."""
    return release.version()


__all__ = ["headwater_version"]
