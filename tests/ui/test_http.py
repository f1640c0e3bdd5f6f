"""The web UI over plain HTTP: GET / sends browsers to the UI and gives curl an index (POST / stays A2A),
security headers, 404s, the login form, the page-size bound and the live stream's bound."""

from __future__ import annotations

import httpx

from tests.api.servers import serve_green
from tests.ui.conftest import Service


async def test_root_redirects_browsers_indexes_for_curl_and_post_stays_a2a(service: Service) -> None:
    async with httpx.AsyncClient(base_url=service.url, timeout=30) as client:
        browser = await client.get("/", headers={"Accept": "text/html,application/xhtml+xml"})
        assert browser.status_code == 303 and browser.headers["location"] == "/ui"
        for accept in ("application/json", "*/*"):  # what curl sends
            index = await client.get("/", headers={"Accept": accept})
            assert index.status_code == 200, index.text
            links = index.json()
            assert links["ui"] == "/ui" and links["a2a_jsonrpc"] == "POST /"
            for path in ("ui", "api_docs", "assessments", "agent_card", "health"):
                assert (await client.get(links[path])).status_code == 200, path
        rpc = await client.post(
            "/", json={"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "no-such-task"}}
        )
        assert rpc.status_code == 200, rpc.text
        assert rpc.json()["id"] == 7 and "error" in rpc.json()  # answered by the A2A handler
        assert (await client.get("/.well-known/agent-card.json")).json()["name"] == "tau2 green agent"


async def test_pages_carry_a_strict_policy_and_unknown_ids_are_404_pages(service: Service) -> None:
    async with httpx.AsyncClient(base_url=service.url, timeout=30) as client:
        page = await client.get(f"/ui/assessments/{service.sloppy_id}")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        policy = page.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src 'self'" in policy
        assert "unsafe" not in policy
        assert page.headers["x-content-type-options"] == "nosniff"
        assert "<script>window.__pwned" not in page.text  # the trial pages escape it (see the browser test)

        missing = await client.get("/ui/assessments/does-not-exist")
        assert missing.status_code == 404 and "no assessment with id does-not-exist" in missing.text
        assert missing.headers["content-type"].startswith("text/html")
        no_trial = await client.get(f"/ui/assessments/{service.oracle_id}/trials/0/9")
        assert no_trial.status_code == 404 and "no finished trial 9 of task 0" in no_trial.text
        assert (await client.get("/assessments/does-not-exist")).json() == {
            "detail": "no assessment with id does-not-exist"
        }
        assert (await client.get("/ui/static/ui.js")).status_code == 200
        assert (await client.get("/ui/static/ui.css")).status_code == 200


async def test_login_form_in_open_mode(service: Service) -> None:
    async with httpx.AsyncClient(base_url=service.url, timeout=30) as client:
        form = await client.get("/ui/login")
        assert form.status_code == 200 and "open mode" in form.text
        signed = await client.post("/ui/login?next=/ui/leaderboard", data={"key": "anything"})
        assert signed.status_code == 303 and signed.headers["location"] == "/ui/leaderboard"
        assert "set-cookie" not in signed.headers  # nothing to remember: there are no keys
        elsewhere = await client.post("/ui/login?next=//evil.example/", data={"key": "anything"})
        assert elsewhere.headers["location"] == "/ui"  # never an open redirect
        too_big = await client.post("/ui/login", data={"key": "k" * 5000})
        assert too_big.status_code == 401


async def test_page_size_bounds_the_list_and_the_live_stream(service: Service) -> None:
    # A second service on the same database, reading only (no resume), with one row per page.
    database = service.database_url
    async with (
        serve_green(database, ui_page_size=1, resume_on_start=False) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        first = await client.get("/ui")
        assert first.text.count('<tr data-assessment="') == 1
        assert "page 1 of " in first.text and 'rel="next"' in first.text
        second = await client.get("/ui", params={"page": 2})
        assert second.text.count('<tr data-assessment="') == 1 and 'rel="prev"' in second.text

        one = await client.get("/ui/live", params={"id": service.oracle_id}, timeout=10)
        assert one.status_code == 200 and '"status":"completed"' in one.text  # finished: the stream ends
        two = await client.get("/ui/live", params={"id": [service.oracle_id, service.sloppy_id]})
        assert two.status_code == 422 and "GREEN_AGENT_UI_PAGE_SIZE" in two.text
