"""The errors a runledger server answers with, as exceptions."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A non-2xx answer: `status`, the server's `code`, its `message` and `problems` (each `{path, message}`)."""

    def __init__(self, status: int, code: str, message: str, problems: list[dict[str, Any]] | None = None) -> None:
        super().__init__(f"{status} {code}: {message}" + "".join(f"\n  {p.get('path')}: {p.get('message')}" for p in problems or []))
        self.status = status
        self.code = code
        self.message = message
        self.problems: list[dict[str, Any]] = list(problems or [])


class LeaseLost(ApiError):
    """409 lease_lost: the token no longer holds the task (expired and re-claimed, or already finished); nothing was written."""


class TerminalError(Exception):
    """Raised by a handler: the task fails with retryable=False and goes dead at once."""
