"""Podman for the container tests: the image built from the repository's Dockerfile on a bootstrapped base,
a pod that publishes one free host port, and the green agent's containers in it. Every call runs the real
podman; nothing here is a mock.

The pod's network is slirp4netns with the host's loopback reachable at 10.0.2.2 (the host's PostgreSQL
listens on 127.0.0.1 only). Reference agents run as sidecars of the pod, from the same image: they listen on
the pod's own loopback, which is also the address their agent cards advertise, so the green agent reaches them
the way it reaches any agent (a loopback address, allowed because private agents are; see
`GREEN_AGENT_ALLOW_PRIVATE_AGENTS` in docs/security.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTAINER_DIR = REPO_ROOT / "container"
BOOTSTRAP_BASE = CONTAINER_DIR / "bootstrap-base.sh"
# For sandboxed hosts (this machine kind); a host that needs other settings points CONTAINERS_CONF elsewhere.
CONTAINERS_CONF = Path(os.environ.get("CONTAINERS_CONF", CONTAINER_DIR / "containers.conf"))
IMAGE_TAG = "localhost/tau2-retail-green-agent:test"
HOST_FROM_POD = "10.0.2.2"  # slirp4netns with allow_host_loopback: the host's 127.0.0.1
SERVICE_PORT = 9009  # the image's default; the pod publishes it on a free host port
STOP_GRACE_S = 10.0  # what `docker stop` and `podman stop` wait for before SIGKILL


class PodmanError(RuntimeError):
    pass


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str


def podman_env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}


async def run(*command: str | Path, timeout_s: float = 120, check: bool = True) -> Completed:
    """Run one command (podman, or the bootstrap script) to its end; raise with its output if it fails."""
    process = await asyncio.create_subprocess_exec(
        *map(str, command),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=podman_env(),
        cwd=REPO_ROOT,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout_s)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise PodmanError(f"{' '.join(map(str, command))} did not finish within {timeout_s} s") from None
    done = Completed(process.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace"))
    if check and done.returncode != 0:
        output = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        raise PodmanError(f"{' '.join(map(str, command))} exited {done.returncode}:\n{output}")
    return done


async def podman(*args: str | Path, timeout_s: float = 120, check: bool = True) -> Completed:
    return await run("podman", *args, timeout_s=timeout_s, check=check)


@dataclass(frozen=True)
class BuiltImage:
    id: str
    base: str
    holder: str = field(default_factory=lambda: f"tau2-test-image-{uuid.uuid4().hex[:8]}")
    """A container created from the image and never started (the tests read its file system)."""


async def bootstrap_base() -> str:
    """The tag of the bootstrapped stand-in for python:3.11-slim (built once per recipe, then cached)."""
    done = await run(BOOTSTRAP_BASE, timeout_s=900)
    return done.stdout.strip().splitlines()[-1]


async def build_image(base: str, iidfile: Path) -> BuiltImage:
    """`podman build` of the repository's Dockerfile on `base`. Docker format, since the OCI image format has
    no HEALTHCHECK. The layer cache makes a rebuild with unchanged inputs take seconds; the image the tag
    named before (an earlier version of the code) is removed with the layers only it used, so the cache
    holds one version."""
    previous = await podman("image", "inspect", "--format", "{{.Id}}", IMAGE_TAG, check=False)
    await run(
        *("podman", "build", "--format", "docker", "--build-arg", f"BASE_IMAGE={base}"),
        *("--iidfile", iidfile, "--tag", IMAGE_TAG, REPO_ROOT),
        timeout_s=1800,
    )
    image_id = (await asyncio.to_thread(iidfile.read_text)).strip().removeprefix("sha256:")
    if previous.returncode == 0 and previous.stdout.strip() != image_id:
        tags = await podman(
            "image", "inspect", "--format", "{{.RepoTags}}", previous.stdout.strip(), check=False
        )
        if tags.stdout.strip() == "[]":  # `rmi` of an id would drop any tag someone else put on it
            # Refused while a container (another session's) still uses it.
            await podman("rmi", previous.stdout.strip(), check=False)
    return BuiltImage(id=image_id, base=base)


@dataclass
class Pod:
    """One network namespace with the service's port published on the host's loopback."""

    name: str
    host_port: int
    agents: dict[str, str] = field(default_factory=dict)  # name -> URL, as the green agent reaches it

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.host_port}/"


@contextlib.asynccontextmanager
async def pod(host_port: int) -> AsyncIterator[Pod]:
    name = f"tau2-test-{uuid.uuid4().hex[:8]}"
    await podman(
        *("pod", "create", "--name", name, "--network", "slirp4netns:allow_host_loopback=true"),
        *("--publish", f"127.0.0.1:{host_port}:{SERVICE_PORT}"),
    )
    try:
        yield Pod(name=name, host_port=host_port)
    finally:
        await podman("pod", "rm", "--force", "--time", "0", name, check=False)


async def start_reference_agent(the_pod: Pod, image: str, name: str, port: int, *args: str) -> str:
    """`green-agent reference-agent oracle --port P ARGS` from the image, in the pod; its URL once it
    serves."""
    container = f"{the_pod.name}-{name}"
    await podman(
        *("run", "--detach", "--pod", the_pod.name, "--name", container, "--no-healthcheck"),
        *("--entrypoint", "green-agent", image, "reference-agent", "oracle", "--port", str(port), *args),
    )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        logs = await podman("logs", container, check=False)
        if f"serving at {url}" in logs.stdout + logs.stderr:
            the_pod.agents[name] = url
            return url
        await asyncio.sleep(0.5)
    raise PodmanError(f"reference agent {name} never served:\n{logs.stdout}\n{logs.stderr}")


@dataclass
class GreenContainer:
    """`green-agent serve` (the image's entry point) in the pod, started detached, with the root file system
    read-only: only /data (and podman's own /dev/shm) is writable, with no tmpfs on /tmp, /var/tmp or /run."""

    the_pod: Pod
    image: str
    name: str = field(default_factory=lambda: f"green-{uuid.uuid4().hex[:8]}")
    volume: str | None = None
    env: dict[str, str] = field(default_factory=dict)

    async def start(self) -> None:
        options = ["--detach", "--pod", self.the_pod.name, "--name", self.name]
        options += ["--read-only", "--read-only-tmpfs=false"]
        if self.volume:
            options += ["--volume", f"{self.volume}:/data"]
        for key, value in self.env.items():
            options += ["--env", f"{key}={value}"]
        await podman("run", *options, self.image, "--card-url", self.the_pod.url)

    async def logs(self) -> str:
        done = await podman("logs", self.name, check=False)
        return (done.stdout + done.stderr)[-6000:]

    async def exec(self, *command: str, check: bool = True) -> Completed:
        return await podman("exec", self.name, *command, check=check)

    async def wait_healthy(self, timeout_s: float = 120) -> None:
        """Run the image's HEALTHCHECK (`podman healthcheck run`) until it passes."""
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            check = await podman("healthcheck", "run", self.name, check=False)
            if check.returncode == 0:
                return
            state = await podman("inspect", "--format", "{{.State.Status}}", self.name, check=False)
            if state.stdout.strip() not in ("running", "created", "configured"):
                raise PodmanError(f"{self.name} is {state.stdout.strip()}:\n{await self.logs()}")
            await asyncio.sleep(0.5)
        raise PodmanError(f"{self.name} never turned healthy:\n{await self.logs()}")

    async def sigterm(self) -> tuple[int, float]:
        """Send SIGTERM (what `docker stop` does first) and wait for the exit: (exit code, seconds)."""
        started = time.monotonic()
        await podman("kill", "--signal", "TERM", self.name)
        waited = await podman("wait", self.name, timeout_s=60)
        return int(waited.stdout.strip()), time.monotonic() - started

    async def remove(self) -> None:
        await podman("rm", "--force", "--time", "0", "--volumes", self.name, check=False)


@contextlib.asynccontextmanager
async def volume() -> AsyncIterator[str]:
    name = f"tau2-test-data-{uuid.uuid4().hex[:8]}"
    await podman("volume", "create", name)
    try:
        yield name
    finally:
        await podman("volume", "rm", "--force", name, check=False)


@contextlib.asynccontextmanager
async def green_container(
    the_pod: Pod, image: str, *, volume_name: str | None = None, env: dict[str, str] | None = None
) -> AsyncIterator[GreenContainer]:
    """A started green agent container, removed (with its anonymous volumes) at the end."""
    container = GreenContainer(the_pod, image, volume=volume_name, env=dict(env or {}))
    try:
        await container.start()
        yield container
    finally:
        await container.remove()
