"""`make demo` installs the project quietly: the editable install its first step runs (`pip install --quiet -e
.`, in pip's isolated build environment with the setuptools `[build-system]` asks for) prints no warning of
the build backend: no `project.license` deprecation, no editable-install notice."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.api.servers import REPO_ROOT


def test_the_editable_install_prints_no_build_warning(tmp_path: Path) -> None:
    # Installed into a prefix of its own, so the test's environment is left as it is.
    install = ["install", "--quiet", "--no-deps", "--prefix", str(tmp_path), "-e", "."]
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
