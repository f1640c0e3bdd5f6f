"""The web UI's form for a new assessment: what the browser sent, turned into the same `AssessmentConfig` that
`POST /assessments` validates, with every problem kept next to the field it belongs to.

The form only gathers the fields; everything that decides whether the assessment may run (the config's own
validation, the URL checks and egress rules, the engine's task and model checks, quotas) is the REST route's,
reached through `api/web/actions.py`.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from green_agent.config import AssessmentConfig
from green_agent.core.one_line import unshowable_reason
from green_agent.domains import DEFAULT_DOMAIN

FIELDS = ("agent_url", "domain", "tasks", "trials", "concurrency", "user_model")
"""The form's fields, in page order; an error about anything else is shown above the form."""

_ID_SEPARATORS = re.compile(r"[\s,]+")


def _defaults() -> dict[str, str]:
    fields = AssessmentConfig.model_fields
    return {
        "agent_url": "",
        "domain": DEFAULT_DOMAIN,
        "split": "base",
        "num_tasks": "",
        "task_ids": "",
        "trials": str(fields["trials"].default),
        "concurrency": str(fields["concurrency"].default),
        "user_model": "",
    }


def _message(text: str) -> str:
    """A validator's message as one line, without pydantic's "Value error, " prefix."""
    return text.removeprefix("Value error, ").replace("\n", " ")


@dataclass
class NewAssessmentForm:
    """What the form holds: the values as typed (strings, shown again after an error), the errors by field
    (`FIELDS`, or "form" for the whole request), and the idempotency key that makes a form sent twice (a
    double click) start one assessment."""

    values: dict[str, str] = field(default_factory=_defaults)
    errors: dict[str, str] = field(default_factory=dict)
    idempotency_key: str = field(default_factory=lambda: "ui-" + secrets.token_urlsafe(16))

    @classmethod
    def submitted(cls, form: dict[str, str]) -> NewAssessmentForm:
        defaults = _defaults()
        values = {name: form.get(name, default).strip() for name, default in defaults.items()}
        key = form.get("idempotency_key", "").strip()
        submitted = cls(values=values)
        if key.startswith("ui-") and len(key) <= 64 and unshowable_reason(key) is None:
            submitted.idempotency_key = key
        return submitted

    def config(self, default_user_model: str) -> AssessmentConfig | None:
        """The AssessmentConfig the form asks for, or None with `errors` saying what to change."""
        values = self.values
        tasks: dict[str, Any] = {"split": values["split"] or "base"}
        if values["task_ids"]:
            tasks["task_ids"] = [t for t in _ID_SEPARATORS.split(values["task_ids"]) if t]
        if values["num_tasks"]:
            tasks["num_tasks"] = values["num_tasks"]
        body: dict[str, Any] = {
            "agent_url": values["agent_url"],
            "domain": values["domain"],
            "tasks": tasks,
            "trials": values["trials"] or None,
            "concurrency": values["concurrency"] or None,
            "user_model": values["user_model"] or default_user_model,
        }
        try:
            config = AssessmentConfig.model_validate({k: v for k, v in body.items() if v is not None})
        except ValidationError as exc:
            for error in exc.errors(include_url=False):
                where = str(error["loc"][0]) if error["loc"] else "form"
                name = where if where in FIELDS else "form"
                detail = _message(error["msg"])
                if name == "tasks" and len(error["loc"]) > 1:
                    detail = f"{error['loc'][1]}: {detail}"
                self.errors.setdefault(name, detail)
            return None
        return None if self.errors else config

    def refused(self, field_name: str | None, reason: str) -> None:
        """Keep a refusal of the service (egress, engine, quotas) next to its field, or above the form."""
        self.errors[field_name if field_name in FIELDS else "form"] = reason
