"""The client's requests and its reading of the server's answers, against an in-process fake server."""

from __future__ import annotations

import sys
import unittest
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_server import FakeQueueServer  # noqa: E402

from runledger import ApiError, Client, LeaseLost, to_ms  # noqa: E402


class RequestShapes(unittest.TestCase):
    def test_enqueue_sends_the_protocol_header_json_and_only_the_fields_given(self) -> None:
        with FakeQueueServer() as fake:
            task, created = fake.client().enqueue("email", {"to": "ada"}, idempotency_key="k1", ordering_key="acct-1", priority=5, delay="2s", max_attempts=4)
            self.assertTrue(created)
            self.assertEqual(task["payload"], {"to": "ada"})
            [request] = fake.requests
            self.assertEqual(request["path"], "/queues/email/tasks")
            self.assertEqual(request["headers"]["runledger-protocol"], "1")
            self.assertEqual(request["headers"]["content-type"], "application/json")
            self.assertNotIn("authorization", {k.lower() for k in request["headers"]})
            self.assertEqual(request["body"], {"payload": {"to": "ada"}, "idempotency_key": "k1", "ordering_key": "acct-1", "priority": 5, "delay": "2s", "max_attempts": 4})

    def test_a_token_goes_as_a_bearer_and_names_are_escaped_in_the_path(self) -> None:
        with FakeQueueServer() as fake:
            fake.client(fake.url + "/", token="s3cret").enqueue("mail/high priority", None, run_at=datetime(2030, 1, 2, tzinfo=timezone.utc))
            [request] = fake.requests
            self.assertEqual(request["headers"]["authorization"], "Bearer s3cret")
            self.assertEqual(request["path"], "/queues/mail%2Fhigh%20priority/tasks")
            self.assertEqual(request["body"], {"payload": None, "run_at": "2030-01-02T00:00:00+00:00"})

    def test_delay_and_run_at_together_are_refused_before_anything_is_sent(self) -> None:
        with FakeQueueServer() as fake:
            with self.assertRaisesRegex(ValueError, "delay"):
                fake.client().enqueue("q", 1, delay="1s", run_at="2030-01-01T00:00:00Z")
            with self.assertRaisesRegex(ValueError, "delay"):
                fake.client().enqueue("q", 1, delay="soon")
            self.assertEqual(fake.requests, [])

    def test_enqueue_many_sends_one_batch_and_answers_in_order(self) -> None:
        with FakeQueueServer() as fake:
            answers = fake.client().enqueue_many("q", [{"payload": 1}, {"payload": 2, "idempotency_key": "two", "delay": timedelta(seconds=3)}])
            self.assertEqual([(t["payload"], created) for t, created in answers], [(1, True), (2, True)])
            self.assertEqual(fake.requests[0]["body"], {"tasks": [{"payload": 1}, {"payload": 2, "idempotency_key": "two", "delay": 3000}]})

    def test_claim_heartbeat_complete_and_fail_carry_the_lease_token(self) -> None:
        with FakeQueueServer() as fake:
            client = fake.client()
            client.enqueue_many("q", [{"payload": "a"}, {"payload": "b"}])
            first, second = client.claim("q", worker="w1", max=5, wait="100ms", lease="30s")
            self.assertEqual(fake.calls("/claim")[0]["body"], {"worker": "w1", "max": 5, "wait": "100ms", "lease": "30s"})
            self.assertRegex(client.heartbeat(first["id"], first["lease_token"]), r"^\d{4}-\d\d-\d\dT")
            self.assertEqual(client.complete(first["id"], first["lease_token"], {"ok": True})["state"], "completed")
            self.assertEqual(fake.calls("/complete")[0]["body"], {"lease_token": first["lease_token"], "result": {"ok": True}})
            self.assertEqual(client.fail(second["id"], second["lease_token"], "boom", retryable=False, retry_after="5s")["state"], "dead")
            self.assertEqual(fake.calls("/fail")[0]["body"], {"lease_token": second["lease_token"], "error": "boom", "retryable": False, "retry_after": "5s"})

    def test_complete_many_sends_one_request_and_answers_each_task_on_its_own(self) -> None:
        with FakeQueueServer() as fake:
            client = fake.client()
            client.enqueue_many("q", [{"payload": "a"}, {"payload": "b"}])
            first, second = client.claim("q", worker="w1", max=2)
            outcomes = client.complete_many([(first["id"], first["lease_token"], {"n": 1}), (second["id"], "stale-token", None), ("t9999", "x", 3)])
            [request] = fake.calls("/tasks/complete")
            self.assertEqual(request["body"], {"completions": [{"id": first["id"], "lease_token": first["lease_token"], "result": {"n": 1}}, {"id": second["id"], "lease_token": "stale-token", "result": None}, {"id": "t9999", "lease_token": "x", "result": 3}]})
            self.assertEqual([o.id for o in outcomes], [first["id"], second["id"], "t9999"])
            assert outcomes[0].task is not None
            self.assertEqual((outcomes[0].task["state"], outcomes[0].task["result"], outcomes[0].error), ("completed", {"n": 1}, None))
            self.assertIsInstance(outcomes[1].error, LeaseLost)
            self.assertEqual((outcomes[1].task, outcomes[1].error and outcomes[1].error.status), (None, 409))
            self.assertNotIsInstance(outcomes[2].error, LeaseLost)
            self.assertEqual(outcomes[2].error and (outcomes[2].error.status, outcomes[2].error.code), (404, "not_found"))
            self.assertEqual([t["state"] for t in fake.tasks.values()], ["completed", "running"])

    def test_complete_many_sends_nothing_for_none_and_refuses_more_than_1000(self) -> None:
        with FakeQueueServer() as fake:
            client = fake.client()
            self.assertEqual(client.complete_many([]), [])
            with self.assertRaisesRegex(ValueError, "completions: at most 1000"):
                client.complete_many([(f"t{n}", "x", None) for n in range(1001)])
            self.assertEqual(fake.requests, [])

    def test_one_keep_alive_connection_serves_a_thread_s_requests(self) -> None:
        with FakeQueueServer() as fake:
            client = fake.client()
            for n in range(20):
                client.enqueue("q", n)
            self.assertEqual(len(fake.peers), 1)


class ErrorMapping(unittest.TestCase):
    def test_a_stale_token_is_lease_lost(self) -> None:
        with FakeQueueServer() as fake:
            client = fake.client()
            client.enqueue("q", 1)
            [task] = client.claim("q", worker="w")
            with self.assertRaises(LeaseLost) as caught:
                client.complete(task["id"], "not-the-token")
            self.assertEqual((caught.exception.status, caught.exception.code), (409, "lease_lost"))
            self.assertEqual(fake.tasks[task["id"]]["state"], "running")

    def test_a_bad_request_keeps_the_problems_and_names_the_field(self) -> None:
        with FakeQueueServer() as fake:
            fake.override = lambda *_: (400, {"error": {"code": "validation", "message": "bad input", "problems": [{"path": "worker", "message": "required"}]}})
            with self.assertRaises(ApiError) as caught:
                fake.client().claim("q", worker="")
            self.assertNotIsInstance(caught.exception, LeaseLost)
            self.assertEqual(caught.exception.problems, [{"path": "worker", "message": "required"}])
            self.assertIn("worker: required", str(caught.exception))

    def test_other_409s_and_non_json_answers_are_plain_api_errors(self) -> None:
        with FakeQueueServer() as fake:
            fake.override = lambda *_: (409, {"error": {"code": "conflict", "message": "no"}})
            with self.assertRaises(ApiError) as conflict:
                fake.client().enqueue("q", 1)
            self.assertNotIsInstance(conflict.exception, LeaseLost)
            fake.override = lambda *_: (502, b"<html>bad gateway</html>")
            with self.assertRaises(ApiError) as gateway:
                fake.client().enqueue("q", 1)
            self.assertEqual((gateway.exception.status, gateway.exception.code), (502, "http_error"))
            self.assertIn("bad gateway", gateway.exception.message)

    def test_unknown_task_is_404(self) -> None:
        with FakeQueueServer() as fake:
            with self.assertRaises(ApiError) as caught:
                fake.client().heartbeat("nope", "t")
            self.assertEqual(caught.exception.status, 404)


class Durations(unittest.TestCase):
    def test_strings_milliseconds_and_timedeltas(self) -> None:
        self.assertEqual([to_ms("500ms"), to_ms("1.5s"), to_ms("2m"), to_ms(250), to_ms(timedelta(minutes=1))], [500, 1500, 120_000, 250, 60_000])
        for bad in ("5 minutes", -1, 1.5, True):
            with self.assertRaises(ValueError):
                to_ms(bad)  # type: ignore[arg-type]


if __name__ == "__main__":
    unittest.main()
