"""A worker process's share of LLM traffic, for tests of a key shared by processes that do not know of each
other: `python -m tests.support.provider_client URL --requests N ...` sends N chat requests through one
`ChatLLM` (the engine's client, with its own gate, configured with the limits given) and prints a JSON line:
how many were answered, how many failed, and the seconds taken."""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from green_agent.config import LLMEndpoint
from green_agent.core.errors import LLMError
from green_agent.llm.client import ChatLLM, RetryPolicy


async def main(args: argparse.Namespace) -> dict[str, float]:
    endpoint = LLMEndpoint(
        model="fake",
        base_url=args.url,
        max_in_flight=args.max_in_flight,
        requests_per_minute=args.requests_per_minute,
    )
    llm = ChatLLM(endpoint, retry=RetryPolicy(max_retries=args.retries, backoff_s=0.1))
    room = asyncio.Semaphore(args.concurrency)
    answered = failed = 0

    async def one(i: int) -> None:
        nonlocal answered, failed
        async with room:
            try:
                await llm.complete([{"role": "user", "content": f"request {i}"}])
                answered += 1
            except LLMError:
                failed += 1

    began = time.monotonic()
    await asyncio.gather(*(one(i) for i in range(args.requests)))
    await llm.aclose()
    return {"answered": answered, "failed": failed, "seconds": round(time.monotonic() - began, 3)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url")
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-in-flight", type=int, default=None)
    parser.add_argument("--requests-per-minute", type=float, default=None)
    parser.add_argument("--retries", type=int, default=0)
    print(json.dumps(asyncio.run(main(parser.parse_args()))))
