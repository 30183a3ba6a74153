"""
runledger: task workers in Python for a runledger server, over its HTTP task protocol v1.

    from runledger import Client, Worker

    worker = Worker(Client("http://127.0.0.1:8080"))

    @worker.task("email")
    def send(payload, ctx):
        return {"sent": payload["to"]}

    worker.run()

Runs of the server's code workflows: `client.start("report", {"user_id": 42}, priority=10,
concurrency={"key": "input.user_id", "limit": 1})` answers the run id; `client.wait(run_id)` the run once it ended.

Durable functions (`Functions`): a handler behind an HTTP endpoint the engine calls, whose steps
(`step.run`, `step.sleep`, `step.wait_for_event`, `step.invoke`) are journaled, so each runs once;
`fn.serve(port=9000)`, or `fn.handle(body, headers)` in any web framework.
"""

from .client import PROTOCOL, Client, Task
from .duration import Duration, to_ms
from .errors import ApiError, LeaseLost, TerminalError
from .runs import Run
from .functions import Functions, Step, StepContext, StepError
from .worker import TaskContext, Worker
from .agent import AgentRun, ToolBlocked, serve_agent

__all__ = ["PROTOCOL", "AgentRun", "ApiError", "Client", "Duration", "Functions", "LeaseLost", "Run", "Step", "StepContext", "StepError", "Task", "TaskContext", "TerminalError", "ToolBlocked", "Worker", "serve_agent", "to_ms"]
