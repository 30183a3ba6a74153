"""
A durable function in Python (docs/protocol.md, "Durable functions"): "onboard" creates an account,
sleeps on a durable timer (SLEEP, default 1s; the run holds nothing meanwhile), then sends a welcome.

    export RUNLEDGER_FUNCTION_SECRET=$(openssl rand -hex 32)
    RUNLEDGER_HTTP_ALLOW=127.0.0.1 npx runledger serve &           # the engine may then call loopback
    PYTHONPATH=clients/python python3 examples/python/function.py &   # prints: listening on 9000
    curl -X POST $RUNLEDGER_URL/functions -H 'content-type: application/json' \
      -d "{\"name\": \"onboard\", \"url\": \"http://127.0.0.1:9000/\", \"secret\": \"$RUNLEDGER_FUNCTION_SECRET\"}"
    curl -X POST $RUNLEDGER_URL/functions/onboard/runs -H 'content-type: application/json' \
      -d '{"input": {"email": "ada@example.com"}}'

Each time a step runs, it appends "<idempotency key> <what>" to the file SIDE_EFFECTS (side-effects.log):
a step runs once however often the engine calls, unless the process dies before its result is journaled.
"""

from __future__ import annotations

import os
from typing import Any

from runledger import Functions, Step, StepContext

fn = Functions(secret=os.environ["RUNLEDGER_FUNCTION_SECRET"])
side_effects = os.environ.get("SIDE_EFFECTS", "side-effects.log")
settle = os.environ.get("SLEEP", "1s")


def record(ctx: StepContext, what: str) -> None:
    with open(side_effects, "a", encoding="utf-8") as log:
        log.write(f"{ctx.idempotency_key} {what}\n")


@fn.function("onboard")
def onboard(input: dict[str, Any], step: Step) -> dict[str, Any]:
    # runs from the top at every call: a side effect goes in step.run, which runs it once and replays its value
    def create_account(ctx: StepContext) -> dict[str, Any]:
        record(ctx, f"create account {input['email']}")
        return {"account": f"acct-{ctx.run_id}"}

    def send_welcome(ctx: StepContext) -> bool:
        record(ctx, f"send welcome to {input['email']}")
        return True

    account = step.run("create-account", create_account)
    step.sleep("settle", settle)
    welcomed = step.run("send-welcome", send_welcome)
    return {**account, "welcomed": welcomed}


if __name__ == "__main__":
    with fn.server("127.0.0.1", int(os.environ.get("PORT", "9000"))) as server:
        print(f"listening on {server.server_address[1]}", flush=True)
        server.serve_forever()
