"""The image installs from requirements.lock: it must pin every dependency of pyproject.toml at the same
version, with hashes (regenerate it with `make lock`)."""

from __future__ import annotations

import re
import tomllib

from tests.api.servers import REPO_ROOT


def test_lock_file_matches_pyproject() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    lock = (REPO_ROOT / "requirements.lock").read_text()
    locked = dict(re.findall(r"^([A-Za-z0-9_.-]+)==([^\s\\]+)", lock, flags=re.M))
    normalized = {name.lower().replace("_", "-"): version for name, version in locked.items()}
    for requirement in project["dependencies"]:
        match = re.match(r"^([A-Za-z0-9_.-]+)(\[[^\]]*\])?==(\S+)$", requirement)
        assert match, f"{requirement!r} is not pinned exactly"
        name, version = match.group(1).lower().replace("_", "-"), match.group(3)
        assert normalized.get(name) == version, (
            f"{name} {version} is not in requirements.lock; run `make lock`"
        )
    # Every locked package carries its hashes (pip install --require-hashes in the Dockerfile).
    assert lock.count("==") == len(locked) and lock.count("--hash=sha256:") >= len(locked)
