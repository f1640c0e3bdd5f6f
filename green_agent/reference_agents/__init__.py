"""Reference white agents: the oracle, a plain LLM agent and misbehaving agents, served over real A2A."""

from green_agent.reference_agents.server import (
    ReferenceKind,
    agent_card,
    build_agent_app,
    build_reference_agent_app,
    serve_app,
    serve_reference_agent,
)

__all__ = [
    "ReferenceKind",
    "agent_card",
    "build_agent_app",
    "build_reference_agent_app",
    "serve_app",
    "serve_reference_agent",
]
