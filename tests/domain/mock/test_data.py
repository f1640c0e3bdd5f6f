"""Where the mock files come from and how they are verified: the pinned package and `green-agent data
install`'s policy.md by default, a directory (argument or TAU2_MOCK_DATA_DIR) otherwise; a file that is not
upstream's is refused with both hashes and the fix."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from domain_kit import DataError
from mock_domain import ENV_VAR, EXPECTED_SHA256, MockData, load_data, load_mock_data


def test_default_source_is_the_package_and_the_installed_policy(
    data: MockData, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    paths = dict(data.source.paths)
    assert data.source.kind == "installed"
    assert "/tau2_mock_mcp/data/" in paths["db.json"].as_posix()
    assert paths["policy.md"] == Path(sys.prefix) / "share" / "tau2-green-agent" / "mock" / "policy.md"
    assert EXPECTED_SHA256 == {
        "db.json": "8661f80b4c693bb15ef2fe6781d24a5765240d61fc74387c770133953f9113ea",
        "user_db.json": "78d424b5177e430b7f483787a956ad3a6a0880e8e5b312be8e373b15c876d51f",
        "tasks.json": "0d8bcd14798bf2e6e082432147f62570c57b0897b4e4e388c95bb02ecbe5d8cf",
        "policy.md": "50ccbefac7c9ba77ce54131d61cfc6882f74b88ace66771115f9d867ec098203",
    }
    assert load_data is load_mock_data and load_mock_data() is data  # once per process and source


def _copy(files: dict[str, Path], target: Path) -> Path:
    target.mkdir()
    for name, path in files.items():
        shutil.copyfile(path, target / name)
    return target


def test_a_directory_from_the_environment(
    data_files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _copy(data_files, tmp_path / "mock")
    monkeypatch.setenv(ENV_VAR, str(folder))
    loaded = load_mock_data()
    assert loaded.source.kind == "environment" and loaded.source_description == f"environment: {folder}"
    assert len(loaded.tasks) == 10


def test_an_altered_file_is_refused(data_files: dict[str, Path], tmp_path: Path) -> None:
    folder = _copy(data_files, tmp_path / "mock")
    (folder / "user_db.json").write_text('{"notifications": {}}')
    with pytest.raises(DataError) as refused:
        load_mock_data(folder)
    message = str(refused.value)
    assert "Mock data file user_db.json" in message and EXPECTED_SHA256["user_db.json"] in message
    assert "green-agent data install" in message and ENV_VAR in message


def test_a_missing_file_is_named(data_files: dict[str, Path], tmp_path: Path) -> None:
    folder = _copy(data_files, tmp_path / "mock")
    (folder / "policy.md").unlink()
    with pytest.raises(DataError, match=r"Mock data file policy\.md is missing from"):
        load_mock_data(folder)


def test_the_policy_must_be_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without `green-agent data install`, the loader says what is missing and how to fix it."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    with pytest.raises(DataError) as refused:
        load_mock_data()
    assert "No mock data file policy.md" in str(refused.value)
    assert str(tmp_path / "share" / "tau2-green-agent" / "mock") in str(refused.value)
    assert "green-agent data install" in str(refused.value)
