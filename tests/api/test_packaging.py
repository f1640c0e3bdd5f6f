"""Packaging: the image installs from requirements.lock, which must pin every dependency of pyproject.toml
at the same version, with hashes (regenerate it with `make lock`); and `make demo` installs quietly."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

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


# `make demo` runs `pip install --quiet -e .` in pip's isolated build environment, with the setuptools that
# `[build-system]` asks for: nothing of the build backend may show (no `project.license` deprecation, no
# editable-install notice).
def test_the_editable_install_prints_no_build_warning(tmp_path: Path) -> None:
    # Into a throwaway environment of its own (pip's --python): installing into a --prefix would uninstall the
    # test environment's own copy first.
    target = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True, timeout=120)
    install = ["--python", str(target / "bin" / "python"), "install", "--quiet", "--no-deps", "-e", "."]
    done = subprocess.run(
        [sys.executable, "-m", "pip", *install],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    # This machine's pip configuration names index directories that do not exist ("WARNING: Location ...
    # is ignored"): pip's own lines about where it looks, not the project's build.
    printed = [
        line for line in (done.stdout + done.stderr).splitlines() if not line.startswith("WARNING: Location ")
    ]
    assert printed == [], "\n".join(printed)
    installed = list((target / "lib").glob("python3*/site-packages/__editable__.*.pth"))
    assert len(installed) == 1 and installed[0].read_text().strip() == str(REPO_ROOT)
