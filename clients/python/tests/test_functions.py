"""Durable functions: signed calls in, memoized steps replayed, the first new call answered with one command."""

from __future__ import annotations

import hashlib
import hmac
import json
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runledger import Functions, Step, StepContext, StepError, TerminalError  # noqa: E402

SECRET = "s3cret-s3cret-s3cret"


def signed(body: bytes, secret: str = SECRET, at: int | None = None) -> dict[str, str]:
    stamp = str(int(time.time()) if at is None else at)
    digest = hmac.new(secret.encode(), f"{stamp}.".encode() + body, hashlib.sha256).hexdigest()
    return {"content-type": "application/json", "runledger-protocol": "1", "runledger-signature": f"t={stamp},v1={digest}"}


def call(function: str = "onboard", steps: dict[str, Any] | None = None, retry: dict[str, Any] | None = None, input: Any = None) -> bytes:
    body: dict[str, Any] = {"protocol": 1, "function": function, "version": "1", "run_id": "fn-1", "input": input, "steps": steps or {}}
    if retry is not None:
        body["step"] = retry
    return json.dumps(body).encode()


def answer(fn: Functions, body: bytes) -> dict[str, Any]:
    status, headers, raw = fn.handle(body, signed(body))
    assert status == 200, (status, raw)
    assert headers == {"content-type": "application/json", "runledger-protocol": "1"}, headers
    result: dict[str, Any] = json.loads(raw)
    return result


class Steps(unittest.TestCase):
    def setUp(self) -> None:
        self.fn = Functions(secret=SECRET)
        self.ran: list[tuple[str, str, int]] = []

    def step(self, name: str, value: Any) -> Any:
        def run(ctx: StepContext) -> Any:
            self.ran.append((name, ctx.idempotency_key, ctx.attempt))
            return value

        return run

    def test_recorded_steps_return_their_data_without_running_and_the_first_new_one_runs_once(self) -> None:
        @self.fn.function("onboard")
        def onboard(input: Any, step: Step) -> Any:
            user = step.run("load-user", self.step("load-user", {"name": "fresh"}))
            email = step.run("send-email", self.step("send-email", {"sent": True}))
            step.run("never", self.step("never", None))
            return {"user": user, "email": email}

        self.assertEqual(answer(self.fn, call(input={"user": 42})), {"op": "step", "id": "load-user", "data": {"name": "fresh"}})
        self.assertEqual(self.ran, [("load-user", "fn-1:load-user", 1)])
        self.ran.clear()
        result = answer(self.fn, call(steps={"load-user": {"data": {"name": "Ada"}}}))
        self.assertEqual(result, {"op": "step", "id": "send-email", "data": {"sent": True}})
        self.assertEqual(self.ran, [("send-email", "fn-1:send-email", 1)])

    def test_the_handler_returning_finishes_the_run_and_raising_fails_it(self) -> None:
        @self.fn.function("onboard")
        def onboard(input: Any, step: Step) -> Any:
            user = step.run("load-user", self.step("load-user", None))
            if input == "raise":
                raise KeyError("no such plan")
            return {"user": user, "input": input}

        steps = {"load-user": {"data": {"name": "Ada"}}}
        self.assertEqual(answer(self.fn, call(steps=steps, input=7)), {"op": "finish", "data": {"user": {"name": "Ada"}, "input": 7}})
        self.assertEqual(answer(self.fn, call(steps=steps, input="raise")), {"op": "fail", "error": {"name": "KeyError", "message": "'no such plan'"}})
        self.assertEqual(self.ran, [])

    def test_an_error_memo_raises_step_error_which_the_handler_may_catch_or_let_fail_the_run(self) -> None:
        @self.fn.function("onboard")
        def onboard(input: Any, step: Step) -> Any:
            try:
                step.run("charge", self.step("charge", "charged"))
            except StepError as error:
                if input == "catch":
                    return {"declined": error.message, "name": error.name, "step": error.step}
                raise
            return "charged"

        steps = {"charge": {"error": {"name": "CardDeclined", "message": "insufficient funds"}}}
        self.assertEqual(answer(self.fn, call(steps=steps, input="catch")), {"op": "finish", "data": {"declined": "insufficient funds", "name": "CardDeclined", "step": "charge"}})
        self.assertEqual(answer(self.fn, call(steps=steps)), {"op": "fail", "error": {"name": "CardDeclined", "message": "insufficient funds"}})
        self.assertEqual(self.ran, [])

    def test_a_step_that_raises_answers_its_error_retryable_unless_terminal_and_except_exception_cannot_swallow_the_stop(self) -> None:
        @self.fn.function("onboard")
        def onboard(input: Any, step: Step) -> Any:
            def charge(ctx: StepContext) -> Any:
                raise (TerminalError if input == "terminal" else ConnectionError)("card service down")

            try:
                step.run("charge", charge)
            except Exception:
                return "swallowed"
            return "charged"

        self.assertEqual(answer(self.fn, call()), {"op": "step", "id": "charge", "error": {"name": "ConnectionError", "message": "card service down"}, "retryable": True})
        self.assertEqual(answer(self.fn, call(input="terminal")), {"op": "step", "id": "charge", "error": {"name": "TerminalError", "message": "card service down"}, "retryable": False})

    def test_a_retried_step_gets_the_calls_attempt_and_a_new_step_attempt_one(self) -> None:
        @self.fn.function("onboard")
        def onboard(input: Any, step: Step) -> Any:
            step.run("load-user", self.step("load-user", 1))
            return step.run("send-email", self.step("send-email", 2))

        answer(self.fn, call())
        answer(self.fn, call(steps={"load-user": {"data": 1}}, retry={"id": "send-email", "attempt": 3}))
        self.assertEqual(self.ran, [("load-user", "fn-1:load-user", 1), ("send-email", "fn-1:send-email", 3)])

    def test_a_retry_whose_step_is_not_the_handlers_next_call_fails_the_run_without_running_that_call(self) -> None:
        @self.fn.function("onboard")
        def onboard(input: Any, step: Step) -> Any:
            step.run("load-user", self.step("load-user", 1))
            if input == "wait":
                step.wait_for_event("approval")
            return step.run("send-email", self.step("send-email", 2))

        recorded, retry = {"load-user": {"data": 1}}, {"id": "charge", "attempt": 2}
        runs = "the engine retries step 'charge'; the handler's next call is step.run('send-email')"
        refused = {"op": "fail", "error": {"name": "NonDeterminismError", "message": runs}}
        self.assertEqual(answer(self.fn, call(steps=recorded, retry=retry)), refused)
        waits = "the engine retries step 'charge'; the handler's next call is step.wait_for_event('approval')"
        self.assertEqual(answer(self.fn, call(steps=recorded, retry=retry, input="wait"))["error"]["message"], waits)
        self.assertEqual(self.ran, [])  # load-user was recorded, send-email refused: nothing ran

    def test_sleep_wait_and_invoke_answer_their_commands_and_return_their_memos(self) -> None:
        @self.fn.function("onboard")
        def onboard(input: Any, step: Step) -> Any:
            slept = step.sleep("cool-down", "10s")
            step.sleep("short", 1500)
            approval = step.wait_for_event("approval", timeout="1h")
            forever = step.wait_for_event("forever")
            child = step.invoke("welcome", function="welcome", input={"user": 42})
            bare = step.invoke("bare", function="welcome")
            return [slept, approval, forever, child, bare]

        journal: dict[str, Any] = {}
        expected = [
            ("cool-down", {"op": "sleep", "id": "cool-down", "duration": "10s"}, None),
            ("short", {"op": "sleep", "id": "short", "duration": 1500}, None),
            ("approval", {"op": "wait_for_event", "id": "approval", "timeout": "1h"}, {"ok": True}),
            ("forever", {"op": "wait_for_event", "id": "forever"}, None),
            ("welcome", {"op": "child", "id": "welcome", "function": "welcome", "input": {"user": 42}}, {"mailed": 1}),
            ("bare", {"op": "child", "id": "bare", "function": "welcome"}, "out"),
        ]
        for step_id, command, data in expected:
            self.assertEqual(answer(self.fn, call(steps=journal)), command)
            journal[step_id] = {"data": data}
        self.assertEqual(answer(self.fn, call(steps=journal)), {"op": "finish", "data": [None, {"ok": True}, None, {"mailed": 1}, "out"]})

    def test_a_failed_child_raises_step_error(self) -> None:
        @self.fn.function("onboard")
        def onboard(input: Any, step: Step) -> Any:
            return step.invoke("welcome", function="welcome")

        steps = {"welcome": {"error": {"name": "RunFailed", "message": "run fn-2 failed"}}}
        self.assertEqual(answer(self.fn, call(steps=steps)), {"op": "fail", "error": {"name": "RunFailed", "message": "run fn-2 failed"}})

    def test_repeated_ids_are_numbered_per_id(self) -> None:
        @self.fn.function("onboard")
        def onboard(input: Any, step: Step) -> Any:
            return [step.run("fetch", self.step("fetch", n)) if n != 1 else step.run("other", self.step("other", n)) for n in range(4)]

        journal: dict[str, Any] = {}
        for step_id in ("fetch", "other", "fetch:2", "fetch:3"):
            command = answer(self.fn, call(steps=journal))
            self.assertEqual(command["id"], step_id)
            journal[step_id] = {"data": command["data"]}
        self.assertEqual(answer(self.fn, call(steps=journal)), {"op": "finish", "data": [0, 1, 2, 3]})
        self.assertEqual([key for _, key, _ in self.ran], ["fn-1:fetch", "fn-1:other", "fn-1:fetch:2", "fn-1:fetch:3"])

    def test_values_that_are_not_json_fail_the_run_naming_the_step(self) -> None:
        @self.fn.function("onboard")
        def onboard(input: Any, step: Step) -> Any:
            if input == "child":
                step.invoke("welcome", function="welcome", input={1, 2})
            step.run("load-user", lambda ctx: {"at": object()} if input == "step" else 1)
            return float("nan")

        for input, what in (("step", "step 'load-user'"), ("child", "step 'welcome'")):
            result = answer(self.fn, call(input=input))
            self.assertEqual(result["op"], "fail")
            self.assertTrue(result["error"]["message"].startswith(f"{what}: not JSON"), result)
        result = answer(self.fn, call(steps={"load-user": {"data": 1}}))
        self.assertEqual(result["op"], "fail")
        self.assertTrue(result["error"]["message"].startswith("the function's return value: not JSON"), result)

    def test_a_command_over_256_kib_fails_the_run_naming_the_step_and_one_at_the_limit_is_answered(self) -> None:
        @self.fn.function("onboard")
        def onboard(input: Any, step: Step) -> Any:
            return step.run("render", lambda ctx: "x" * input)

        # {"op": "step", "id": "render", "data": "…"} is 42 bytes around the value
        self.assertEqual(answer(self.fn, call(input=256 * 1024 - 42))["op"], "step")
        result = answer(self.fn, call(input=256 * 1024 - 41))
        self.assertEqual(result["op"], "fail")
        over = "step 'render': its command is 262145 bytes of JSON, over the 256 KiB the engine takes"
        self.assertEqual(result["error"], {"name": "ValueError", "message": f"{over} (keep a large value in a store)"})
        result = answer(self.fn, call(input=256 * 1024, steps={"render": {"data": "x" * 256 * 1024}}))
        self.assertTrue(result["error"]["message"].startswith("the function's return value: its command is"), result)

    def test_a_handler_that_swallows_the_stop_still_answers_the_first_command(self) -> None:
        @self.fn.function("onboard")
        def onboard(input: Any, step: Step) -> Any:
            try:
                step.sleep("first", "1s")
            except BaseException:
                step.sleep("second", "1s")  # raises the stop again: a call answers one command
            return "never"

        self.assertEqual(answer(self.fn, call()), {"op": "sleep", "id": "first", "duration": "1s"})

    def test_a_step_inside_a_steps_function_is_a_terminal_error_of_that_step(self) -> None:
        @self.fn.function("onboard")
        def onboard(input: Any, step: Step) -> Any:
            return step.run("outer", lambda ctx: step.run("inner", lambda ctx: 1))

        result = answer(self.fn, call())
        self.assertEqual((result["op"], result["id"], result["retryable"], result["error"]["name"]), ("step", "outer", False, "TerminalError"))

    def test_a_bad_duration_or_id_raises_in_the_handler(self) -> None:
        @self.fn.function("onboard")
        def onboard(input: Any, step: Step) -> Any:
            if input == "duration":
                step.sleep("nap", "forever")
            if input == "long":
                step.sleep("nap", "366d")
            step.run("x" * 129, lambda ctx: 1)

        for input, message in (("duration", "duration: must be a string like"), ("long", "duration: must be at most 365 days"), ("id", "id: must be at most 128")):
            result = answer(self.fn, call(input=input))
            self.assertEqual(result["op"], "fail")
            self.assertIn(message, result["error"]["message"])


class Refusals(unittest.TestCase):
    def setUp(self) -> None:
        self.fn = Functions(secret=SECRET)
        self.fn.function("onboard")(lambda input, step: "done")

    def refused(self, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        status, answered, raw = self.fn.handle(body, headers)
        self.assertEqual(answered["content-type"], "application/json")
        error: dict[str, Any] = json.loads(raw)["error"]
        return status, error

    def test_a_signature_missing_bad_stale_or_of_another_body_is_refused_with_401(self) -> None:
        body = call()
        now = int(time.time())
        cases = {
            "missing": {},
            "malformed": {"runledger-signature": "v1=abc"},
            "another secret": signed(body, secret="another-secret-16"),
            "stale": signed(body, at=now - 301),
            "from the future": signed(body, at=now + 301),
            "not hex": {"runledger-signature": f"t={now},v1=é"},
        }
        for case, headers in cases.items():
            with self.subTest(case):
                status, error = self.refused(body, headers)
                self.assertEqual((status, error["code"]), (401, "unauthorized"))
                self.assertTrue(error["message"].startswith("runledger-signature: "))
        status, error = self.refused(body.replace(b'"input": null', b'"input": 1'), signed(body))
        self.assertEqual((status, error["code"]), (401, "unauthorized"), "a tampered body")
        self.assertEqual(self.fn.handle(body, signed(body, at=now - 295))[0], 200)

    def test_headers_are_matched_whatever_their_case(self) -> None:
        body = call()
        headers = {name.title(): value for name, value in signed(body).items()}
        self.assertEqual(self.fn.handle(body, headers)[0], 200)

    def test_an_unknown_function_is_404_and_a_bad_body_400(self) -> None:
        status, error = self.refused(call(function="nope"), signed(call(function="nope")))
        self.assertEqual((status, error["code"]), (404, "not_found"))
        for body, path in ((b"{not json", "body"), (b"[1]", "body"), (b'{"function": "onboard"}', "run_id"), (json.dumps({"function": "onboard", "run_id": "r", "protocol": 2}).encode(), "protocol")):
            status, error = self.refused(body, signed(body))
            self.assertEqual((status, error["code"], error["problems"][0]["path"]), (400, "validation", path), body)

    def test_names_are_checked_when_registered(self) -> None:
        with self.assertRaises(ValueError):
            self.fn.function("onboard")(lambda input, step: None)
        with self.assertRaises(ValueError):
            self.fn.function("9lives")
        with self.assertRaises(ValueError):
            Functions(secret="")


class Serve(unittest.TestCase):
    def test_a_call_over_a_loopback_socket_and_a_body_over_16_mib_is_413(self) -> None:
        fn = Functions(secret=SECRET)

        @fn.function("onboard")
        def onboard(input: Any, step: Step) -> Any:
            return step.run("double", lambda ctx: input * 2)

        server = fn.server("127.0.0.1", 0)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{server.server_address[1]}/api/runledger"
        try:
            body = call(input=21)
            with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=signed(body), method="POST"), timeout=10) as response:
                self.assertEqual((response.status, response.headers["runledger-protocol"]), (200, "1"))
                self.assertEqual(json.loads(response.read()), {"op": "step", "id": "double", "data": 42})
            body = call(steps={"double": {"data": 42}})
            with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=signed(body), method="POST"), timeout=10) as response:
                self.assertEqual(json.loads(response.read()), {"op": "finish", "data": 42})
            with self.assertRaises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(urllib.request.Request(url, data=body, headers={"content-type": "application/json"}, method="POST"), timeout=10)
            self.assertEqual(refused.exception.code, 401)
            refused.exception.close()
            huge = urllib.request.Request(url, data=b"", headers={"content-length": str(16 * 1024 * 1024 + 1)}, method="POST")
            with self.assertRaises(urllib.error.HTTPError) as too_large:
                urllib.request.urlopen(huge, timeout=10)
            self.assertEqual(json.loads(too_large.exception.read())["error"]["code"], "payload_too_large")
            too_large.exception.close()
        finally:
            server.shutdown()
            server.server_close()
            thread.join(5)


if __name__ == "__main__":
    unittest.main()
