"""The fake provider (fake_llm.py) in a process of its own, for benchmarks: the customer and the judge of
the oracle agent (`customer_or_judge`) behind `ProviderRules` given on the command line. It prints
`READY <base_url>` once it serves, answers `GET /fake/stats` with what it answered, and stops on SIGTERM.

    python -m tests.support.fake_provider_process --requests-per-second 5 --max-in-flight 6 --retry-after-s 1
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from typing import get_args

from retail_domain import load_retail_data
from tests.support.fake_llm import ProviderRules, RetryAfterStyle, customer_or_judge, serve_fake_llm

READY = "READY"


async def serve(rules: ProviderRules) -> None:
    data = await asyncio.to_thread(load_retail_data)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with serve_fake_llm(customer_or_judge(data), rules=rules, keep_requests=False) as fake:
        print(f"{READY} {fake.base_url}", flush=True)
        await stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests-per-second", type=int, default=None)
    parser.add_argument("--requests-per-minute", type=int, default=None)
    parser.add_argument("--tokens-per-minute", type=int, default=None)
    parser.add_argument("--max-in-flight", type=int, default=None)
    parser.add_argument("--retry-after", choices=get_args(RetryAfterStyle), default="seconds")
    parser.add_argument("--retry-after-s", type=float, default=None, help="announced wait; default: exact")
    parser.add_argument("--latency-s", type=float, default=0.0)
    parser.add_argument("--outage-from-s", type=float, default=None)
    parser.add_argument("--outage-s", type=float, default=0.0)
    parser.add_argument("--outage", choices=["503", "refuse"], default="503")
    args = parser.parse_args()
    rules = ProviderRules(
        requests_per_second=args.requests_per_second,
        requests_per_minute=args.requests_per_minute,
        tokens_per_minute=args.tokens_per_minute,
        max_in_flight=args.max_in_flight,
        retry_after=args.retry_after,
        retry_after_s=args.retry_after_s,
        latency_s=args.latency_s,
        outage_from_s=args.outage_from_s,
        outage_s=args.outage_s,
        outage=args.outage,
    )
    asyncio.run(serve(rules))


if __name__ == "__main__":
    main()
