"""
Durable functions (docs/protocol.md, "Durable functions"): the engine POSTs a signed call holding the
journal of a run; the handler runs from the top, each recorded step returns its recorded result, and the
first step that is not recorded runs (or, for a sleep, a wait or a child run, is asked for) and ends
this call with a command the engine journals before it calls again.

    fn = Functions(secret=os.environ["RUNLEDGER_FUNCTION_SECRET"])

    @fn.function("onboard")
    def onboard(input, step):
        user = step.run("load-user", lambda ctx: users.load(input["user"], key=ctx.idempotency_key))
        step.sleep("cool-down", "10s")
        approved = step.wait_for_event("approval", timeout="1h")    # the signal's payload, or None
        return {"user": user, "approved": approved}

    fn.serve(port=9000)   # or, in any web framework: status, headers, body = fn.handle(raw_body, headers)
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NoReturn, TypeVar

from .duration import Duration, to_ms, wire
from .errors import TerminalError

PROTOCOL = 1
TOLERANCE_S = 300  # a call signed more than five minutes from this clock is refused: a replay
MAX_BODY = 16 * 1024 * 1024
MAX_COMMAND = 256 * 1024  # the engine reads no more of an answer (docs/protocol.md, "The command")
MAX_SLEEP_MS = 365 * 86_400_000
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9._-]{0,63}$")

T = TypeVar("T")
Handler = Callable[[Any, "Step"], Any]
H = TypeVar("H", bound=Handler)
Response = tuple[int, dict[str, str], bytes]


class StepError(Exception):
    """
    A step that failed for good (or a child run that failed), raised again by `step.run` / `step.invoke`
    on every later call. The handler may catch it; uncaught, the run fails with its `name` and `message`.

        try:
            step.run("charge", lambda ctx: cards.charge(order, key=ctx.idempotency_key))
        except StepError as error:
            step.run("notify", lambda ctx: mail.declined(order, reason=error.message))
    """

    def __init__(self, name: str, message: str, step: str | None = None) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message
        self.step = step


@dataclass(frozen=True)
class StepContext:
    """What `step.run`'s function knows: key its side effect with `idempotency_key` (`<run_id>:<id>`), the same on every attempt."""

    run_id: str
    id: str
    attempt: int

    @property
    def idempotency_key(self) -> str:
        return f"{self.run_id}:{self.id}"


class _Stop(BaseException):
    """Ends the handler at its first unrecorded call; a BaseException so the handler's `except Exception` lets it through."""


class Step:
    """
    The handler's steps for one call of one run. Each call is named by `id`; a repeated id is numbered
    (`fetch`, `fetch:2`, `fetch:3`). Calls are made one at a time, from the handler's own thread.
    """

    def __init__(self, run_id: str, steps: Mapping[str, Any], retry: Mapping[str, Any] | None) -> None:
        self.run_id = run_id
        self._steps = steps
        self._retry = retry
        self._seen: dict[str, int] = {}
        self._used: set[str] = set()
        self._running: str | None = None
        self._command: dict[str, Any] | None = None

    def run(self, id: str, fn: Callable[[StepContext], T]) -> T:
        """
        `fn(ctx)`'s value, run once and journaled. Recorded: its value, without running it. Raised:
        retried after a backoff, unless it is a TerminalError; failed for good: StepError.

            user = step.run("load-user", lambda ctx: db.user(input["user"]))
        """
        step_id = self._call(id, "run")
        if step_id in self._steps:
            return self._recorded(step_id)  # type: ignore[no-any-return]
        attempt = int(self._retry.get("attempt", 1)) if self._retry and self._retry.get("id") == step_id else 1
        self._running = step_id
        try:
            value = fn(StepContext(self.run_id, step_id, attempt))
        except Exception as error:
            self._stop({"op": "step", "id": step_id, "error": _error(error), "retryable": not isinstance(error, TerminalError)})
        finally:
            self._running = None
        self._stop({"op": "step", "id": step_id, "data": value})

    def sleep(self, id: str, duration: Duration) -> None:
        """A durable timer: this call ends and the engine calls again once `duration` ("10m", ms) has passed."""
        step_id = self._call(id, "sleep")
        command: dict[str, Any] = {"op": "sleep", "id": step_id, "duration": _duration(duration, "duration")}
        if step_id in self._steps:
            self._recorded(step_id)
            return
        self._stop(command)

    def wait_for_event(self, id: str, timeout: Duration | None = None) -> Any:
        """The payload of the signal named `id` (POST /runs/{run_id}/signal), or None once `timeout` passed."""
        step_id = self._call(id, "wait_for_event")
        command: dict[str, Any] = {"op": "wait_for_event", "id": step_id}
        if timeout is not None:
            command["timeout"] = _duration(timeout, "timeout")
        if step_id in self._steps:
            return self._recorded(step_id)
        self._stop(command)

    def invoke(self, id: str, *, function: str, input: Any = None) -> Any:
        """The output of a child run of `function` (its latest version); StepError when the child failed."""
        step_id = self._call(id, "invoke")
        if not isinstance(function, str) or not _NAME.match(function):
            raise ValueError(f"function: must be a function's name (got {function!r})")
        if step_id in self._steps:
            return self._recorded(step_id)
        command: dict[str, Any] = {"op": "child", "id": step_id, "function": function}
        if input is not None:
            command["input"] = input
        self._stop(command)

    def _call(self, id: str, kind: str) -> str:
        if self._command is not None:
            raise _Stop()  # the call has its command already: a `finally` or `except BaseException` may not make another
        if self._running is not None:
            raise TerminalError(f"step.{kind}({id!r}) inside step.run({self._running!r}): a step's function cannot make steps")
        if not isinstance(id, str) or not id:
            raise ValueError(f"id: must be a non-empty string (got {id!r})")
        count = self._seen[id] = self._seen.get(id, 0) + 1
        step_id = id if count == 1 else f"{id}:{count}"
        if len(step_id) > 128:
            raise ValueError(f"id: must be at most 128 characters (got {step_id!r})")
        if step_id in self._used:
            raise ValueError(f"id: {step_id!r} names two calls of this run (a repeated {id.rsplit(':', 1)[0]!r} is numbered so)")
        self._used.add(step_id)
        retried = self._retry.get("id") if self._retry else None
        if retried is not None and step_id != retried and step_id not in self._steps:
            # the engine fails a run whose retry is answered by another call: refuse before it runs a side effect
            message = f"the engine retries step {retried!r}; the handler's next call is step.{kind}({step_id!r})"
            self._stop({"op": "fail", "error": {"name": "NonDeterminismError", "message": message}})
        return step_id

    def _recorded(self, step_id: str) -> Any:
        memo = self._steps[step_id]
        if "error" in memo:
            error = memo["error"] if isinstance(memo["error"], Mapping) else {}
            raise StepError(str(error.get("name", "Error")), str(error.get("message", "")), step_id)
        return memo.get("data")

    def _stop(self, command: dict[str, Any]) -> NoReturn:
        self._command = command
        raise _Stop()


class Functions:
    """
    The durable functions of one endpoint, checked with one secret (the one `POST /functions` gave).

        fn = Functions(secret="…")

        @fn.function("onboard")
        def onboard(input, step): ...

        fn.serve(host="127.0.0.1", port=9000)
    """

    def __init__(self, secret: str) -> None:
        if not isinstance(secret, str) or not secret:
            raise ValueError("secret: must be the function's HMAC secret")
        self._key = secret.encode()
        self.handlers: dict[str, Handler] = {}

    def function(self, name: str) -> Callable[[H], H]:
        """Registers the decorated `handler(input, step)` as function `name`; its return value is the run's output."""
        if not _NAME.match(name):
            raise ValueError(f"name: must be 1-64 of A-Z a-z 0-9 . _ -, starting with a letter (got {name!r})")

        def register(handler: H) -> H:
            if name in self.handlers:
                raise ValueError(f"name: {name!r} already has a handler")
            self.handlers[name] = handler
            return handler

        return register

    def handle(self, body: bytes, headers: Mapping[str, str]) -> Response:
        """One call, in any web framework: the raw body and the headers in, `(status, headers, body)` out."""
        refused = self._verify(body, _header(headers, "runledger-signature"))
        if refused:
            return _answer(401, {"error": {"code": "unauthorized", "message": refused}})
        try:
            call = json.loads(body)
        except ValueError as error:
            return _invalid([("body", f"not JSON: {error}")])
        if not isinstance(call, dict):
            return _invalid([("body", "must be a JSON object")])
        problems = _problems(call)
        if problems:
            return _invalid(problems)
        handler = self.handlers.get(call["function"])
        if handler is None:
            return _answer(404, {"error": {"code": "not_found", "message": f"function {call['function']!r} is not served here"}})
        return _answer(200, _run(handler, call))

    def server(self, host: str = "127.0.0.1", port: int = 0, *, verbose: bool = False) -> ThreadingHTTPServer:
        """An HTTP server answering POST on any path with `handle`; its port is `server.server_address[1]`."""
        functions = self

        class Endpoint(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                try:
                    length = int(self.headers.get("content-length") or 0)
                except ValueError:
                    length = -1
                if length < 0:
                    self._send(_invalid([("content-length", "must be a number of bytes")]))
                elif length > MAX_BODY:
                    self.close_connection = True
                    self._send(_answer(413, {"error": {"code": "payload_too_large", "message": f"the body is over {MAX_BODY} bytes"}}))
                else:
                    self._send(functions.handle(self.rfile.read(length), dict(self.headers.items())))

            def _send(self, response: Response) -> None:
                status, headers, body = response
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                if verbose:
                    super().log_message(format, *args)

        return ThreadingHTTPServer((host, port), Endpoint)

    def serve(self, host: str = "127.0.0.1", port: int = 9000, *, verbose: bool = False) -> None:
        """Serves until interrupted, like `serve_forever()`; each call runs in a thread of its own."""
        with self.server(host, port, verbose=verbose) as server:
            server.serve_forever()

    def _verify(self, body: bytes, header: str | None) -> str | None:
        if not header:
            return "runledger-signature: missing"
        parts: dict[str, list[str]] = {}
        for part in header.split(","):
            key, _, value = part.strip().partition("=")
            parts.setdefault(key, []).append(value)
        stamp, signatures = (parts.get("t") or [""])[0], parts.get("v1", [])
        if not (stamp.isascii() and stamp.isdigit()) or not signatures:
            return "runledger-signature: must be t=<unix seconds>,v1=<hex HMAC-SHA256>"
        expected = hmac.new(self._key, f"{stamp}.".encode() + body, hashlib.sha256).hexdigest()
        if not any(hmac.compare_digest(expected.encode(), signature.lower().encode()) for signature in signatures):
            return "runledger-signature: does not match the body (another secret, or an altered body)"
        if abs(time.time() - int(stamp)) > TOLERANCE_S:
            return f"runledger-signature: t={stamp} is more than {TOLERANCE_S} s from this clock (a replay, or a clock astray)"
        return None


def _run(handler: Handler, call: dict[str, Any]) -> dict[str, Any]:
    step = Step(call["run_id"], call.get("steps") or {}, call.get("step"))
    try:
        output = handler(call.get("input"), step)
    except _Stop:
        pass
    except StepError as error:
        if step._command is None:
            return {"op": "fail", "error": {"name": error.name, "message": error.message}}
    except Exception as error:
        if step._command is None:
            return {"op": "fail", "error": _error(error)}
    # a handler that swallowed its stop (`except BaseException`) still ends with the command it reached
    if step._command is not None:
        return _checked(step._command, f"step {step._command.get('id')!r}")
    return _checked({"op": "finish", "data": output}, "the function's return value")


def _checked(command: dict[str, Any], what: str) -> dict[str, Any]:
    try:
        size = len(json.dumps(command, allow_nan=False).encode())
    except (TypeError, ValueError) as error:
        return {"op": "fail", "error": {"name": type(error).__name__, "message": f"{what}: not JSON ({error})"}}
    if size > MAX_COMMAND:
        # the engine would fail the run all the same, without naming the step
        message = f"{what}: its command is {size} bytes of JSON, over the {MAX_COMMAND // 1024} KiB the engine takes"
        return {"op": "fail", "error": {"name": "ValueError", "message": f"{message} (keep a large value in a store)"}}
    return command


def _problems(call: dict[str, Any]) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    if call.get("protocol", PROTOCOL) != PROTOCOL:
        problems.append(("protocol", f"this SDK speaks protocol {PROTOCOL} (got {call.get('protocol')!r})"))
    if not isinstance(call.get("function"), str):
        problems.append(("function", "must be a string"))
    if not isinstance(call.get("run_id"), str) or not call["run_id"]:
        problems.append(("run_id", "must be a non-empty string"))
    steps = call.get("steps")
    if steps is not None and not (isinstance(steps, dict) and all(isinstance(memo, dict) for memo in steps.values())):
        problems.append(("steps", "must be an object of {data} or {error}, by step id"))
    retry = call.get("step")
    if retry is not None and not (isinstance(retry, dict) and isinstance(retry.get("id"), str) and isinstance(retry.get("attempt", 1), int)):
        problems.append(("step", "must be {id, attempt}"))
    return problems


def _duration(duration: Duration, name: str) -> str | int:
    if to_ms(duration, name) > MAX_SLEEP_MS:
        raise ValueError(f"{name}: must be at most 365 days (got {duration!r})")
    return wire(duration, name)


def _error(error: BaseException) -> dict[str, str]:
    return {"name": type(error).__name__, "message": str(error)}


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value


def _invalid(problems: list[tuple[str, str]]) -> Response:
    message = "; ".join(f"{path}: {problem}" for path, problem in problems)
    return _answer(400, {"error": {"code": "validation", "message": message, "problems": [{"path": p, "message": m} for p, m in problems]}})


def _answer(status: int, body: dict[str, Any]) -> Response:
    return status, {"content-type": "application/json", "runledger-protocol": str(PROTOCOL)}, json.dumps(body).encode()
