"""Real servers for the API tests: the green agent app under uvicorn on loopback (in-process or as a
`green-agent serve` subprocess) and polling helpers. Nothing here is a mock."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from a2a.client import Client
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageConfiguration, SendMessageRequest, Task
from fastapi import FastAPI

from api.settings import Settings
from api.web.app import create_app

REPO_ROOT = Path(__file__).resolve().parents[2]
GREEN_AGENT_BIN = Path(sys.executable).parent / "green-agent"


@contextlib.contextmanager
def bound_socket() -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock
    finally:
        sock.close()


def green_settings(database_url: str, **overrides: Any) -> Settings:
    return Settings(_env_file=None, database_url=database_url, **overrides)


@contextlib.asynccontextmanager
async def serve_green(database_url: str, **overrides: Any) -> AsyncIterator[str]:
    """The whole app (REST + A2A, lifespan: migrations, resume) on a free loopback port; yields its URL."""
    async with serve_green_app(database_url, **overrides) as (url, _):
        yield url


@contextlib.asynccontextmanager
async def serve_green_app(database_url: str, **overrides: Any) -> AsyncIterator[tuple[str, FastAPI]]:
    """`serve_green`, also yielding the app (tests that reach into the running service: its hub, its
    stream counts)."""
    with bound_socket() as sock:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
        app = create_app(green_settings(database_url, card_url=url, **overrides))
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2))
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        try:
            while not server.started:
                if serving.done():
                    serving.result()
                    raise RuntimeError("the green agent stopped during start-up")
                await asyncio.sleep(0.02)
            yield url, app
        finally:
            server.should_exit = True
            await asyncio.wait_for(serving, timeout=30)


def free_port() -> int:
    with bound_socket() as sock:
        return int(sock.getsockname()[1])


class GreenProcess:
    """`green-agent serve` (or, with `command=["worker"]`, a worker) as a real subprocess, so it can be
    SIGKILLed; `env` adds settings (GREEN_AGENT_...)."""

    def __init__(
        self,
        database_url: str,
        port: int,
        log_path: Path,
        *,
        command: Sequence[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.database_url = database_url
        self.env = env or {}
        self.port = port
        self.url = f"http://127.0.0.1:{port}/"
        self.log_path = log_path
        self.command = (
            list(command) if command is not None else ["serve", "--host", "127.0.0.1", "--port", str(port)]
        )
        self.env = env or {}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {
            **os.environ,
            "DATABASE_URL": self.database_url,
            "GREEN_AGENT_CARD_URL": self.url,
            **self.env,
        }
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [str(GREEN_AGENT_BIN), *self.command, "--log-level", "info"],
            cwd=REPO_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()

    async def wait_ready(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        async with httpx.AsyncClient(base_url=self.url, timeout=5) as client:
            while time.monotonic() < deadline:
                assert self.process is not None
                if self.process.poll() is not None:
                    raise RuntimeError(f"green-agent exited early:\n{self.log_path.read_text()}")
                with contextlib.suppress(httpx.TransportError):
                    if (await client.get("/readyz")).status_code == 200:
                        return
                await asyncio.sleep(0.1)
        raise TimeoutError(f"green-agent not ready:\n{self.log_path.read_text()}")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


async def poll(
    client: httpx.AsyncClient, path: str, until: Callable[[dict[str, Any]], bool], timeout_s: float = 60
) -> dict[str, Any]:
    """GET `path` until `until(body)` holds; return that body."""
    deadline = time.monotonic() + timeout_s
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        response = await client.get(path)
        response.raise_for_status()
        body = response.json()
        if until(body):
            return body
        await asyncio.sleep(0.05)
    raise TimeoutError(f"{path} never satisfied the condition; last body: {body}")


def a2a_text_request(text: str, *, return_immediately: bool = False) -> SendMessageRequest:
    """One user message holding `text`, as an A2A client sends it."""
    return SendMessageRequest(
        message=Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)]),
        configuration=SendMessageConfiguration(return_immediately=return_immediately),
    )


async def a2a_final_task(client: Client, text: str) -> Task:
    """Send `text` (non-streaming client) and read the task it made back from the server."""
    (response,) = [r async for r in client.send_message(a2a_text_request(text))]
    return await client.get_task(GetTaskRequest(id=response.task.id))
