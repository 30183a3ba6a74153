"""One Python worker process draining a queue over the task protocol: `python3 bench/http-drain.py <url> <queue> <count> [concurrency] [linger]`.
Claims 100 at a time and completes them together (the Worker's batching, linger "10ms" unless given); prints {"completed", "seconds", "per_s"} once `count` tasks are completed."""

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clients" / "python"))

from runledger import Client, Worker  # noqa: E402

url, queue, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
client = Client(url)
requests = {"claim": 0, "complete": 0, "other": 0}
send = client.request
completed = 0
finished = 0.0


def counted(method: str, path: str, body: Any = None, timeout: float | None = None) -> Any:
    # how many round trips a claim of 100 costs is the figure batching is about
    global completed, finished
    requests["claim" if path.endswith("/claim") else "complete" if path.endswith("/complete") else "other"] += 1
    answer = send(method, path, body, timeout)
    if path == "/tasks/complete":
        completed += sum(1 for outcome in answer["results"] if "task" in outcome)
        if completed >= count:
            finished = time.perf_counter()
            worker.stop()
    return answer


client.request = counted  # type: ignore[method-assign]
worker = Worker(client, "bench", concurrency=int(sys.argv[4]) if len(sys.argv) > 4 else 8, batch=100, linger=sys.argv[5] if len(sys.argv) > 5 else "10ms")
worker.task(queue)(lambda payload, ctx: None)
start = time.perf_counter()
worker.run()  # the way a worker runs: the next claim goes while the last one's completions are sent
seconds = finished - start
cpu = sum(os.times()[:2])
print(json.dumps({"completed": completed, "seconds": seconds, "per_s": completed / seconds, "python_cpu_seconds": cpu, "requests": requests}))
