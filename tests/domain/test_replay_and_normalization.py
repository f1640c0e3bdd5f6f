"""The replay command (retail-replay / green-agent replay) and optional id normalization."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from retail_domain import RetailData
from retail_domain.replay import main

from .test_gold import GOLD_HASHES

TASK20_REVERSED = {
    "order_id": "#W9911714",
    "item_ids": ["1763705424", "9791469541", "1340995114", "2366567022"],
    "new_item_ids": ["2882812427", "4107812777", "1151293680", "4579334072"],
    "payment_method_id": "gift_card_4332117",
}


def write(tmp_path: Path, document: object) -> str:
    path = tmp_path / "calls.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


def test_gold_calls_replay_to_the_gold_hash(
    data: RetailData, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = [{"name": c.name, "arguments": c.arguments} for c in data.gold("0").actions]
    assert main(["--task", "0", write(tmp_path, calls), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["matched"] is True and report["db_hash"] == GOLD_HASHES["0"] == report["gold_db_hash"]
    assert [c["error"] for c in report["calls"]] == [False] * 5
    assert report["calls"][0]["content"] == "yusuf_rossi_9620"
    assert report["differences"] == []


def test_mismatch_prints_results_hashes_and_differences(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = [
        {
            "type": "function",
            "function": {"name": "modify_pending_order_items", "arguments": json.dumps(TASK20_REVERSED)},
        },
        {"function": {"name": "get_order_details", "arguments": "{not json"}},
        {"name": "get_order_details", "arguments": {}},
    ]
    assert main(["--task", "20", write(tmp_path, calls)]) == 1
    out = capsys.readouterr().out
    assert "final DB hash:   f4977f1a" in out
    assert f"gold DB hash:    {GOLD_HASHES['20']}" in out
    assert "matches gold:    no" in out
    assert "Error: arguments are not valid JSON" in out
    assert "Error: RetailTools.get_order_details() missing 1 required positional argument: 'order_id'" in out
    assert "orders/#W9911714.items[0].price: 54.85 vs 261.11" in out


def test_wrapped_calls_and_stdin(tmp_path: Path) -> None:
    document = {"tool_calls": [{"name": "transfer_to_human_agents", "arguments": {"summary": "x"}}]}
    out = subprocess.run(
        [sys.executable, "-m", "retail_domain.replay", "--task", "50", "-", "--json"],
        input=json.dumps(document),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr  # task 50's gold DB is the initial DB
    assert json.loads(out.stdout)["calls"][0]["content"] == "Transfer successful"


def test_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--task", "0", write(tmp_path, {"not": "a list"})]) == 2
    assert main(["--task", "999", write(tmp_path, [])]) == 2
    assert main(["--task", "0", str(tmp_path / "missing.json")]) == 2
    assert main(["--task", "0", write(tmp_path, []), "--data-dir", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "unknown retail task id '999'" in err and "does not exist" in err


def test_gold_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--task", "64", "--gold"]) == 0
    out = capsys.readouterr().out
    assert "matches gold:    yes" in out
    assert "gold[6] exchange_delivered_order_items: Error: Non-delivered order cannot be exchanged" in out


def test_id_normalization_is_off_by_default(data: RetailData) -> None:
    env = data.new_environment()
    assert env.call("get_order_details", {"order_id": "w2378156"}).content == "Error: Order not found"
    assert env.call("get_user_details", {"user_id": "Yusuf_Rossi_9620"}).content == "Error: User not found"


def test_id_normalization_when_on(data: RetailData) -> None:
    env = data.new_environment(normalize_ids=True)
    for spelled in ("w2378156", " #w2378156 ", "W2378156"):
        assert (
            json.loads(env.call("get_order_details", {"order_id": spelled}).content)["order_id"]
            == "#W2378156"
        )
    assert not env.call("get_user_details", {"user_id": "Yusuf_Rossi_9620"}).error
    assert (
        env.call("find_user_id_by_email", {"email": " YUSUF.ROSSI7301@EXAMPLE.COM "}).content
        == "yusuf_rossi_9620"
    )
    # the canonical ids reach the DB, so a normalized trajectory scores like the exact one
    result = env.call(
        "exchange_delivered_order_items",
        {
            "order_id": "w2378156",
            "item_ids": [" 1151293680", "4983901480"],
            "new_item_ids": ["7706410293", "7747408585 "],
            "payment_method_id": "Credit_Card_9513926",
        },
    )
    assert not result.error, result.content
    assert env.db_hash() == GOLD_HASHES["0"]
    # free text is never touched
    assert env.call("cancel_pending_order", {"order_id": "#W6779827", "reason": "No longer needed"}).error
