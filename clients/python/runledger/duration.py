"""Durations as the protocol takes them: strings like "30s", "500ms", "2m", or integer milliseconds."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Union

Duration = Union[str, int, timedelta]

_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_PATTERN = re.compile(r"^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$")


def to_ms(duration: Duration, name: str = "duration") -> int:
    """Milliseconds in `duration`; ValueError names `name` when it is not one. to_ms("1.5s") == 1500."""
    if isinstance(duration, timedelta):
        return round(duration.total_seconds() * 1000)
    if isinstance(duration, bool) or not isinstance(duration, (int, str)):
        raise ValueError(f"{name}: must be a string like '30s' or integer milliseconds (got {duration!r})")
    if isinstance(duration, int):
        if duration < 0:
            raise ValueError(f"{name}: must be >= 0 ms (got {duration})")
        return duration
    match = _PATTERN.match(duration.strip())
    if not match:
        raise ValueError(f"{name}: must be a string like '200ms', '10s', '5m', '1h' (got {duration!r})")
    return round(float(match.group(1)) * _UNITS[match.group(2)])


def wire(duration: Duration, name: str = "duration") -> str | int:
    """The value sent: a string as given (the server checks it too), else integer milliseconds."""
    if isinstance(duration, str):
        to_ms(duration, name)
        return duration
    return to_ms(duration, name)
