"""Row images of ``pgoutput`` (TupleData, text values) written straight as JSON bytes.

The bytes are exactly what the worker's JSON converter (``schemas.enable=false``) writes for the images
:class:`~headwater.reference_connectors.jdbc_cdc.pgoutput.Decoder` decodes (same types, same column order,
unchanged TOASTed values left out), without a dict or a ``str`` per value: what log mode sends with the ``bytes``
converters. Each relation gets a :class:`RowEncoder` once; its common case (every value text or NULL) runs a
function compiled for that relation's columns.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Sequence
from json.encoder import encode_basestring

from headwater.reference_connectors.jdbc_cdc.config import DOUBLE, STRING
from headwater.sdk import ConnectError

_UNPACK_INT32 = struct.Struct(">i").unpack_from
_TEXT, _BINARY, _NULL = ord("t"), ord("b"), ord("n")

_INTEGERS = frozenset({20, 21, 23, 26})
_FLOATS = frozenset({700, 701})
_NUMERIC = 1700
_BOOL = 16
_JSON_TYPES = frozenset({114, 3802})
_TIMESTAMP, _TIMESTAMPTZ = 1114, 1184
_SIGN = frozenset(b"+-")
_DOT, _E = ord("."), ord("e")
_TINY = (b"0.0000", b"-0.0000")

_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)

Formatter = Callable[[bytes], bytes]


def to_json(value: object) -> bytes:
    """``value`` as the JSON converter (``schemas.enable=false``) writes it: compact, UTF-8, no NaN."""
    return _ENCODER.encode(value).encode()


def json_text(raw: bytes) -> bytes:
    return encode_basestring(raw.decode()).encode()


def json_number(raw: bytes) -> bytes:
    """A float or numeric: a JSON number as ``float``/``int`` writes it, a string for ``NaN`` and ``Infinity``."""
    if _DOT in raw and _E not in raw:  # an int, not b".": bytes look a bytes operand up as an int first
        short = raw.rstrip(b"0")
        if len(short) <= 16 and not short.startswith(_TINY):
            # at most 15 digits and at least 1e-4: repr(float(raw)) is the text without its trailing zeros
            return short + b"0" if short[-1] == _DOT else short
    try:
        if _DOT not in raw and _E not in raw:
            return b"%d" % int(raw)
        text = repr(float(raw))
    except ValueError:
        return json_text(raw)
    if "n" in text:  # inf or nan: the JSON converter refuses them
        raise ValueError(f"out of range float value {raw.decode()!r} is not JSON compliant")
    return text.encode()


def json_decimal(raw: bytes) -> bytes:
    """A numeric as a JSON string of its text (``decimal.handling.mode=string``): digits, ``-``, ``.``, ``NaN`` or
    ``Infinity``, nothing to escape."""
    return b'"' + raw + b'"'


def beyond_double(column: str, text: str | None) -> ConnectError:
    """The error of a numeric value (``text`` where known) beyond a double's range in
    ``decimal.handling.mode=double``."""
    shown = "" if text is None else f" {text[:20]}... ({len(text)} characters)" if len(text) > 40 else f" {text}"
    return ConnectError(
        f"{column}: numeric value{shown} is beyond the range of a double (decimal.handling.mode=double); "
        "set decimal.handling.mode=string to write it exactly"
    )


def json_double(column: str) -> Formatter:
    """:func:`json_number` for a numeric in ``decimal.handling.mode=double``: one beyond a double's range fails,
    naming ``column``."""

    def number(raw: bytes) -> bytes:
        try:
            return json_number(raw)
        except ValueError:
            raise beyond_double(column, raw.decode()) from None

    return number


def json_bool(raw: bytes) -> bytes:
    return b"true" if raw == b"t" else b"false"


def json_document(raw: bytes) -> bytes:
    return to_json(json.loads(raw))


def json_timestamp(raw: bytes) -> bytes:
    return b'"' + raw.replace(b" ", b"T", 1) + b'"'  # ASCII letters, digits, spaces and +-:./ need no escapes


def json_timestamptz(raw: bytes) -> bytes:
    raw = raw.replace(b" ", b"T", 1)
    return b'"' + raw + b':00"' if len(raw) > 3 and raw[-3] in _SIGN else b'"' + raw + b'"'


def json_formatter(type_oid: int, decimals: str = STRING, column: str = "") -> Formatter | None:
    """What writes a text value of type ``type_oid`` as JSON; ``None`` when the text is its JSON (integers). A
    numeric is a string of its text with ``decimals`` ``string``, a number with ``double`` (failing, naming
    ``column``, beyond a double's range)."""
    if type_oid in _INTEGERS:
        return None
    if type_oid == _BOOL:
        return json_bool
    if type_oid == _NUMERIC:
        return json_double(column) if decimals == DOUBLE else json_decimal
    if type_oid in _FLOATS:
        return json_number
    if type_oid in _JSON_TYPES:
        return json_document
    if type_oid == _TIMESTAMP:
        return json_timestamp
    if type_oid == _TIMESTAMPTZ:
        return json_timestamptz
    return json_text


Image = tuple[bytes, bytes | None, int]
"""An image's JSON object (after a prefix), the JSON key taken from it (``None`` without a primary key), and the
position where the image ends."""


class RowEncoder:
    """Writes the row images of one relation as JSON objects, and the key ``{primary key column: value}``; numerics
    as ``decimals`` (the ``decimal.handling.mode``) says, errors naming ``table``."""

    def __init__(
        self,
        columns: Sequence[str],
        types: Sequence[int],
        primary_key: Sequence[str],
        decimals: str = STRING,
        table: str = "",
    ) -> None:
        self.names = tuple(encode_basestring(c).encode() + b":" for c in columns)
        self.formatters = tuple(
            json_formatter(t, decimals, f"{table}.{c}") for t, c in zip(types, columns, strict=True)
        )
        self.key_names = tuple(encode_basestring(c).encode() + b":" for c in primary_key)
        self.key_columns = tuple(list(columns).index(c) if c in columns else -1 for c in primary_key)
        self.image: Callable[[bytes, int, bytes], Image] = self._compile()
        """``image(data, at, prefix)``: the image starting at ``data[at]`` as a JSON object written after ``prefix``
        (compiled for this relation's columns; :meth:`general` unless every value is text or NULL)."""

    def general(self, data: bytes, at: int, prefix: bytes = b"", include: Sequence[bool] | None = None) -> Image:
        """:attr:`image` for any TupleData (unchanged TOASTed values, binary values); ``include`` picks the columns
        to write (a replica identity's old image holds only those)."""
        names, formatters = self.names, self.formatters
        count = (data[at] << 8) | data[at + 1]
        at += 2
        values: dict[int, bytes] = {}
        for index in range(count):
            kind = data[at]
            at += 1
            if kind in (_TEXT, _BINARY):
                length = _UNPACK_INT32(data, at)[0]
                at += 4
                if include is None or include[index]:
                    raw = data[at : at + length]
                    if kind == _BINARY:
                        values[index] = b'"' + raw.hex().encode() + b'"'
                    else:
                        formatter = formatters[index]
                        values[index] = raw if formatter is None else formatter(raw)
                at += length
            elif kind == _NULL and (include is None or include[index]):
                values[index] = b"null"
        body = b",".join([names[index] + value for index, value in values.items()])
        return prefix + b"{" + body + b"}", self._key(values), at

    def _key(self, values: dict[int, bytes]) -> bytes | None:
        if not self.key_names:
            return None
        pairs = [
            name + values.get(index, b"null") for name, index in zip(self.key_names, self.key_columns, strict=True)
        ]
        return b"{" + b",".join(pairs) + b"}"

    def _compile(self) -> Callable[[bytes, int, bytes], Image]:
        """A function for this relation's common image (every value text or NULL) that hands any other image to
        :meth:`general`."""
        count = len(self.names)
        lines = [
            "def image(d, a, prefix, unpack=unpack, esc=esc, general=general):",
            "    start = a",
            f"    if d[a] != {count >> 8} or d[a + 1] != {count & 0xFF}:",
            "        return general(d, start, prefix)",
            "    a += 2",
        ]
        namespace: dict[str, object] = {"unpack": _UNPACK_INT32, "esc": encode_basestring, "general": self.general}
        for index, formatter in enumerate(self.formatters):
            if formatter is None:
                value = "d[a + 5 : n]"
            elif formatter is json_text:
                value = "esc(d[a + 5 : n].decode()).encode()"
            elif formatter is json_decimal:
                value = "b'\"' + d[a + 5 : n] + b'\"'"
            else:
                namespace[f"f{index}"] = formatter
                value = f"f{index}(d[a + 5 : n])"
            lines += [
                "    k = d[a]",
                f"    if k == {_TEXT}:",
                "        n = a + 5 + unpack(d, a + 1)[0]",
                f"        c{index} = {value}",
                "        a = n",
                f"    elif k == {_NULL}:",
                f"        c{index} = b'null'",
                "        a += 1",
                "    else:",
                "        return general(d, start, prefix)",
            ]
        pieces = ["prefix"]
        for index, name in enumerate(self.names):
            pieces += [repr((b"{" if index == 0 else b",") + name), f"c{index}"]
        pieces.append(repr(b"}" if self.names else b"{}"))
        if self.key_names:
            key = []
            for index, (name, column) in enumerate(zip(self.key_names, self.key_columns, strict=True)):
                key += [repr((b"{" if index == 0 else b",") + name), "b'null'" if column < 0 else f"c{column}"]
            key.append(repr(b"}"))
            key_expression = f"b''.join(({', '.join(key)},))"
        else:
            key_expression = "None"
        lines.append(f"    return b''.join(({', '.join(pieces)},)), {key_expression}, a")
        exec("\n".join(lines), namespace)  # the source is built above from literals only
        return namespace["image"]  # type: ignore[return-value]
