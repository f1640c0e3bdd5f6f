"""The bundled real model (green_agent.llm.local) for the tests marked `local_llm`: one server per session.

These tests never skip: without the local-llm extra or the model they FAIL, saying how to install them
(`make test` and .ci/run install both). Deselect them explicitly with `-m "not local_llm"` if you must.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from green_agent.llm.local import (
    INSTALL_HINT,
    LocalLLMServer,
    LocalLLMSettings,
    LocalLLMUnavailable,
    model_path,
    start_server,
)
from retail_domain import RetailData, load_retail_data

# Small and bounded: a shared 2-core machine generates a few tokens per second under load.
TEST_SERVER = LocalLLMSettings(parallel=2, context_tokens=6144, max_tokens=384)


@pytest.fixture(scope="session")
def data() -> RetailData:
    return load_retail_data()


@pytest.fixture(scope="session")
def local_model() -> Iterator[LocalLLMServer]:
    try:
        server = start_server(TEST_SERVER, model_path())
    except LocalLLMUnavailable as exc:
        pytest.fail(f"the real-model tests need the bundled model: {exc} ({INSTALL_HINT})", pytrace=False)
    yield server
    server.stop()


def tokens_predicted(server: LocalLLMServer) -> int:
    """Tokens the server itself says it generated so far (its Prometheus /metrics)."""
    root = server.base_url.removesuffix("/v1")
    text = httpx.get(f"{root}/metrics", timeout=30).text
    match = re.search(r"^llamacpp:tokens_predicted_total\s+(\d+(?:\.\d+)?)", text, re.MULTILINE)
    assert match, f"no tokens_predicted_total in the server's metrics: {text[:500]}"
    return int(float(match.group(1)))
