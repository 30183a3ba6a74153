"""The worker loop against an in-process fake server: outcomes, leases kept, lease loss, stopping."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import unittest
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_server import FakeQueueServer  # noqa: E402

from runledger import Client, TaskContext, TerminalError, Worker  # noqa: E402


class Outcomes(unittest.TestCase):
    def test_return_values_complete_exceptions_fail_and_terminal_errors_go_dead(self) -> None:
        with FakeQueueServer() as fake:
            client = fake.client()
            client.enqueue_many("q", [{"payload": {"n": 1}}, {"payload": {"n": 2, "raise": "retry"}}, {"payload": {"n": 3, "raise": "terminal"}}])
            worker = Worker(client, "w1", concurrency=2)
            seen: list[tuple[int, str, int]] = []

            @worker.task("q")
            def handle(payload: dict[str, Any], ctx: TaskContext) -> Any:
                seen.append((payload["n"], ctx.idempotency_key, ctx.attempt))
                if payload.get("raise") == "retry":
                    raise RuntimeError("flaky upstream")
                if payload.get("raise") == "terminal":
                    raise TerminalError("bad address")
                return {"doubled": payload["n"] * 2}

            self.assertEqual(worker.run_once(), 3)
            self.assertEqual(sorted(seen), [(1, "q/t0001", 1), (2, "q/t0002", 1), (3, "q/t0003", 1)])
            self.assertEqual(fake.calls("/claim")[0]["body"], {"worker": "w1", "max": 100})
            [sent] = fake.calls("/complete")
            self.assertEqual(sent["path"], "/tasks/complete")
            self.assertEqual([(c["id"], c["result"]) for c in sent["body"]["completions"]], [("t0001", {"doubled": 2})])
            fails = sorted((r["path"], r["body"]["retryable"]) for r in fake.calls("/fail"))
            self.assertEqual(fails, [("/tasks/t0002/fail", True), ("/tasks/t0003/fail", False)])
            self.assertIn("RuntimeError: flaky upstream", fake.tasks["t0002"]["last_error"])
            self.assertEqual([t["state"] for t in fake.tasks.values()], ["completed", "ready", "dead"])

    def test_a_lost_lease_drops_that_task_and_the_rest_of_the_batch_completes(self) -> None:
        with FakeQueueServer() as fake:
            client = fake.client()
            client.enqueue_many("q", [{"payload": "stolen"}, {"payload": "kept"}])
            worker = Worker(client, "w1")

            @worker.task("q")
            def handle(payload: Any, ctx: TaskContext) -> Any:
                if payload == "stolen":
                    fake.tasks[ctx.task_id]["lease_token"] = "taken-by-another-worker"
                return "done"

            self.assertEqual(worker.run_once(), 2)
            self.assertEqual(len(fake.calls("/complete")), 1)
            self.assertEqual(fake.calls("/fail"), [])
            self.assertEqual([(t["state"], t["result"]) for t in fake.tasks.values()], [("running", None), ("completed", "done")])


class Leases(unittest.TestCase):
    def test_every_held_task_of_a_batch_keeps_its_lease_while_the_others_run(self) -> None:
        with FakeQueueServer(lease_s=0.6) as fake:
            client = fake.client()
            client.enqueue_many("q", [{"payload": n} for n in range(4)])
            worker = Worker(client, "w1", concurrency=1, lease="600ms")

            @worker.task("q")
            def handle(payload: int, ctx: TaskContext) -> int:
                time.sleep(0.4)
                return payload

            self.assertEqual(worker.run_once(), 4)
            self.assertEqual([t["state"] for t in fake.tasks.values()], ["completed"] * 4)
            self.assertGreaterEqual(len(fake.calls("/heartbeat")), 4)
            self.assertEqual({r["body"]["lease"] for r in fake.calls("/heartbeat")}, {"600ms"})

    def test_the_lease_length_is_learned_from_the_claim_when_not_given(self) -> None:
        with FakeQueueServer(lease_s=0.6) as fake:
            client = fake.client()
            client.enqueue("q", 1)
            worker = Worker(client, "w1")

            @worker.task("q")
            def handle(payload: int, ctx: TaskContext) -> int:
                time.sleep(1.2)
                return payload

            self.assertEqual(worker.run_once(), 1)
            self.assertEqual(fake.tasks["t0001"]["state"], "completed")


class Stopping(unittest.TestCase):
    def test_stop_ends_a_waiting_claim_at_once(self) -> None:
        with FakeQueueServer() as fake:
            worker = Worker(fake.client(), "w1", wait="30s")
            worker.task("q")(lambda payload, ctx: None)
            runner = threading.Thread(target=worker.run)
            runner.start()
            while not fake.calls("/claim"):
                time.sleep(0.01)
            started = time.monotonic()
            worker.stop()
            runner.join(5)
            self.assertFalse(runner.is_alive())
            self.assertLess(time.monotonic() - started, 1.0)

    def test_sigterm_lets_the_running_handler_finish_and_report(self) -> None:
        with FakeQueueServer() as fake:
            client = fake.client()
            client.enqueue("q", "slow")
            worker = Worker(client, "w1", wait="30s")
            running = threading.Event()

            @worker.task("q")
            def handle(payload: Any, ctx: TaskContext) -> str:
                running.set()
                time.sleep(0.5)
                return "finished"

            threading.Thread(target=lambda: running.wait(5) and os.kill(os.getpid(), signal.SIGTERM)).start()
            worker.run()
            self.assertEqual(fake.tasks["t0001"]["state"], "completed")
            self.assertEqual(fake.tasks["t0001"]["result"], "finished")
            self.assertIs(signal.getsignal(signal.SIGTERM), signal.SIG_DFL)


if __name__ == "__main__":
    unittest.main()
