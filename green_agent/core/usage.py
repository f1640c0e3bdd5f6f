"""Token usage and its cost: the user simulator's and the judge's (read from the OpenAI-compatible responses),
and the white agent's own when it reports it.

Prices come from the operator (per model, USD per million tokens); a model without a price has cost None,
never a guess. The white agent may report its usage in A2A message metadata under `AGENT_USAGE_KEY`; that is
agent input, so every value is checked (a number, finite, not negative, within the operator's per-reply
bounds) and anything else is ignored with a protocol warning.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

AGENT_USAGE_KEY = "tau2_usage"
"""Optional A2A message-metadata key of a white agent's reply: `{"prompt_tokens": int, "completion_tokens":
int, "cost_usd": float}` for the LLM work behind *that* reply (not a running total); every field optional."""

_TOKEN_FIELDS = ("prompt_tokens", "completion_tokens")


@dataclass(frozen=True)
class TokenUsage:
    """Tokens an LLM endpoint reported, over every response a `complete` call received (retried empty
    replies were billed too); `calls` counts those responses."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


class ModelPrice(BaseModel):
    """What one model costs, in USD per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input_per_mtok: float = Field(ge=0, description="USD per million prompt tokens.")
    output_per_mtok: float = Field(ge=0, description="USD per million completion tokens.")


class Usage(BaseModel):
    """Tokens (and cost) of one party over one trial or one assessment.

    `cost_usd` is None when it cannot be known: no price for the model, or (summed) when any part is
    unknown."""

    model: str | None = None
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class TrialUsage(BaseModel):
    """Per-trial usage by party; None = that party made no metered calls (scripted user, no judge call, an
    agent that reported nothing)."""

    user: Usage | None = None
    judge: Usage | None = None
    agent: Usage | None = None


def price(
    model: str, prompt_tokens: int, completion_tokens: int, prices: Mapping[str, ModelPrice]
) -> float | None:
    known = prices.get(model)
    if known is None:
        return None
    return (prompt_tokens * known.input_per_mtok + completion_tokens * known.output_per_mtok) / 1_000_000


def priced(model: str, calls: int, prompt: int, completion: int, prices: Mapping[str, ModelPrice]) -> Usage:
    return Usage(
        model=model,
        calls=calls,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost_usd=price(model, prompt, completion, prices),
    )


def total(parts: Iterable[Usage | None]) -> Usage | None:
    """The sum of several usages; the cost is known only if every part's is; the model kept if shared."""
    present = [u for u in parts if u is not None]
    if not present:
        return None
    models = {u.model for u in present}
    costs = [u.cost_usd for u in present]
    return Usage(
        model=models.pop() if len(models) == 1 else None,
        calls=sum(u.calls for u in present),
        prompt_tokens=sum(u.prompt_tokens for u in present),
        completion_tokens=sum(u.completion_tokens for u in present),
        cost_usd=None if any(c is None for c in costs) else sum(c for c in costs if c is not None),
    )


class AgentUsageMeter:
    """Adds up the usage a white agent reports in its replies' metadata, within the operator's bounds."""

    def __init__(self, max_tokens_per_reply: int, max_cost_per_reply: float) -> None:
        self.max_tokens = max_tokens_per_reply
        self.max_cost = max_cost_per_reply
        self.reports = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cost_usd = 0.0
        self.costs_reported = 0

    def add(self, metadata: Mapping[str, Any] | None) -> list[str]:
        """Count one reply's report (if any); return protocol warnings for what was ignored."""
        if not metadata or AGENT_USAGE_KEY not in metadata:
            return []
        report = metadata[AGENT_USAGE_KEY]
        if not isinstance(report, Mapping):
            return [f"metadata {AGENT_USAGE_KEY!r} is not an object; ignored"]
        warnings: list[str] = []
        counted = False
        for name in _TOKEN_FIELDS:
            if name not in report:
                continue
            value = _number(report[name], self.max_tokens, integral=True)
            if value is None:
                warnings.append(
                    f"metadata {AGENT_USAGE_KEY}.{name}={_shown(report[name])} is not a whole number "
                    f"of tokens between 0 and {self.max_tokens}; ignored"
                )
                continue
            setattr(self, name, getattr(self, name) + int(value))
            counted = True
        if "cost_usd" in report:
            cost = _number(report["cost_usd"], self.max_cost, integral=False)
            if cost is None:
                warnings.append(
                    f"metadata {AGENT_USAGE_KEY}.cost_usd={_shown(report['cost_usd'])} is not an amount "
                    f"between 0 and {self.max_cost:g} USD; ignored"
                )
            else:
                self.cost_usd += cost
                self.costs_reported += 1
                counted = True
        unknown = sorted(str(k) for k in report if k not in (*_TOKEN_FIELDS, "cost_usd"))
        if unknown:
            warnings.append(f"metadata {AGENT_USAGE_KEY} has unknown fields {unknown[:5]}; ignored")
        self.reports += int(counted)
        return warnings

    def usage(self) -> Usage | None:
        """None when the agent reported nothing; the cost only when every counted report carried one."""
        if not self.reports:
            return None
        cost = self.cost_usd if self.costs_reported == self.reports else None
        return Usage(
            calls=self.reports,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cost_usd=cost,
        )


def _number(value: Any, bound: float, *, integral: bool) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0 or value > bound:
        return None
    if integral and not float(value).is_integer():
        return None
    return float(value)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"
