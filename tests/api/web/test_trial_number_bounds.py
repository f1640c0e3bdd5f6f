"""Every path or query integer of the UI is bounded like its REST twin: past the bound a 4xx, never a 500, on
SQLite and PostgreSQL (issue 37). A trial number of 2^63 made SQLite raise OverflowError on the UI's trial
page and trial.json; PostgreSQL's integer column fails from 2^31."""

from __future__ import annotations

import httpx

from tests.api.servers import poll, serve_green

TOO_LARGE = (2**31, 2**63, 2**64, -1)
LARGEST = 2**31 - 1


async def test_trial_numbers_and_pages_past_the_bound_are_4xx(database_url: str) -> None:
    async with serve_green(database_url) as url, httpx.AsyncClient(base_url=url, timeout=30) as http:
        created = await http.post(
            "/assessments", json={"agent_url": "http://127.0.0.1:9", "tasks": {"task_ids": ["0"]}}
        )
        assert created.status_code == 202, created.text
        assessment = created.json()["id"]
        await poll(
            http, f"/assessments/{assessment}", lambda body: body["status"] == "failed"
        )  # nobody at :9

        twins = (
            f"/ui/assessments/{assessment}/trials/0/{{n}}",
            f"/ui/assessments/{assessment}/trials/0/{{n}}/trial.json",
            f"/assessments/{assessment}/trials/0/{{n}}",
        )
        for path in twins:
            for number in TOO_LARGE:
                response = await http.get(path.format(n=number))
                assert response.status_code == 422, (path, number, response.text)
                (error,) = response.json()["detail"]
                assert error["loc"] == ["path", "trial"], error
            # The largest number a trial may have is looked up, and simply not there.
            largest = await http.get(path.format(n=LARGEST))
            assert largest.status_code == 404, (path, largest.text)

        for page in (1_000_001, 2**31, 2**63):
            assert (await http.get("/ui", params={"page": page})).status_code == 422, page
        assert (await http.get("/ui", params={"page": 1_000_000})).status_code == 200
