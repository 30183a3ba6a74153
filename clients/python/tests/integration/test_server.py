"""
The SDK against a real `runledger serve` at RUNLEDGER_URL (e2e/python.int.test.ts starts one on SQLite and
on PostgreSQL). Without RUNLEDGER_URL these tests fail: they never skip.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

CLIENT_ROOT = Path(__file__).resolve().parents[2]
REPO = CLIENT_ROOT.parents[1]
sys.path.insert(0, str(CLIENT_ROOT))

from runledger import ApiError, Client, LeaseLost, TaskContext, Worker  # noqa: E402

URL = os.environ.get("RUNLEDGER_URL", "")


def setUpModule() -> None:
    if not URL:
        raise RuntimeError("RUNLEDGER_URL: set it to a running `runledger serve` (e2e/python.int.test.ts does)")


def fresh_queue() -> str:
    return f"py-{uuid.uuid4().hex[:10]}"


def tasks_of(client: Client, queue: str) -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = client.request("GET", f"/tasks?queue={queue}&limit=500")["tasks"]
    return tasks


def until(check: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class Protocol(unittest.TestCase):
    def setUp(self) -> None:
        self.client = Client(URL)
        self.queue = fresh_queue()

    def test_enqueue_is_idempotent_and_a_batch_answers_in_order(self) -> None:
        first, created = self.client.enqueue(self.queue, {"n": 0}, idempotency_key="once", ordering_key="acct-1", priority=3)
        again, created_again = self.client.enqueue(self.queue, {"n": 99}, idempotency_key="once")
        self.assertEqual((created, created_again, again["id"], again["payload"]), (True, False, first["id"], {"n": 0}))
        self.assertEqual((first["state"], first["ordering_key"], first["idempotency_key"], first["priority"]), ("ready", "acct-1", "once", 3))
        batch = self.client.enqueue_many(self.queue, [{"payload": n, "idempotency_key": f"b{n}"} for n in range(3)] + [{"payload": "x", "idempotency_key": "once"}])
        self.assertEqual([(t["payload"], c) for t, c in batch], [(0, True), (1, True), (2, True), ({"n": 0}, False)])
        self.assertEqual(len(tasks_of(self.client, self.queue)), 4)

    def test_claim_heartbeat_complete_fail_and_the_fencing_of_a_stale_token(self) -> None:
        self.client.enqueue_many(self.queue, [{"payload": n} for n in range(3)])
        claimed = self.client.claim(self.queue, worker="py-test", max=10, lease="30s")
        self.assertEqual(sorted(t["payload"] for t in claimed), [0, 1, 2])
        done, dead, retried = sorted(claimed, key=lambda t: t["payload"])
        self.assertRegex(self.client.heartbeat(done["id"], done["lease_token"]), r"^\d{4}-\d\d-\d\dT.*Z$")
        completed = self.client.complete(done["id"], done["lease_token"], {"ok": True})
        self.assertEqual((completed["state"], completed["result"], completed["attempts"]), ("completed", {"ok": True}, 1))
        with self.assertRaises(LeaseLost):
            self.client.complete(done["id"], done["lease_token"], {"ok": "twice"})
        with self.assertRaises(LeaseLost):
            self.client.heartbeat(dead["id"], "not-the-token")
        self.assertEqual(self.client.fail(dead["id"], dead["lease_token"], "bad address", retryable=False)["state"], "dead")
        again = self.client.fail(retried["id"], retried["lease_token"], "upstream 503", retry_after="1s")
        self.assertEqual((again["state"], again["last_error"]), ("ready", "upstream 503"))
        [back] = until(lambda: self.client.claim(self.queue, worker="py-test", wait="5s"), 10, "the retried task")
        self.assertEqual((back["id"], back["attempts"]), (retried["id"], 2))
        states = {t["id"]: t["state"] for t in tasks_of(self.client, self.queue)}
        self.assertEqual(states, {done["id"]: "completed", dead["id"]: "dead", retried["id"]: "running"})

    def test_bad_input_names_the_field_and_unknown_tasks_are_404(self) -> None:
        with self.assertRaises(ApiError) as bad:
            self.client.claim(self.queue, worker="")
        self.assertEqual(bad.exception.status, 400)
        self.assertIn("worker", [p["path"] for p in bad.exception.problems])
        with self.assertRaises(ApiError) as missing:
            self.client.complete("no-such-task", "token")
        self.assertEqual(missing.exception.status, 404)

    def test_every_answer_names_protocol_1_and_another_major_is_refused(self) -> None:
        def post(headers: dict[str, str]) -> tuple[int, str | None, Any]:
            request = urllib.request.Request(f"{URL}/queues/{self.queue}/claim", data=b'{"worker":"w"}', headers={"content-type": "application/json", **headers}, method="POST")
            try:
                with urllib.request.urlopen(request) as response:
                    return response.status, response.headers["runledger-protocol"], json.load(response)
            except urllib.error.HTTPError as error:
                return error.code, error.headers["runledger-protocol"], json.load(error)

        self.assertEqual(post({}), (200, "1", {"tasks": []}))
        status, header, body = post({"runledger-protocol": "2"})
        self.assertEqual((status, header), (400, "1"))
        self.assertIn("runledger-protocol", json.dumps(body))

    def test_a_waiting_claim_is_woken_by_an_enqueue(self) -> None:
        started = time.monotonic()
        threading.Timer(0.5, lambda: Client(URL).enqueue(self.queue, "late")).start()
        claimed = self.client.claim(self.queue, worker="py-test", wait="20s")
        self.assertEqual([t["payload"] for t in claimed], ["late"])
        self.assertLess(time.monotonic() - started, 3.0)


class Workers(unittest.TestCase):
    def test_a_worker_drains_a_queue_with_every_outcome_reported(self) -> None:
        client, queue = Client(URL), fresh_queue()
        client.enqueue_many(queue, [{"payload": n, "idempotency_key": f"k{n}"} for n in range(300)])
        worker = Worker(client, "py-drain", concurrency=4, batch=100)
        keys: list[str] = []

        @worker.task(queue)
        def double(payload: int, ctx: TaskContext) -> int:
            keys.append(ctx.idempotency_key)
            return payload * 2

        while worker.run_once(wait="1s"):
            pass
        tasks = tasks_of(client, queue)
        self.assertEqual([(t["state"], t["attempts"]) for t in tasks], [("completed", 1)] * 300)
        self.assertEqual(sorted(keys), sorted(f"{queue}/{t['id']}" for t in tasks))

    def test_kill_9_mid_task_loses_nothing_and_repeats_no_side_effect(self) -> None:
        client, queue = Client(URL), fresh_queue()
        work = Path(tempfile.mkdtemp(prefix="rl-py-kill-"))
        outbox = work / "outbox.log"
        payloads = [{"to": f"user{n}@example.com", **({"first_attempt_seconds": 120} if n == 5 else {})} for n in range(20)]
        enqueued = client.enqueue_many(queue, [{"payload": p, "idempotency_key": f"mail-{n}"} for n, p in enumerate(payloads)])
        slow_key = f"{queue}/{enqueued[5][0]['id']}"
        env = {**os.environ, "PYTHONPATH": str(CLIENT_ROOT), "RUNLEDGER_URL": URL, "QUEUE": queue, "OUTBOX": str(outbox), "LEASE": "2s", "PYTHONUNBUFFERED": "1"}
        example = str(REPO / "examples" / "python" / "worker.py")

        # the first worker holds its completions (linger 60s) so that kill -9 finds the first five finished, their batch unsent
        holding = f"import runpy, runledger; runledger.Worker.__init__.__kwdefaults__['linger'] = '60s'; runpy.run_path({example!r}, run_name='__main__')"
        first = subprocess.Popen([sys.executable, "-c", holding], env=env, stdout=subprocess.PIPE, text=True)
        assert first.stdout is not None
        until(lambda: f"working on {slow_key} attempt 1" in first.stdout.readline(), 30, "the first worker to start the slow task")
        first.send_signal(signal.SIGKILL)
        first.wait()
        self.assertEqual(len(outbox.read_text().splitlines()), 5, "the tasks before the slow one were sent once")
        self.assertEqual([t["state"] for t in tasks_of(client, queue)], ["running"] * 20, "the batch of five completions died unsent with the worker")

        second = subprocess.Popen([sys.executable, example], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            until(lambda: all(t["state"] == "completed" for t in tasks_of(client, queue)), 30, "every task completed")
        finally:
            second.send_signal(signal.SIGTERM)
            output, _ = second.communicate(timeout=15)
        self.assertEqual(second.returncode, 0, output)
        worked = sorted(line.split(" ")[2] for line in output.splitlines() if line.startswith("working on "))
        self.assertEqual(worked, sorted(f"{queue}/{t['id']}" for t, _ in enqueued), "the second worker ran every task: none was completed")
        self.assertIn(f"working on {slow_key} attempt 2", output)

        sent = [line.split(" ")[0] for line in outbox.read_text().splitlines()]
        self.assertEqual(sorted(sent), sorted(f"{queue}/{t['id']}" for t, _ in enqueued), "each email sent exactly once")
        attempts = {t["id"]: t["attempts"] for t in tasks_of(client, queue)}
        self.assertEqual([attempts[t["id"]] for t, _ in enqueued[:6]], [2] * 6, "the unsent five and the slow task ran twice, the email once")


if __name__ == "__main__":
    unittest.main()
