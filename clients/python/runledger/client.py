"""A client of the runledger task protocol v1: enqueue, claim, heartbeat, complete and fail tasks over HTTP."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlsplit

from .duration import Duration, to_ms, wire
from .errors import ApiError, LeaseLost
from .runs import TERMINAL, Concurrency, Run, run_body

# How a worker's stop() ends a long-poll claim at once: it marks the connection and shuts its socket.
_CANCELLED = "_runledger_cancelled"


class Cancelled(Exception):
    """The request's connection was cancelled by `Client.cancel` (a worker stopping mid-claim)."""

PROTOCOL = "1"

Task = dict[str, Any]
"""A task as the server sends it: id, queue, state, payload, attempt, max_attempts, run_at, … (docs/protocol.md)."""



@dataclass(frozen=True)
class Completion:
    """One task's outcome in `Client.complete_many`: its `task` when completed, else its `error` (LeaseLost, or a 404 ApiError)."""

    id: str
    task: Task | None = None
    error: ApiError | None = None


# A reused keep-alive connection the server closed while idle fails before any answer; only then is a request sent again.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, http.client.CannotSendRequest)


class Client:
    """
    Talks to a runledger server. One keep-alive connection per thread: a connection per request (as
    urllib opens) took 0.79 ms per empty claim on loopback against 0.59 ms kept alive (2,000 each).

        with Client("http://127.0.0.1:8080") as client:
            client.enqueue("email", {"to": "ada@example.com"}, idempotency_key="welcome-ada")
    """

    def __init__(self, url: str, token: str | None = None, timeout: float = 30.0) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"url: must be http(s)://host[:port] (got {url!r})")
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._base = parts.path.rstrip("/")
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns: set[http.client.HTTPConnection] = set()

    def start(
        self,
        workflow: str,
        input: Any = None,
        *,
        id: str | None = None,
        priority: int | None = None,
        concurrency: Concurrency | None = None,
        throttle: Mapping[str, Any] | None = None,
        debounce: Mapping[str, Any] | None = None,
        budget: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        not_before: datetime | str | int | None = None,
    ) -> str:
        """
        Starts a run of a code workflow the server registered (`POST /runs`); returns its run id. The flow options
        replace the workflow's own (docs/flow-control.md), snake_case as the API takes them:

            run_id = client.start("report", {"user_id": 42}, priority=10,
                                  concurrency={"key": "input.user_id", "limit": 1},
                                  budget={"tokens": 40_000, "on_exceed": "approve"})

        `not_before` (a datetime with its timezone, an ISO 8601 string or ms since 1970, at most a year ahead): the run
        waits until then (`waiting_for` "not before …"). The same `id` or `idempotency_key` again returns the first run
        and starts nothing. A bad field raises
        ApiError 400 whose `problems` name it (`concurrency[0].limit`).
        """
        body = run_body(workflow, input, id=id, priority=priority, concurrency=concurrency, throttle=throttle, debounce=debounce, budget=budget, not_before=not_before)
        headers = {} if idempotency_key is None else {"idempotency-key": idempotency_key}
        run_id: str = self.request("POST", "/runs", body, headers=headers)["run_id"]
        return run_id

    def get_run(self, run_id: str) -> Run:
        """One run of any kind (`GET /runs/{id}`): status, output, error, steps, and `waiting_for` while held back."""
        run: Run = self.request("GET", f"/runs/{_segment(run_id)}")
        return run

    def wait(self, run_id: str, timeout: Duration = "30s") -> Run:
        """The run once it has ended (`GET /runs/{id}/wait`); TimeoutError when it has not within `timeout`."""
        deadline = time.monotonic() + to_ms(timeout, "timeout") / 1000
        while True:
            left = max(0, min(round((deadline - time.monotonic()) * 1000), 300_000))
            try:
                answer = self.request("GET", f"/runs/{_segment(run_id)}/wait?timeout={left}", timeout=self.timeout + left / 1000)
            except ApiError as error:
                if error.status != 408:
                    raise
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"run {run_id} has not ended within {timeout}") from None
                continue
            run: Run = answer["run"]
            if run.get("status") in TERMINAL:
                return run

    def enqueue(
        self,
        queue: str,
        payload: Any,
        *,
        idempotency_key: str | None = None,
        ordering_key: str | None = None,
        priority: int | None = None,
        delay: Duration | None = None,
        run_at: datetime | str | None = None,
        max_attempts: int | None = None,
    ) -> tuple[Task, bool]:
        """Adds one task; returns (task, created). created is False when `idempotency_key` was seen before."""
        body = _task_body(payload, idempotency_key=idempotency_key, ordering_key=ordering_key, priority=priority, delay=delay, run_at=run_at, max_attempts=max_attempts)
        answer = self.request("POST", f"/queues/{_segment(queue)}/tasks", body)
        return answer["task"], bool(answer["created"])

    def enqueue_many(self, queue: str, items: Iterable[Mapping[str, Any]]) -> list[tuple[Task, bool]]:
        """Adds up to 1000 tasks in one request, each item `{"payload": …, "idempotency_key"?: …, …}`; answers in order."""
        tasks = [_task_body(**dict(item)) for item in items]
        answer = self.request("POST", f"/queues/{_segment(queue)}/tasks", {"tasks": tasks})
        return [(entry["task"], bool(entry["created"])) for entry in answer["tasks"]]

    def claim(self, queue: str, *, worker: str, max: int = 1, wait: Duration | None = None, lease: Duration | None = None) -> list[Task]:
        """Up to `max` ready tasks, each with `lease_token` and `lease_expires_at`; waits up to `wait` (≤ 60s) for one."""
        body: dict[str, Any] = {"worker": worker, "max": max}
        wait_ms = 0
        if wait is not None:
            body["wait"] = wire(wait, "wait")
            wait_ms = to_ms(wait, "wait")
        if lease is not None:
            body["lease"] = wire(lease, "lease")
        answer = self.request("POST", f"/queues/{_segment(queue)}/claim", body, timeout=self.timeout + wait_ms / 1000)
        tasks: list[Task] = answer["tasks"]
        return tasks

    def heartbeat(self, task_id: str, lease_token: str, lease: Duration | None = None) -> str:
        """Extends the lease; returns the new `lease_expires_at`. LeaseLost when the token no longer holds the task."""
        body: dict[str, Any] = {"lease_token": lease_token}
        if lease is not None:
            body["lease"] = wire(lease, "lease")
        expires: str = self.request("POST", f"/tasks/{_segment(task_id)}/heartbeat", body)["lease_expires_at"]
        return expires

    def complete(self, task_id: str, lease_token: str, result: Any = None) -> Task:
        """Marks the task completed with `result`; LeaseLost (and nothing written) when the token is stale."""
        # result is always sent (null for None): "no result" and null are one thing to the server
        body: dict[str, Any] = {"lease_token": lease_token, "result": result}
        task: Task = self.request("POST", f"/tasks/{_segment(task_id)}/complete", body)["task"]
        return task

    def complete_many(self, completions: Iterable[tuple[str, str, Any]]) -> list[Completion]:
        """
        Completes up to 1000 `(task_id, lease_token, result)` in one request, each fenced on its own: a stale
        token is that task's LeaseLost (nothing written for it) and the others complete. Answers in order.
        """
        items = [{"id": task_id, "lease_token": token, "result": result} for task_id, token, result in completions]
        if not items:
            return []
        if len(items) > 1000:
            raise ValueError(f"completions: at most 1000 per request (got {len(items)})")
        answer = self.request("POST", "/tasks/complete", {"completions": items})
        return [_completion(entry) for entry in answer["results"]]

    def fail(self, task_id: str, lease_token: str, error: str, *, retryable: bool = True, retry_after: Duration | None = None) -> Task:
        """Records a failed attempt: the task is ready again with its next run_at, or dead (not retryable, attempts used up)."""
        body: dict[str, Any] = {"lease_token": lease_token, "error": error[:10_000], "retryable": retryable}
        if retry_after is not None:
            body["retry_after"] = wire(retry_after, "retry_after")
        task: Task = self.request("POST", f"/tasks/{_segment(task_id)}/fail", body)["task"]
        return task

    def request(self, method: str, path: str, body: Any = None, timeout: float | None = None, headers: Mapping[str, str] | None = None) -> Any:
        """One JSON request to the server; a non-2xx answer raises ApiError (LeaseLost for 409 lease_lost)."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"runledger-protocol": PROTOCOL, "accept": "application/json", **(headers or {})}
        if data is not None:
            headers["content-type"] = "application/json"
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        status, raw = self._send(method, self._base + path, data, headers, timeout or self.timeout)
        answer = _parse(raw)
        if 200 <= status < 300:
            return answer
        raise _error(status, answer, raw)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connections of every thread; a later request opens a new one."""
        with self._lock:
            conns, self._conns = self._conns, set()
        for conn in conns:
            conn.close()
        self._local = threading.local()

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
            with self._lock:
                self._conns.discard(conn)

    def connection(self) -> http.client.HTTPConnection:
        """This thread's keep-alive connection (opened if needed), for `cancel` from another thread."""
        return self._connection(self.timeout)[0]

    def cancel(self, conn: http.client.HTTPConnection) -> None:
        """Ends the request running on `conn` (from any thread): it raises Cancelled instead of being sent again."""
        setattr(conn, _CANCELLED, True)
        sock = conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _send(self, method: str, path: str, data: bytes | None, headers: dict[str, str], timeout: float) -> tuple[int, bytes]:
        for attempt in (1, 2):
            conn, reused = self._connection(timeout)
            try:
                conn.request(method, path, body=data, headers=headers)
                response = conn.getresponse()
                raw = response.read()
            except _STALE:
                self._drop()
                if getattr(conn, _CANCELLED, False):
                    raise Cancelled() from None
                if reused and attempt == 1:
                    continue
                raise
            except BaseException:
                self._drop()
                if getattr(conn, _CANCELLED, False):
                    raise Cancelled() from None
                raise
            if response.getheader("connection", "").lower() == "close":
                self._drop()
            return response.status, raw
        raise AssertionError("unreachable")

    def _connection(self, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            conn = kind(self._host, self._port, timeout=timeout)
            self._local.conn = conn
            with self._lock:
                self._conns.add(conn)
            conn.timeout = timeout
            return conn, False
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        return conn, True


def _task_body(
    payload: Any = None,
    *,
    idempotency_key: str | None = None,
    ordering_key: str | None = None,
    priority: int | None = None,
    delay: Duration | None = None,
    run_at: datetime | str | None = None,
    max_attempts: int | None = None,
) -> dict[str, Any]:
    if delay is not None and run_at is not None:
        raise ValueError("delay: give delay or run_at, not both")
    body: dict[str, Any] = {"payload": payload}
    if idempotency_key is not None:
        body["idempotency_key"] = idempotency_key
    if ordering_key is not None:
        body["ordering_key"] = ordering_key
    if priority is not None:
        body["priority"] = priority
    if delay is not None:
        body["delay"] = wire(delay, "delay")
    if run_at is not None:
        body["run_at"] = run_at.isoformat() if isinstance(run_at, datetime) else run_at
    if max_attempts is not None:
        body["max_attempts"] = max_attempts
    return body


def _segment(value: str) -> str:
    if not value:
        raise ValueError("a queue name or task id must not be empty")
    return quote(value, safe="")


def _parse(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _completion(entry: dict[str, Any]) -> Completion:
    error = entry.get("error")
    if not isinstance(error, dict):
        return Completion(str(entry["id"]), task=entry["task"])
    code = str(error.get("code", "http_error"))
    # the status the one-task route answers with the same code, so callers test errors alike either way
    status = {"lease_lost": 409, "not_found": 404}.get(code, 500)
    kind = LeaseLost if code == "lease_lost" else ApiError
    return Completion(str(entry["id"]), error=kind(status, code, str(error.get("message", ""))))


def _error(status: int, answer: Any, raw: bytes) -> ApiError:
    error = answer.get("error") if isinstance(answer, dict) else None
    if not isinstance(error, dict):
        return ApiError(status, "http_error", raw.decode("utf-8", "replace")[:500] or f"HTTP {status}")
    code = str(error.get("code", "http_error"))
    kind = LeaseLost if status == 409 and code == "lease_lost" else ApiError
    return kind(status, code, str(error.get("message", "")), error.get("problems") or [])
