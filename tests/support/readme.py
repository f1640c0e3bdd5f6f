"""The README's shell commands, as the tests that run them read them: the `sh` blocks of a section, one
command per logical line, and a script of a section that a real bash runs (with the test's ports, database
and paths substituted, and a wait after each server started with `&` until its port answers)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.api.servers import REPO_ROOT

README = REPO_ROOT / "README.md"
_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)


def sections() -> dict[str, list[str]]:
    """The `sh` blocks of each `## ` section of the README, in order."""
    found: dict[str, list[str]] = {}
    for part in re.split(r"^## ", README.read_text(), flags=re.MULTILINE)[1:]:
        title, _, body = part.partition("\n")
        found[title.strip()] = [match.group(1) for match in _BLOCK.finditer(body)]
    return found


def command_lines(block: str) -> list[str]:
    """The block's commands, one per logical line (backslash continuations joined)."""
    return [line.strip() for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def section_script(
    title: str, replace: Mapping[str, str], *, blocks: slice = slice(None), skip: tuple[str, ...] = ()
) -> str:
    """The commands of the section's `blocks` as one bash script: `replace` applied (each old text must
    occur), lines holding a `skip` text left out (each must occur), `set -e`, and after each
    `... --port N ... &` a wait (up to 3 minutes) until something listens on N."""
    text = "\n".join(sections()[title][blocks])
    for old, new in replace.items():
        assert old in text, f"{old!r} is no longer in the README section {title!r}"
        text = text.replace(old, new)
    lines = ["set -euo pipefail"]
    for left_out in skip:
        assert left_out in text, f"{left_out!r} is no longer in the README section {title!r}"
    for line in command_lines(text):
        if any(left_out in line for left_out in skip):
            continue
        lines.append(line)
        port = re.search(r"--port (\d+)", line)
        if re.search(r"&\s*(#.*)?$", line) and port:
            listening = f"(exec 3<>/dev/tcp/127.0.0.1/{port.group(1)}) 2>/dev/null"
            lines.append(f"for _ in $(seq 1 360); do {listening} && break; sleep 0.5; done")
    return "\n".join(lines) + "\n"


@dataclass
class ScriptRun:
    code: int
    stdout: str
    stderr: str


async def run_bash(
    script: str, *, cwd: Path, env: Mapping[str, str], timeout_s: float, output: Path
) -> ScriptRun:
    """Run `script` in bash in a process group of its own; when it ends (or times out), stop what it left
    running in the background (SIGTERM, then SIGKILL) and return its output. The output goes to files in
    `output` (a directory): servers started with `&` would hold pipes open past the script's end."""
    out_file, err_file = output / "stdout", output / "stderr"
    with out_file.open("wb") as out, err_file.open("wb") as err:
        process = await asyncio.create_subprocess_exec(
            "bash", "-c", script, cwd=cwd, env=dict(env), stdout=out, stderr=err, start_new_session=True
        )
    try:
        await asyncio.wait_for(process.wait(), timeout_s)
    finally:
        await _stop_group(process.pid)
        if process.returncode is None:
            await process.wait()
    return ScriptRun(process.returncode or 0, out_file.read_text(), err_file.read_text())


async def _stop_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
        for _ in range(300):  # what the script started stops within 30 s, or is killed
            await asyncio.sleep(0.1)
            os.killpg(group, 0)
        os.killpg(group, signal.SIGKILL)
