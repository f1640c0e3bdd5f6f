"""Admission quotas: what one tenant, and everyone together, may have waiting or running.

Checked when an assessment is created (REST, A2A or CLI), before anything is stored:

* limits of the assessment itself (trials per assessment, `max_steps`, `turn_timeout_s`) refuse it for good:
  `ConfigError`, a 422 / rejected task saying what to change;
* load limits (active assessments of the tenant, trials not yet run of the tenant and of the whole service)
  refuse it for now: `QuotaExceeded`, a 429 with Retry-After / rejected task saying when to retry.

Operators set defaults (`Settings.quota_*`) and per-tenant overrides (`Settings.tenant_quotas`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from api.db.repository import Load
from api.settings import Settings
from green_agent.config import AssessmentConfig, ConfigError


@dataclass(frozen=True)
class TenantQuota:
    """The limits that apply to one tenant."""

    active_assessments: int
    queued_trials: int
    trials_per_assessment: int
    max_steps: int
    turn_timeout_s: float


class QuotaExceeded(Exception):
    """Admission refused for now; retry after `retry_after_s`."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class QuotaPolicy:
    default: TenantQuota
    overrides: dict[str, TenantQuota]
    total_queued_trials: int
    retry_after_s: int

    @classmethod
    def from_settings(cls, settings: Settings) -> QuotaPolicy:
        default = TenantQuota(
            active_assessments=settings.quota_active_assessments,
            queued_trials=settings.quota_queued_trials,
            trials_per_assessment=settings.quota_trials_per_assessment,
            max_steps=settings.quota_max_steps,
            turn_timeout_s=settings.quota_turn_timeout_s,
        )
        overrides = {
            tenant: replace(default, **override.model_dump(exclude_none=True))
            for tenant, override in settings.tenant_quotas.items()
        }
        return cls(
            default=default,
            overrides=overrides,
            total_queued_trials=settings.quota_queued_trials_total,
            retry_after_s=settings.quota_retry_after_s,
        )

    def for_tenant(self, tenant: str) -> TenantQuota:
        return self.overrides.get(tenant, self.default)

    def check_config(self, config: AssessmentConfig, trials_total: int, tenant: str) -> None:
        """Refuse (ConfigError) an assessment larger than the tenant may ever run."""
        quota = self.for_tenant(tenant)
        problems = []
        if trials_total > quota.trials_per_assessment:
            problems.append(
                f"it has {trials_total} trials (tasks x trials) but at most {quota.trials_per_assessment} "
                "are allowed per assessment; select fewer tasks or trials, or split it"
            )
        if config.max_steps > quota.max_steps:
            problems.append(f"max_steps is {config.max_steps}; at most {quota.max_steps} is allowed")
        if config.turn_timeout_s is not None and config.turn_timeout_s > quota.turn_timeout_s:
            problems.append(
                f"turn_timeout_s is {config.turn_timeout_s:g}; at most {quota.turn_timeout_s:g} is allowed"
            )
        if problems:
            raise ConfigError("; ".join(problems))

    def check_load(self, load: Load, trials_total: int, tenant: str) -> None:
        """Refuse (QuotaExceeded) an assessment that would take the tenant or the service over a limit."""
        quota = self.for_tenant(tenant)
        if load.tenant_active_assessments + 1 > quota.active_assessments:
            raise QuotaExceeded(
                f"tenant {tenant!r} already has {load.tenant_active_assessments} queued or running "
                f"assessments (limit {quota.active_assessments}); wait for one to finish or cancel one",
                self.retry_after_s,
            )
        if load.tenant_queued_trials + trials_total > quota.queued_trials:
            raise QuotaExceeded(
                f"tenant {tenant!r} has {load.tenant_queued_trials} trials waiting or running and this "
                f"assessment adds {trials_total} (limit {quota.queued_trials}); retry later",
                self.retry_after_s,
            )
        if load.total_queued_trials + trials_total > self.total_queued_trials:
            raise QuotaExceeded(
                f"the service has {load.total_queued_trials} trials waiting or running and this assessment "
                f"adds {trials_total} (limit {self.total_queued_trials}); retry later",
                self.retry_after_s,
            )
