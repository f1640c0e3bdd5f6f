"""Process-wide memory settings, applied once when a process opens its runtime (before its threads start).

Python's cycle collector runs its youngest generation every 700 allocations of container objects (more
allocated than freed) by default: a trial allocates tens of thousands (messages, JSON, the domain's records)
and frees nearly all of them by reference counting, so most of those collections find nothing: a 114 x 4
telecom assessment made 285 young and 26 middle collections, 85 ms of CPU, against 13 and 22 ms at a
threshold of 10,000 (docs/configuration.md). A larger threshold keeps the collector, with as many objects at
most waiting between two runs, and makes each run longer (4.2 ms at most at 10,000, 7.3 at 50,000: a pause of
the event loop).

glibc's malloc gives each thread that allocates an arena of its own, up to 8 per core, and keeps what an arena
once held. A service process has a few threads that allocate: the event loop, one per SQLite connection
(aiosqlite) and `asyncio.to_thread` workers. Their arenas together held ~3.5 MiB more RSS after a 114 x 4
run than two shared arenas did, for no measurable CPU (docs/benchmarks.md, "Turn cost", Memory): most
allocation happens under the GIL, so the threads seldom contend for an arena.
"""

from __future__ import annotations

import ctypes
import gc
import logging

logger = logging.getLogger(__name__)

M_ARENA_MAX = -8
"""mallopt's parameter number for the arena cap (glibc's malloc.h)."""


def limit_malloc_arenas(arenas: int) -> bool:
    """Cap glibc's malloc arenas for the rest of the process (M_ARENA_MAX, as `MALLOC_ARENA_MAX` does); True
    when the C library took it. 0 leaves its default. Other C libraries (musl) have no such arenas: no-op.
    Arenas created before the call stay, so call it before the process starts threads."""
    if arenas <= 0:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    taken = bool(mallopt(M_ARENA_MAX, arenas))
    if not taken:
        logger.debug("the C library refused a cap of %d malloc arenas", arenas)
    return taken


def tune_garbage_collector(gen0_threshold: int) -> None:
    """Collect the youngest generation every `gen0_threshold` net allocations (the older generations keep
    their ratios); 0 leaves Python's default."""
    if gen0_threshold <= 0:
        return
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(gen0_threshold, gen1, gen2)
