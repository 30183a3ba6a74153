"""One Python worker process draining a queue over the task protocol: `python3 bench/http-drain.py <url> <queue> <count> [concurrency] [linger]`.
Claims 100 at a time and completes them together (the Worker's batching, linger "10ms" unless given); prints {"completed", "seconds", "per_s"} once `count` tasks are completed."""

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clients" / "python"))

from runledger import Client, Worker  # noqa: E402

url, queue, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
worker = Worker(Client(url), "bench", concurrency=int(sys.argv[4]) if len(sys.argv) > 4 else 8, batch=100, linger=sys.argv[5] if len(sys.argv) > 5 else "10ms")
worker.task(queue)(lambda payload, ctx: None)
start = time.perf_counter()
completed = 0
while completed < count:
    completed += worker.run_once(wait="5s")
seconds = time.perf_counter() - start
cpu = sum(os.times()[:2])
print(json.dumps({"completed": completed, "seconds": seconds, "per_s": completed / seconds, "python_cpu_seconds": cpu}))
