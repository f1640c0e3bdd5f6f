"""`--domain` on the command line (real subprocesses): `run` and `demo` on airline, the domain in the report
table and JSON, `compare` refusing two domains, the options that cannot go with a domain, and the reference
oracle started from the command line serving both domains."""

from __future__ import annotations

import json
import re
from pathlib import Path

from api.cli.exit_codes import ExitCode
from tests.api.cli.test_cli import green_agent
from tests.api.cli.test_shared_sqlite import reference_agent_from_cli


async def test_run_and_demo_on_airline_and_compare_refuses_two_domains(
    oracle_url: str, tmp_path: Path
) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'domains.db'}"
    common = ("--database-url", database_url)
    code, output = await green_agent(
        "run", "--agent-url", oracle_url, "--domain", "airline", "--task-ids", "7,8,9",
        "--output", str(tmp_path / "airline.json"), *common,
    )  # fmt: skip
    assert code == ExitCode.OK, output
    airline = json.loads((tmp_path / "airline.json").read_text())
    assert airline["domain"] == airline["report"]["domain"] == airline["config"]["domain"] == "airline"
    assert airline["report"]["avg_reward"] == 1.0 and airline["report"]["complete"] is True
    assert f"assessment {airline['id']}: 3 airline trials of {oracle_url.rstrip('/')}" in output
    assert re.search(r"domain\s*│\s*airline", output), output

    code, output = await green_agent(
        "run", "--agent-url", oracle_url, "--task-ids", "7,8,9", "--output", str(tmp_path / "retail.json"),
        "--quiet", *common,
    )  # fmt: skip
    assert code == ExitCode.OK, output
    retail = json.loads((tmp_path / "retail.json").read_text())
    assert retail["domain"] == "retail"  # the default

    code, output = await green_agent("compare", retail["id"], airline["id"], *common)
    assert code == ExitCode.FAILED
    assert (
        f"cannot compare: assessments {retail['id']} (retail) and {airline['id']} (airline) assess different "
        "domains; compare two assessments of the same domain"
    ) in " ".join(output.split())

    code, output = await green_agent("run", "--failed-from", airline["id"], "--domain", "retail", *common)
    assert code == ExitCode.USAGE and "runs the tasks that failed, in their domain" in output
    code, output = await green_agent("run", "--agent-url", oracle_url, "--domain", "banking", *common)
    choices = "(choose from 'retail', 'airline', 'telecom', 'mock')"
    assert code == ExitCode.USAGE and f"invalid choice: 'banking' {choices}" in output

    # The demo on airline: no judge needed (airline scores DB and COMMUNICATE), so its report is complete.
    code, output = await green_agent(
        "demo", "--domain", "airline", "--num-tasks", "5", "--output", str(tmp_path / "demo.json"), *common
    )
    assert code == ExitCode.OK, output
    demo = json.loads((tmp_path / "demo.json").read_text())
    assert demo["domain"] == "airline" and demo["report"]["complete"] is True
    assert demo["report"]["avg_reward"] == 1.0 and demo["report"]["trials_total"] == 5
    assert "airline domain, scripted user" in output and "PARTIAL" not in output


async def test_the_reference_oracle_from_the_command_line_serves_every_domain(tmp_path: Path) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'oracle.db'}"
    async with reference_agent_from_cli("oracle") as agent_url:
        for domain, tasks in (("airline", "7,8"), ("retail", "0,5")):
            output_path = tmp_path / f"{domain}.json"
            code, output = await green_agent(
                "run", "--agent-url", agent_url, "--domain", domain, "--task-ids", tasks, "--quiet",
                "--output", str(output_path), "--database-url", database_url,
            )  # fmt: skip
            assert code == ExitCode.OK, output
            report = json.loads(output_path.read_text())["report"]
            assert report["domain"] == domain and report["avg_reward"] == 1.0, report
