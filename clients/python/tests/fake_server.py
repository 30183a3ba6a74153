"""A stdlib HTTP server speaking the task protocol v1 in memory, for the SDK's unit tests (the real server is in integration/)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from runledger import Client

Answer = tuple[int, Any]


class FakeQueueServer:
    """Tasks, leases with tokens that expire, fencing by token, and a log of every request it saw."""

    def __init__(self, lease_s: float = 5.0) -> None:
        self.lease_s = lease_s
        self.tasks: dict[str, dict[str, Any]] = {}
        self.requests: list[dict[str, Any]] = []
        self.peers: set[tuple[str, int]] = set()
        self.override: Callable[[str, str, Any], Answer | None] | None = None
        self.lock = threading.Condition()
        self.clients: list[Client] = []
        self.batch_complete = True  # False: a server from before POST /tasks/complete (it answers 404)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                fake.peers.add(self.client_address)
                fake.requests.append({"method": "POST", "path": self.path, "headers": dict(self.headers.items()), "body": body})
                status, answer = (fake.override and fake.override("POST", self.path, body)) or fake.answer(self.path, body)
                data = json.dumps(answer).encode() if not isinstance(answer, bytes) else answer
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("runledger-protocol", "1")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeQueueServer:
        self.thread.start()
        return self

    def client(self, url: str | None = None, **options: Any) -> Client:
        """A client of this server, closed with it."""
        client = Client(url or self.url, **options)
        self.clients.append(client)
        return client

    def __exit__(self, *exc: Any) -> None:
        for client in self.clients:
            client.close()
        self.server.shutdown()
        self.server.server_close()

    def calls(self, suffix: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith(suffix)]

    def answer(self, path: str, body: Any) -> Answer:
        parts = path.strip("/").split("/")
        with self.lock:
            if parts[0] == "queues" and parts[2] == "tasks":
                items = body["tasks"] if "tasks" in body else [body]
                made = [{"task": self.add(parts[1], item), "created": True} for item in items]
                return (201, {"tasks": made}) if "tasks" in body else (201, made[0])
            if parts[0] == "queues" and parts[2] == "claim":
                return 200, {"tasks": self.claim(parts[1], body)}
            if parts == ["tasks", "complete"] and self.batch_complete:
                return 200, {"results": [self.complete_one(item) for item in body["completions"]]}
            task = self.tasks.get(parts[1])
            if task is None:
                return 404, {"error": {"code": "not_found", "message": f"task {parts[1]} not found"}}
            if task["state"] != "running" or task["lease_token"] != body.get("lease_token") or task["expires"] < time.time():
                return 409, {"error": {"code": "lease_lost", "message": "the lease is not held"}}
            if parts[2] == "heartbeat":
                task["expires"] = time.time() + self.lease_s
                return 200, {"lease_expires_at": _iso(task["expires"])}
            if parts[2] == "complete":
                task.update(state="completed", result=body.get("result"), lease_token=None)
            else:
                dead = body.get("retryable") is False or task["attempts"] >= task["max_attempts"]
                task.update(state="dead" if dead else "ready", last_error=body["error"], lease_token=None)
            self.lock.notify_all()
            return 200, {"task": self.public(task)}

    def complete_one(self, item: dict[str, Any]) -> dict[str, Any]:
        # called holding the lock: one item of POST /tasks/complete, fenced on its own
        task = self.tasks.get(item["id"])
        if task is None:
            return {"id": item["id"], "error": {"code": "not_found", "message": f"task {item['id']} not found"}}
        if task["state"] != "running" or task["lease_token"] != item["lease_token"] or task["expires"] < time.time():
            return {"id": item["id"], "error": {"code": "lease_lost", "message": "the lease is not held"}}
        task.update(state="completed", result=item.get("result"), lease_token=None)
        self.lock.notify_all()
        return {"id": item["id"], "task": self.public(task)}

    def add(self, queue: str, item: dict[str, Any]) -> dict[str, Any]:
        task = {"id": f"t{len(self.tasks) + 1:04d}", "queue": queue, "state": "ready", "payload": item.get("payload"), "attempts": 0, "max_attempts": item.get("max_attempts", 3), "lease_token": None, "expires": 0.0, "result": None, "last_error": None}
        self.tasks[task["id"]] = task
        self.lock.notify_all()
        return self.public(task)

    def claim(self, queue: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        deadline = time.time() + _seconds(body.get("wait", 0))
        while True:
            ready = [t for t in self.tasks.values() if t["queue"] == queue and (t["state"] == "ready" or (t["state"] == "running" and t["expires"] < time.time()))]
            if ready or time.time() >= deadline:
                break
            self.lock.wait(min(0.05, deadline - time.time()))
        claimed = []
        for task in ready[: body.get("max", 1)]:
            task.update(state="running", attempts=task["attempts"] + 1, lease_token=uuid.uuid4().hex, expires=time.time() + self.lease_s)
            claimed.append({**self.public(task), "lease_token": task["lease_token"], "lease_expires_at": _iso(task["expires"])})
        return claimed

    def public(self, task: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in task.items() if k not in ("lease_token", "expires")}


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds * 1000) % 1000:03d}Z"


def _seconds(duration: Any) -> float:
    if isinstance(duration, int):
        return duration / 1000
    value = str(duration)
    return float(value[:-2]) / 1000 if value.endswith("ms") else float(value[:-1])
