"""Turn cost of several checkouts side by side: `bench.full_assessment` run alternately in each, medians.

On a shared machine the load changes from minute to minute, so comparing a run of one build now with a run of
another later measures the machine. This runs one full assessment per (checkout, database) in turn, round
after round, each in a fresh process of that checkout's own `.venv`, and prints the median of each measure
over the rounds. What is compared is CPU time (getrusage of the green process, /proc of the white agent's),
not wall time.

The numbers are read as soon as the assessment is over, before the process shuts down, so a build whose
process does not exit still gets measured; how long each process took to exit after its run is a column of
its own (`exit s`; `hung` when it had not exited `--exit-timeout` seconds later and was killed).

    .venv/bin/python -m bench.compare_builds --checkout before=/path/to/old/worktree --checkout after=. \\
        --db sqlite --db postgres --rounds 5

Each checkout needs its own `.venv` (`make .venv/bin/.installed` in it) and a `bench/full_assessment.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.tables import print_table

MARK = "COMPARE_BUILDS_RESULT "
# Runs inside the checkout's own interpreter: reports the measured run on stdout as soon as it returns,
# then lets the benchmark shut down as it does.
_SNIPPET = """
import json, sys
import bench.full_assessment as fa
measured = fa.run_measured

async def reporting(green, config, white, **options):
    r = await measured(green, config, white, **options)
    turns = r.a2a_turns
    print(%(mark)r + json.dumps({
        "turns": turns, "trials": len(r.trials), "wall_s": r.wall_s, "green_cpu_s": r.green_cpu_s,
        "white_cpu_s": r.white_cpu_s, "peak_rss": r.green_peak_rss, "rss_before": r.green_rss_before,
    }), flush=True)
    return r

fa.run_measured = reporting
sys.exit(fa.main(sys.argv[1:]))
"""


@dataclass
class Sample:
    green_ms_per_turn: float
    white_ms_per_turn: float
    peak_rss_mib: float
    wall_s: float
    exit_s: float | None
    """Seconds from the end of the run to the process's exit; None when it had to be killed."""

    @property
    def ratio(self) -> float:
        return self.green_ms_per_turn / self.white_ms_per_turn


@dataclass
class Series:
    samples: list[Sample] = field(default_factory=list)


def run_once(checkout: Path, db: str, extra: list[str], exit_timeout_s: float) -> Sample:
    python = checkout / ".venv" / "bin" / "python"
    command = [str(python), "-c", _SNIPPET % {"mark": MARK}, "--db", db, *extra]
    process = subprocess.Popen(
        command,
        cwd=checkout,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    result = None
    for line in process.stdout:
        if line.startswith(MARK):
            result = json.loads(line[len(MARK) :])
            break
    ended = time.monotonic()
    if result is None:
        process.wait()
        raise RuntimeError(f"{checkout} ({db}) exited with {process.returncode} before reporting a run")
    try:
        process.communicate(timeout=exit_timeout_s)
        exit_s: float | None = time.monotonic() - ended
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        exit_s = None
    turns = result["turns"]
    return Sample(
        green_ms_per_turn=1000 * result["green_cpu_s"] / turns,
        white_ms_per_turn=1000 * result["white_cpu_s"] / turns,
        peak_rss_mib=result["peak_rss"] / 2**20,
        wall_s=result["wall_s"],
        exit_s=exit_s,
    )


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}" if values else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--checkout", action="append", required=True, help="NAME=PATH of a checkout with its own .venv"
    )
    parser.add_argument("--db", action="append", choices=["sqlite", "postgres"], help="default: both")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--exit-timeout", type=float, default=60.0, help="seconds a process may take to exit")
    parser.add_argument("extra", nargs="*", help="passed to bench.full_assessment (after --)")
    args = parser.parse_args(argv)
    checkouts = [(name, Path(path).resolve()) for name, path in (c.split("=", 1) for c in args.checkout)]
    databases = args.db or ["sqlite", "postgres"]
    series: dict[tuple[str, str], Series] = {(n, d): Series() for n, _ in checkouts for d in databases}
    for round_no in range(args.rounds):
        # Alternate which build goes first, so that neither always runs on the warmer (or busier) machine.
        order = checkouts if round_no % 2 == 0 else list(reversed(checkouts))
        for db in databases:
            for name, path in order:
                sample = run_once(path, db, args.extra, args.exit_timeout)
                series[(name, db)].samples.append(sample)
                exit_text = "hung" if sample.exit_s is None else f"{sample.exit_s:.1f}"
                print(
                    f"round {round_no + 1} {name:>10} {db:>8}: green {sample.green_ms_per_turn:.2f} ms/turn, "
                    f"white {sample.white_ms_per_turn:.2f}, ratio {sample.ratio:.2f}, "
                    f"peak RSS {sample.peak_rss_mib:.1f} MiB, wall {sample.wall_s:.1f} s, "
                    f"exit {exit_text} s, "
                    f"load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    rows = []
    for (name, db), s in series.items():
        exits = [x.exit_s for x in s.samples if x.exit_s is not None]
        hung = sum(1 for x in s.samples if x.exit_s is None)
        rows.append(
            [
                name,
                db,
                len(s.samples),
                _median([x.green_ms_per_turn for x in s.samples]),
                _median([x.white_ms_per_turn for x in s.samples]),
                _median([x.ratio for x in s.samples]),
                _median([x.peak_rss_mib for x in s.samples]),
                _median([x.wall_s for x in s.samples]),
                f"{_median(exits)}" + (f" ({hung} hung)" if hung else ""),
            ]
        )
    print_table(
        f"bench.full_assessment {' '.join(args.extra)}, medians of alternated runs",
        [
            "build",
            "database",
            "runs",
            "green CPU ms/turn",
            "white CPU ms/turn",
            "green / white",
            "green peak RSS MiB",
            "wall s",
            "exit s after the run",
        ],
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
