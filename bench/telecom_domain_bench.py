"""Micro-benchmark of the telecom domain: what loading the 14 MB task file costs a process (time and RSS, each
way measured in a fresh process: the index this domain keeps, and parsing every task as upstream does), then
a trial environment, a call, the hashes, the gold replay and one trajectory's evaluation.

Run: ``.venv/bin/python -m bench.telecom_domain_bench``. Needs the telecom files (TAU2_TELECOM_DATA_DIR or
`green-agent data install`). Prints tables; asserts nothing about time.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from bench.tables import print_table
from telecom_domain import load_telecom_data

_LOAD = """
import json, resource, sys, time
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS'):
            return int(line.split()[1]) / 1024
import domain_kit, telecom_domain
before = rss()
start = time.perf_counter()
data = telecom_domain.load_data()
if sys.argv[1] == "all":
    parsed = [data.task(task_id) for task_id in data.split("full")]
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "rss_mb": rss() - before,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _fresh_process(mode: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", _LOAD, mode], capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(out.stdout)
    return result


def _per_call(fn: Callable[[], object], repeat: int) -> float:
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        rounds.append((time.perf_counter() - start) / repeat)
    return statistics.median(rounds)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def main() -> None:
    rows = []
    for mode, label in [
        ("index", "load (index; base split parsed)"),
        ("all", "load, then every task of full parsed"),
    ]:
        measured = _fresh_process(mode)
        rows.append(
            (
                label,
                f"{measured['seconds']:.2f} s",
                f"+{measured['rss_mb']:.1f} MB",
                f"{measured['peak_mb']:.1f} MB",
            )
        )
    print_table("Loading telecom in a fresh process", ["what", "time", "RSS kept", "peak RSS"], rows)

    data = load_telecom_data()
    base = data.split("base")
    task_id = base[len(base) // 2]
    task = data.task(task_id)
    calls = [action.to_tool_call() for action in task.gold_actions]
    env = data.new_environment(task_id)
    other = data.split("small")[0]
    rows2 = [
        ("a task of base (kept parsed)", _ms(_per_call(lambda: data.task(task_id), 2000))),
        ("a task outside base (parsed on demand)", _ms(_per_call(lambda: data.task(other), 200))),
        (
            "new_environment(task) (copy, setup, sync)",
            _ms(_per_call(lambda: data.new_environment(task_id), 200)),
        ),
        (
            "a customer call (toggle_data, with the sync)",
            _ms(_per_call(lambda: env.call("toggle_data", {}, "user"), 2000)),
        ),
        (
            "an agent read (get_customer_by_id)",
            _ms(_per_call(lambda: env.call("get_customer_by_id", {"customer_id": "C1001"}), 2000)),
        ),
        ("db_hash() + user_db_hash()", _ms(_per_call(lambda: (env.db_hash(), env.user_db_hash()), 200))),
        (
            "check_environment (replay + assertions)",
            _ms(_per_call(lambda: data.check_environment(task_id, env, calls), 100)),
        ),
    ]
    start = time.perf_counter()
    for tid in base:
        data.gold(tid)
    rows2.append(("gold replay, all 114 base tasks (first time)", f"{time.perf_counter() - start:.2f} s"))
    print_table(f"Telecom per trial ({task_id})", ["operation", "median"], rows2)


if __name__ == "__main__":
    main()
