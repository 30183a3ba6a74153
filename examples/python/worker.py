"""
A Python task worker draining the "email" queue of a runledger server (protocol v1, clients/python).

    npx runledger serve &                                        # prints: serving http://127.0.0.1:…
    RUNLEDGER_URL=http://127.0.0.1:8080 PYTHONPATH=clients/python python3 examples/python/worker.py

Each task's email goes to OUTBOX (a file) once, keyed by ctx.idempotency_key, which is the same on every
attempt. Settings: RUNLEDGER_URL, RUNLEDGER_TOKEN, QUEUE (email), OUTBOX (outbox.log), LEASE (the
server's), CONCURRENCY (1); `--drain` exits once a claim finds nothing, else it runs until SIGTERM/SIGINT.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from runledger import Client, TaskContext, TerminalError, Worker

client = Client(os.environ.get("RUNLEDGER_URL", "http://127.0.0.1:8080"), token=os.environ.get("RUNLEDGER_TOKEN"))
worker = Worker(client, concurrency=int(os.environ.get("CONCURRENCY", "1")), lease=os.environ.get("LEASE") or None)
outbox = os.environ.get("OUTBOX", "outbox.log")


def sent_before(key: str) -> bool:
    try:
        with open(outbox, encoding="utf-8") as lines:
            return any(line.split(" ", 1)[0] == key for line in lines)
    except FileNotFoundError:
        return False


@worker.task(os.environ.get("QUEUE", "email"))
def send(payload: dict[str, Any], ctx: TaskContext) -> dict[str, Any]:
    print(f"working on {ctx.idempotency_key} attempt {ctx.attempt}", flush=True)
    if "@" not in str(payload.get("to", "")):
        raise TerminalError(f"to: not an email address ({payload.get('to')!r})")
    if ctx.attempt == 1:
        time.sleep(float(payload.get("first_attempt_seconds", 0)))  # stands in for a slow mail server
    if sent_before(ctx.idempotency_key):
        return {"sent": False, "reason": "sent by an earlier attempt"}
    # O_APPEND: a line is written whole even with several workers on one outbox
    fd = os.open(outbox, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{ctx.idempotency_key} {payload['to']}\n".encode())
    finally:
        os.close(fd)
    return {"sent": True}


if __name__ == "__main__":
    if "--drain" in sys.argv[1:]:
        while worker.run_once(wait="1s"):
            pass
    else:
        worker.run()
