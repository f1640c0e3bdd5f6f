"""`green-agent reference-agent KIND --port P`: serve one of the reference white agents
(green_agent/reference_agents/) until Ctrl-C, to try the service against a known agent.

    oracle     replays each task's gold actions, in every domain (scores 1.0 with the scripted customer, who
               names the domain and the task)
    llm        a plain tool-calling agent on an OpenAI-compatible endpoint (--model, --base-url)
    no_tools   never calls a tool; always answers politely that it cannot help
    garbage    answers every request with bytes that are not A2A
    timeout    answers only after an hour, past any turn timeout
    idle       answers only after a day
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from typing import TYPE_CHECKING, Any, cast

from api.cli.exit_codes import ExitCode
from green_agent.config import LLMEndpoint

if TYPE_CHECKING:
    from green_agent.reference_agents.server import ReferenceKind

# green_agent.reference_agents.server.ReferenceKind, spelt out so that building the parser does not import
# the agents' web stack (a test checks the two agree).
_PROG = "green-agent reference-agent"
REFERENCE_KINDS = ("oracle", "llm", "no_tools", "garbage", "timeout", "idle")


def add_reference_agent_command(commands: Any) -> None:
    parser = commands.add_parser(
        "reference-agent",
        help="serve a reference white agent (oracle, llm, no_tools, garbage, timeout, idle) to try things on",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("kind", choices=REFERENCE_KINDS, help="which agent")
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=9100, help="port (default 9100; 0 = any free port)")
    parser.add_argument(
        "--delay", type=float, default=0.0, help="seconds to wait before each answer (oracle: a slower agent)"
    )
    llm = parser.add_argument_group("the llm agent's model (an OpenAI-compatible endpoint)")
    llm.add_argument("--model", help="model name sent to the endpoint (required for llm)")
    llm.add_argument("--base-url", help="endpoint base URL (default: OPENAI_BASE_URL, else OpenAI's)")
    llm.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the key")


def run_reference_agent(args: argparse.Namespace) -> int:
    llm = None
    if args.kind == "llm":
        if not args.model:
            print(f"{_PROG}: llm needs --model (and --base-url for a local one)", file=sys.stderr)
            return ExitCode.USAGE
        llm = LLMEndpoint(
            model=args.model,
            base_url=args.base_url or os.environ.get("OPENAI_BASE_URL"),
            api_key=os.environ.get(args.api_key_env),
        )
    try:
        asyncio.run(_serve(args.kind, args.host, args.port, llm, args.delay))
    except OSError as exc:  # the port is taken, or the host is not an address of this machine
        print(f"{_PROG}: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return ExitCode.FAILED
    return ExitCode.OK


async def _serve(kind: str, host: str, port: int, llm: LLMEndpoint | None, delay_s: float) -> None:
    from green_agent.domains import DEFAULT_DOMAIN, load_domain
    from green_agent.reference_agents import serve_reference_agent

    # The default domain now (a broken data install says so at once); the oracle loads any other domain
    # through the registry when a customer first names it.
    data = await asyncio.to_thread(load_domain, DEFAULT_DOMAIN)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    agent = serve_reference_agent(
        cast("ReferenceKind", kind), data=data, host=host, port=port, llm=llm, delay_s=delay_s
    )
    async with agent as url:
        print(f"reference agent {kind} serving at {url} (Ctrl-C stops it)", flush=True)
        await stop.wait()
