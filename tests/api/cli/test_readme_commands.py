"""Every command of the README runs as written: each `green-agent` command parses with the real command
line, every shell variable it reads is set before (as `ACME_KEY=$(green-agent keys create ...)`), the
offline quick start's export lines are what `local-llm serve` prints, and the shared-service quick start runs
for real in bash on PostgreSQL (tests/local_llm/test_readme_quick_start.py runs the offline one on the
bundled model)."""

from __future__ import annotations

import json
import os
import re
import shlex
import uuid
from pathlib import Path
from typing import Any

import pytest
from alembic.script import ScriptDirectory

from api.cli.local_llm import export_lines
from api.cli.main import build_parser
from api.db.migrate import alembic_config
from green_agent.llm.local import LocalLLMServer, LocalLLMSettings
from tests.api.servers import REPO_ROOT, free_port
from tests.conftest import drop_pg_database
from tests.engine.test_egress import closed_port
from tests.support.readme import command_lines, run_bash, section_script, sections

OFFLINE = "Quick start: assess your own agent"
SHARED = "Quick start: a shared service with API keys and PostgreSQL"
_CAPTURED = re.compile(r"^([A-Z_][A-Z0-9_]*)=\$\((.*)\)$")


def _commands() -> list[str]:
    return [line for blocks in sections().values() for block in blocks for line in command_lines(block)]


def _green_agent_args(line: str) -> list[str] | None:
    """The arguments of a `green-agent` command line (also inside `NAME=$(...)`), else None."""
    words = shlex.split(line, comments=True)
    if not words:
        return None
    captured = _CAPTURED.match(" ".join(words))
    if captured:
        words = shlex.split(captured.group(2))
    if words[-1] == "&":
        words = words[:-1]
    if not words[0].endswith("bin/green-agent"):
        return None
    return words[1:]


def test_every_green_agent_command_of_the_readme_parses() -> None:
    parsed = []
    for line in _commands():
        args = _green_agent_args(line)
        if args is None or args[0] == "replay":  # replay has a parser of its own
            continue
        try:
            namespace, unknown = build_parser().parse_known_args(args)
        except SystemExit:
            pytest.fail(f"the README command does not parse: {line}")
        assert unknown == [], f"unknown options in the README command {line!r}: {unknown}"
        parsed.append(namespace.command)
    # Every quick start's commands are among them.
    assert {"run", "local-llm", "reference-agent", "db", "keys", "serve", "worker", "submission"} <= set(
        parsed
    )


def test_every_shell_variable_the_readme_reads_is_set_before() -> None:
    known = {"HOME", "PATH"}
    for line in _commands():
        used = set(re.findall(r"\$\{?([A-Z_][A-Z0-9_]*)", line.split("#", 1)[0])) - known
        assert not used, f"the README reads {sorted(used)} before setting it: {line}"
        for assignment in re.finditer(r"(?:^|export |\s)([A-Z_][A-Z0-9_]*)=", line):
            known.add(assignment.group(1))


def test_the_offline_quick_start_pastes_what_local_llm_serve_prints() -> None:
    lines = [line for block in sections()[OFFLINE] for line in command_lines(block)]
    server = LocalLLMServer(
        base_url="http://127.0.0.1:8080/v1", model="smollm2-135m", settings=LocalLLMSettings(), _server=None
    )
    printed = export_lines(server)
    assert [line for line in lines if line.startswith("export GREEN_AGENT_")][:3] == printed
    assert "green-agent local-llm serve --port 8080 &" in " ".join(lines)


async def test_the_shared_service_quick_start_runs_in_bash(tmp_path: Path) -> None:
    database, port = f"ga_test_readme_{uuid.uuid4().hex[:12]}", free_port()  # the README creates it
    script = section_script(
        SHARED,
        {
            "-U postgres green\n": f"-U postgres {database}\n",
            "5432/green ": f"5432/{database} ",
            "--host 0.0.0.0": "--host 127.0.0.1",  # tests listen on loopback only
            "9009": str(port),
            "http://127.0.0.1:9019/": f"http://127.0.0.1:{closed_port()}/",  # no agent: it fails, in the list
        },
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GREEN_AGENT_", "DATABASE_URL"))}
    try:
        done = await run_bash(script, cwd=REPO_ROOT, env=env, timeout_s=240, output=tmp_path)
    finally:
        await drop_pg_database(database)
    assert done.code == 0, f"{done.stdout}\n{done.stderr}"
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    upgraded, answers = done.stdout.split("\n", 1)
    assert upgraded.endswith(f": created the tables at revision {head}"), upgraded
    created, acme, everyone = _json_values(answers)
    assert created["status"] in ("queued", "running", "failed") and created["tenant"] == "acme"
    assert [a["id"] for a in acme["data"]] == [created["id"]]  # $ACME_KEY: acme's
    assert [a["id"] for a in everyone["data"]] == [created["id"]]  # $OPS_KEY: the admin's view
    assert "created key" in done.stderr and "for tenant acme (allow-private-agents)" in done.stderr


def _json_values(text: str) -> list[Any]:
    """The JSON documents curl printed one after the other (without newlines between them)."""
    decoder, values, position = json.JSONDecoder(), [], 0
    while (start := text.find("{", position)) != -1:
        value, position = decoder.raw_decode(text, start)
        values.append(value)
    return values
