"""The README's offline quick start ("Quick start: assess your own agent") finishes as written on the bundled
model: a reference agent and `local-llm serve` in the background, the three export lines pasted, `run`. Run by
bash with the test's own ports, one task instead of three, and without the two install commands (this
environment has the runtime and the model, as every test here needs); the time it takes with three tasks is
measured in docs/local-llm.md."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from api.cli.exit_codes import ExitCode
from tests.api.servers import REPO_ROOT, free_port
from tests.support.readme import run_bash, section_script

pytestmark = pytest.mark.local_llm


async def test_the_offline_quick_start_finishes_as_written(tmp_path: Path) -> None:
    agent_port, model_port = free_port(), free_port()
    script = section_script(
        "Quick start: assess your own agent",
        {
            ".venv/bin/": f"{REPO_ROOT}/.venv/bin/",
            "9019": str(agent_port),
            "8080": str(model_port),
            "--num-tasks 3": "--num-tasks 1 --output report.json",
        },
        blocks=slice(0, 2),  # the offline commands (the third block needs an OpenAI key)
        skip=("pip install --quiet -e '.[local-llm]'", "green-agent local-llm install"),
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GREEN_AGENT_", "DATABASE_URL"))}
    done = await run_bash(script, cwd=tmp_path, env=env, timeout_s=900, output=tmp_path)
    assert done.code == ExitCode.OK, f"{done.stdout}\n{done.stderr}"
    # Said once: the model's own step limit and reply caps, which apply since `run` sets no --max-steps.
    assert done.stdout.count("sets the step limit") == 1, done.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["status"] == "completed" and report["config"]["max_steps"] == 20
    assert report["report"]["termination_counts"] == {"max_steps": 1}  # the 135M customer never stops
    assert report["report"]["usage"]["user"]["completion_tokens"] > 0  # a model played the customer
