"""
The agent of brief 000 recording its own lifecycle through runledger: the server records the
invocation; the agent records AGENT_ENTRYPOINT_STARTED, AGENT_BACKGROUND_TASK_STARTED, its nodes
and tool calls, then AGENT_BACKGROUND_TASK_COMPLETED (or _FAILED), which ends the session.

    python3 examples/python/agent_000.py 8090     # then register an HTTP agent with url http://127.0.0.1:8090/

The port is argv[1], else $AGENT_PORT, else 8090 (0: a free one; the line it prints names it). When the
server asks for a bearer token, set $RUNLEDGER_TOKEN. The refund is a high-risk tool call: it waits until
a person approves it (POST /agent/tool-calls/{id}/approve, or `runledger agent approve`).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "clients" / "python"))

from runledger.agent import AgentRun, serve_agent  # noqa: E402


def handle(run: AgentRun) -> None:
    run.lifecycle("AGENT_ENTRYPOINT_STARTED")
    run.lifecycle("AGENT_BACKGROUND_TASK_STARTED")
    with run.node("classify", input=run.input) as node:
        node["output"] = {"intent": "refund"}
    run.progress(50, "classified")
    with run.node("act") as node:
        order = run.tool("lookup_order", {"order": 7}, risk="low", call=lambda i: {"order": i["order"], "total": 40})
        run.checkpoint({"order": order})
        refund = run.tool("issue_refund", {"order": 7, "amount": 40}, risk="high", call=lambda i: {"refund_id": "rf_1"})
        node["output"] = {"refund": refund}
    time.sleep(0.2)
    run.report("success")


if __name__ == "__main__":
    port = int(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("AGENT_PORT", "8090"))
    server = serve_agent(handle, port=port, token=os.environ.get("RUNLEDGER_TOKEN") or None)
    print(f"agent_000 listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()
