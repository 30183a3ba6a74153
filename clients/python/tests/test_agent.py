import unittest

from runledger.agent import AgentRun

INVOCATION = {"session_id": "ses_1", "agent": "a", "input": {"order": 7}, "report_url": "http://s/sessions/ses_1/report", "session_url": "http://s/sessions/ses_1/", "lease_token": "lt_x"}


class AgentRunTest(unittest.TestCase):
    def test_reads_the_invocation(self) -> None:
        run = AgentRun(INVOCATION)
        self.assertEqual((run.session_id, run.input, run.url, run.lease_token), ("ses_1", {"order": 7}, "http://s/sessions/ses_1", "lt_x"))

    def test_names_the_missing_field(self) -> None:
        with self.assertRaisesRegex(ValueError, "invocation.lease_token"):
            AgentRun({k: v for k, v in INVOCATION.items() if k != "lease_token"})

    def test_report_takes_success_or_failed(self) -> None:
        with self.assertRaisesRegex(ValueError, "success or failed"):
            AgentRun(INVOCATION).report("done")


if __name__ == "__main__":
    unittest.main()
