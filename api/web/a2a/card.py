"""The agent card: what an A2A client (an AgentBeats runner, the a2a-sdk client) learns about this service."""

from __future__ import annotations

import json

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

from api import __version__
from green_agent.domains import domain_names

JSONRPC_PATH = "/"
REST_PREFIX = "/a2a"
BEARER_SCHEME = "bearer"

_EXAMPLE = json.dumps(
    {"participants": {"agent": "https://agent.example/"}, "config": {"domain": "retail", "num_tasks": 5}}
)


def build_agent_card(public_url: str) -> AgentCard:
    """The card for a service reachable at `public_url` (JSON-RPC there; REST under /a2a; 0.3 clients too)."""
    base = public_url.rstrip("/")
    domains = domain_names()
    named = ", ".join(domains)
    return AgentCard(
        name="tau2 green agent",
        description=(
            "Assesses a customer-service agent (the participant named 'agent') on a tau2-bench domain "
            f"({named}): a simulated customer, scoring as tau2 v1.0.1 on each task's reward basis (database "
            "state, communicated facts, natural-language assertions), several trials per task with pass^k. "
            "Send the AgentBeats request as JSON text."
        ),
        version=__version__,
        documentation_url=base + "/docs",
        supported_interfaces=[
            AgentInterface(url=base + JSONRPC_PATH, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=base + REST_PREFIX, protocol_binding="HTTP+JSON", protocol_version="1.0"),
            AgentInterface(url=base + JSONRPC_PATH, protocol_binding="JSONRPC", protocol_version="0.3"),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        security_schemes={
            BEARER_SCHEME: SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    bearer_format="API key",
                    description=(
                        "An API key from the operator (green-agent keys create), sent as "
                        "Authorization: Bearer <key>. Required whenever the operator has created keys; a "
                        "service without keys is open (local use)."
                    ),
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={BEARER_SCHEME: StringList()})],
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[
            AgentSkill(
                id="tau2-assessment",
                name="tau2 assessment",
                description=(
                    "Runs a domain's tasks against the agent in participants.agent. config: domain "
                    f"({' or '.join(repr(d) for d in domains)}, required), task_ids or num_tasks, "
                    "num_trials, max_steps, user_llm (one of the operator's configured user models), "
                    "shard_index/num_shards. Streams progress per finished trial and completes with one "
                    "artifact named Result (text summary and data: domain, score, pass_rate, task_rewards, "
                    "pass^k, signal rates)."
                ),
                tags=["tau2", *domains, "assessment", "agentbeats", "benchmark"],
                examples=[_EXAMPLE],
                input_modes=["text/plain", "application/json"],
                output_modes=["text/plain", "application/json"],
            )
        ],
    )
