"""`green-agent worker`: a process that runs trials of queued assessments and serves no API.

Any number of them (and of `serve` processes, which run a worker too unless `--no-worker`) share one
PostgreSQL database. SIGTERM or SIGINT stops it gracefully: running trials get `worker_shutdown_grace_s`,
then go back to the queue for another worker.
"""

from __future__ import annotations

import asyncio
import logging
import signal

from api.runtime.runtime import open_runtime, resume, worker_name
from api.settings import Settings

logger = logging.getLogger(__name__)


async def serve_worker(settings: Settings, stop: asyncio.Event) -> None:
    async with open_runtime(settings, worker=True) as runtime:
        if settings.resume_on_start:
            await resume(runtime)
        logger.info(
            "worker %s running on %s (%d trials at once)",
            worker_name(),
            settings.database_url_for_display(),
            runtime.service.queue.settings.worker_concurrency,
        )
        await stop.wait()
        logger.info("worker %s stopping", worker_name())


def run_worker(settings: Settings) -> int:
    import uvloop

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await serve_worker(settings, stop)

    uvloop.run(main())
    return 0
