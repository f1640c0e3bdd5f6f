"""Process measurements read from /proc and getrusage (Linux), so the benchmarks need no psutil.

The green agent runs in the benchmark's own process: its CPU time is `getrusage(RUSAGE_SELF)` (every thread,
including aiosqlite's worker thread and `asyncio.to_thread` work). The white agent runs in a child process
and is read from `/proc/<pid>/stat`, so the two never mix.
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _status_kib(field: str, pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/status has no {field} line")


def rss_bytes(pid: int | str = "self") -> int:
    """Resident set size now."""
    return _status_kib("VmRSS", pid) * 1024


def peak_rss_bytes(pid: int | str = "self") -> int:
    """Highest resident set size since the process started (or since `reset_peak_rss`)."""
    return _status_kib("VmHWM", pid) * 1024


def reset_peak_rss() -> bool:
    """Reset this process's peak RSS to its current RSS (Linux >= 4.0); False when the kernel refuses."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def self_cpu_seconds() -> float:
    """User + system CPU of this process, all threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cpu_seconds(pid: int) -> float:
    """User + system CPU of another process, from /proc/<pid>/stat."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    # The command name (field 2) may hold spaces; the fields after its closing parenthesis are fixed.
    fields = stat[stat.rindex(")") + 2 :].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / _CLOCK_TICKS


def mib(n_bytes: float) -> str:
    return f"{n_bytes / 2**20:.1f}"


def machine_busy_seconds() -> float:
    """CPU seconds every process on the machine has used (all cores), from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / _CLOCK_TICKS


def cpu_count() -> int:
    return len(os.sched_getaffinity(0))


def calibration_ms() -> float:
    """CPU milliseconds of a fixed pure-Python workload (JSON round trips), best of 5.

    Printed with every table: CPU times measured while other processes share the cores come out inflated
    (shared caches, hyperthread siblings), and this number shows by how much when compared across runs."""
    items = [{"id": f"#W{i:07d}", "price": i * 1.25, "tags": ["a", "b", str(i)]} for i in range(200)]
    payload = {"items": items}
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        for _ in range(100):
            json.loads(json.dumps(payload, sort_keys=True))
        best = min(best, time.process_time() - started)
    return best * 1000
