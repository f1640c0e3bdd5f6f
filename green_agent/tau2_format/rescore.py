"""`green-agent rescore`: re-score a tau2 results file (v0.x or v1.0.x) of any domain this service runs and
measure agreement with the verdicts it stores, per simulation and in total. The replay and checks of one
simulation are in `replay.py`; this module reads the file's domain, adds the NL judge (if one is
configured) and the summary."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from domain_kit import DomainData
from domain_kit.tasks import parse_task
from green_agent.core.errors import InfrastructureError
from green_agent.core.models import TrialResult
from green_agent.domains import DEFAULT_DOMAIN
from green_agent.llm.judge import Judge
from green_agent.tau2_format.importing import imported_trial, transcript
from green_agent.tau2_format.replay import Rescorer, SimulationRescore


class InvalidResultsFile(ValueError):
    """The document is not a tau2 results file; the message says what is missing."""


def file_domain(document: Any) -> str | None:
    """The domain a results file names (`info.environment_info.domain_name`), or None when it names none."""
    info = document.get("info") if isinstance(document, dict) else None
    environment = info.get("environment_info") if isinstance(info, dict) else None
    name = environment.get("domain_name") if isinstance(environment, dict) else None
    return name if isinstance(name, str) and name else None


def domain_to_rescore(document: Any, asked: str | None) -> str:
    """The domain to re-score `document` in: the one it names; `asked` (`--domain`) where it names none, else
    retail (files of the retail-only versions of this service and tau2 v0 files without info). A file that
    names another domain than `asked` is refused: its tasks and gold are that domain's."""
    named = file_domain(document)
    if named is not None and asked is not None and named != asked:
        raise InvalidResultsFile(
            f"the file holds {named} results (its info.environment_info.domain_name), not {asked}; "
            "leave --domain out or name its domain"
        )
    return named or asked or DEFAULT_DOMAIN


TAU2_TERMINATION_REASONS = (
    "user_stop",
    "agent_stop",
    "max_steps",
    "timeout",
    "too_many_errors",
    "agent_error",
    "user_error",
    "infrastructure_error",
    "context_window_exceeded",
    "unexpected_error",
)
"""Every termination reason a tau2 v0.x or v1.0.x results file can hold (v1.0.1's enumeration, which
extends v0's)."""


class _SimulationFields(BaseModel):
    """The fields without which tau2 itself refuses to load a simulation (its `SimulationRun` requires them,
    with these types); read before anything else so that such a file is refused, never half scored."""

    id: str
    task_id: str
    start_time: str
    end_time: str
    duration: float
    termination_reason: Literal[TAU2_TERMINATION_REASONS]  # type: ignore[valid-type]
    messages: list[Any] | None = None


def check_simulation(position: int, simulation: Any) -> None:
    """Raises `InvalidResultsFile` naming the first field tau2 would refuse in simulation `position`."""
    if not isinstance(simulation, dict):
        raise InvalidResultsFile(f"simulation {position} is not an object")
    try:
        _SimulationFields.model_validate(simulation)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InvalidResultsFile(
            f"simulation {position} is not one tau2 accepts: {where}: {first['msg']}"
        ) from None


class SimulationAgreement(BaseModel):
    simulation_id: str
    task_id: str
    trial: int | None
    termination_reason: str
    stored_reward: float | None
    reward: float | None = Field(description="Recomputed; None when it cannot be (assertions not judged).")
    reward_agrees: bool | None
    db_match: bool | None
    db_agrees: bool | None
    actions_agree: bool | None
    communicate_agrees: bool | None
    env_assertions_agree: bool | None = None
    replay_mismatches: int
    nl_judged: bool = False
    note: str | None = None


class AgreementTotals(BaseModel):
    simulations: int = Field(description="Simulations in the file.")
    excluded: int = Field(description="Without a stored verdict (infrastructure errors); not re-scored.")
    rewards_compared: int
    rewards_agree: int
    rewards_unknown: int = Field(description="Reward not recomputable here (NL assertions not judged).")
    db_compared: int
    db_agree: int
    actions_compared: int
    actions_agree: int
    communicate_compared: int
    communicate_agree: int
    env_assertions_compared: int = 0
    env_assertions_agree: int = 0
    replay_mismatches: int

    @property
    def reward_agreement(self) -> float | None:
        return self.rewards_agree / self.rewards_compared if self.rewards_compared else None


class RescoreReport(BaseModel):
    domain: str = Field(description="The domain the file was re-scored in.")
    tasks_in_file: int
    judge_model: str | None
    num_trials: int = Field(description="Trials per task, as the file's info states (1 if it does not).")
    totals: AgreementTotals
    simulations: list[SimulationAgreement]
    trials: list[TrialResult] = Field(
        default_factory=list, exclude=True, description="The re-scored simulations as trials (for --store)."
    )


async def rescore_document(document: Any, data: DomainData, judge: Judge | None = None) -> RescoreReport:
    """Re-score every simulation of `document` in the domain of `data` (see `domain_to_rescore`)."""
    if not isinstance(document, dict) or not isinstance(document.get("simulations"), list):
        raise InvalidResultsFile("not a tau2 results file: expected an object with a 'simulations' list")
    named = file_domain(document)
    if named is not None and named != data.name:
        raise InvalidResultsFile(f"the file holds {named} results; it cannot be re-scored in {data.name}")
    try:
        file_tasks = [parse_task(raw) for raw in document.get("tasks") or ()]
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise InvalidResultsFile(f"a task in the file's 'tasks' list is malformed ({exc!r})") from None
    rescorer = Rescorer(data, file_tasks)
    rows: list[SimulationAgreement] = []
    trials: list[TrialResult] = []
    excluded = 0
    for position, simulation in enumerate(document["simulations"]):
        check_simulation(position, simulation)
    for position, simulation in enumerate(document["simulations"]):
        try:
            outcome = rescorer.rescore(simulation)
        except (AttributeError, TypeError, ValueError) as exc:
            # A file from elsewhere may hold anything: say which simulation, never crash with a traceback.
            raise InvalidResultsFile(
                f"simulation {position} is malformed ({type(exc).__name__}: {exc})"
            ) from None
        if outcome is None:
            excluded += 1
            continue
        verdicts, problem = None, None
        if outcome.nl_pending and judge is not None:
            try:
                verdicts = (await judge.judge(outcome.nl_pending, transcript(simulation))).verdicts
            except InfrastructureError as exc:  # the reward stays unknown; the other simulations go on
                problem = f"the judge failed, NL assertions not judged: {exc}"
            else:
                outcome = rescorer.rescore(simulation, [v.passed for v in verdicts])
                assert outcome is not None
        rows.append(_row(outcome, verdicts is not None, problem))
        task = rescorer.task(outcome.task_id)
        if task is not None:
            trials.append(imported_trial(simulation, outcome, task, verdicts))
    info = document.get("info")
    num_trials = info.get("num_trials") if isinstance(info, dict) else None
    return RescoreReport(
        domain=data.name,
        tasks_in_file=len(file_tasks),
        judge_model=judge.llm.endpoint.model if judge is not None else None,
        num_trials=num_trials if isinstance(num_trials, int) and num_trials > 0 else 1,
        totals=_totals(rows, len(document["simulations"]), excluded),
        simulations=rows,
        trials=trials,
    )


def _row(outcome: SimulationRescore, judged: bool, problem: str | None) -> SimulationAgreement:
    return SimulationAgreement(
        simulation_id=outcome.simulation_id,
        task_id=outcome.task_id,
        trial=outcome.trial,
        termination_reason=outcome.termination_reason,
        stored_reward=outcome.reward.stored,
        reward=outcome.reward.recomputed,
        reward_agrees=outcome.reward.agrees,
        db_match=outcome.db_match.recomputed,
        db_agrees=outcome.db_match.agrees,
        actions_agree=outcome.action_matches.agrees,
        communicate_agrees=outcome.communicate_met.agrees,
        env_assertions_agree=outcome.env_assertions_met.agrees,
        replay_mismatches=outcome.replay_mismatches,
        nl_judged=judged,
        note=problem
        or outcome.note
        or (
            f"{len(outcome.nl_pending)} NL assertion(s) not judged (no judge configured)"
            if outcome.nl_pending
            else None
        ),
    )


def _totals(rows: list[SimulationAgreement], simulations: int, excluded: int) -> AgreementTotals:
    def count(values: list[bool | None]) -> tuple[int, int]:
        compared = [v for v in values if v is not None]
        return len(compared), sum(compared)

    rewards = count([r.reward_agrees for r in rows])
    db = count([r.db_agrees for r in rows])
    actions = count([r.actions_agree for r in rows])
    said = count([r.communicate_agrees for r in rows])
    held = count([r.env_assertions_agree for r in rows])
    return AgreementTotals(
        simulations=simulations,
        excluded=excluded,
        rewards_compared=rewards[0],
        rewards_agree=rewards[1],
        rewards_unknown=sum(1 for r in rows if r.reward is None),
        db_compared=db[0],
        db_agree=db[1],
        actions_compared=actions[0],
        actions_agree=actions[1],
        communicate_compared=said[0],
        communicate_agree=said[1],
        env_assertions_compared=held[0],
        env_assertions_agree=held[1],
        replay_mismatches=sum(r.replay_mismatches for r in rows),
    )


__all__ = ["InvalidResultsFile", "RescoreReport", "domain_to_rescore", "file_domain", "rescore_document"]
