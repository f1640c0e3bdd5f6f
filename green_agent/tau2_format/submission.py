"""A taubench.com text submission (1.x tab) for the retail domain: `submission.json` plus the trajectory file,
laid out as tau2's `submit prepare` does (docs/leaderboard-submission.md upstream).

Honest by construction: a report with excluded trials (not judged, infrastructure errors) or an assessment
that did not complete is refused, because its pass^k is not the leaderboard's; fewer than all 114 tasks is
written but marked `omitted_questions` (unverified); fewer than 4 trials is allowed and said, with pass^k
above the trial count left null. `modified_prompts` is false only when the user-simulator guidelines in use
are byte-identical to upstream's (by sha256). A step or error limit other than tau2's (200, 10: a small
customer model's own `max_steps`, or the requester's choice) makes it a custom submission, said in the notes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from green_agent.config import AssessmentConfig
from green_agent.core.models import AssessmentReport
from green_agent.tau2_format.export import TAU2_VERSION, ExportSource

UPSTREAM_GUIDELINES_SHA256 = "740a29dfa64d7bc08eea3bf7493575b914a63f744acbaf7f199ee07eddaf72d3"
"""sha256 of tau2-bench's data/tau2/user_simulator/simulation_guidelines.md (same in v1.0.0, v1.0.1)."""

RETAIL_TASKS = 114
LEADERBOARD_TRIALS = 4
TAU2_MAX_STEPS = 200
TAU2_MAX_ERRORS = 10
"""tau2's own limits per conversation; the defaults of `AssessmentConfig` (checked where they are used)."""


@dataclass(frozen=True)
class Submitter:
    """Who submits what: the leaderboard's identity fields, as the submitter declares them."""

    model_name: str
    model_organization: str
    submitting_organization: str
    email: str
    contact_name: str | None = None


class SubmissionRefused(ValueError):
    """The assessment cannot be submitted as it is; the message says why and what to do."""


@dataclass(frozen=True)
class Submission:
    document: dict[str, Any]
    trajectory_file: str
    notices: list[str] = field(default_factory=list)
    """What a submitter must know (unverified marks, fewer trials); also written into methodology.notes."""


def build_submission(source: ExportSource, submitter: Submitter, *, today: date) -> Submission:
    report = source.report
    if report is None:
        raise SubmissionRefused("the assessment has no report yet; submit it once it has completed")
    partial = {reason: n for reason, n in report.excluded.items() if n}
    if partial:
        shown = ", ".join(f"{n} {reason}" for reason, n in sorted(partial.items()))
        raise SubmissionRefused(
            f"the report is partial ({shown} trial(s) excluded), so its pass^k is not the leaderboard's; "
            + _what_to_do(report, partial)
        )
    if report.trials_total < report.num_tasks * report.num_trials:
        raise SubmissionRefused(
            f"only {report.trials_total} of {report.num_tasks * report.num_trials} trials finished "
            "(cancelled?); submit a completed assessment"
        )

    notices: list[str] = []
    omitted = report.num_tasks < RETAIL_TASKS
    if omitted:
        notices.append(
            f"only {report.num_tasks} of {RETAIL_TASKS} retail tasks were run: marked omitted_questions "
            "(the leaderboard lists it as unverified)"
        )
    if report.num_trials < LEADERBOARD_TRIALS:
        notices.append(
            f"{report.num_trials} trial(s) per task; the leaderboard prefers {LEADERBOARD_TRIALS}: "
            f"pass^k for k > {report.num_trials} is null"
        )
    run = report.run_info
    guidelines_sha = run.user_guidelines_sha256 if run else None
    modified = guidelines_sha != UPSTREAM_GUIDELINES_SHA256
    if modified:
        notices.append(
            "the user-simulator guidelines in use are not byte-identical to tau2's: marked modified_prompts "
            "(custom submission)"
        )
    limits_changed = _limits_notice(source.config)
    if limits_changed:
        notices.append(limits_changed)
    user_model = run.user_model if run and run.user_model else "scripted"
    if user_model == "scripted":
        notices.append("the customer was the scripted user, not an LLM: these numbers are not comparable")

    cost = report.usage.agent_cost_per_trial_usd if report.usage else None
    green_cost = report.usage.green_cost_usd if report.usage else None
    notes = [
        f"Assessed as a remote A2A agent by tau2-retail-green-agent (assessment {source.assessment_id}), "
        f"scored with tau2 {TAU2_VERSION} semantics; {report.num_trials} trial(s), "
        f"seed {source.config.seed}, "
        f"user simulator {user_model}"
        + (f" with {run.user_llm_args}" if run and run.user_model else "")
        + (f", NL judge {run.judge_model}" if run and run.judge_model else "")
        + ".",
        "The agent received tau2's policy verbatim and the 16 retail tool schemas with descriptions in the "
        "green agent's own words, in its first A2A message.",
        "cost: mean agent cost per trajectory as the agent reported it (A2A metadata tau2_usage); null when "
        "not reported for every trial."
        + (
            f" User simulator and judge cost of the run: {green_cost:.4f} USD."
            if green_cost is not None
            else ""
        ),
        *notices,
    ]
    results: dict[str, Any] = {
        f"pass_{k}": (report.pass_hat_k[k] * 100 if k in report.pass_hat_k else None)
        for k in range(1, LEADERBOARD_TRIALS + 1)
    }
    results["cost"] = cost
    trajectory_file = (
        f"{_slug(submitter.model_name)}_retail_default_{_slug(user_model)}_{report.num_trials}trials.json"
    )
    document: dict[str, Any] = {
        "model_name": submitter.model_name,
        "model_organization": submitter.model_organization,
        "submitting_organization": submitter.submitting_organization,
        "submission_date": today.isoformat(),
        "submission_type": "custom" if modified or limits_changed else "standard",
        "modality": "text",
        "contact_info": {
            "email": submitter.email,
            **({"name": submitter.contact_name} if submitter.contact_name else {}),
        },
        "trajectories_available": True,
        "trajectory_files": {"retail": trajectory_file},
        "results": {"retail": results},
        "methodology": {
            "evaluation_date": source.created_at.date().isoformat(),
            "tau2_bench_version": TAU2_VERSION,
            # tau2 compares this with the trajectories' user_info.llm: None for the scripted user
            "user_simulator": run.user_model if run else None,
            "notes": " ".join(_sentence(note) for note in notes),
            "verification": {
                "modified_prompts": modified,
                "omitted_questions": omitted,
                "details": (
                    f"user-simulator guidelines sha256 {guidelines_sha or 'none (scripted user)'}; "
                    f"tau2's is {UPSTREAM_GUIDELINES_SHA256}"
                ),
            },
        },
    }
    return Submission(document=document, trajectory_file=trajectory_file, notices=notices)


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
