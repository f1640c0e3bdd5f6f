"""Schemathesis over the whole OpenAPI schema of the running app (uvicorn on loopback), on SQLite and
PostgreSQL: generated valid and invalid requests for every operation, a bounded number of examples each, and
no answer may be a 5xx or disagree with the schema (status code, content type, body).

Generated agent URLs are replaced by the idle reference agent's loopback URL: the service must never be made
to connect anywhere else from a test, and an agent that never answers keeps admitted assessments cheap.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api.servers import serve_green

EXAMPLES_PER_OPERATION = 15
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def _replace_agent_urls(body: Any, agent_url: str) -> Any:
    if isinstance(body, dict):
        return {
            k: agent_url if k == "agent_url" else _replace_agent_urls(v, agent_url) for k, v in body.items()
        }
    if isinstance(body, list):
        return [_replace_agent_urls(v, agent_url) for v in body]
    return body


def fuzz(url: str, agent_url: str) -> tuple[list[str], Counter[int]]:
    """Every operation, positive and negative cases; the failures as text, and the statuses answered."""
    schema = schemathesis.openapi.from_url(url + "openapi.json")

    @schema.hook
    def map_body(context: Any, body: Any) -> Any:
        return _replace_agent_urls(body, agent_url.rstrip("/"))

    failures: list[str] = []
    statuses: Counter[int] = Counter()
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), f"the schema has an invalid operation: {result}"
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @settings(
                max_examples=EXAMPLES_PER_OPERATION,
                deadline=None,
                database=None,
                derandomize=True,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @given(case=operation.as_strategy(generation_mode=mode))
            def check(case: schemathesis.Case) -> None:
                response = case.call(base_url=url, timeout=30)
                statuses[response.status_code] += 1
                case.validate_response(response, checks=CHECKS)

            try:
                check()
            except Unsatisfiable:
                # Nothing about this operation can be invalid (no parameters, or only free-form strings).
                if mode is not GenerationMode.NEGATIVE:
                    raise
            except Exception as exc:  # one failure per operation and mode is enough to report
                failures.append(f"{operation.label} ({mode.value}): {str(exc)[:2000]}")
    return failures, statuses


async def test_schemathesis_finds_no_server_error_or_schema_violation(
    database_url: str, idle_url: str
) -> None:
    async with serve_green(database_url) as url:
        failures, statuses = await asyncio.to_thread(fuzz, url, idle_url)
    assert not failures, "\n\n".join(failures)
    # The run reached the handlers, both ways: requests were admitted (202), refused (422) and not found.
    assert {200, 202, 404, 422} <= set(statuses) and sum(statuses.values()) > 150, statuses
    assert not any(status >= 500 for status in statuses), statuses
