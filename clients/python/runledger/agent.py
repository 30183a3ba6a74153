"""
A ledger agent over HTTP (docs/protocol.md, "Ledger agents"): parse the invocation runledger sends,
then write nodes, checkpoints, tool calls, progress and lifecycle events to the session, each
carrying the invocation's lease token (a superseded invocation gets LeaseLost and writes nothing).

    def handle(run: AgentRun) -> None:
        run.lifecycle("AGENT_ENTRYPOINT_STARTED")
        with run.node("classify", input=run.input):
            run.checkpoint({"intent": "refund"})
            run.tool("issue_refund", {"order": 7}, risk="high", call=lambda i: {"refund_id": "rf_1"})
        run.report("success")

    serve_agent(handle, port=8090)   # runledger invokes http://127.0.0.1:8090/
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .errors import ApiError, LeaseLost

PROTOCOL = "1"


class ToolBlocked(Exception):
    """A tool call a person rejected, or whose approval expired: the tool must not run."""

    def __init__(self, call: Mapping[str, Any]) -> None:
        super().__init__(f"tool call {call.get('id')} ({call.get('tool_name')}) was {call.get('approval_status')}")
        self.call = dict(call)


class AgentRun:
    """One invocation of the agent: its session, input and lease token, and the writes to its ledger."""

    def __init__(self, invocation: Mapping[str, Any], token: str | None = None, timeout: float = 70.0) -> None:
        for field in ("session_id", "session_url", "lease_token"):
            if not isinstance(invocation.get(field), str):
                raise ValueError(f"invocation.{field} must be a string (is this runledger's invocation body?)")
        self.session_id: str = invocation["session_id"]
        self.agent: str = str(invocation.get("agent", ""))
        self.input: Any = invocation.get("input")
        self.url: str = invocation["session_url"].rstrip("/")
        self.lease_token: str = invocation["lease_token"]
        self._token = token
        self._timeout = timeout

    @contextmanager
    def node(self, name: str, input: Any = None) -> Iterator[dict[str, Any]]:
        """A node: started on entry, ended on exit with `out["output"]` (its checkpoint), or with the error raised."""
        started = self._post("/nodes", {"name": name, **({"input": input} if input is not None else {})})
        out: dict[str, Any] = {"seq": started["seq"], "attempt": started["attempt"]}
        try:
            yield out
        except BaseException as error:
            self._post(f"/nodes/{started['seq']}/end", {"error": f"{type(error).__name__}: {error}"[:10_000]})
            raise
        self._post(f"/nodes/{started['seq']}/end", {"output": out.get("output")})

    def checkpoint(self, state: Any, node: str | None = None) -> dict[str, Any]:
        return self._post("/checkpoints", {"state": state, **({"node": node} if node is not None else {})})

    def tool(self, name: str, input: Any = None, *, risk: str = "low", call: Callable[[Any], Any] | None = None, approval: bool | None = None, wait: float = 30.0) -> Any:
        """
        Records a tool call; when it is blocked for approval, long-polls the decision (`wait` s per
        poll) and raises ToolBlocked if rejected or expired. Then runs `call(input)` (if given) and
        records its output or error. Returns the output (or the call's record without `call`).
        """
        body: dict[str, Any] = {"tool": name, "risk": risk, "input": input}
        if approval is not None:
            body["approval"] = approval
        record = self._post("/tool-calls", body)
        while record.get("approval_status") == "pending":
            record = self._request("GET", f"/tool-calls/{record['id']}?wait={int(wait * 1000)}", None)
        if record.get("approval_status") in ("rejected", "expired"):
            raise ToolBlocked(record)
        if call is None:
            return record
        try:
            output = call(input)
        except Exception as error:
            self._post(f"/tool-calls/{record['id']}/result", {"error": f"{type(error).__name__}: {error}"[:10_000]})
            raise
        self._post(f"/tool-calls/{record['id']}/result", {"output": output})
        return output

    def result(self, call_id: str, output: Any = None, error: str | None = None) -> dict[str, Any]:
        """The result of a call made with `tool(…)` without `call`."""
        return self._post(f"/tool-calls/{call_id}/result", {"error": error} if error is not None else {"output": output})

    def progress(self, percent: float | None = None, label: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if percent is not None:
            body["percent"] = percent
        if label is not None:
            body["label"] = label
        return self._post("/progress", body)

    def lifecycle(self, status: str, error_message: str | None = None) -> dict[str, Any]:
        """An AGENT_* status of brief 000; AGENT_BACKGROUND_TASK_COMPLETED/FAILED is the session's report."""
        return self._post("/lifecycle", {"status": status, **({"error_message": error_message} if error_message else {})})

    def report(self, status: str, error_message: str | None = None) -> dict[str, Any]:
        """The session's end: "success" or "failed"."""
        if status not in ("success", "failed"):
            raise ValueError(f"status must be success or failed (got {status!r})")
        return self.lifecycle("AGENT_BACKGROUND_TASK_COMPLETED" if status == "success" else "AGENT_BACKGROUND_TASK_FAILED", error_message)

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        return self._request("POST", path, {"lease_token": self.lease_token, **body})

    def _request(self, method: str, path: str, body: Any) -> Any:
        headers = {"content-type": "application/json", "runledger-protocol": PROTOCOL}
        if self._token:
            headers["authorization"] = f"Bearer {self._token}"
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as answer:
                raw = answer.read()
                return json.loads(raw) if raw else None
        except urllib.error.HTTPError as failure:
            raw = failure.read()
            try:
                error = json.loads(raw).get("error", {})
            except ValueError:
                error = {"code": "http", "message": raw.decode(errors="replace")}
            kind = LeaseLost if failure.code == 409 and error.get("code") == "lease_lost" else ApiError
            raise kind(failure.code, str(error.get("code")), str(error.get("message")), error.get("problems")) from None


def serve_agent(handle: Callable[[AgentRun], None], *, host: str = "127.0.0.1", port: int = 0, token: str | None = None) -> ThreadingHTTPServer:
    """
    Serves an agent endpoint: each invocation is acknowledged (202) at once and `handle(run)` runs
    in a thread of its own; an exception it lets out reports the session failed. Returns the
    server (its port is `server.server_address[1]`); call `serve_forever()` on it.
    """

    class Endpoint(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            try:
                run = AgentRun(json.loads(self.rfile.read(length) or b"{}"), token=token)
            except ValueError as error:
                self.send_response(400)
                self.end_headers()
                self.wfile.write(str(error).encode())
                return
            self.send_response(202)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"accepted":true}')
            threading.Thread(target=_run, args=(handle, run), daemon=True).start()

        def log_message(self, format: str, *args: Any) -> None:
            return

    return ThreadingHTTPServer((host, port), Endpoint)


def _run(handle: Callable[[AgentRun], None], run: AgentRun) -> None:
    try:
        handle(run)
    except LeaseLost:
        return  # a newer invocation holds the session: it reports
    except Exception as error:
        try:
            run.report("failed", f"{type(error).__name__}: {error}"[:2000])
        except ApiError:
            pass
