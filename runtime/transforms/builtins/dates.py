"""``java.text.SimpleDateFormat`` patterns in UTC, as Kafka Connect's TimestampRouter and TimestampConverter use
them: :class:`JavaDateFormat` renders and parses the pattern fields Headwater knows and refuses the others when the
pattern is configured, so a pattern never renders differently from Kafka Connect."""

from __future__ import annotations

import calendar
import datetime
import re
from dataclasses import dataclass

from headwater.runtime.transforms.builtins.parts import DataError

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
GREGORIAN_CUTOVER_MS = -12_219_292_800_000
"""1582-10-15T00:00Z: before it Java's calendar is the Julian one, which Headwater does not render."""
MAX_MS = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z, the last instant Python's datetime holds."""

FIELDS = "yMdHmsSEahkKDZX"
"""The pattern letters Headwater renders (Java's others, such as G, w, W, F, u, Y, z and L, are refused)."""
_NUMERIC = "yMdHmsShkKD"
_MONTHS = [calendar.month_name[index] for index in range(1, 13)]
_DAYS = [calendar.day_name[index] for index in range(7)]


class OutOfRange(DataError):
    """An instant Headwater does not render or parse: before the Gregorian calendar or after the year 9999."""


@dataclass(frozen=True)
class _Field:
    letter: str
    count: int


def _tokens(pattern: str) -> list[_Field | str]:
    tokens: list[_Field | str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "'":
            if pattern[index + 1 : index + 2] == "'":
                tokens.append("'")
                index += 2
                continue
            text: list[str] = []
            index += 1
            while True:
                if index >= len(pattern):
                    raise ValueError(f"Unterminated quote in date pattern {pattern!r}")
                if pattern[index] == "'":
                    if pattern[index + 1 : index + 2] == "'":
                        text.append("'")
                        index += 2
                        continue
                    index += 1
                    break
                text.append(pattern[index])
                index += 1
            tokens.append("".join(text))
        elif ("a" <= char <= "z") or ("A" <= char <= "Z"):
            count = len(pattern[index:]) - len(pattern[index:].lstrip(char))
            if char not in FIELDS:
                raise ValueError(
                    f"Date pattern letter {char!r} is not supported by Headwater (it renders {', '.join(FIELDS)})"
                )
            if char == "X" and count > 3:
                raise ValueError(f"Invalid ISO 8601 format: length={count} in date pattern {pattern!r}")
            tokens.append(_Field(char, count))
            index += count
        else:
            tokens.append(char)
            index += 1
    return tokens


class JavaDateFormat:
    """One ``SimpleDateFormat`` pattern in the UTC time zone. Raises :class:`ValueError` for a pattern it cannot
    render exactly as Java does."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.tokens = _tokens(pattern)
        self.ambiguity = _ambiguity([item.letter for item in self.tokens if isinstance(item, _Field)])
        """Why Headwater does not parse with this pattern (fields Java's calendar weighs by the order they are set
        in), or None."""

    def format(self, millis: int) -> str:
        """The instant ``millis`` (epoch milliseconds) rendered; :class:`DataError` for one outside the Gregorian
        years 1582-9999 (Java renders those in the Julian calendar or with more digits)."""
        if not GREGORIAN_CUTOVER_MS <= millis <= MAX_MS:
            raise OutOfRange(
                f"Headwater cannot render timestamp {millis} with date pattern {self.pattern!r}: "
                "only instants from 1582-10-15 to 9999-12-31 (UTC) are supported"
            )
        moment = EPOCH + datetime.timedelta(milliseconds=millis)
        return "".join(item if isinstance(item, str) else _render(item, moment) for item in self.tokens)

    def parse(self, text: str) -> int:
        """Epoch milliseconds of ``text`` read with the pattern, leniently as Java reads it (a month 13 is January of
        the next year, trailing text is ignored); :class:`DataError` when it does not match."""
        if self.ambiguity:
            raise DataError(f"Headwater cannot parse with date pattern {self.pattern!r}: {self.ambiguity}")
        values = {"y": 1970, "M": 1, "d": 1, "H": 0, "m": 0, "s": 0, "S": 0}
        position = 0
        pm: bool | None = None
        offset = 0
        hour12: int | None = None
        for index, item in enumerate(self.tokens):
            if isinstance(item, str):
                if not text.startswith(item, position):
                    raise self._unparsable(text)
                position += len(item)
                continue
            following = self.tokens[index + 1] if index + 1 < len(self.tokens) else None
            abutting = isinstance(following, _Field) and following.letter in _NUMERIC
            if item.letter in "ZXE" or (item.letter == "M" and item.count >= 3) or item.letter == "a":
                if item.letter == "a":
                    word = text[position : position + 2].upper()
                    if word not in ("AM", "PM"):
                        raise self._unparsable(text)
                    pm, position = word == "PM", position + 2
                    continue
                if item.letter == "M":
                    position = self._month_name(text, position, values)
                    continue
                if item.letter == "X" and item.count <= 3:
                    offset, position = self._iso_offset(text, position, item.count)
                    continue
                raise DataError(f"Headwater cannot parse date pattern letter {item.letter!r} of {self.pattern!r}")
            found = re.compile(rf"\d{{1,{item.count}}}" if abutting else r"\d+").match(text, position)
            if found is None:
                raise self._unparsable(text)
            number, position = int(found.group()), found.end()
            if number >= 2**31:
                raise DataError(f"Headwater cannot parse {text!r}: {found.group()} overflows Java's calendar fields")
            if item.letter == "y" and item.count <= 2 and len(found.group()) == 2:
                raise DataError(f"Headwater cannot parse two-digit years (pattern {self.pattern!r})")
            if item.letter in "hK":
                hour12 = 0 if item.letter == "h" and number == 12 else number
            elif item.letter == "k":
                values["H"] = 0 if number == 24 else number
            elif item.letter == "D":
                values["M"], values["d"] = 1, number
            else:
                values[item.letter] = number
        if hour12 is not None:
            values["H"] = hour12 + (12 if pm else 0)
        elif pm:
            values["H"] += 12
        year = values["y"] + (values["M"] - 1) // 12
        try:
            start = datetime.datetime(year, (values["M"] - 1) % 12 + 1, 1, tzinfo=datetime.UTC)
            moment = start + datetime.timedelta(
                days=values["d"] - 1, hours=values["H"], minutes=values["m"], seconds=values["s"]
            )
        except (ValueError, OverflowError):
            raise OutOfRange(f"Headwater cannot parse {text!r}: only the years 1582 to 9999 are supported") from None
        millis = (moment - EPOCH) // datetime.timedelta(milliseconds=1) + values["S"] - offset * 60_000
        julian_start = (start - EPOCH) // datetime.timedelta(milliseconds=1) < GREGORIAN_CUTOVER_MS
        if julian_start or not GREGORIAN_CUTOVER_MS <= millis <= MAX_MS:
            raise OutOfRange(f"Headwater cannot parse {text!r}: dates before 1582-10-15 are not supported")
        return millis

    def _iso_offset(self, text: str, position: int, count: int) -> tuple[int, int]:
        """Minutes east of UTC of an ISO 8601 zone (``X`` ``+hh``, ``XX`` ``+hhmm``, ``XXX`` ``+hh:mm``, or ``Z``)."""
        if text.startswith("Z", position):
            return 0, position + 1
        shape = {1: r"([+-])(\d\d)", 2: r"([+-])(\d\d)(\d\d)", 3: r"([+-])(\d\d):(\d\d)"}[count]
        found = re.compile(shape).match(text, position)
        if found is None or int(found.group(2)) > 23 or (count > 1 and int(found.group(3)) > 59):
            raise self._unparsable(text)
        minutes = int(found.group(2)) * 60 + (int(found.group(3)) if count > 1 else 0)
        return (-minutes if found.group(1) == "-" else minutes), found.end()

    def _month_name(self, text: str, position: int, values: dict[str, int]) -> int:
        for number, name in enumerate(_MONTHS, start=1):
            for candidate in (name, name[:3]):
                if text[position : position + len(candidate)].lower() == candidate.lower():
                    values["M"] = number
                    return position + len(candidate)
        raise self._unparsable(text)

    def _unparsable(self, text: str) -> DataError:
        return DataError(f"Could not parse timestamp: value ({text}) does not match pattern ({self.pattern})")


def _ambiguity(letters: list[str]) -> str | None:
    repeated = sorted({letter for letter in letters if letters.count(letter) > 1})
    if repeated:
        return f"letter {repeated[0]!r} appears twice"
    if len(set(letters) & set("HkhK")) > 1 or ("a" in letters and set(letters) & set("Hk")):
        return "two ways of giving the hour"
    if "D" in letters and set(letters) & set("Md"):
        return "a day of the year with a month or day"
    return None


def _render(field: _Field, moment: datetime.datetime) -> str:
    letter, count = field.letter, field.count
    if letter == "y":
        return f"{moment.year % 100:02d}" if count == 2 else f"{moment.year:0{count}d}"
    if letter == "M" and count >= 3:
        name = _MONTHS[moment.month - 1]
        return name if count >= 4 else name[:3]
    if letter == "E":
        name = _DAYS[moment.weekday()]
        return name if count >= 4 else name[:3]
    if letter == "a":
        return "AM" if moment.hour < 12 else "PM"
    if letter == "Z":
        return "+0000"
    if letter == "X":
        return "Z"
    number = {
        "M": moment.month,
        "d": moment.day,
        "H": moment.hour,
        "m": moment.minute,
        "s": moment.second,
        "S": moment.microsecond // 1000,
        "h": moment.hour % 12 or 12,
        "k": moment.hour or 24,
        "K": moment.hour % 12,
        "D": moment.timetuple().tm_yday,
    }[letter]
    return f"{number:0{count}d}"
