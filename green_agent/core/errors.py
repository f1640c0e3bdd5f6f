"""Exceptions of the engine, and which trial outcome each one becomes.

Foreign exceptions (httpx, a2a-sdk, openai) are translated where they enter: in `white_agent/client.py` and
`llm.py`. Nothing else in the engine catches library exceptions.

    EngineError
    ├── AgentError                  the white agent failed: the trial ends as `agent_error`, reward 0
    │   ├── AgentTimeoutError       no reply within the turn timeout
    │   ├── AgentUnreachableError   nothing could be delivered (connection refused or never opened)
    │   ├── AgentEgressError        the egress policy refused the agent's address (white_agent/egress.py)
    │   └── AgentProtocolError      HTTP or A2A error, bad card, failed task, empty or malformed answer
    ├── AgentNotReachedError        the agent could not be reached at the start (its card, or messages before
    │                               it first answered): the assessment fails, no trial is charged for it
    ├── LLMUnavailableError         an LLM endpoint the assessment needs does not answer or refuses the key,
    │                               found before any trial is queued: the assessment fails at once
    └── InfrastructureError         our own dependency failed: `infrastructure_error`, excluded from metrics
        └── LLMError                the user-simulator or judge LLM kept failing after its retries
            ├── LLMOutage           the endpoint gave no usable answer (down, or only 429s) for longer than
            │                       the operator's outage tolerance (llm_gate.py): ours, excluded
            ├── LLMContextTooLong   the LLM refused the conversation as too long (HTTP 400): charged to the
            │                       agent when its own text fills the conversation (limits.py), else ours
            └── LLMRefusedConversation  a content-policy refusal, or a reply unusable on every attempt
                                    (content filter, refusal, empty): charged to the agent once its text
                                    is in the conversation (limits.py), else ours

`ConfigError` (in `config.py`, a `ValueError`) is separate: it is raised before an assessment starts.
"""

from __future__ import annotations


class EngineError(Exception):
    """Base of every exception the engine raises on purpose."""


class AgentError(EngineError):
    """The white agent under test failed; this is the agent's fault and scores 0."""


class AgentTimeoutError(AgentError):
    """The white agent did not answer within the turn timeout."""


class AgentUnreachableError(AgentError):
    """The message never reached the white agent (so it was safe to retry, and retries ran out).

    The message is what any requester may read (the same whatever the port state); `detail` says what
    happened (connection refused, timed out, no card, TLS, DNS: `white_agent/unreached.py`), for the
    operator."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail


class AgentEgressError(AgentError):
    """The agent URL, or an endpoint its card advertises, leads where the egress policy forbids connecting.

    Before the first trial this fails the whole assessment (it could not run); after, the trial is the
    agent's failure (its name now resolves somewhere else)."""


class AgentProtocolError(AgentError):
    """The white agent answered, but with an error or with nothing usable."""


class LLMUnavailableError(EngineError):
    """The user-simulator or judge endpoint of an assessment is unreachable or refuses its key; checked once
    before trials are queued, so that an assessment fails in seconds rather than after every trial's retries.
    The message names the endpoint and what to fix."""


class AgentNotReachedError(EngineError):
    """The white agent could not be reached before it answered anything: its card could not be read, or no
    message could be delivered before any was answered. The assessment cannot run and ends `failed`; the
    message says what to fix. (Once the agent has answered, a lost connection is one trial's agent error.)

    `str()` is for any requester (the same whatever the port state); `detailed` says exactly what happened
    (connection refused, timed out, no card at the URL, TLS, DNS) in one line, for the operator's own runs."""

    def __init__(self, agent_url: str, problem: str, detail: str | None = None) -> None:
        super().__init__(
            f"the white agent at {agent_url} could not be reached: {problem}. Check that the agent is "
            "running and that this URL, and the URL its agent card advertises, are reachable from the green "
            "agent; then start the assessment again"
        )
        self.agent_url = agent_url
        self.detailed = str(self)
        if detail:
            self.detailed = f"the white agent at {agent_url} could not be reached: {detail}"


class InfrastructureError(EngineError):
    """A dependency of the green agent failed; the trial is excluded from the metrics."""


class LLMError(InfrastructureError):
    """An LLM call (user simulator or judge) failed after its retries."""


class LLMOutage(LLMError):
    """The endpoint has been down (or answered nothing but 429s) for longer than the operator's outage
    tolerance (`GREEN_AGENT_LLM_OUTAGE_TOLERANCE_S`): the trials waiting for it end as excluded
    infrastructure errors, which `retry` runs again later. No text can cause it: always ours."""


class LLMContextTooLong(LLMError):
    """The LLM refused the request as longer than its context (HTTP 400, `context_length_exceeded` or a
    message saying so). Deterministic on the input, so never retried; who pays is decided by the trial
    (`limits.llm_failure_outcome`), and it stays an infrastructure error when unsure."""


class LLMRefusedConversation(LLMError):
    """The LLM failed in a way that depends on what the conversation says: the provider's content policy
    refused the request, or every reply was cut by its content filter, a refusal, or empty. Agent text can
    provoke each of these, so once the agent has spoken the trial charges it (`limits.llm_failure_outcome`).

    `cause` is one of "content_policy", "content_filter", "refusal", "empty_reply"."""

    def __init__(self, message: str, cause: str) -> None:
        super().__init__(message)
        self.cause = cause
