"""The Amber manifest (amber-manifest.json5) that puts the image in an AgentBeats v2 scenario: it parses as
JSON5, has what the v2 template requires, and agrees with the Dockerfile on the command, the port and the
health check; its defaults are a request this service accepts."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from typing import Any

import json5
import pytest

from api.web.a2a.request import parse_request
from green_agent.domains import load_domain
from tests.api.servers import REPO_ROOT

MANIFEST = REPO_ROOT / "amber-manifest.json5"
DOCKERFILE = REPO_ROOT / "Dockerfile"


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    loaded = json5.loads(MANIFEST.read_text())
    assert isinstance(loaded, dict)
    return loaded


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    logical, current = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line.rstrip().removesuffix("\\") + " "
        if not line.rstrip().endswith("\\"):
            logical.append(current.strip())
            current = ""
    return [(text.split(None, 1)[0].upper(), text.split(None, 1)[1]) for text in logical]


def dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for instruction, arguments in dockerfile_instructions():
        if instruction == "ENV":
            for item in shlex.split(arguments):
                name, _, value = item.partition("=")
                env[name] = value
    return env


def only(instruction: str) -> str:
    found = [arguments for name, arguments in dockerfile_instructions() if name == instruction]
    assert len(found) == 1, f"expected one {instruction} in the Dockerfile, found {len(found)}"
    return found[0]


def test_the_manifest_has_what_the_v2_template_requires(manifest: dict[str, Any]) -> None:
    assert manifest["manifest_version"] == "0.1.0"
    program = manifest["program"]
    endpoints = {e["name"]: e["port"] for e in program["network"]["endpoints"]}
    assert manifest["provides"] == {"a2a": {"kind": "a2a", "endpoint": "a2a_endpoint"}}
    assert manifest["provides"]["a2a"]["endpoint"] in endpoints
    assert manifest["exports"] == {"a2a": "a2a"}
    assert manifest["slots"] == {"proxy": {"kind": "a2a"}}  # required since 2026-05
    assert manifest["metadata"]["participant_roles"] == ["agent"]
    # Every key the runner may hand over is secret config defaulting to "", passed as an environment variable.
    schema = manifest["config_schema"]
    assert schema["required"] == [] and schema["additionalProperties"] is False
    for name in ("openai_api_key", "gemini_api_key", "deepseek_api_key"):
        assert schema["properties"][name] == {"type": "string", "secret": True, "default": ""}
    referenced = set(re.findall(r"\$\{config\.([a-z_]+)\}", json.dumps(program["env"])))
    assert referenced == set(schema["properties"])
    for variable in ("OPENAI_API_KEY", "GEMINI_API_KEY", "DEEPSEEK_API_KEY"):
        assert program["env"][variable] == f"${{config.{variable.lower()}}}"


def test_entrypoint_port_and_health_check_agree_with_the_dockerfile(manifest: dict[str, Any]) -> None:
    program = manifest["program"]
    entrypoint = program["entrypoint"]
    command = entrypoint if isinstance(entrypoint, list) else shlex.split(entrypoint)
    image_entrypoint = json.loads(only("ENTRYPOINT"))
    # The manifest's command is the image's entrypoint with its arguments (--host, --port as the image takes).
    assert command[: len(image_entrypoint)] == image_entrypoint
    arguments = command[len(image_entrypoint) :]
    assert arguments[arguments.index("--host") + 1] == "0.0.0.0"
    port = int(arguments[arguments.index("--port") + 1])
    (endpoint,) = program["network"]["endpoints"]
    assert endpoint["port"] == port
    assert str(port) in only("EXPOSE").split()
    # The health check reads the agent card on GREEN_AGENT_PORT: the manifest sets it to the served port.
    health = only("HEALTHCHECK")
    assert "curl -f" in health and "/.well-known/agent-card.json" in health
    assert "${GREEN_AGENT_PORT}" in health
    assert program["env"]["GREEN_AGENT_PORT"] == str(port) == dockerfile_env()["GREEN_AGENT_PORT"]


def test_the_image_tag_is_the_project_version(manifest: dict[str, Any]) -> None:
    version = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["version"]
    repository, _, tag = manifest["program"]["image"].rpartition(":")
    assert repository.startswith("ghcr.io/") and repository == repository.lower()
    assert tag == version, "publish the release's tag and name it here (docs/agentbeats.md)"


def test_the_default_assessment_config_is_a_request_this_service_runs(manifest: dict[str, Any]) -> None:
    defaults = manifest["metadata"]["assessment_config"]
    assert defaults["domain"] == "retail" and isinstance(defaults["num_tasks"], int)
    request = {"participants": {"agent": "http://127.0.0.1:9019/"}, "config": defaults}
    parsed = parse_request(json.dumps(request), catalog=load_domain)
    assert parsed.config.user_model == defaults["user_llm"]
    assert parsed.config.trials == defaults["num_trials"]
    assert parsed.ignored == []
