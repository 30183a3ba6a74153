"""The body `Client.start` sends to POST /runs: snake_case flow options, durations as the API takes them."""

from __future__ import annotations

import sys
import unittest
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runledger.runs import run_body  # noqa: E402


class RunBody(unittest.TestCase):
    def test_only_the_fields_given_are_sent(self) -> None:
        self.assertEqual(run_body("report", {"n": 1}), {"workflow": "report", "input": {"n": 1}})

    def test_flow_options_go_as_the_api_spells_them(self) -> None:
        body = run_body(
            "chat",
            None,
            id="run-1",
            priority=-3,
            concurrency={"key": "input.user", "limit": 1, "on_limit": "drop_newest"},
            throttle={"limit": 10, "period": "1m"},
            debounce={"key": "input.chat", "period": timedelta(seconds=3), "max_wait": 20_000, "mode": "all"},
            budget={"tokens": 40_000, "wall_time": "1h", "on_exceed": "approve"},
        )
        self.assertEqual(
            body,
            {
                "workflow": "chat",
                "input": None,
                "id": "run-1",
                "priority": -3,
                "concurrency": [{"key": "input.user", "limit": 1, "on_limit": "drop_newest"}],
                "throttle": {"limit": 10, "period": "1m"},
                "debounce": {"key": "input.chat", "period": 3000, "max_wait": 20_000, "mode": "all"},
                "budget": {"tokens": 40_000, "wall_time": "1h", "on_exceed": "approve"},
            },
        )

    def test_a_concurrency_limit_alone_is_the_workflows_and_a_list_is_kept(self) -> None:
        self.assertEqual(run_body("w", concurrency=5)["concurrency"], [{"limit": 5}])
        two = [{"key": "input.user", "limit": 1}, {"limit": 50}]
        self.assertEqual(run_body("w", concurrency=two)["concurrency"], two)

    def test_not_before_is_sent_as_ms_for_a_datetime_and_as_given_otherwise(self) -> None:
        at = datetime(2030, 1, 1, 9, 0, tzinfo=timezone.utc)
        self.assertEqual(run_body("w", not_before=at)["not_before"], 1893488400000)
        self.assertEqual(run_body("w", not_before="2030-01-01T09:00:00Z")["not_before"], "2030-01-01T09:00:00Z")
        self.assertEqual(run_body("w", not_before=1893488400000)["not_before"], 1893488400000)
        with self.assertRaisesRegex(ValueError, "^not_before: a datetime needs its timezone"):
            run_body("w", not_before=datetime(2030, 1, 1))
        with self.assertRaisesRegex(ValueError, "^not_before: must be"):
            run_body("w", not_before=True)  # type: ignore[arg-type]

    def test_a_bad_shape_is_refused_naming_the_field_before_anything_is_sent(self) -> None:
        with self.assertRaisesRegex(ValueError, "^priority:"):
            run_body("w", priority="high")  # type: ignore[arg-type]
        with self.assertRaisesRegex(ValueError, "^concurrency:"):
            run_body("w", concurrency="five")  # type: ignore[arg-type]
        with self.assertRaisesRegex(ValueError, "^throttle.period:"):
            run_body("w", throttle={"limit": 1, "period": "soon"})
        with self.assertRaisesRegex(ValueError, "^budget:"):
            run_body("w", budget=[1])  # type: ignore[arg-type]
        with self.assertRaisesRegex(ValueError, "^workflow:"):
            run_body("")


if __name__ == "__main__":
    unittest.main()
