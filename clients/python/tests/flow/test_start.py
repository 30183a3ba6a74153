"""
Starting runs from Python against a real `runledger serve` at RUNLEDGER_URL, whose code workflows
(e2e/python-start.int.test.ts registers them) are `py-held` (waits for the signal `go`), `py-two`
(two steps) and `py-chat` (its input). Without RUNLEDGER_URL these tests fail: they never skip.
"""

from __future__ import annotations

import os
import sys
import time
import unittest
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from runledger import ApiError, Client  # noqa: E402

URL = os.environ.get("RUNLEDGER_URL", "")


def setUpModule() -> None:
    if not URL:
        raise RuntimeError("RUNLEDGER_URL: set it to a running `runledger serve` (e2e/python-start.int.test.ts does)")


def until(check: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Start(unittest.TestCase):
    def setUp(self) -> None:
        self.client = Client(URL)
        self.user = f"u-{uuid.uuid4().hex[:8]}"

    def tearDown(self) -> None:
        self.client.close()

    def test_a_run_with_a_priority_and_a_concurrency_limit_waits_its_turn_and_completes(self) -> None:
        limit = {"key": "input.user", "limit": 1}
        first = self.client.start("py-held", {"user": self.user}, priority=10, concurrency=limit)
        second = self.client.start("py-held", {"user": self.user}, priority=-5, concurrency=limit)
        self.assertRegex(first, r"^run_")
        self.assertNotEqual(first, second)
        # the key's one slot is the first run's: the second waits, saying why
        held = until(lambda: self.client.get_run(second).get("waiting_for"), 10, "the second run to wait")
        self.assertRegex(held, r"^concurrency py-held:" + self.user + r" — 1 of 1 in use")
        for run_id in (first, second):
            until(lambda: self.client.get_run(run_id)["status"] == "waiting" and not self.client.get_run(run_id).get("waiting_for"), 10, "the run to wait for its signal")
            self.client.request("POST", f"/runs/{run_id}/signal", {"name": "go", "payload": run_id})
            run = self.client.wait(run_id, timeout="20s")
            self.assertEqual(run["status"], "success")
            self.assertEqual(run["output"], {"user": self.user, "got": run_id})

    def test_an_idempotency_key_returns_the_first_run(self) -> None:
        key = f"py-key-{uuid.uuid4().hex[:8]}"
        first = self.client.start("py-two", {"n": 1}, idempotency_key=key)
        self.assertEqual(self.client.start("py-two", {"n": 2}, idempotency_key=key), first)
        self.assertEqual(self.client.wait(first, timeout="20s")["output"], 3)

    def test_a_budget_fails_the_run_naming_it(self) -> None:
        run_id = self.client.start("py-two", {"n": 1}, budget={"steps": 1})
        run = self.client.wait(run_id, timeout="20s")
        self.assertEqual(run["status"], "failed")
        self.assertIn("budget: 2 of 1 steps", run["error"])

    def test_debounced_starts_of_one_key_are_one_run(self) -> None:
        debounce = {"key": "input.chat", "period": "1h"}
        first = self.client.start("py-chat", {"chat": self.user, "text": "a"}, debounce=debounce)
        self.assertEqual(self.client.start("py-chat", {"chat": self.user, "text": "b"}, debounce=debounce), first)
        self.assertRegex(self.client.get_run(first)["waiting_for"], r"^debounced until \d{4}-")
        self.client.request("POST", f"/runs/{first}/cancel", {"reason": "test over"})

    def test_a_run_not_before_a_time_waits_until_then_and_a_time_too_far_is_refused(self) -> None:
        at = datetime.now(timezone.utc) + timedelta(seconds=1)
        run_id = self.client.start("py-two", {"n": 5}, not_before=at)
        self.assertRegex(self.client.get_run(run_id)["waiting_for"], r"^not before \d{4}-")
        self.assertEqual(self.client.wait(run_id, timeout="30s")["output"], 7)
        with self.assertRaises(ApiError) as raised:
            self.client.start("py-two", {"n": 1}, not_before=datetime.now(timezone.utc) + timedelta(days=400))
        self.assertEqual(raised.exception.status, 400)
        self.assertEqual(raised.exception.problems[0]["path"], "not_before")
        self.assertIn("at most 1 year ahead", raised.exception.problems[0]["message"])

    def test_a_bad_field_raises_the_servers_problem_naming_it(self) -> None:
        with self.assertRaises(ApiError) as raised:
            self.client.start("py-two", {"n": 1}, concurrency={"limit": 0})
        self.assertEqual(raised.exception.status, 400)
        self.assertEqual(raised.exception.problems[0]["path"], "concurrency[0].limit")
        with self.assertRaises(ApiError) as unknown:
            self.client.start("py-nothing", {})
        self.assertEqual(unknown.exception.problems[0]["path"], "workflow")

    def test_wait_raises_timeout_error_when_the_run_has_not_ended(self) -> None:
        run_id = self.client.start("py-held", {"user": self.user})
        with self.assertRaises(TimeoutError):
            self.client.wait(run_id, timeout="300ms")
        self.client.request("POST", f"/runs/{run_id}/cancel", {"reason": "test over"})


if __name__ == "__main__":
    unittest.main()
