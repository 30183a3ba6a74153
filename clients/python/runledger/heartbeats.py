"""Keeps the leases of every task a worker holds (claimed, running or waiting its turn in a batch)."""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime

from .client import Client, Task
from .duration import Duration
from .errors import ApiError, LeaseLost

log = logging.getLogger("runledger.worker")


class Heartbeats:
    """
    One thread that heartbeats each held task every lease/3: a task waiting behind others of its batch
    keeps its lease too, so claiming 100 at a time never loses the tail of the batch to another worker.
    """

    def __init__(self, client: Client, lease_ms: int | None, lease: Duration | None) -> None:
        self._client = client
        self._lease_ms = lease_ms
        self._lease = lease
        self._held: dict[str, str] = {}
        self._interval = 10.0 if lease_ms is None else max(0.1, lease_ms / 3000)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._running = False

    def hold(self, task: Task) -> None:
        if self._lease_ms is None:
            # the server's default lease, learned from the claim (loopback or synced clocks assumed)
            remaining = _seconds_until(str(task.get("lease_expires_at", "")))
            if remaining is not None and remaining / 3 < self._interval:
                self._interval = max(0.1, remaining / 3)
                self._wake.set()
        with self._lock:
            self._held[str(task["id"])] = str(task["lease_token"])

    def release(self, task_id: str) -> None:
        with self._lock:
            self._held.pop(task_id, None)

    def start(self) -> None:
        if self._running:
            return
        self._running = True
        self._wake.clear()
        self._thread = threading.Thread(target=self._beat, name="runledger-heartbeat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._running = False
        self._wake.set()  # the thread sees _running False before its next beat
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _beat(self) -> None:
        last = time.monotonic()
        while self._running:
            self._wake.wait(max(0.0, last + self._interval - time.monotonic()))
            self._wake.clear()
            if not self._running:
                return
            # a wake-up for a shorter interval (learned from a claim) waits out that interval, not beats at once
            if time.monotonic() < last + self._interval:
                continue
            last = time.monotonic()
            with self._lock:
                held = list(self._held.items())
            for task_id, token in held:
                try:
                    self._client.heartbeat(task_id, token, self._lease)
                except LeaseLost:
                    self.release(task_id)
                except (ApiError, OSError) as error:
                    log.warning("task %s: heartbeat failed: %s", task_id, error)


def _seconds_until(iso: str) -> float | None:
    try:
        expires = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return None
    return expires.timestamp() - time.time()
