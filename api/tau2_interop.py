"""The service side of tau2 interop: a stored assessment as an export source, and the files written for
`green-agent export` / `green-agent submission` and `GET /assessments/{id}/export`."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

from api.db.repository import COMPLETED
from api.runtime import Runtime
from green_agent.config import AssessmentConfig
from green_agent.tau2_format import ExportSource, tau2_results
from green_agent.tau2_format.submission import Submission, SubmissionRefused, Submitter, build_submission


class NotExportable(Exception):
    """The assessment has nothing to export yet; the message says why."""


async def export_source(runtime: Runtime, assessment_id: str, agent_model: str | None = None) -> ExportSource:
    """Raises `AssessmentNotFound` for an unknown id and `NotExportable` before the first report."""
    record = await runtime.service.get(assessment_id)
    if record.report is None:
        raise NotExportable(
            f"assessment {assessment_id} is {record.status} and has no report yet; "
            "export it once it has completed (or been cancelled)"
        )
    trials = await runtime.repository.trial_results(assessment_id)
    run = record.report.run_info
    same_guidelines = run is not None and run.user_guidelines_sha256 == runtime.engine.user_guidelines_sha256
    return ExportSource(
        assessment_id=record.id,
        created_at=record.created_at,
        agent_url=record.agent_url,
        config=AssessmentConfig.model_validate(record.config),
        report=record.report,
        trials=trials,
        user_guidelines=runtime.engine.user_guidelines if same_guidelines else None,
        agent_model=agent_model,
    )


async def export_document(runtime: Runtime, assessment_id: str) -> dict[str, Any]:
    return tau2_results(await export_source(runtime, assessment_id), runtime.data)


def write_json(document: Any, path: Path) -> None:
    """As tau2 writes results: indented, non-ASCII kept as UTF-8."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


async def write_submission(
    runtime: Runtime,
    assessment_id: str,
    output: Path,
    submitter: Submitter,
    *,
    today: date,
) -> Submission:
    """`output/submission.json` and `output/trajectories/<file>`; raises `SubmissionRefused` when the
    assessment cannot be submitted honestly."""
    record = await runtime.service.get(assessment_id)
    if record.status != COMPLETED:
        raise SubmissionRefused(
            f"assessment {assessment_id} is {record.status}; only completed ones can be submitted"
        )
    source = await export_source(runtime, assessment_id, agent_model=submitter.model_name)
    submission = build_submission(source, submitter, today=today)
    write_json(submission.document, output / "submission.json")
    write_json(tau2_results(source, runtime.data), output / "trajectories" / submission.trajectory_file)
    return submission
