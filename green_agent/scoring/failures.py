"""What went wrong in a failed trial, in the agent's terms: which gold write is missing, which argument of a
gold action differs (what gold expects, what the agent sent), which write the task did not want, which tool
calls failed, why the conversation ended, which NL assertion the judge found unmet, which env assertion did
not hold (what it expected and what it found).

Computed from the trial alone (its tool calls and their results, its termination, the judge's verdicts, its
env assertion checks) and the task's gold actions, with tau2's ACTION semantics (domain_kit's
`action_matches`, as `check_actions` uses it) over the writes of the trial's domain (`write_tools`, from its
`DomainData`): no LLM, no replay, a few microseconds per call. Nothing here depends on one domain. The
engine classifies each trial as it scores it (the stored `TrialResult.failures`, what lists and the CSV
count); a page showing one trial classifies it again and gives each DB field that differs from gold
(`diagnosis.replay_trial`) where no call explains the difference.

The write analysis runs only when the final DB differs from gold: a DB equal to gold has every write right as
far as the score is concerned. Then, per gold write action (gold's own failing calls left out: they change
nothing):

* matched by some call: fine;
* not matched, with a call of the same tool that matches no gold action: `wrong_arguments`, one entry per
  compared argument that differs, against the closest such call (executed first, then fewest differences);
* not matched, no such call: `missing_action`.

A write call that ran without error and matches no gold action (and was not taken as some gold action's wrong
attempt) is an `extra_write`. A DB that differs although none of the three applies is a `db_difference`.

Each env assertion of the task that did not hold on the trial's end state (telecom, mock) is an
`env_assertion`, naming the function and its arguments, with what it was expected to return and what it did,
and what the end state held where it looked (`found`, where the domain says).

Where the task's reward does not rest on the DB (telecom's ENV_ASSERTION and ACTION tasks, a mock task) the DB
is a diagnostic, and in telecom its gold replay is not even the end state a perfect run reaches (upstream's
replay skips the sync): no DB analysis then. Instead every gold action that no call of the trajectory matches
(made by either party, as tau2's ACTION check counts them) is a `missing_action` (the customer's own ones
marked `argument="customer"`), or `wrong_arguments` against a call of the same tool; the agent's writes that
no gold action wants are `extra_write`s. Where the basis names ACTION beside DB (mock), a gold action the
write analysis does not cover (a transfer: no write) is checked the same way.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from domain_kit import GoldAction, Task, TerminationReason, is_clean_exit
from domain_kit.checks import action_matches
from domain_kit.diff import Difference
from green_agent.core.history import history_length
from green_agent.core.limits import AgentLimits, compact_json, cut_text, utf8_size
from green_agent.core.models import FAILURE_KINDS, SIGNAL_DB, Failure, FailureKind, TrialResult

T = TypeVar("T")

NOT_SENT = "<not sent>"
"""`got` of a wrong argument the agent's call left out."""


@dataclass(frozen=True)
class Call:
    """One tool call of the trial with its result, in execution order."""

    index: int
    name: str
    arguments: dict[str, Any]
    error: bool | None  # None: no result was recorded (the trial ended before it ran)
    result: str | None
    requestor: str = "assistant"  # "user": the customer's own tool (dual control)


def trial_calls_with_results(result: TrialResult, *, customer: bool = False, start: int = 0) -> list[Call]:
    """The agent's tool calls (with `customer`, the customer's own too, in trajectory order), each with the
    result recorded after it (the engine runs a reply's calls one by one and records each result right
    after, the customer's with requestor "user": results follow their calls in order). `start`: the first
    message to read (the task's message history, before it, is not this trial's doing)."""
    done: list[tuple[str, dict[str, Any], bool | None, str | None, str]] = []
    waiting: dict[str, list[tuple[str, dict[str, Any]]]] = {"assistant": [], "user": []}
    for message in result.transcript[start:]:
        party: str
        if message.role in ("assistant", "user") and message.tool_calls:
            party = message.role
            done.extend((name, arguments, None, None, party) for name, arguments in waiting[party])
            waiting[party] = [(call.name, call.arguments) for call in message.tool_calls]
        elif message.role == "tool":
            party = "user" if message.requestor == "user" else "assistant"
            if waiting[party]:
                name, arguments = waiting[party].pop(0)
                done.append((name, arguments, message.error, message.content, party))
    for who, calls in waiting.items():
        done.extend((name, arguments, None, None, who) for name, arguments in calls)
    kept = [entry for entry in done if customer or entry[4] == "assistant"]
    return [Call(i, *entry) for i, entry in enumerate(kept)]


def db_failed(result: TrialResult) -> bool:
    """Whether the trial's final DB differs from gold (its DB signal; the hashes for a trial without one)."""
    for signal in result.signals:
        if signal.name == SIGNAL_DB:
            return signal.passed is False
    return (
        result.db_expected_hash is not None
        and result.db_actual_hash is not None
        and result.db_expected_hash != result.db_actual_hash
    )


def is_failed(result: TrialResult) -> bool:
    """Scored, and not a success: the trials that are classified (excluded and passed ones have nothing)."""
    return result.reward is not None and not result.is_successful


def classify_trial(
    task: Task,
    result: TrialResult,
    *,
    write_tools: Collection[str],
    gold_failed: Collection[int] = (),
    limits: AgentLimits | None = None,
    differences: Sequence[Difference] | None = None,
) -> list[Failure]:
    """Every failure of a failed trial, by kind in `FAILURE_KINDS` order; empty for a passed or excluded one.
    `write_tools`: the tools of the trial's domain that may change its DB (`DomainData.write_tools`);
    `gold_failed`: indices in `task.gold_actions` of the gold calls that fail (`GoldOutcome.failed_calls`);
    `differences`: the DB fields that differ from gold (`diagnosis.replay_trial`), given when known: a DB
    difference no call explains is then one entry per field."""
    if not is_failed(result):
        return []
    bound = _Bound(limits or AgentLimits())
    everyone = trial_calls_with_results(result, customer=True, start=history_length(task, result.transcript))
    calls = [c for c in everyone if c.requestor == "assistant"]
    failing_gold = [action for i, action in enumerate(task.gold_actions) if i in gold_failed]
    writes = frozenset(write_tools)
    found: list[Failure] = [*termination(result, bound)]
    if "DB" in task.reward_basis:
        covered: set[int] = set()  # gold actions the write analysis looked at
        if db_failed(result):
            covered = {i for i, a in enumerate(task.gold_actions) if a.name in writes}
            analysed = write_failures(task.gold_actions, calls, gold_failed, bound, writes)
            found.extend(analysed)
            if not analysed:
                found.extend(db_differences(differences, bound))
        if "ACTION" in task.reward_basis:
            found.extend(action_failures(task.gold_actions, everyone, gold_failed, bound, skip=covered))
    else:  # the DB is a diagnostic here: the gold actions themselves, whoever was to make them
        found.extend(action_failures(task.gold_actions, everyone, gold_failed, bound, extra_writes=writes))
    found.extend(env_assertion_failures(result, bound))
    found.extend(nl_failures(result, bound))
    found.extend(tool_errors(calls, failing_gold, bound))
    return found


_ENDINGS = {
    TerminationReason.MAX_STEPS.value: "the conversation reached the step limit ({steps} steps, max_steps) "
    "before the customer or the agent ended it",
    TerminationReason.TOO_MANY_ERRORS.value: "the trial stopped after {errors} tool errors (max_errors)",
    TerminationReason.AGENT_ERROR.value: "the agent failed{why}",
    TerminationReason.INTERNAL_ERROR.value: "the green agent met a bug of its own while handling the "
    "agent's input (scored 0: please report it){why}",
    TerminationReason.USER_ERROR.value: "the customer simulator ended with an error{why}",
}


def termination(result: TrialResult, bound: _Bound) -> list[Failure]:
    reason = result.termination_reason
    if is_clean_exit(reason):
        return []
    lines = (result.error or "").strip().splitlines()
    why = f": {lines[0]}" if lines else ""
    detail = _ENDINGS.get(reason, "ended by {reason}{why}").format(
        steps=result.steps, errors=result.num_errors, why=why, reason=reason
    )
    return [
        Failure(kind="termination", expected="user_stop or agent_stop", got=reason, detail=bound.text(detail))
    ]


def write_failures(
    gold_actions: Sequence[GoldAction],
    calls: Sequence[Call],
    gold_failed: Collection[int],
    bound: _Bound,
    write_tools: frozenset[str],
) -> list[Failure]:
    """missing_action, wrong_arguments and extra_write of a trial whose DB differs from gold. Linear in the
    calls: each is compared only with the gold actions of its own tool (a flood of calls costs no more)."""
    gold_by_tool: dict[str, list[int]] = defaultdict(list)
    for i, action in enumerate(gold_actions):
        gold_by_tool[action.name].append(i)
    writes = [c for c in calls if c.name in write_tools]
    matched: set[int] = set()  # gold actions some call matches
    wanted: set[int] = set()  # calls that match some gold action
    for c in writes:
        for i in gold_by_tool.get(c.name, ()):
            if action_matches(gold_actions[i], c.name, c.arguments):
                matched.add(i)
                wanted.add(c.index)
    taken: set[int] = set()  # calls read as some gold action's wrong attempt
    missing: list[Failure] = []
    wrong: list[Failure] = []
    for i, action in enumerate(gold_actions):
        if action.name not in write_tools or i in gold_failed or i in matched:
            continue
        same_tool = [c for c in writes if c.name == action.name]
        attempts = [c for c in same_tool if c.index not in wanted and c.index not in taken]
        if not attempts:
            missing.append(
                Failure(
                    kind="missing_action",
                    action=action.name,
                    expected=bound.value(action.arguments),
                    detail=bound.text(
                        f"{action.name} was never called: gold calls it with {compact_json(action.arguments)}"
                    ),
                )
            )
            continue
        closest = min(attempts, key=lambda c: (c.error is not False, len(_differing(action, c)), c.index))
        taken.add(closest.index)
        wrong.extend(_wrong_arguments(action, closest, bound))
    unwanted = [c for c in writes if c.error is False and c.index not in wanted and c.index not in taken]
    extra = bound.listed("extra_write", unwanted, lambda c: _extra_write(c, bound))
    return [
        *bound.listed("missing_action", missing, _same),
        *bound.listed("wrong_arguments", wrong, _same),
        *extra,
    ]


def action_failures(
    gold_actions: Sequence[GoldAction],
    calls: Sequence[Call],
    gold_failed: Collection[int],
    bound: _Bound,
    *,
    skip: Collection[int] = (),
    extra_writes: frozenset[str] = frozenset(),
) -> list[Failure]:
    """Gold actions (but those in `skip` and gold's own failing ones) that no call matches, made by either
    party as tau2's ACTION check counts them: `wrong_arguments` against the closest call of the same tool
    that matches no gold action, else `missing_action` (the customer's own marked `argument="customer"`).
    The agent's calls to `extra_writes` that ran and match no gold action are `extra_write`s."""
    gold_by_tool: dict[str, list[int]] = defaultdict(list)
    for i, action in enumerate(gold_actions):
        gold_by_tool[action.name].append(i)
    matched: set[int] = set()
    wanted: set[int] = set()
    for c in calls:
        for i in gold_by_tool.get(c.name, ()):
            if action_matches(gold_actions[i], c.name, c.arguments):
                matched.add(i)
                wanted.add(c.index)
    taken: set[int] = set()
    missing: list[Failure] = []
    wrong: list[Failure] = []
    for i, action in enumerate(gold_actions):
        if i in skip or i in gold_failed or i in matched:
            continue
        attempts = [c for c in calls if c.name == action.name and c.index not in wanted | taken]
        if attempts:
            closest = min(attempts, key=lambda c: (c.error is not False, len(_differing(action, c)), c.index))
            taken.add(closest.index)
            wrong.extend(_wrong_arguments(action, closest, bound))
            continue
        customer = action.requestor == "user"
        who = "the customer's " if customer else ""
        makes = "has the customer call it" if customer else "calls it"
        missing.append(
            Failure(
                kind="missing_action",
                action=action.name,
                argument="customer" if customer else None,
                expected=bound.value(action.arguments),
                detail=bound.text(
                    f"{who}{action.name} was never called: gold {makes} with {compact_json(action.arguments)}"
                ),
            )
        )
    unwanted = [
        c
        for c in calls
        if c.requestor == "assistant"
        and c.name in extra_writes
        and c.error is False
        and c.index not in wanted | taken
    ]
    return [
        *bound.listed("missing_action", missing, _same),
        *bound.listed("wrong_arguments", wrong, _same),
        *bound.listed("extra_write", unwanted, lambda c: _extra_write(c, bound)),
    ]


def _wrong_arguments(action: GoldAction, closest: Call, bound: _Bound) -> list[Failure]:
    """One `wrong_arguments` per compared argument where `closest` (a call of the gold action's tool)
    differs."""
    wrong = []
    for key in _differing(action, closest):
        sent = closest.arguments.get(key, NOT_SENT)
        gold = action.arguments.get(key)
        wrong.append(
            Failure(
                kind="wrong_arguments",
                action=action.name,
                argument=bound.text(key),
                expected=bound.value(gold),
                got=bound.value(sent),
                detail=bound.text(
                    f"{action.name} (call {closest.index + 1}) was sent {key} = {compact_json(sent)}; "
                    f"gold has {compact_json(gold)}"
                ),
            )
        )
    return wrong


def _extra_write(c: Call, bound: _Bound) -> Failure:
    return Failure(
        kind="extra_write",
        action=c.name,
        got=bound.value(c.arguments),
        detail=bound.text(
            f"{c.name} (call {c.index + 1}) changed the database with {compact_json(c.arguments)}, "
            "a write the task did not want"
        ),
    )


def db_differences(differences: Sequence[Difference] | None, bound: _Bound) -> list[Failure]:
    """A DB that differs from gold where no missing, wrong or extra write explains it: each field, when the
    replay's differences are known."""
    if not differences:
        detail = (
            "the final database differs from gold, and no missing, wrong or extra write explains it (the "
            "trial page lists the fields that differ)"
        )
        return [Failure(kind="db_difference", detail=detail)]
    return bound.listed(
        "db_difference",
        differences,
        lambda d: Failure(
            kind="db_difference",
            argument=bound.text(d.path),
            expected=bound.value(d.expected),
            got=bound.value(d.actual),
            detail=bound.text(
                f"{d.path} is {compact_json(d.actual)} here, {compact_json(d.expected)} in gold, though no "
                "missing, wrong or extra write explains it"
            ),
        ),
    )


def _differing(action: GoldAction, call: Call) -> list[str]:
    """The compared arguments where the call differs from the gold action (upstream's keys: `compare_args`,
    else the call's own keys)."""
    keys: Iterable[str] = call.arguments.keys() if action.compare_args is None else action.compare_args
    sent, gold = call.arguments, action.arguments
    return [key for key in dict.fromkeys(keys) if sent.get(key, NOT_SENT) != gold.get(key, NOT_SENT)]


def env_assertion_failures(result: TrialResult, bound: _Bound) -> list[Failure]:
    """Each env assertion that did not hold on the trial's end state (`TrialResult.env_assertion_checks`):
    the function and its arguments, what it was expected to return, and what it returned (or how it
    failed)."""
    unmet = [check for check in result.env_assertion_checks if not _assertion_met(check)]

    def failure(check: dict[str, Any]) -> Failure:
        name = str(check.get("func_name") or "?")
        side = "the agent's" if check.get("env_type", "assistant") == "assistant" else "the customer's"
        arguments = check.get("arguments") or {}
        expected, actual, error = check.get("expected", True), check.get("actual"), check.get("error")
        found = f"it failed: {error}" if actual is None else f"found {compact_json(actual)}"
        if check.get("found"):  # what the end state held where the function looked, in the domain's words
            found += f": {check['found']}"
        message = check.get("message")
        call = f"{name}({compact_json(arguments)})"
        detail = f"{call} on {side} side: expected {compact_json(expected)}, {found}"
        return Failure(
            kind="env_assertion",
            action=bound.text(name),
            argument=bound.text(str(check.get("env_type", "assistant"))),
            expected=bound.value(expected),
            got=bound.value(actual) if actual is not None else bound.text(str(error or "no value")),
            detail=bound.text(detail + (f" ({message})" if message else "")),
        )

    return bound.listed("env_assertion", unmet, failure)


def _assertion_met(check: dict[str, Any]) -> bool:
    """As domain_kit's `AssertionCheck.met`, on its stored form."""
    actual = check.get("actual")
    return actual is not None and actual == check.get("expected", True)


def nl_failures(result: TrialResult, bound: _Bound) -> list[Failure]:
    return bound.listed(
        "nl_assertion",
        [verdict for verdict in result.nl_verdicts if not verdict.passed],
        lambda verdict: Failure(
            kind="nl_assertion",
            expected=bound.text(verdict.assertion),
            got=bound.text(verdict.reason),
            detail=bound.text(f"NL assertion {verdict.index + 1} not met: {verdict.assertion}"),
        ),
    )


def _same(failure: Failure) -> Failure:
    return failure


def tool_errors(calls: Sequence[Call], failing_gold: Sequence[GoldAction], bound: _Bound) -> list[Failure]:
    """Calls that returned an error, but for those gold makes too (its own failing calls)."""
    gold_fails = {a.name for a in failing_gold}
    errors = [
        c
        for c in calls
        if c.error
        and not (c.name in gold_fails and any(action_matches(a, c.name, c.arguments) for a in failing_gold))
    ]
    return bound.listed(
        "tool_errors",
        errors,
        lambda c: Failure(
            kind="tool_errors",
            action=c.name,
            got=bound.text(c.result or ""),
            detail=bound.text(f"{c.name} (call {c.index + 1}) returned an error: {(c.result or '').strip()}"),
        ),
    )


def kinds(failures: Iterable[Failure | dict[str, Any]]) -> list[FailureKind]:
    """The kinds present, in `FAILURE_KINDS` order (stored failures come back as dicts in summaries)."""
    present = {f.kind if isinstance(f, Failure) else f.get("kind") for f in failures}
    return [kind for kind in FAILURE_KINDS if kind in present]


def failure_label(failure: Failure | dict[str, Any]) -> str:
    """One failure in a few words, the same for the same cause across trials (what "most common failure
    reasons" counts, and the CSV's `failures` column): "missing exchange_delivered_order_items", "wrong
    item_ids to exchange_delivered_order_items", "ended by max_steps"."""
    f = failure if isinstance(failure, Failure) else Failure.model_validate(failure)
    if f.kind == "missing_action":
        return f"missing {f.action}" + (" (the customer's)" if f.argument == "customer" else "")
    if f.kind == "wrong_arguments":
        return f"wrong {f.argument} to {f.action}" if f.argument else f"wrong arguments to {f.action}"
    if f.kind == "extra_write":
        return f"extra write {f.action}" if f.action else "extra writes"
    if f.kind == "db_difference":
        return "DB differs from gold, no call explains it"
    if f.kind == "env_assertion":
        return f"env assertion failed: {f.action}" if f.action else "env assertions failed"
    if f.kind == "termination":
        return f"ended by {f.got}" if f.got else "ended badly"
    if f.kind == "nl_assertion":
        return f"NL assertion not met: {f.expected}" if f.expected else "NL assertions not met"
    return f"tool error in {f.action}" if f.action else "tool errors"


class _Bound:
    """The per-trial bounds on what failures quote (`AgentLimits.max_failure_*`)."""

    def __init__(self, limits: AgentLimits) -> None:
        self.per_kind = limits.max_failures_per_kind
        self.value_bytes = limits.max_failure_value_bytes

    def text(self, text: str) -> str:
        return cut_text(text, self.value_bytes, "text")[0]

    def value(self, value: Any) -> Any:
        """The value itself when its compact JSON fits the bound; else that JSON, cut, as text."""
        if isinstance(value, str):
            return self.text(value)
        encoded = compact_json(value)
        return value if utf8_size(encoded) <= self.value_bytes else self.text(encoded)

    def listed(self, kind: FailureKind, items: Sequence[T], make: Callable[[T], Failure]) -> list[Failure]:
        """The failures of the first `per_kind` items (each built by `make`), then one saying how many more
        there were: the rest are counted, never built."""
        shown = [make(item) for item in items[: self.per_kind]]
        if len(items) > self.per_kind:
            more = len(items) - self.per_kind
            shown.append(
                Failure(kind=kind, detail=f"and {more} more {kind} not listed (max_failures_per_kind)")
            )
        return shown
