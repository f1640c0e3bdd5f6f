"""What a tau2 retail conversation weighs against `max_agent_text_bytes_per_trial` (core/limits.py).

Counted as the orchestrator counts it: the agent's messages (text, and tool calls as id + name + compact JSON
arguments) and the tool results it asked for, in UTF-8 bytes; the customer's messages are shown apart. Two
sources: the 114 tasks' gold actions replayed on a fresh DB (the tool traffic a solving agent cannot avoid),
and, optionally, tau2-bench results files of real runs (`simulations[].messages`), e.g. a leaderboard
submission's trajectories.

    .venv/bin/python -m bench.conversation_weight
    .venv/bin/python -m bench.conversation_weight results.json [more.json ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from green_agent.core.limits import AgentLimits, message_bytes, utf8_size
from retail_domain import load_retail_data


def gold_weights() -> list[int]:
    data = load_retail_data()
    weights = []
    for task in data.tasks.values():
        env, total = data.new_environment(), 0
        for i, action in enumerate(task.gold_actions):
            call = {"id": f"call_{i}", "name": action.name, "arguments": dict(action.arguments)}
            total += message_bytes(None, [call]) + utf8_size(env.call(action.name, action.arguments).content)
        weights.append(total)
    return weights


def run_weights(path: Path) -> list[tuple[int, int, int]]:
    """(agent-caused bytes, customer bytes, messages) per simulation of a tau2 results file."""
    rows = []
    for simulation in json.loads(path.read_text())["simulations"]:
        agent = user = 0
        for message in simulation["messages"]:
            role, content = message.get("role"), message.get("content")
            if role == "user":
                user += utf8_size(content or "")
            elif role in ("assistant", "tool"):
                calls: list[dict[str, Any]] = [
                    {"id": c.get("id") or "", "name": c.get("name") or "", "arguments": c.get("arguments")}
                    for c in message.get("tool_calls") or ()
                ]
                agent += message_bytes(content, calls)
        rows.append((agent, user, len(simulation["messages"])))
    return rows


def _quantiles(values: list[int]) -> str:
    ordered = sorted(values)
    pick = [ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in (0.5, 0.9, 0.99)]
    return f"median {pick[0]:,}, p90 {pick[1]:,}, p99 {pick[2]:,}, max {ordered[-1]:,} bytes"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="*", type=Path, help="tau2-bench results files of real runs")
    args = parser.parse_args()
    bound = AgentLimits().max_agent_text_bytes_per_trial
    print(f"max_agent_text_bytes_per_trial default: {bound:,} bytes (half: {bound // 2:,})")
    print(f"gold actions of 114 tasks (tool calls + results): {_quantiles(gold_weights())}")
    for path in args.results:
        rows = run_weights(path)
        print(f"{path.name}: {len(rows)} conversations, up to {max(r[2] for r in rows)} messages")
        print(f"  agent-caused: {_quantiles([r[0] for r in rows])}")
        print(f"  customer:     {_quantiles([r[1] for r in rows])}")


if __name__ == "__main__":
    main()
