"""What the built image is: its configuration, and every file it carries (a `podman export` of it, read as
a tar stream), checked for build tools, caches, repository files and secrets."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import pytest

from tests.container.podman import BuiltImage, podman, podman_env

pytestmark = pytest.mark.container

PATH_DIRS = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}
# Compilers, linkers, assemblers and build drivers, with Debian's versioned and triplet-prefixed names.
BUILD_TOOL = re.compile(
    r"(x86_64-linux-gnu-)?(gcc|g\+\+|cc|c\+\+|cpp|clang|clang\+\+|ld|ld\.bfd|ld\.gold|as|make|gmake|cmake"
    r"|ninja|rustc|cargo|go|tcc)(-\d+)?"
)
SECRET_FILE_NAMES = {
    ".env",
    ".netrc",
    ".pypirc",
    ".git-credentials",
    "id_rsa",
    "id_ecdsa",
    "id_ed25519",
    "pip.conf",  # a build host's index credentials
    ".dockercfg",
}
# Key material, not just a PEM marker in code that parses keys.
PRIVATE_KEY = re.compile(rb"-----BEGIN [A-Z ]*PRIVATE KEY-----\s+[A-Za-z0-9+/=]{40}")
API_KEY = re.compile(rb"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{32,}")
SECRET_ENV_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
MAX_SCANNED_BYTES = 8 << 20


@dataclass
class ImageFiles:
    paths: list[str] = field(default_factory=list)
    scanned: int = 0
    secrets: list[str] = field(default_factory=list)


def read_export(container: str, added: set[str]) -> ImageFiles:
    """Every path of the container's file system; the files the Dockerfile added (not the base's Debian
    packages) are read and searched for key material."""
    files = ImageFiles()
    command = ["podman", "export", container]
    with subprocess.Popen(command, stdout=subprocess.PIPE, env=podman_env()) as process:
        assert process.stdout is not None
        with tarfile.open(fileobj=process.stdout, mode="r|") as tar:
            for member in tar:
                path = "/" + member.name.removeprefix("./").rstrip("/")
                files.paths.append(path)
                if member.isfile() and path in added and member.size <= MAX_SCANNED_BYTES:
                    extracted = tar.extractfile(member)
                    assert extracted is not None
                    data = extracted.read()
                    files.scanned += 1
                    if PRIVATE_KEY.search(data) or API_KEY.search(data):
                        files.secrets.append(path)
    assert process.returncode == 0, f"podman export exited {process.returncode}"
    return files


@pytest.fixture(scope="module")
async def image_files(image: BuiltImage) -> ImageFiles:
    diff = json.loads((await podman("image", "diff", "--format", "json", image.id, image.base)).stdout)
    added = set(diff.get("added") or []) | set(diff.get("changed") or [])
    return await asyncio.to_thread(read_export, image.holder, added)


async def test_the_image_runs_the_service_as_a_non_root_user_with_a_health_check(image: BuiltImage) -> None:
    (inspected,) = json.loads((await podman("image", "inspect", image.id)).stdout)
    config = inspected["Config"]
    assert config["User"] == "green"
    assert config["Entrypoint"] == ["green-agent", "serve"]
    assert config["ExposedPorts"] == {"9009/tcp": {}}
    assert config["Volumes"] == {"/data": {}}
    assert inspected["Healthcheck"]["Test"] == [
        "CMD-SHELL",
        'curl -f "http://localhost:${GREEN_AGENT_PORT}/.well-known/agent-card.json" || exit 1',
    ]
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env["DATABASE_URL"] == "sqlite+aiosqlite:////data/green_agent.db"
    assert env["SQLITE_TMPDIR"] == "/data"
    assert not [name for name in env if SECRET_ENV_NAME.search(name)], env


async def test_no_build_step_leaves_a_secret_in_the_image_history(image: BuiltImage) -> None:
    history = (await podman("history", "--no-trunc", "--format", "{{.CreatedBy}}", image.id)).stdout
    assert "pip install --require-hashes -r requirements.lock" in history
    assert not re.search(r"(KEY|TOKEN|SECRET|PASSWORD)=", history), history


def test_the_image_carries_no_build_tools(image_files: ImageFiles) -> None:
    tools = [
        path
        for path in image_files.paths
        if str(PurePosixPath(path).parent) in PATH_DIRS and BUILD_TOOL.fullmatch(PurePosixPath(path).name)
    ]
    assert tools == []
    assert [path for path in image_files.paths if path.startswith("/usr/lib/gcc/")] == []
    assert "/usr/bin/curl" in image_files.paths  # the health check's; what the listing holds is real
    assert "/usr/local/bin/green-agent" in image_files.paths


def test_the_image_carries_no_caches_or_build_leftovers(image_files: ImageFiles) -> None:
    paths = image_files.paths
    assert [p for p in paths if "/.cache" in p] == []  # pip's (root's or green's) and any other
    assert [p for p in paths if p.startswith(("/tmp/", "/var/tmp/"))] == []
    assert [p for p in paths if p.startswith("/var/lib/apt/lists/")] == []
    assert [p for p in paths if p.startswith("/var/cache/apt/") and p.endswith((".deb", ".bin"))] == []
    assert [p for p in paths if p.startswith(("/app/build", "/app/tau2_retail_green_agent.egg-info"))] == []


def test_the_image_carries_none_of_the_repository_beyond_the_service(image_files: ImageFiles) -> None:
    paths = image_files.paths
    assert [p for p in paths if ".git" in p.split("/")] == []
    outside = ("/app/tests", "/app/bench", "/app/docs", "/app/container", "/app/.ci")
    assert [p for p in paths if p.startswith(outside)] == []
    assert [p for p in paths if p.endswith(("/tests/container/podman.py", "/tests/support/agents.py"))] == []
    top_level = {p.split("/")[2] for p in paths if p.startswith("/app/") and p.count("/") >= 2}
    assert top_level == {
        "README.md",
        "pyproject.toml",
        "requirements.lock",
        "domain_kit",
        "retail_domain",
        "airline_domain",
        "green_agent",
        "api",
        "migrations",
    }


def test_the_image_carries_no_secrets(image_files: ImageFiles) -> None:
    named = [p for p in image_files.paths if PurePosixPath(p).name in SECRET_FILE_NAMES]
    assert named == []
    assert image_files.secrets == []
    assert image_files.scanned > 5_000  # the installed dependencies and the service were read
