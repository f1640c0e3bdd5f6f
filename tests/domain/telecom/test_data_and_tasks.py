"""Where the telecom files come from and how they are checked; the tasks, splits and policy as loaded; the
tool schemas against upstream's signatures; what loading the 14 MB task file costs."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from domain_kit.data_files import installed_share_dir
from telecom_domain import (
    AGENT_TOOL_NAMES,
    ENV_VAR,
    EXPECTED_SHA256,
    READ_TOOLS,
    TOOL_SCHEMAS,
    USER_TOOL_NAMES,
    USER_TOOL_SCHEMAS,
    USER_WRITE_TOOLS,
    WRITE_TOOLS,
    DataError,
    TelecomData,
    load_telecom_data,
)

from .conftest import load_facts

SIGNATURES: dict[str, Any] = load_facts("tool_signatures.json")


def copy_files(files: dict[str, Path], target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for name, path in files.items():
        shutil.copyfile(path, target / name)
    return target


# --------------------------------------------------------------------------- data sources and verification


def test_six_files_pinned(telecom: TelecomData) -> None:
    assert set(EXPECTED_SHA256) == {
        "db.toml",
        "user_db.toml",
        "main_policy.md",
        "tech_support_manual.md",
        "tasks.json",
        "split_tasks.json",
    }
    for name, path in telecom.source.paths:
        assert hashlib.sha256(path.read_bytes()).hexdigest() == EXPECTED_SHA256[name]


def test_explicit_directory_wins_over_the_environment_variable(
    telecom_files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = copy_files(telecom_files, tmp_path / "chosen")
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "nowhere"))
    data = load_telecom_data(chosen)
    assert data.source_description == f"directory: {chosen}"
    assert load_telecom_data(chosen) is data  # once per process and source


def test_the_installed_share_directory_is_the_fallback(
    telecom_files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    with pytest.raises(DataError) as missing:
        load_telecom_data()
    message = str(missing.value)
    assert f"{ENV_VAR} is unset" in message and "green-agent data install" in message
    copy_files(telecom_files, installed_share_dir("telecom"))
    assert load_telecom_data().source_description.startswith(
        f"installed: {tmp_path}/share/tau2-green-agent/telecom"
    )


@pytest.mark.parametrize("name", sorted(EXPECTED_SHA256))
def test_an_altered_file_is_refused(telecom_files: dict[str, Path], tmp_path: Path, name: str) -> None:
    folder = copy_files(telecom_files, tmp_path / "altered")
    (folder / name).write_bytes((folder / name).read_bytes() + b"\n")
    with pytest.raises(DataError) as refused:
        load_telecom_data(folder)
    message = str(refused.value)
    assert f"Telecom data file {name}" in message and f"expected {EXPECTED_SHA256[name]}" in message
    assert hashlib.sha256((folder / name).read_bytes()).hexdigest() in message
    assert "not the upstream file" in message and "Fix: run `green-agent data install`" in message


def test_a_missing_file_or_directory_is_refused(telecom_files: dict[str, Path], tmp_path: Path) -> None:
    folder = copy_files(telecom_files, tmp_path / "partial")
    (folder / "user_db.toml").unlink()
    with pytest.raises(
        DataError, match=r"Telecom data file user_db\.toml is missing from .*expected sha256 4886107e"
    ):
        load_telecom_data(folder)
    with pytest.raises(DataError, match="does not exist or is not a directory"):
        load_telecom_data(tmp_path / "absent")


# --------------------------------------------------------------------------- tasks, splits, policy


def test_splits(telecom: TelecomData) -> None:
    sizes = {name: len(ids) for name, ids in telecom.splits.items()}
    assert sizes == {"small": 20, "train": 74, "test": 40, "full": 2285, "base": 114}
    assert telecom.default_split == "base" and len(telecom.tasks) == 2285
    order = list(telecom.tasks)
    for ids in telecom.splits.values():  # each in tasks.json order, as upstream's get_tasks(split)
        assert list(ids) == sorted(ids, key=order.index)
    assert set(telecom.split("train")) | set(telecom.split("test")) == set(telecom.split("base"))
    assert set(telecom.split("small")).isdisjoint(telecom.split("base"))
    with pytest.raises(KeyError, match="unknown split 'nope'"):
        telecom.split("nope")


def test_every_task_of_full_parses_and_is_what_the_file_holds(telecom: TelecomData) -> None:
    raw = json.loads(dict(telecom.source.paths)["tasks.json"].read_bytes())
    assert [item["id"] for item in raw] == list(telecom.tasks)
    bases: dict[tuple[str, ...], int] = {}
    for item in raw:
        task = telecom.task(item["id"])
        assert telecom.task_document(item["id"]) == item
        assert (
            task.initial_state is not None
            and task.initial_state.initialization_actions[0].func_name == "set_user_info"
        )
        bases[task.reward_basis] = bases.get(task.reward_basis, 0) + 1
    assert bases == {("ENV_ASSERTION",): 2253, ("ENV_ASSERTION", "ACTION"): 32}
    document = telecom.task_document(raw[0]["id"])
    document["id"] = "changed"
    assert telecom.task_document(raw[0]["id"])["id"] == raw[0]["id"]  # the caller's copy


def test_a_task_of_the_default_split_is_kept_parsed_the_others_are_not(telecom: TelecomData) -> None:
    base_id = telecom.split("base")[0]
    other_id = telecom.split("small")[0]
    assert telecom.task(base_id) is telecom.task(base_id)
    assert telecom.task(other_id) is not telecom.task(other_id)
    assert telecom.task(other_id) == telecom.task(other_id)


def test_unknown_task(telecom: TelecomData) -> None:
    with pytest.raises(KeyError, match=r"unknown telecom task id 'nope'"):
        telecom.task("nope")
    with pytest.raises(KeyError):
        telecom.new_environment("nope")


def test_base_task_shape(telecom: TelecomData) -> None:
    task = telecom.task("[service_issue]overdue_bill_suspension[PERSONA:Easy]")
    assert [(a.requestor, a.name) for a in task.gold_actions] == [
        ("assistant", "send_payment_request"),
        ("user", "make_payment"),
        ("assistant", "resume_line"),
        ("user", "reboot_device"),
    ]
    assert [(a.env_type, a.func_name) for a in task.env_assertions] == [
        ("user", "assert_service_status"),
        ("assistant", "assert_no_overdue_bill"),
    ]
    assert task.user_tools is None and task.nl_assertions == () and task.communicate_info == ()
    text = task.scenario_text()
    # The persona text starts with a newline: an empty line follows "Persona:", as upstream renders it.
    assert text.startswith("Persona:\n\n\tAs a 41-year-old office administrator")
    assert "\nInstructions:\n\tDomain: telecom\n\tReason for call:\n\t\t" in text


def test_policy_is_upstreams_manual_variant(telecom: TelecomData) -> None:
    assert len(telecom.policy) == 23318
    assert hashlib.sha256(telecom.policy.encode()).hexdigest() == (
        "065b48503bf780153fc671455cdfddb85b4c6ffb11e2ea93bd940233d804c3e9"
    )
    assert telecom.policy.startswith("<main_policy>\n") and telecom.policy.endswith(
        "\n</tech_support_policy>"
    )


# --------------------------------------------------------------------------- tool schemas


def _signature(schema: dict[str, Any], kind: str, write: bool) -> dict[str, Any]:
    function = schema["function"]
    parameters = function["parameters"]

    def stripped(value: Any) -> Any:  # upstream's schema without titles and descriptions
        if isinstance(value, dict):
            return {k: stripped(v) for k, v in value.items() if k not in ("title", "description")}
        if isinstance(value, list):
            return [stripped(v) for v in value]
        return value

    signature = {
        "name": function["name"],
        "tool_type": kind,
        "mutates_state": write,
        "parameters": stripped(parameters["properties"]),
        "required": parameters.get("required", []),
    }
    if "$defs" in parameters:
        signature["$defs"] = stripped(parameters["$defs"])
    return signature


def test_tool_schemas_match_upstreams_signatures() -> None:
    agent = [
        _signature(
            dict(schema),
            "read" if name in READ_TOOLS else "write" if name in WRITE_TOOLS else "generic",
            name in WRITE_TOOLS,
        )
        for name, schema in zip(AGENT_TOOL_NAMES, TOOL_SCHEMAS, strict=True)
    ]
    user = [
        _signature(dict(schema), "write" if name in USER_WRITE_TOOLS else "read", name in USER_WRITE_TOOLS)
        for name, schema in zip(USER_TOOL_NAMES, USER_TOOL_SCHEMAS, strict=True)
    ]
    assert agent == SIGNATURES["agent"]
    assert user == SIGNATURES["user"]
    for schema in (*TOOL_SCHEMAS, *USER_TOOL_SCHEMAS):
        parameters = schema["function"]["parameters"]
        assert parameters["title"] == "parameters" and parameters["type"] == "object"
        assert schema["function"]["description"]
        for ref in json.dumps(parameters).split('"$ref": "#/$defs/')[1:]:
            assert ref.split('"')[0] in parameters["$defs"]
        if not parameters["properties"]:
            assert "required" not in parameters  # upstream's shape for a tool without parameters


# --------------------------------------------------------------------------- what loading costs

_MEASURE = """
import json, resource, sys, time
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS'):
            return int(line.split()[1]) / 1024
import telecom_domain
before = rss(); start = time.perf_counter()
data = telecom_domain.load_data()
print(json.dumps({"seconds": time.perf_counter() - start, "rss_mb": rss() - before}))
"""


def test_loading_keeps_the_task_file_compact(telecom: TelecomData) -> None:
    """A fresh process loads telecom in well under a second and keeps about 16 MB (the file's text and the
    base split parsed); parsing every task would keep about 47 MB."""
    environment = {**os.environ, ENV_VAR: str(telecom.source.path("tasks.json").parent)}
    completed = subprocess.run(
        [sys.executable, "-c", _MEASURE],
        capture_output=True,
        text=True,
        env=environment,
        check=True,
        timeout=120,
    )
    measured = json.loads(completed.stdout)
    print(f"telecom load: {measured['seconds']:.2f} s, +{measured['rss_mb']:.1f} MB RSS")
    assert measured["rss_mb"] < 30
    assert measured["seconds"] < 5
