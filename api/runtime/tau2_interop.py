"""The service side of tau2 interop: a stored assessment as an export source, and the files written for
`green-agent export` / `green-agent submission` and `GET /assessments/{id}/export`."""

from __future__ import annotations

import hashlib
import json
from datetime import date
from pathlib import Path
from typing import Any

from api.db.repository import COMPLETED, AssessmentRecord, NewAssessment
from api.runtime.runtime import Runtime
from green_agent.config import AssessmentConfig
from green_agent.scoring.metrics import compute_report
from green_agent.tau2_format import ExportSource, tau2_results
from green_agent.tau2_format.rescore import RescoreReport
from green_agent.tau2_format.submission import (
    DomainRun,
    Submission,
    SubmissionRefused,
    Submitter,
    build_submission,
)

IMPORT_SOURCE = "import"
"""`source` of assessments stored from a re-scored tau2 file (`green-agent rescore --store`)."""


class NotExportable(Exception):
    """The assessment has nothing to export (yet), or not in the domain asked for; the message says why."""


async def export_source(
    runtime: Runtime, assessment_id: str, agent_model: str | None = None, *, domain: str | None = None
) -> ExportSource:
    """Raises `AssessmentNotFound` for an unknown id and `NotExportable` before the first report or when
    `domain` is given and the assessment ran another one."""
    record = await runtime.service.get(assessment_id)
    if record.source == IMPORT_SOURCE:
        raise NotExportable(
            f"assessment {assessment_id} was imported from a tau2 file ({record.agent_url}); "
            "that file is its export"
        )
    if record.report is None:
        raise NotExportable(
            f"assessment {assessment_id} is {record.status} and has no report yet; "
            "export it once it has completed (or been cancelled)"
        )
    config = AssessmentConfig.model_validate(record.config)
    if domain is not None and config.domain != domain:
        raise NotExportable(f"assessment {assessment_id} ran the {config.domain} domain, not {domain}")
    trials = await runtime.repository.trial_results(assessment_id)
    run = record.report.run_info
    guidelines = runtime.engine.user_guidelines(await runtime.engine.load_domain(config.domain))
    same_guidelines = run is not None and run.user_guidelines_sha256 == _sha256(guidelines)
    return ExportSource(
        assessment_id=record.id,
        created_at=record.created_at,
        agent_url=record.agent_url,
        config=config,
        report=record.report,
        trials=trials,
        user_guidelines=guidelines if same_guidelines else None,
        agent_model=agent_model,
    )


async def export_document(
    runtime: Runtime, assessment_id: str, *, domain: str | None = None
) -> dict[str, Any]:
    """The assessment as a tau2 results file of its domain (`domain`: the one it must have ran)."""
    source = await export_source(runtime, assessment_id, domain=domain)
    return tau2_results(source, await runtime.engine.load_domain(source.config.domain))


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def write_json(document: Any, path: Path) -> None:
    """As tau2 writes results: indented, non-ASCII kept as UTF-8."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


async def write_submission(
    runtime: Runtime,
    assessment_ids: list[str],
    output: Path,
    submitter: Submitter,
    *,
    today: date,
    domain: str | None = None,
) -> Submission:
    """`output/submission.json` and one `output/trajectories/<file>` per assessment (one per domain); raises
    `SubmissionRefused` when the assessments cannot be submitted honestly (`domain`: the one each must have
    ran)."""
    runs = []
    for assessment_id in assessment_ids:
        record = await runtime.service.get(assessment_id)
        if record.status != COMPLETED:
            raise SubmissionRefused(
                f"assessment {assessment_id} is {record.status}; only completed ones can be submitted"
            )
        source = await export_source(runtime, assessment_id, agent_model=submitter.model_name, domain=domain)
        runs.append(DomainRun(source, await runtime.engine.load_domain(source.config.domain)))
    submission = build_submission(runs, submitter, today=today)
    write_json(submission.document, output / "submission.json")
    for run in runs:
        name = submission.trajectory_files[run.domain]
        write_json(tau2_results(run.source, run.data), output / "trajectories" / name)
    return submission


async def store_rescore(runtime: Runtime, name: str, rescored: RescoreReport) -> tuple[AssessmentRecord, int]:
    """Keep a re-scored file as a completed assessment (source `import`, agent `tau2-file:<name>`) with the
    recomputed verdicts. Returns it and how many simulations repeated a stored (task, trial) (skipped)."""
    trials = rescored.trials
    config = {
        "imported_from": name,
        "domain": rescored.domain,
        "trials": rescored.num_trials,
        "judge_model": rescored.judge_model,
    }
    warnings = [f"imported from the tau2 results file {name}; rewards are the recomputed ones"]
    if rescored.totals.rewards_unknown:
        warnings.append(f"{rescored.totals.rewards_unknown} simulation(s) need a judge and have no reward")
    record, _ = await runtime.repository.create(
        NewAssessment(
            config=config,
            agent_url=f"tau2-file:{name}",
            trials_total=len(trials),
            source=IMPORT_SOURCE,
            warnings=warnings,
            domain=rescored.domain,
        )
    )
    skipped = 0
    for trial in trials:
        if await runtime.repository.save_trial(record.id, trial) is None:
            skipped += 1
    # compute_report reads only the trial count of the config; an import has no agent URL to validate.
    counted = AssessmentConfig.model_construct(
        agent_url=record.agent_url, domain=rescored.domain, trials=rescored.num_trials
    )
    report = compute_report(counted, await runtime.repository.trial_results(record.id, transcripts=False))
    finished = await runtime.repository.finish(record.id, COMPLETED, report=report)
    assert finished is not None
    return finished, skipped
