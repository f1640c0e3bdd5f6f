"""Running a task's env assertions on an end state, as upstream's environment evaluator does."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from .outcomes import AssertionCheck
from .protocols import DomainEnvironment
from .tasks import EnvAssertion

Env = TypeVar("Env", bound=DomainEnvironment)


def run_assertions(
    assertions: Sequence[EnvAssertion], env: Env, finding: Callable[[Env, EnvAssertion], str | None]
) -> tuple[AssertionCheck, ...]:
    """Each assertion on `env`, in order. One whose function raises (upstream's evaluator would abort and
    its runner re-run the whole simulation) counts as not met, with the error. Where an assertion does not
    hold, `finding` says what the end state holds where it looked ("service status is no_service")."""
    checks: list[AssertionCheck] = []
    for assertion in assertions:
        actual: bool | None = None
        error: str | None = None
        try:
            actual = env.assertion(assertion.func_name, assertion.arguments, assertion.env_type)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        checks.append(
            AssertionCheck(
                func_name=assertion.func_name,
                env_type=assertion.env_type,
                arguments=dict(assertion.arguments),
                expected=assertion.assert_value,
                actual=actual,
                message=assertion.message,
                error=error,
                found=finding(env, assertion) if actual != assertion.assert_value else None,
            )
        )
    return tuple(checks)
