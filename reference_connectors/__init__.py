"""Headwater's reference connectors, each behind an install extra of its own."""

from importlib.metadata import PackageNotFoundError, version


def headwater_version() -> str:
    """The installed Headwater's version, which every reference connector reports as its own."""
    try:
        return version("headwater")
    except PackageNotFoundError:
        return "0.0.0"


__all__ = ["headwater_version"]
