"""A taubench.com text submission (1.x tab): `submission.json` plus one trajectory file per domain, laid out
as tau2's `submit prepare` does (docs/leaderboard-submission.md upstream). One submission may carry several
domains (retail and airline, ...), one assessment each, as upstream's schema allows.

Honest by construction: a report with excluded trials (not judged, infrastructure errors) or an assessment
that did not complete is refused, because its pass^k is not the leaderboard's; fewer than all of a domain's
base tasks is written but marked `omitted_questions` (unverified); fewer than 4 trials is allowed and said,
with pass^k above the trial count left null. `modified_prompts` is false only when the user-simulator
guidelines in use are byte-identical to upstream's (by sha256). A step or error limit other than tau2's (200,
10: a small customer model's own `max_steps`, or the requester's choice) or an NL judge other than the
leaderboard's, where the judge scores, makes it a custom submission. Every setting of a run that differs from
the leaderboard's standard protocol (`STANDARD`) is named in `methodology.notes`, so a run made another way
cannot pass for a standard one; upstream refuses a set whose domains used different customers, and so does
this module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from domain_kit import DomainData
from green_agent.config import DEFAULT_JUDGE_MODEL, AssessmentConfig
from green_agent.core.models import AssessmentReport, RunInfo
from green_agent.tau2_format.export import TAU2_VERSION, ExportSource

UPSTREAM_GUIDELINES_SHA256 = "740a29dfa64d7bc08eea3bf7493575b914a63f744acbaf7f199ee07eddaf72d3"
"""sha256 of tau2-bench's data/tau2/user_simulator/simulation_guidelines.md (same in v1.0.0, v1.0.1)."""

LEADERBOARD_TRIALS = 4
TAU2_MAX_STEPS = 200
TAU2_MAX_ERRORS = 10
"""tau2's own limits per conversation; the defaults of `AssessmentConfig` (checked where they are used)."""


@dataclass(frozen=True)
class StandardProtocol:
    """How the current standard entries of the tau2 leaderboard were run (their `methodology.notes`: "User
    simulator: gpt-5.2 with reasoning_effort: low. 4 trials. Seed: 300. ... Infrastructure errors treated as
    failures"; the NL judge is tau2's default, gpt-4.1-2025-04-14). docs/tau2-leaderboard.md says which
    settings of this service give it."""

    user_model: str = "gpt-5.2"
    user_llm_args: tuple[tuple[str, Any], ...] = (("reasoning_effort", "low"),)
    judge_model: str = DEFAULT_JUDGE_MODEL
    trials: int = LEADERBOARD_TRIALS
    seed: int = 300
    max_steps: int = TAU2_MAX_STEPS
    max_errors: int = TAU2_MAX_ERRORS
    guidelines_sha256: str = UPSTREAM_GUIDELINES_SHA256

    def describe(self) -> str:
        return (
            f"customer {self.user_model} with {_args(dict(self.user_llm_args))}, "
            f"NL judge {self.judge_model}, {self.trials} trials, seed {self.seed}, "
            f"max_steps {self.max_steps}, max_errors {self.max_errors}, tau2's simulator guidelines, "
            "infrastructure errors counted as failures"
        )


STANDARD = StandardProtocol()


@dataclass(frozen=True)
class Submitter:
    """Who submits what: the leaderboard's identity fields, as the submitter declares them."""

    model_name: str
    model_organization: str
    submitting_organization: str
    email: str
    contact_name: str | None = None


class SubmissionRefused(ValueError):
    """The assessments cannot be submitted as they are; the message says why and what to do."""


@dataclass(frozen=True)
class DomainRun:
    """One assessment of a submission, with the domain it ran (`source.config.domain`)."""

    source: ExportSource
    data: DomainData

    @property
    def domain(self) -> str:
        return self.data.name


@dataclass(frozen=True)
class Submission:
    document: dict[str, Any]
    trajectory_files: dict[str, str]
    """Domain -> the trajectory file name (written under `trajectories/`)."""
    notices: list[str] = field(default_factory=list)
    """What a submitter must know (unverified marks, settings other than the standard protocol); also
    written into methodology.notes."""


def build_submission(runs: Sequence[DomainRun], submitter: Submitter, *, today: date) -> Submission:
    """The submission of one assessment per domain; `SubmissionRefused` says why it cannot be made."""
    if not runs:
        raise SubmissionRefused("name at least one assessment to submit")
    several = len(runs) > 1
    seen: dict[str, str] = {}
    for run in runs:
        if run.source.config.domain != run.domain:
            raise SubmissionRefused(
                f"assessment {run.source.assessment_id} ran {run.source.config.domain}, not {run.domain}"
            )
        if run.domain in seen:
            raise SubmissionRefused(
                f"assessments {seen[run.domain]} and {run.source.assessment_id} both ran {run.domain}; a "
                "submission carries one result per domain"
            )
        seen[run.domain] = run.source.assessment_id
    reports = [_complete_report(run, several) for run in runs]
    _same_customer(runs, reports)

    notices: list[str] = []
    results: dict[str, Any] = {}
    files: dict[str, str] = {}
    omitted = modified = custom = False
    settings: list[str] = []
    for run, report in zip(runs, reports, strict=True):
        checked = _check_run(run, report)
        prefix = f"{run.domain}: " if several else ""
        notices += [prefix + notice for notice in checked.notices]
        omitted |= checked.omitted
        modified |= checked.modified
        custom |= checked.custom
        settings.append(_settings_sentence(run, report))
        results[run.domain] = {
            f"pass_{k}": (report.pass_hat_k[k] * 100 if k in report.pass_hat_k else None)
            for k in range(1, LEADERBOARD_TRIALS + 1)
        }
        results[run.domain]["cost"] = report.usage.agent_cost_per_trial_usd if report.usage else None
        files[run.domain] = (
            f"{_slug(submitter.model_name)}_{run.domain}_default_"
            f"{_slug(_user_model(report.run_info))}_{report.num_trials}trials.json"
        )

    first = reports[0].run_info
    green_costs = [r.usage.green_cost_usd for r in reports if r.usage and r.usage.green_cost_usd is not None]
    ids = ", ".join(f"{run.source.assessment_id} ({run.domain})" for run in runs)
    notes = [
        f"Assessed as a remote A2A agent by tau2-retail-green-agent "
        f"(assessment{'s' if several else ''} {ids}), scored with tau2 {TAU2_VERSION} semantics",
        *settings,
        _infrastructure_sentence(reports),
        *(
            f"{run.domain}: the agent received tau2's {run.domain} policy verbatim and the "
            f"{len(run.data.tool_schemas)} {run.domain} tool schemas with descriptions in the green agent's "
            "own words, in its first A2A message"
            for run in runs
        ),
        "cost: mean agent cost per trajectory as the agent reported it (A2A metadata tau2_usage); null when "
        "not reported for every trial"
        + (f"; user simulator and judge cost of the run: {sum(green_costs):.4f} USD" if green_costs else ""),
        f"The leaderboard's standard protocol is {STANDARD.describe()}"
        + (
            "; this run differs as follows"
            if notices
            else "; this run follows it but for infrastructure errors"
        ),
        *notices,
    ]
    document: dict[str, Any] = {
        "model_name": submitter.model_name,
        "model_organization": submitter.model_organization,
        "submitting_organization": submitter.submitting_organization,
        "submission_date": today.isoformat(),
        "submission_type": "custom" if custom else "standard",
        "modality": "text",
        "contact_info": {
            "email": submitter.email,
            **({"name": submitter.contact_name} if submitter.contact_name else {}),
        },
        "trajectories_available": True,
        "trajectory_files": files,
        "results": results,
        "methodology": {
            "evaluation_date": min(run.source.created_at for run in runs).date().isoformat(),
            "tau2_bench_version": TAU2_VERSION,
            # tau2 compares this with the trajectories' user_info.llm: None for the scripted user
            "user_simulator": first.user_model if first else None,
            "notes": " ".join(_sentence(note) for note in notes),
            "verification": {
                "modified_prompts": modified,
                "omitted_questions": omitted,
                "details": "; ".join(
                    f"{prefix}user-simulator guidelines sha256 {sha or 'none (scripted user)'}"
                    for prefix, sha in (
                        (f"{run.domain}: " if several else "", _guidelines_sha(r.run_info))
                        for run, r in zip(runs, reports, strict=True)
                    )
                )
                + f"; tau2's is {UPSTREAM_GUIDELINES_SHA256}",
            },
        },
    }
    return Submission(document=document, trajectory_files=files, notices=notices)


@dataclass
class _Checked:
    notices: list[str] = field(default_factory=list)
    omitted: bool = False
    modified: bool = False
    custom: bool = False


def _complete_report(run: DomainRun, several: bool) -> AssessmentReport:
    """The run's report, if it is one the leaderboard can take; else SubmissionRefused saying why."""
    report = run.source.report
    which = f"assessment {run.source.assessment_id} ({run.domain}): " if several else ""
    if report is None:
        raise SubmissionRefused(which + "the assessment has no report yet; submit it once it has completed")
    partial = {reason: n for reason, n in report.excluded.items() if n}
    if partial:
        shown = ", ".join(f"{n} {reason}" for reason, n in sorted(partial.items()))
        raise SubmissionRefused(
            which
            + f"the report is partial ({shown} trial(s) excluded), so its pass^k is not the leaderboard's; "
            + _what_to_do(report, partial)
        )
    if report.trials_total < report.num_tasks * report.num_trials:
        raise SubmissionRefused(
            which + f"only {report.trials_total} of {report.num_tasks * report.num_trials} trials finished "
            "(cancelled?); submit a completed assessment"
        )
    return report


def _same_customer(runs: Sequence[DomainRun], reports: Sequence[AssessmentReport]) -> None:
    """Upstream refuses a submission whose trajectory files name different customers (user model and its
    arguments): the domains would not be comparable."""
    customers = {
        run.domain: (r.run_info.user_model, r.run_info.user_llm_args) if r.run_info else (None, {})
        for run, r in zip(runs, reports, strict=True)
    }
    if len({json.dumps(c, sort_keys=True, default=str) for c in customers.values()}) > 1:
        shown = "; ".join(
            f"{domain}: {model or 'scripted'} with {_args(args)}"
            for domain, (model, args) in customers.items()
        )
        raise SubmissionRefused(
            f"the assessments used different customers ({shown}); tau2 accepts a submission only when every "
            "domain ran the same user model with the same arguments"
        )


def _check_run(run: DomainRun, report: AssessmentReport) -> _Checked:
    """What marks one domain's result and every setting of its run that differs from `STANDARD`."""
    out = _Checked()
    config, info = run.source.config, report.run_info
    base = len(run.data.split(run.data.default_split))
    if report.num_tasks < base:
        out.omitted = True
        out.notices.append(
            f"only {report.num_tasks} of {base} {run.domain} tasks were run: marked omitted_questions "
            "(the leaderboard lists it as unverified)"
        )
    if report.num_trials < STANDARD.trials:
        out.notices.append(
            f"{report.num_trials} trial(s) per task; the leaderboard prefers {STANDARD.trials}: "
            f"pass^k for k > {report.num_trials} is null"
        )
    elif report.num_trials > STANDARD.trials:
        out.notices.append(f"{report.num_trials} trials per task (standard: {STANDARD.trials})")
    if info is None or info.user_model is None:
        out.notices.append("the customer was the scripted user, not an LLM: these numbers are not comparable")
    else:
        if info.user_model != STANDARD.user_model:
            out.notices.append(f"customer model {info.user_model} (standard: {STANDARD.user_model})")
        if sent_arguments(info.user_llm_args) != dict(STANDARD.user_llm_args):
            out.notices.append(
                f"customer arguments {_args(sent_arguments(info.user_llm_args))} "
                f"(standard: {_args(dict(STANDARD.user_llm_args))})"
            )
    if _judged(run.data):
        judge = info.judge_model if info else None
        if judge != STANDARD.judge_model:
            out.custom = True
            out.notices.append(
                f"NL judge {judge or 'none'} (standard: {STANDARD.judge_model}): marked as a custom "
                "submission"
            )
    if config.seed != STANDARD.seed:
        out.notices.append(f"seed {config.seed} (standard: {STANDARD.seed})")
    limits = _limits_notice(config)
    if limits:
        out.custom = True
        out.notices.append(limits)
    guidelines = _guidelines_sha(info)
    if guidelines != UPSTREAM_GUIDELINES_SHA256:
        out.modified = out.custom = True
        out.notices.append(
            f"the user-simulator guidelines in use (sha256 {guidelines or 'none: scripted user'}) are not "
            f"byte-identical to tau2's ({UPSTREAM_GUIDELINES_SHA256}): marked modified_prompts (custom "
            "submission)"
        )
    return out


def sent_arguments(user_llm_args: dict[str, Any]) -> dict[str, Any]:
    """The customer's request arguments as sent: an argument set to null is not sent."""
    return {name: value for name, value in user_llm_args.items() if value is not None}


def _settings_sentence(run: DomainRun, report: AssessmentReport) -> str:
    """Every setting of one domain's run, standard or not."""
    config, info = run.source.config, report.run_info
    customer = (
        f"customer {info.user_model} with {_args(sent_arguments(info.user_llm_args))}"
        if info and info.user_model
        else "scripted customer"
    )
    if not _judged(run.data):
        judge = "no NL judge needed (no task of its reward basis has NL assertions)"
    elif info and info.judge_model:
        judge = f"NL judge {info.judge_model} with this service's rubric (sha256 {info.judge_rubric_sha256})"
    else:
        judge = "no NL judge"
    retries = (
        f", trial retries {info.trial_retries}" if info is not None and info.trial_retries is not None else ""
    )
    return (
        f"{run.domain}: {report.num_tasks} tasks x {report.num_trials} trials, seed {config.seed}, "
        f"{customer}, {judge}, max_steps {config.max_steps}, max_errors {config.max_errors}{retries}"
    )


def _infrastructure_sentence(reports: Sequence[AssessmentReport]) -> str:
    """How infrastructure errors were counted: never as the agent's failures, unlike the standard entries."""
    retries = {r.run_info.trial_retries for r in reports if r.run_info is not None}
    known = sorted(n for n in retries if n is not None)
    up_to = f" (up to {'/'.join(str(n) for n in known)} times within the run)" if known else ""
    return (
        "Infrastructure errors (the customer's or the judge's LLM failing after its retries) are not counted "
        f"as failures here, unlike the standard entries: such a trial is run again{up_to} or by "
        "`green-agent retry`, and an assessment that still lacks a trial is not submitted; every trial of "
        "these results finished its conversation and was scored"
    )


def _judged(data: DomainData) -> bool:
    """Whether the NL judge scores this domain: some task's reward basis has NL assertions."""
    return any("NL_ASSERTION" in task.reward_basis and task.nl_assertions for task in data.tasks.values())


def _guidelines_sha(info: RunInfo | None) -> str | None:
    return info.user_guidelines_sha256 if info else None


def _user_model(info: RunInfo | None) -> str:
    return info.user_model if info and info.user_model else "scripted"


def _args(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True) if arguments else "no arguments"


def _limits_notice(config: AssessmentConfig) -> str | None:
    """What differs from tau2's conversation limits, or None: fewer steps end conversations tau2 would have
    let finish, so pass^k is not the leaderboard's."""
    changed = [
        f"{name} {value} (tau2: {tau2})"
        for name, value, tau2 in (
            ("max_steps", config.max_steps, TAU2_MAX_STEPS),
            ("max_errors", config.max_errors, TAU2_MAX_ERRORS),
        )
        if value != tau2
    ]
    if not changed:
        return None
    return f"conversations ran with {' and '.join(changed)}: marked as a custom submission"


def _what_to_do(report: AssessmentReport, partial: dict[str, int]) -> str:
    """How to get a complete report, for what `partial` counts (a judge is named only when none was set)."""
    judge_configured = report.run_info is not None and report.run_info.judge_model is not None
    steps = []
    if partial.get("not_judged") and not judge_configured:
        steps.append("configure a judge (GREEN_AGENT_JUDGE_MODEL) and re-run")
    if (
        partial.get("infrastructure_error")
        or partial.get("task_not_judged")
        or (partial.get("not_judged") and judge_configured)
    ):
        steps.append(
            "re-run once our LLM endpoints (user simulator, judge) answer again: the excluded trials "
            "failed on our side, not the agent's"
        )
    return "; or ".join(steps) or "re-run the assessment"


def _sentence(note: str) -> str:
    """A note as a sentence of its own: capitalized, ending with a full stop."""
    note = note.strip()
    return note[:1].upper() + note[1:] + ("" if note.endswith(".") else ".")


def _slug(text: str) -> str:
    """Lowercase letters, digits, dots, hyphens and underscores only (the leaderboard's naming rule)."""
    return re.sub(r"[^a-z0-9._-]+", "-", text.strip().lower()).strip("-") or "model"
