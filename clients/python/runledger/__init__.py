"""
runledger: task workers in Python for a runledger server, over its HTTP task protocol v1.

    from runledger import Client, Worker

    worker = Worker(Client("http://127.0.0.1:8080"))

    @worker.task("email")
    def send(payload, ctx):
        return {"sent": payload["to"]}

    worker.run()
"""

from .client import PROTOCOL, Client, Task
from .duration import Duration, to_ms
from .errors import ApiError, LeaseLost, TerminalError
from .worker import TaskContext, Worker
from .agent import AgentRun, ToolBlocked, serve_agent

__all__ = ["PROTOCOL", "AgentRun", "ApiError", "Client", "Duration", "LeaseLost", "Task", "TaskContext", "TerminalError", "ToolBlocked", "Worker", "serve_agent", "to_ms"]
