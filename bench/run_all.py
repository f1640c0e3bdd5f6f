"""Every benchmark, one after the other, each in its own process; prints their tables.

    .venv/bin/python -m bench.run_all            # the sizes the issue asks for (about 10-15 minutes)
    .venv/bin/python -m bench.run_all --quick    # small sizes, about 2-3 minutes: a smoke run

Wall times on a shared machine are only as good as the machine is idle: each table has a column with the CPU
other processes used meanwhile, and this header prints the load average before starting.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time

from bench.procstats import cpu_count

FULL: list[list[str]] = [
    ["bench.domain_bench"],
    ["bench.full_assessment"],
    ["bench.latency_scaling"],
    ["bench.latency_scaling", "--concurrency", "128", "--trials-total", "456"],
    ["bench.memory"],
    ["bench.ui_pages"],
]
QUICK: list[list[str]] = [
    ["bench.domain_bench"],
    ["bench.full_assessment", "--num-tasks", "30", "--trials", "1"],
    ["bench.latency_scaling", "--concurrency", "1", "8", "32", "--waves", "2"],
    ["bench.memory", "--trials", "10", "100"],
    ["bench.ui_pages", "--assessments", "200", "--requests", "5"],
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    args = parser.parse_args(argv)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"# Benchmarks, {now}: Python {platform.python_version()}, {cpu_count()} cores, load {load}")
    failed = []
    for command in QUICK if args.quick else FULL:
        line = " ".join([".venv/bin/python -m", *command])
        print(f"\n## `{line}`", flush=True)
        started = time.perf_counter()
        code = subprocess.run([sys.executable, "-m", *command], check=False).returncode
        print(f"\n({line}: {time.perf_counter() - started:.0f} s, exit {code})", flush=True)
        if code != 0:
            failed.append(line)
    if failed:
        print("failed: " + "; ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
