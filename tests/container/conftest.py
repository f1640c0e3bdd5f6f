"""Fixtures of the container tests (marker `container`): the image, built once per session from the
repository's Dockerfile on a base bootstrapped from Debian's mirror, and one pod running the reference agents.

These tests never skip: without podman or mmdebstrap they FAIL, saying what to install (`.ci/run` installs
it). Deselect them explicitly with `-m "not container"` if you must.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator

import pytest

from tests.api.servers import free_port
from tests.container.podman import (
    BuiltImage,
    Pod,
    bootstrap_base,
    build_image,
    pod,
    podman,
    start_reference_agent,
)

INSTALL_HINT = (
    "apt-get install podman buildah runc catatonit mmdebstrap fuse-overlayfs slirp4netns uidmap "
    "(.ci/run installs them when missing)"
)
# The reference agents, on the pod's loopback: the oracle (reward 1 with the scripted customer), and the same
# oracle answering after 200 ms, so that an assessment is still running when the container is stopped.
ORACLE_PORT = 9100
SLOW_ORACLE_PORT = 9101


@pytest.fixture(scope="session")
def container_tools() -> None:
    missing = [tool for tool in ("podman", "mmdebstrap") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"the container tests need {', '.join(missing)}: {INSTALL_HINT}", pytrace=False)


@pytest.fixture(scope="session")
async def image(container_tools: None, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[BuiltImage]:
    """The image under test, built once: its id (the tag may move under a concurrent session). A container
    created from it (never started) holds it for the session: a concurrent session's build, which removes
    the image the tag named before, cannot remove it while that container exists."""
    base = await bootstrap_base()
    built = await build_image(base, tmp_path_factory.mktemp("image") / "iid")
    await podman("create", "--name", built.holder, built.id)
    try:
        yield built
    finally:
        await podman("rm", "--force", "--volumes", built.holder, check=False)


@pytest.fixture(scope="session")
async def agents_pod(image: BuiltImage) -> AsyncIterator[Pod]:
    """A pod publishing the service's port on a free host port, with the reference agents inside."""
    async with pod(free_port()) as the_pod:
        await asyncio.gather(
            start_reference_agent(the_pod, image.id, "oracle", ORACLE_PORT),
            start_reference_agent(the_pod, image.id, "slow_oracle", SLOW_ORACLE_PORT, "--delay", "0.2"),
        )
        yield the_pod
