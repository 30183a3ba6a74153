"""A task worker: claims tasks over HTTP, runs their handlers, keeps their leases and reports the outcome."""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .client import Cancelled, Client, Task
from .completer import Completer
from .duration import Duration, to_ms
from .errors import ApiError, LeaseLost, TerminalError
from .heartbeats import Heartbeats

log = logging.getLogger("runledger.worker")

Handler = Callable[[Any, "TaskContext"], Any]
H = TypeVar("H", bound=Handler)


@dataclass
class TaskContext:
    """What a handler knows of its task. `idempotency_key` is the same on every attempt: key side effects with it."""

    task_id: str
    queue: str
    attempt: int
    idempotency_key: str
    task: Task
    lease_token: str
    _client: Client = field(repr=False)
    _lease: Duration | None = field(default=None, repr=False)
    lease_lost: bool = False

    def heartbeat(self) -> str:
        """Extends the lease now (the worker also does so every lease/3); LeaseLost when another worker has the task."""
        try:
            return self._client.heartbeat(self.task_id, self.lease_token, self._lease)
        except LeaseLost:
            self.lease_lost = True
            raise


class Worker:
    """
    Runs handlers for the tasks of one or more queues. At-least-once: a task whose worker dies runs
    again once its lease expires, so handlers key side effects by `ctx.idempotency_key`.

        worker = Worker(Client("http://127.0.0.1:8080"), concurrency=4)

        @worker.task("email")
        def send(payload, ctx):
            return {"sent": mailer.send(payload["to"], key=ctx.idempotency_key)}

        worker.run()  # until SIGTERM/SIGINT or worker.stop(); running handlers finish first

    Results go back together (POST /tasks/complete): when `batch` of them wait, when the claim's tasks are
    all done, or `linger` after the oldest finished; so a claim of 100 costs about 2 requests, not 101.
    Failures are reported one by one, at once.
    """

    def __init__(
        self, client: Client, name: str | None = None, *, concurrency: int = 1, batch: int = 100, wait: Duration = "30s", lease: Duration | None = None, linger: Duration = "10ms"
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency: must be >= 1 (got {concurrency})")
        if not 1 <= batch <= 1000:
            raise ValueError(f"batch: must be 1-1000 (got {batch})")
        if to_ms(wait, "wait") > 60_000:
            raise ValueError(f"wait: must be at most 60s (got {wait!r})")
        if to_ms(linger, "linger") > 60_000:
            raise ValueError(f"linger: must be at most 60s (got {linger!r})")
        self.client = client
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        self.concurrency = concurrency
        self.batch = batch
        self.wait = wait
        self.lease = lease
        self.handlers: dict[str, Handler] = {}
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._claiming: dict[int, Any] = {}
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="runledger-task")
        self._heartbeats = Heartbeats(client, None if lease is None else to_ms(lease, "lease"), lease)
        self._completer = Completer(client, self._heartbeats, batch, to_ms(linger, "linger") / 1000)

    def task(self, queue: str) -> Callable[[H], H]:
        """Registers the decorated `handler(payload, ctx)` for `queue`; its return value is the task's result."""

        def register(handler: H) -> H:
            if queue in self.handlers:
                raise ValueError(f"queue: {queue!r} already has a handler")
            self.handlers[queue] = handler
            return handler

        return register

    def run(self) -> None:
        """Claims and runs tasks until stop() (SIGTERM and SIGINT call it); returns once running handlers have finished."""
        if not self.handlers:
            raise ValueError("handlers: register one with @worker.task(queue) before run()")
        restore = self._install_signals()
        self._heartbeats.start()
        self._completer.start()
        try:
            loops = [threading.Thread(target=self._loop, args=(queue,), name=f"runledger-claim-{queue}") for queue in self.handlers]
            for loop in loops:
                loop.start()
            for loop in loops:
                loop.join()
        finally:
            self._pool.shutdown(wait=True)
            self._completer.stop()
            self._heartbeats.stop()
            restore()

    def run_once(self, wait: Duration | None = None) -> int:
        """One claim of up to `batch` tasks per queue, handled to their end; returns how many were handled."""
        self._heartbeats.start()
        self._completer.start()
        try:
            return sum(self._claim_and_run(queue, wait) for queue in self.handlers)
        finally:
            self._completer.stop()
            self._heartbeats.stop()

    def stop(self) -> None:
        """Stops claiming (a waiting claim ends at once); handlers already running finish and report."""
        self._stopping.set()
        with self._lock:
            claiming = list(self._claiming.values())
        for conn in claiming:
            self.client.cancel(conn)

    def _loop(self, queue: str) -> None:
        while not self._stopping.is_set():
            try:
                # the next claim goes while this one's completions are sent: their heartbeats keep the leases meanwhile
                self._claim_and_run(queue, self.wait, settle=False)
            except Cancelled:
                return
            except (ApiError, OSError) as error:
                log.warning("claim on %s failed: %s", queue, error)
                self._stopping.wait(1.0)

    def _claim_and_run(self, queue: str, wait: Duration | None, settle: bool = True) -> int:
        ident = threading.get_ident()
        with self._lock:
            if self._stopping.is_set():
                return 0
            self._claiming[ident] = self.client.connection()
        try:
            tasks = self.client.claim(queue, worker=self.name, max=self.batch, wait=wait, lease=self.lease)
        finally:
            with self._lock:
                self._claiming.pop(ident, None)
        for task in tasks:
            self._heartbeats.hold(task)
        for done in [self._pool.submit(self._handle, queue, task) for task in tasks]:
            done.result()
        self._completer.flush(wait=settle)
        return len(tasks)

    def _handle(self, queue: str, task: Task) -> None:
        task_id, token = str(task["id"]), str(task["lease_token"])
        ctx = TaskContext(task_id, queue, int(task.get("attempts", task.get("attempt", 1))), f"{queue}/{task_id}", task, token, self.client, self.lease)
        try:
            result = self.handlers[queue](task.get("payload"), ctx)
        except Exception as error:
            self._fail(task_id, token, error)
        else:
            # the completer releases the task's heartbeat once its completion is sent
            self._completer.add(task_id, token, result)

    def _fail(self, task_id: str, token: str, error: Exception) -> None:
        try:
            self.client.fail(task_id, token, _describe(error), retryable=not isinstance(error, TerminalError))
        except LeaseLost:
            log.info("task %s: lease lost, another worker has it", task_id)
        except (ApiError, OSError) as failed:
            log.warning("task %s: could not report its failure (it runs again after its lease): %s", task_id, failed)
        finally:
            self._heartbeats.release(task_id)

    def _install_signals(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        previous = {sig: signal.signal(sig, lambda *_: self.stop()) for sig in (signal.SIGTERM, signal.SIGINT)}

        def restore() -> None:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

        return restore


def _describe(error: BaseException) -> str:
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))[-10_000:]
