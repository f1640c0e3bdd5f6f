"""A throwaway Python environment with a2a-sdk 0.3 (the AgentBeats gateway's SDK), for tests that play the
gateway (tests/support/gateway_v03.py). a2a-sdk 0.3 and 1.x cannot share one environment, so it is made
beside the test run: a venv without pip, into which this environment's pip installs the pinned packages
(pip's --python), as the quiet-install test does (tests/api/test_packaging.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

GATEWAY_REQUIREMENTS = ("a2a-sdk==0.3.22", "httpx==0.28.1")
"""What RDI-Foundation/agentbeats-gateway's lock file pins for its A2A client."""

SCRIPT = Path(__file__).with_name("gateway_v03.py")


def make_gateway_python(target: Path) -> Path:
    """Create the environment at `target`; return its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True, timeout=120)
    python = target / "bin" / "python"
    install = ["--python", str(python), "install", "--quiet", "--disable-pip-version-check"]
    done = subprocess.run(
        [sys.executable, "-m", "pip", *install, *GATEWAY_REQUIREMENTS],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    return python


async def run_gateway(python: Path, spec: dict[str, Any], timeout_s: float = 600) -> dict[str, Any]:
    """Run the gateway's side (`gateway_v03.py`) as a subprocess without blocking the event loop (the agents
    it talks to may be served by this one); return what it printed."""
    import asyncio

    process = await asyncio.create_subprocess_exec(
        str(python),
        str(SCRIPT),
        json.dumps(spec),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout=timeout_s)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode == 0, err.decode()
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return result
