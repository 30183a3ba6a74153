"""Completions sent together: a claim's batch in one request, and the flush rules (full, claim done, linger)."""

from __future__ import annotations

import sys
import threading
import time
import unittest
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_server import FakeQueueServer  # noqa: E402

from runledger import TaskContext, Worker  # noqa: E402
from runledger.completer import Completer  # noqa: E402
from runledger.heartbeats import Heartbeats  # noqa: E402


class ClaimBatches(unittest.TestCase):
    def test_a_claim_of_100_costs_one_claim_and_one_complete(self) -> None:
        with FakeQueueServer() as fake:
            client = fake.client()
            client.enqueue_many("q", [{"payload": n} for n in range(100)])
            worker = Worker(client, "w1", concurrency=4, linger="1s")  # the linger never fires: the claim's end flushes
            worker.task("q")(lambda payload, ctx: payload * 2)
            self.assertEqual(worker.run_once(), 100)
            self.assertEqual([r["path"] for r in fake.requests[1:]], ["/queues/q/claim", "/tasks/complete"])
            self.assertEqual(sorted(c["result"] for c in fake.requests[-1]["body"]["completions"]), [n * 2 for n in range(100)])
            self.assertEqual({t["state"] for t in fake.tasks.values()}, {"completed"})

    def test_a_finished_task_is_sent_after_the_linger_while_a_slow_one_of_its_claim_runs(self) -> None:
        with FakeQueueServer() as fake:
            client = fake.client()
            client.enqueue_many("q", [{"payload": "fast"}, {"payload": "slow"}])
            worker = Worker(client, "w1", concurrency=2, linger="20ms")
            seen_completed: list[bool] = []

            @worker.task("q")
            def handle(payload: str, ctx: TaskContext) -> str:
                if payload == "slow":
                    deadline = time.monotonic() + 2
                    while fake.tasks["t0001"]["state"] != "completed" and time.monotonic() < deadline:
                        time.sleep(0.01)
                    seen_completed.append(fake.tasks["t0001"]["state"] == "completed")
                return payload

            self.assertEqual(worker.run_once(), 2)
            self.assertEqual(seen_completed, [True], "the fast task's completion went while the slow one ran")
            self.assertEqual([[c["id"] for c in r["body"]["completions"]] for r in fake.calls("/complete")], [["t0001"], ["t0002"]])

    def test_a_server_without_batch_complete_gets_one_request_per_task(self) -> None:
        with FakeQueueServer() as fake:
            fake.batch_complete = False
            client = fake.client()
            client.enqueue_many("q", [{"payload": n} for n in range(3)])
            worker = Worker(client, "w1")
            worker.task("q")(lambda payload, ctx: payload)
            self.assertEqual(worker.run_once(), 3)
            self.assertEqual(worker.run_once(), 0)
            self.assertEqual([r["path"] for r in fake.calls("/complete")], ["/tasks/complete", "/tasks/t0001/complete", "/tasks/t0002/complete", "/tasks/t0003/complete"])
            self.assertEqual([t["result"] for t in fake.tasks.values()], [0, 1, 2])

    def test_a_running_worker_claims_again_while_the_last_claim_s_completions_are_sent(self) -> None:
        with FakeQueueServer() as fake:
            claims_seen_when_first_complete_answered: list[int] = []

            def slow_complete(method: str, path: str, body: Any) -> None:
                if path == "/tasks/complete" and not claims_seen_when_first_complete_answered:
                    time.sleep(0.5)
                    claims_seen_when_first_complete_answered.append(len(fake.calls("/claim")))

            client = fake.client()
            client.enqueue_many("q", [{"payload": n} for n in range(2)])
            fake.override = slow_complete
            worker = Worker(client, "w1", batch=1, wait="100ms")
            worker.task("q")(lambda payload, ctx: payload)
            runner = threading.Thread(target=worker.run)
            runner.start()
            deadline = time.monotonic() + 5
            while {t["state"] for t in fake.tasks.values()} != {"completed"} and time.monotonic() < deadline:
                time.sleep(0.01)
            worker.stop()
            runner.join(5)
            self.assertEqual([t["state"] for t in fake.tasks.values()], ["completed", "completed"])
            self.assertGreaterEqual(claims_seen_when_first_complete_answered[0], 2, "the second claim did not wait for the first claim's completions")

    def test_a_linger_over_60s_is_refused_naming_it(self) -> None:
        with FakeQueueServer() as fake:
            with self.assertRaisesRegex(ValueError, "linger: must be at most 60s"):
                Worker(fake.client(), linger="61s")


class FlushRules(unittest.TestCase):
    def setUp(self) -> None:
        self.fake = FakeQueueServer().__enter__()
        self.addCleanup(self.fake.__exit__)
        self.client = self.fake.client()
        self.client.enqueue_many("q", [{"payload": n} for n in range(7)])
        self.tasks = self.client.claim("q", worker="w", max=7)
        self.heartbeats = Heartbeats(self.client, 5000, None)
        for task in self.tasks:
            self.heartbeats.hold(task)

    def sent(self) -> list[list[str]]:
        return [[c["id"] for c in r["body"]["completions"]] for r in self.fake.calls("/tasks/complete")]

    def test_a_full_batch_goes_at_once_and_the_rest_waits_for_a_flush(self) -> None:
        completer = Completer(self.client, self.heartbeats, size=3, linger=60.0)
        completer.start()
        self.addCleanup(completer.stop)
        for task in self.tasks:
            completer.add(task["id"], task["lease_token"], None)
        deadline = time.monotonic() + 2
        while len(self.sent()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        self.assertEqual(self.sent(), [["t0001", "t0002", "t0003"], ["t0004", "t0005", "t0006"]])
        self.assertEqual(self.held(), ["t0007"], "a task keeps its heartbeat until its completion is sent")
        completer.flush()
        self.assertEqual(self.sent()[2:], [["t0007"]])
        self.assertEqual(self.held(), [])

    def test_stop_sends_what_still_waits(self) -> None:
        completer = Completer(self.client, self.heartbeats, size=100, linger=60.0)
        completer.start()
        completer.add(self.tasks[0]["id"], self.tasks[0]["lease_token"], "r")
        time.sleep(0.1)
        self.assertEqual(self.sent(), [])
        threading.Thread(target=completer.stop).start()
        deadline = time.monotonic() + 2
        while not self.sent() and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual(self.sent(), [["t0001"]])
        self.assertEqual(self.fake.tasks["t0001"]["result"], "r")

    def held(self) -> list[str]:
        return sorted(self.heartbeats._held)




if __name__ == "__main__":
    unittest.main()
