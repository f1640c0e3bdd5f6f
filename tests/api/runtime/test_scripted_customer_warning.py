"""The scripted customer only names a task id, so any real agent assessed with it scores 0: creating such an
assessment warns, in the REST response (and so the CLI and A2A, which print the same stored warnings) and on
the UI's assessment page. The demo's built-in oracle, the one agent it suits, gets no warning (test_cli)."""

from __future__ import annotations

import httpx

from api.runtime.service import SCRIPTED_CUSTOMER_WARNING
from tests.api.servers import serve_green


async def test_scripted_customer_with_a_real_agent_is_warned_about(database_url: str, idle_url: str) -> None:
    unreachable_llm = {"model": "m", "base_url": "http://127.0.0.1:9/v1"}
    async with (
        serve_green(database_url, user_models={"customer-llm": unreachable_llm}) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        body = {"agent_url": idle_url, "tasks": {"task_ids": ["0"]}}
        scripted = (await http.post("/assessments", json=body)).json()
        modelled = (await http.post("/assessments", json={**body, "user_model": "customer-llm"})).json()
        assert SCRIPTED_CUSTOMER_WARNING in scripted["warnings"]
        assert "any real agent will score 0" in SCRIPTED_CUSTOMER_WARNING
        assert SCRIPTED_CUSTOMER_WARNING not in modelled["warnings"]

        page = (await http.get(f"/ui/assessments/{scripted['id']}")).text
        assert f'<p class="warning">{SCRIPTED_CUSTOMER_WARNING}</p>' in page
        assert SCRIPTED_CUSTOMER_WARNING not in (await http.get(f"/ui/assessments/{modelled['id']}")).text
        for created in (scripted, modelled):
            await http.post(f"/assessments/{created['id']}/cancel")
