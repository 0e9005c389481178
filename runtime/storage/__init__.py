"""Stores of the worker's state: source offsets."""

from headwater.runtime.storage.offsets import (
    FileOffsetStore,
    MemoryOffsetStore,
    OffsetStore,
    PartitionOffset,
    offset_key,
    offset_value,
    parse_offset_key,
)

__all__ = [
    "FileOffsetStore",
    "MemoryOffsetStore",
    "OffsetStore",
    "PartitionOffset",
    "offset_key",
    "offset_value",
    "parse_offset_key",
]
