"""Sends a worker's completions together: one POST /tasks/complete per batch of finished handlers instead of one each."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from .client import Client, Completion
from .errors import ApiError, LeaseLost
from .heartbeats import Heartbeats

log = logging.getLogger("runledger.worker")


class Completer:
    """
    One thread that sends finished tasks' results. It sends when `size` results wait, when `flush()` asks
    (a claim's batch is all done), or `linger` seconds after the oldest waiting result. A task keeps its
    heartbeat until its completion is sent: a result waiting here never lets the lease run out. A worker
    killed with results waiting loses only those completions; the tasks run again after their lease.
    """

    def __init__(self, client: Client, heartbeats: Heartbeats, size: int, linger: float) -> None:
        self._client = client
        self._heartbeats = heartbeats
        self._size = size
        self._linger = linger
        self._pending: list[tuple[float, str, str, Any]] = []
        self._cond = threading.Condition()
        self._added = 0  # results ever added; a flush waits until _done reaches its count
        self._taken = 0
        self._done = 0
        self._flush_to = 0
        self._closing = False
        self._thread: threading.Thread | None = None
        # a server of protocol 1 from before POST /tasks/complete answers it 404: complete one by one then
        self._one_by_one = False

    def start(self) -> None:
        if self._thread is not None:
            return
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="runledger-complete", daemon=True)
        self._thread.start()

    def add(self, task_id: str, lease_token: str, result: Any) -> None:
        with self._cond:
            self._pending.append((time.monotonic(), task_id, lease_token, result))
            self._added += 1
            self._cond.notify_all()

    def flush(self, wait: bool = True) -> None:
        """Sends what waits now; with `wait`, returns once it is sent (or its sending failed)."""
        with self._cond:
            target = self._flush_to = self._added
            self._cond.notify_all()
            while wait and self._done < target and self._thread is not None:
                self._cond.wait()
        if self._thread is None:
            self._send_all_now()

    def stop(self) -> None:
        """Sends everything still waiting, then ends the thread."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        while True:
            with self._cond:
                batch = self._next()
                if batch is None:
                    return
            self._send(batch)
            with self._cond:
                self._done += len(batch)
                self._cond.notify_all()

    def _next(self) -> list[tuple[float, str, str, Any]] | None:
        # called holding the lock; waits for a batch that is due, None once closing with nothing left
        while True:
            if self._pending:
                due = self._pending[0][0] + self._linger - time.monotonic()
                if self._closing or self._taken < self._flush_to or len(self._pending) >= self._size or due <= 0:
                    batch = self._pending[: self._size]
                    del self._pending[: self._size]
                    self._taken += len(batch)
                    return batch
                self._cond.wait(due)
            elif self._closing:
                return None
            else:
                self._cond.wait()

    def _send_all_now(self) -> None:
        with self._cond:
            batch, self._pending = self._pending, []
            self._taken += len(batch)
        for start in range(0, len(batch), self._size):
            self._send(batch[start : start + self._size])
        with self._cond:
            self._done += len(batch)

    def _send(self, batch: list[tuple[float, str, str, Any]]) -> None:
        try:
            for outcome in self._complete([(task_id, token, result) for _, task_id, token, result in batch]):
                if isinstance(outcome.error, LeaseLost):
                    log.info("task %s: lease lost, another worker has it", outcome.id)
                elif outcome.error is not None:
                    log.warning("task %s: could not complete it (it runs again after its lease): %s", outcome.id, outcome.error)
        except (ApiError, OSError) as error:
            log.warning("%d tasks: could not complete them (they run again after their lease): %s", len(batch), error)
        finally:
            for _, task_id, _, _ in batch:
                self._heartbeats.release(task_id)

    def _complete(self, items: list[tuple[str, str, Any]]) -> list[Completion]:
        if not self._one_by_one:
            try:
                return self._client.complete_many(items)
            except ApiError as error:
                if error.status != 404:
                    raise
                log.info("POST /tasks/complete: not on this server (404), completing one task per request")
                self._one_by_one = True
        outcomes = []
        for task_id, token, result in items:
            try:
                outcomes.append(Completion(task_id, task=self._client.complete(task_id, token, result)))
            except ApiError as error:
                outcomes.append(Completion(task_id, error=error))
        return outcomes
