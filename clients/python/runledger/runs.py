"""Runs of code workflows over `POST /runs`: the request body of a start, with its flow control (docs/flow-control.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Union

from .duration import wire

Run = dict[str, Any]
"""A run as the server sends it (GET /runs/{id}): id, workflow, status, input, output, error, steps, waiting_for, …"""

Concurrency = Union[int, Mapping[str, Any], Sequence[Mapping[str, Any]]]
"""At most N runs at once: a limit for the workflow (`5`), one limit (`{"key": "input.user_id", "limit": 1}`) or a list."""

TERMINAL = frozenset({"success", "partial_success", "failed", "cancelled"})

# the fields of each flow option that are durations: sent as given ("30s") or as integer milliseconds
_DURATIONS = {"throttle": ("period",), "debounce": ("period", "max_wait"), "budget": ("wall_time",)}


def run_body(
    workflow: str,
    input: Any = None,
    *,
    id: str | None = None,
    priority: int | None = None,
    concurrency: Concurrency | None = None,
    throttle: Mapping[str, Any] | None = None,
    debounce: Mapping[str, Any] | None = None,
    budget: Mapping[str, Any] | None = None,
    not_before: datetime | str | int | None = None,
) -> dict[str, Any]:
    """The body of `POST /runs`, snake_case as the API takes it; the server checks the ranges and names a bad field."""
    if not isinstance(workflow, str) or not workflow:
        raise ValueError("workflow: must name a code workflow the server registered")
    body: dict[str, Any] = {"workflow": workflow, "input": input}
    if id is not None:
        body["id"] = id
    if priority is not None:
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise ValueError(f"priority: must be a whole number from -100 to 100 (got {priority!r})")
        body["priority"] = priority
    if concurrency is not None:
        body["concurrency"] = _concurrency(concurrency)
    for name, value in (("throttle", throttle), ("debounce", debounce), ("budget", budget)):
        if value is None:
            continue
        if not isinstance(value, Mapping):
            raise ValueError(f"{name}: must be a dict (got {value!r})")
        body[name] = {k: wire(v, f"{name}.{k}") if k in _DURATIONS[name] else v for k, v in value.items()}
    if not_before is not None:
        body["not_before"] = _not_before(not_before)
    return body


def _not_before(value: datetime | str | int) -> str | int:
    """A datetime with its timezone as ms since 1970; an ISO 8601 string or whole ms as given (the server checks them)."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"not_before: a datetime needs its timezone, as datetime.now(timezone.utc) (got {value!r})")
        return round(value.timestamp() * 1000)
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"not_before: must be a datetime, an ISO 8601 string or ms since 1970 (got {value!r})")
    return value


def _concurrency(value: Concurrency) -> list[dict[str, Any]]:
    if isinstance(value, bool):
        raise ValueError(f"concurrency: must be a limit, a dict or a list of dicts (got {value!r})")
    if isinstance(value, int):
        return [{"limit": value}]
    if isinstance(value, Mapping):
        return [dict(value)]
    if isinstance(value, Sequence) and not isinstance(value, str) and all(isinstance(v, Mapping) for v in value):
        return [dict(v) for v in value]
    raise ValueError(f"concurrency: must be a limit, a dict or a list of dicts (got {value!r})")
