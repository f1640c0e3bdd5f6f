"""The engine: runs assessments (many trials, many assessments at once) within concurrency bounds.

Bounds, taken in this order by every trial so that no two trials can wait on each other crosswise:
the assessment's own `concurrency`, then the white agent's (`max_concurrent_per_agent`, shared by all
assessments of the same agent: keyed by its resolved address and port, so `localhost` and `127.0.0.1` are one
agent), then a slot of the process-wide `max_concurrent_trials`, shared fairly between tenants and
assessments (`slots.FairSlots`).

Egress: each assessment runs under an `EgressPolicy` (default: everything the policy allows, private networks
included, for local use); connections are pooled per policy, so one made under a looser policy is never reused
under a stricter one.

Trials start longest first (`longest_first`): the task's gold action count stands for its length, and
starting the long ones early keeps them from stretching the tail of the run.

`run()` runs a whole assessment in this process and is cancellable: cancelling it cancels its in-flight
trials (their conversations close) and the cancellation propagates. Trials passed as `completed` are not run
again (resume). A white agent that cannot be reached at the start (its card, or every message until it first
answers) raises `AgentNotReachedError`: an assessment of an agent that was never there is no assessment, not a
score of 0. The service instead opens an assessment (`open_assessment`) and runs its trials one by one
as queue jobs, on whichever worker process takes them (`AssessmentRun.run_trial`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from a2a.types import AgentCard

from domain_kit import AssertionCheck, DomainData, EnvironmentCheck, TerminationReason
from green_agent.config import (
    AssessmentConfig,
    ConfigError,
    EngineSettings,
    LLMEndpoint,
    with_model_step_limit,
)
from green_agent.conversation.orchestrator import FirstContactFailed, TrialDeps, run_trial
from green_agent.conversation.user_simulator import LLMUserSimulator, ScriptedUserSimulator, UserSimulator
from green_agent.core.errors import (
    AgentEgressError,
    AgentError,
    AgentNotReachedError,
    AgentUnreachableError,
    LLMUnavailableError,
)
from green_agent.core.limits import display_name, message_bytes
from green_agent.core.models import (
    AssessmentReport,
    ConversationEnd,
    RunInfo,
    TrialFinished,
    TrialResult,
    TrialStarted,
)
from green_agent.core.seeds import trial_seeds
from green_agent.core.trial import TrialSpec, TrialState
from green_agent.core.usage import TrialUsage
from green_agent.domains import load_domain
from green_agent.llm.client import ChatLLM, RetryPolicy, endpoint_limits, open_client
from green_agent.llm.gate import PARTY, EndpointGate, EndpointStatus, GatePolicy, GateRegistry
from green_agent.llm.judge import Judge
from green_agent.llm.prompts import load_prompt
from green_agent.scheduling.keyed_limits import KeyedLimits
from green_agent.scheduling.slots import FairSlots
from green_agent.scoring.metrics import compute_report
from green_agent.scoring.score import score, unscored
from green_agent.white_agent.client import ClientLimits, Conversation, WhiteAgentPool
from green_agent.white_agent.dialect import Dialect, declares_structured
from green_agent.white_agent.egress import EgressPolicy, Resolver, resolve_agent
from green_agent.white_agent.structured_dialect import StructuredDialect
from green_agent.white_agent.text_dialect import TextDialect

if TYPE_CHECKING:
    from openai import AsyncOpenAI  # imported lazily at run time (llm.py says why)

log = logging.getLogger(__name__)

EventHandler = Callable[[Any], Awaitable[None]]


class Engine:
    """Long-lived: `async with Engine(settings) as engine: await engine.run(config)`.

    Domains come from the registry (green_agent/domains.py) by the name an assessment's config gives, each
    loaded once per engine; `data` pre-loads one (tests and the CLI pass the one they already hold)."""

    def __init__(
        self, settings: EngineSettings, data: DomainData | None = None, *, resolver: Resolver | None = None
    ) -> None:
        self.settings = settings
        self._domains: dict[str, DomainData] = {data.name: data} if data is not None else {}
        self._domain_lock = threading.Lock()
        self.domain_loaded: list[Callable[[DomainData], None]] = []
        """Called with each domain this engine loads, once, right after (in the loading thread): the service
        moves the long-lived data out of the garbage collector's reach."""
        self._resolver = resolver
        self._pools: dict[EgressPolicy, WhiteAgentPool] = {}
        # One HTTP client per endpoint and key: both come from the operator's settings only (a request picks
        # a model and its arguments, never where it is sent or with which key), so this stays as small as the
        # configuration. The ChatLLM over it (model, arguments, gate) is a light object made per use.
        self._clients: dict[tuple[str | None, str | None], AsyncOpenAI] = {}
        self.slots = FairSlots(
            settings.max_concurrent_trials,
            tenant_share=settings.tenant_slot_share,
            assessment_share=settings.assessment_slot_share,
        )
        self._per_agent = KeyedLimits(settings.max_concurrent_per_agent)
        # One gate per LLM endpoint (base URL, model, key), shared by every assessment of this engine, i.e.
        # of this process: the provider's limits and outages are the endpoint's, not an assessment's.
        self.gates = GateRegistry(
            GatePolicy(
                outage_tolerance_s=settings.llm_outage_tolerance_s,
                breaker_failures=settings.llm_breaker_failures,
                probe_backoff_s=settings.llm_retry_backoff_s,
            )
        )
        self._guidelines = ""
        self._tools_guidelines = ""
        self._rubric = ""
        self._judge: Judge | None = None

    async def __aenter__(self) -> Engine:
        s = self.settings
        self._guidelines = await asyncio.to_thread(load_prompt, "user_guidelines.md", s.user_guidelines_file)
        self._tools_guidelines = await asyncio.to_thread(
            load_prompt, "user_guidelines_tools.md", s.user_guidelines_tools_file
        )
        # Loaded whether or not the service has a judge: an assessment may name its own (judge_model).
        self._rubric = await asyncio.to_thread(load_prompt, "judge_rubric.md", s.judge_rubric_file)
        if s.judge is not None:
            self._judge = self._make_judge(s.judge)
        return self

    def _make_judge(self, endpoint: LLMEndpoint) -> Judge:
        schema = self.settings.judge_json_schema
        return Judge(llm=self._llm(endpoint), rubric=self._rubric, json_schema=schema)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def _pool_for(self, policy: EgressPolicy) -> WhiteAgentPool:
        pool = self._pools.get(policy)
        if pool is None:
            limits = ClientLimits(
                conversations_per_client=self.settings.conversations_per_client,
                max_reply_bytes=self.settings.limits.max_reply_bytes,
                max_reply_values=self.settings.limits.max_reply_values,
                max_echo_bytes=self.settings.limits.max_echo_bytes,
                card_cache_entries=self.settings.agent_card_cache_entries,
                card_cache_bytes=self.settings.agent_card_cache_bytes,
                card_cache_ttl_s=self.settings.agent_card_cache_ttl_s,
                keepalive_s=self.settings.agent_keepalive_s,
            )
            pool = self._pools[policy] = WhiteAgentPool(limits, policy=policy, resolver=self._resolver)
        return pool

    async def aclose(self) -> None:
        for pool in self._pools.values():
            await pool.aclose()
        self._pools.clear()
        for client in self._clients.values():
            with contextlib.suppress(Exception):
                await client.close()
        self._clients.clear()

    def _llm(self, endpoint: LLMEndpoint) -> ChatLLM:
        """Chat completions of `endpoint` (its model and request arguments) over the one HTTP client of its
        base URL and key, through the endpoint's gate (shared by every user of the same model and key)."""
        key = (endpoint.base_url, endpoint.api_key)
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = open_client(endpoint, self.settings.llm_timeout_s)
        s = self.settings
        retry = RetryPolicy(max_retries=s.llm_max_retries, backoff_s=s.llm_retry_backoff_s)
        gate = self._gate(endpoint)
        return ChatLLM(endpoint, timeout_s=s.llm_timeout_s, retry=retry, gate=gate, client=client)

    def _gate(self, endpoint: LLMEndpoint) -> EndpointGate:
        return self.gates.gate(endpoint.model, endpoint.base_url, endpoint.api_key, endpoint_limits(endpoint))

    def domain(self, name: str) -> DomainData:
        """The named domain's data, loaded through the registry on first use (verifying and parsing its files
        blocks: from async code, `await load_domain(name)` first)."""
        found = self._domains.get(name)
        if found is None:
            with self._domain_lock:
                found = self._domains.get(name)
                if found is None:
                    found = self._domains[name] = load_domain(name, self.settings.data_dirs.get(name))
                    for listener in self.domain_loaded:
                        listener(found)
        return found

    @property
    def loaded_domains(self) -> dict[str, DomainData]:
        """The domains loaded so far, by name (a copy)."""
        return dict(self._domains)

    async def load_domain(self, name: str) -> DomainData:
        """`domain(name)`, with the first load in a thread (airline's DB is 7 MB of JSON)."""
        found = self._domains.get(name)
        return found if found is not None else await asyncio.to_thread(self.domain, name)

    def rejudgeable(self, trial: TrialResult, config: AssessmentConfig) -> bool:
        """Whether a retry judges this stored trial of the assessment of `config` again rather than running
        it again or keeping it: it is excluded (no reward) for want of a verdict (its judge failed, or none
        was configured), its conversation finished, and its assessment has a judge now. A trial charged for a
        judge failure its text provoked is scored (0) and kept."""
        task = self.domain(config.domain).tasks.get(trial.task_id)
        judge = self._judge_endpoint(config)
        if judge is None or task is None or not task.judged or trial.reward is not None:
            return False
        if trial.nl_status not in ("judge_failed", "not_judged"):
            return False
        end = trial.conversation_end or _end_of_unjudged(trial)
        return end is not None and end.reason != TerminationReason.INFRASTRUCTURE_ERROR

    def provider_status(self) -> list[EndpointStatus]:
        """How each LLM endpoint this engine has used is doing: ok, rate limited or down (since when),
        requests waiting and in flight, the adaptive limits (for progress displays and /metrics)."""
        return self.gates.statuses()

    def _endpoints_for(self, config: AssessmentConfig) -> list[LLMEndpoint]:
        """The LLM endpoints an assessment of `config` needs: its user model (unless scripted), the judge."""
        return [e for e in (self._user_endpoint(config), self._judge_endpoint(config)) if e is not None]

    def _gates_for(self, config: AssessmentConfig) -> tuple[EndpointGate, ...]:
        """The gates of the endpoints an assessment of `config` needs (one each)."""
        gates = (self._gate(endpoint) for endpoint in self._endpoints_for(config))
        return tuple({id(gate): gate for gate in gates}.values())

    # -- configuration -------------------------------------------------------------------------------------

    def validate(self, config: AssessmentConfig) -> list[str]:
        """The selected task ids, in tasks.json order; raises `ConfigError` saying what to change."""
        self._user_endpoint(config)
        self._judge_endpoint(config)
        cap, bound = config.user_llm_args.reply_cap(), self.settings.user_llm_max_tokens
        if cap is not None and cap > bound:
            raise ConfigError(
                f"user_llm_args asks for replies of up to {cap} tokens; this service allows at most {bound} "
                "(the operator's user_llm_max_tokens)"
            )
        self._check_agent_headers(config)
        data = self.domain(config.domain)
        selection = config.tasks
        if selection.task_ids is not None:
            unknown = [t for t in selection.task_ids if t not in data.tasks]
            if unknown:
                known = list(data.tasks)
                shown = [t[:40] for t in unknown[:10]]
                more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
                raise ConfigError(
                    f"unknown task ids {shown}{more}; "
                    f"use ids from tasks.json ({known[0]!r} to {known[-1]!r})",
                    field="tasks",
                )
            wanted = set(selection.task_ids)
            return [t for t in data.tasks if t in wanted]
        split = data.splits.get(selection.split)
        if split is None:
            raise ConfigError(
                f"unknown split {selection.split!r} of {data.name}; use one of {sorted(data.splits)}",
                field="tasks",
            )
        if selection.num_tasks is not None and selection.num_tasks > len(split):
            raise ConfigError(
                f"num_tasks={selection.num_tasks} but split {selection.split!r} has {len(split)} tasks; "
                f"lower num_tasks to at most {len(split)}",
                field="tasks",
            )
        members = set(split)
        ordered = [t for t in data.tasks if t in members]  # tasks.json order, as upstream
        return ordered[: selection.num_tasks] if selection.num_tasks else ordered

    def _check_agent_headers(self, config: AssessmentConfig) -> None:
        count, limit = len(config.agent_headers), self.settings.max_agent_headers
        if count > limit:
            raise ConfigError(f"agent_headers has {count} headers; this service accepts at most {limit}")
        size = sum(len(name) + len(value) for name, value in config.agent_header_values().items())
        if size > self.settings.max_agent_header_bytes:
            raise ConfigError(
                f"agent_headers hold {size} bytes of names and values; this service accepts at most "
                f"{self.settings.max_agent_header_bytes}"
            )

    def _user_model_name(self, config: AssessmentConfig) -> str:
        return config.user_model or self.settings.default_user_model

    def _user_endpoint(self, config: AssessmentConfig) -> LLMEndpoint | None:
        """The customer's endpoint (None: the scripted customer), with the assessment's request arguments
        under the operator's own; ConfigError in one line when the model is not offered here."""
        endpoint = self.settings.user_endpoint(self._user_model_name(config))
        asked = config.user_llm_args.request_arguments()
        if endpoint is None or not asked:
            return endpoint
        return endpoint.model_copy(update={"extra_args": {**asked, **endpoint.extra_args}})

    def _judge_endpoint(self, config: AssessmentConfig) -> LLMEndpoint | None:
        return self.settings.judge_endpoint(config.judge_model)

    def judge_for(self, config: AssessmentConfig) -> Judge | None:
        """The NL judge of an assessment of `config`: its own (judge_model), else the service's."""
        endpoint = self._judge_endpoint(config)
        if endpoint is None:
            return None
        if endpoint is self.settings.judge and self._judge is not None:
            return self._judge
        return self._make_judge(endpoint)

    def _user_simulator(self, config: AssessmentConfig) -> UserSimulator:
        endpoint = self._user_endpoint(config)
        if endpoint is None:
            return ScriptedUserSimulator(domain=config.domain, delay_s=self.settings.scripted_user_delay_s)
        name = self._user_model_name(config)
        return LLMUserSimulator(
            name=name,
            llm=self._llm(endpoint),
            guidelines=self._guidelines,
            tools_guidelines=self._tools_guidelines,
        )

    async def check_llms(self, config: AssessmentConfig) -> None:
        """Check once that the LLM endpoints `config` needs (its user model, the judge) answer and take their
        keys; raise LLMUnavailableError saying which does not and what to do."""
        endpoints = self._endpoints_for(config)
        checked = {(e.base_url, e.api_key): e for e in endpoints}.values()  # one check per endpoint and key
        results = await asyncio.gather(
            *(self._llm(e).check(self.settings.llm_check_timeout_s) for e in checked)
        )
        problems = [problem for problem in results if problem is not None]
        if problems:
            raise LLMUnavailableError("; ".join(problems))

    # -- running -------------------------------------------------------------------------------------------

    def trial_keys(self, config: AssessmentConfig) -> list[tuple[str, int]]:
        """Every (task id, trial) of the assessment in report order: trial-major, tasks in tasks.json order,
        as upstream."""
        task_ids = self.validate(config)
        return [(t, k) for k in range(config.trials) for t in task_ids]

    def longest_first(
        self, config: AssessmentConfig, keys: Sequence[tuple[str, int]]
    ) -> list[tuple[str, int]]:
        """`keys` in the order trials should start: longest expected conversation first (the task's gold
        action count stands for its length), so that the slowest trials do not start last and stretch the
        tail of the run. Ties keep report order. With the `longest_first` setting off: report order."""
        if not self.settings.longest_first:
            return list(keys)
        tasks = self.domain(config.domain).tasks
        position = {key: i for i, key in enumerate(keys)}
        return sorted(keys, key=lambda key: (-len(tasks[key[0]].gold_actions), position[key]))

    async def open_assessment(
        self,
        config: AssessmentConfig,
        on_event: EventHandler | None = None,
        *,
        egress: EgressPolicy | None = None,
        tenant: str = "default",
        assessment_id: str | None = None,
    ) -> AssessmentRun:
        """Everything the trials of one assessment share: the agent resolved and its card fetched once, the
        user simulator, the assessment's and the agent's bounds. Trials then run one by one through
        `AssessmentRun.run_trial` (the service's queue jobs) or all together through `run`.

        `egress` bounds where the agent and its card may lead (default: `EgressPolicy()`); `tenant` and
        `assessment_id` are whose slots the trials take (fair sharing). Raises `AgentEgressError` when the
        agent URL or its card leads where the policy refuses, `AgentNotReachedError` when its card cannot be
        read: such an assessment could not run at all."""
        await self.load_domain(config.domain)
        self.validate(config)
        emit = on_event or _ignore
        agent = await resolve_agent(config.agent_url, self._resolver)
        pool = self._pool_for((egress or EgressPolicy()).for_agent(agent))
        headers = config.agent_header_values()
        card = await self._check_card(pool, config.agent_url, headers)
        assessment_bound = asyncio.Semaphore(config.concurrency)
        owner = assessment_id or f"run-{id(config)}"
        return AssessmentRun(
            engine=self,
            config=config,
            deps=self._deps(config, emit, pool, headers),
            seeds=trial_seeds(config.seed, config.trials),
            bounds=(lambda: assessment_bound, lambda: self._per_agent.hold(agent.key)),
            slot=lambda: self.slots.slot(tenant, owner),
            pool=pool,
            gates=self._gates_for(config),
            party=f"{tenant}/{owner}",
            agent_name=display_name(card.name, self.settings.limits.max_card_name_chars),
        )

    async def run(
        self,
        config: AssessmentConfig,
        *,
        on_event: EventHandler | None = None,
        completed: Sequence[TrialResult] = (),
        egress: EgressPolicy | None = None,
        tenant: str = "default",
        assessment_id: str | None = None,
    ) -> AssessmentReport:
        """Run every trial not already in `completed`; return the report over all of them (see
        `open_assessment` for `egress`, `tenant` and `assessment_id`). A config that sets no step limit gets
        its customer model's `max_steps`, if it has one, with a warning in the log."""
        config, step_limit = with_model_step_limit(config, self.settings)
        for warning in step_limit:
            log.warning("%s", warning)
        clock = time.monotonic()
        await self.load_domain(config.domain)
        keys = self.trial_keys(config)
        position = {key: i for i, key in enumerate(keys)}
        done = {(r.task_id, r.trial): r for r in completed if (r.task_id, r.trial) in position}
        emit = on_event or _ignore
        pending = [key for key in self.longest_first(config, keys) if key not in done]
        results: list[TrialResult] = []
        if not pending:
            return compute_report(
                config,
                list(done.values()),
                0.0,
                trials_planned=len(keys),
                tasks_planned=len({task_id for task_id, _ in keys}),
                run_info=self.run_info(config),
            )
        assessment = await self.open_assessment(
            config, emit, egress=egress, tenant=tenant, assessment_id=assessment_id
        )

        async def one(task_id: str, trial: int) -> None:
            result = await assessment.run_trial(task_id, trial)
            results.append(result)
            # Reported once the trial's slots are free: storing it (the service's handler) does not hold up
            # the next trial.
            await emit(TrialFinished(result=result))

        try:
            async with asyncio.TaskGroup() as group:
                for task_id, trial in pending:
                    group.create_task(one(task_id, trial))
        except BaseExceptionGroup as group_error:
            # A failing event handler (e.g. the service's database) or an agent never reached stops the
            # assessment, the other trials being cancelled: surface the reason plainly.
            first = group_error.exceptions[0]
            if isinstance(first, FirstContactFailed):
                raise await assessment.not_reached(first) from first.__cause__
            raise first from group_error

        every = sorted([*done.values(), *results], key=lambda r: position[(r.task_id, r.trial)])
        return compute_report(
            config,
            every,
            time.monotonic() - clock,
            trials_planned=len(keys),
            tasks_planned=len({task_id for task_id, _ in keys}),
            run_info=self.run_info(config),
        )

    def run_info(self, config: AssessmentConfig) -> RunInfo:
        """Which user simulator and judge an assessment of `config` uses, with the prompts' fingerprints."""
        name = self._user_model_name(config)
        endpoint = self._user_endpoint(config)
        judge = self._judge_endpoint(config)
        return RunInfo(
            user_model_name=name,
            user_model=endpoint.model if endpoint is not None else None,
            user_llm_args={"temperature": 0.0, **endpoint.extra_args} if endpoint is not None else {},
            user_guidelines_sha256=(
                self.user_guidelines_sha256(self.domain(config.domain)) if endpoint is not None else None
            ),
            judge_model=judge.model if judge is not None else None,
            judge_rubric_sha256=_sha256(self._rubric) if judge is not None else None,
            trial_retries=self.settings.trial_retries,
        )

    @property
    def judge(self) -> Judge | None:
        """The NL judge the operator configured (None: assertions are not judged)."""
        return self._judge

    def user_guidelines(self, data: DomainData) -> str:
        """The customer's guidelines in `data`'s domain (the operator's file, else the built-in text): those
        of a customer with tools where the domain gives the customer tools of its own (telecom, mock)."""
        return self._tools_guidelines if data.user_tool_schemas else self._guidelines

    def user_guidelines_sha256(self, data: DomainData) -> str:
        return _sha256(self.user_guidelines(data))

    async def run_with_retries(
        self, spec: TrialSpec, deps: TrialDeps, gates: Sequence[EndpointGate] = ()
    ) -> TrialResult:
        """Run a trial; run it again (bounded, with backoff) while it ends in infrastructure_error, which only
        our own dependencies cause. What remains after the last retry is excluded from the metrics. A trial
        that ended because an endpoint of `gates` stayed down past the outage tolerance is not run again
        now (it would end the same way at once); `retry` runs it once the endpoint is back."""
        delay = self.settings.trial_retry_backoff_s
        for _ in range(self.settings.trial_retries):
            result = await run_trial(spec, deps)
            if result.termination_reason != TerminationReason.INFRASTRUCTURE_ERROR:
                return result
            if any(gate.gave_up for gate in gates):
                return result
            log.warning(
                "trial %s/%s: %s; running it again in %.1f s", spec.task.id, spec.trial, result.error, delay
            )
            await asyncio.sleep(delay)
            delay *= 2
        return await run_trial(spec, deps)

    async def _check_card(self, pool: WhiteAgentPool, agent_url: str, headers: dict[str, str]) -> AgentCard:
        """Fetch the card once up front (with its retries; conversations reuse it): an agent whose card cannot
        be read cannot be assessed, so the assessment fails at once rather than charging every trial. A card
        the egress policy refuses raises its own `AgentEgressError`."""
        pool.forget_card(agent_url, headers)  # an agent redeployed between assessments may have changed
        try:
            return await pool.card(agent_url, headers)
        except AgentEgressError:
            raise
        except AgentUnreachableError as exc:
            # The same words whatever happened (the URL is already in the message); the detail is the
            # operator's (`AgentNotReachedError.detailed`).
            raise AgentNotReachedError(agent_url, "no A2A agent card was served there", exc.detail) from exc
        except AgentError as exc:
            raise AgentNotReachedError(agent_url, str(exc)) from exc

    def _deps(
        self, config: AssessmentConfig, emit: EventHandler, pool: WhiteAgentPool, headers: dict[str, str]
    ) -> TrialDeps:
        turn_timeout = config.turn_timeout_s or self.settings.turn_timeout_s

        def open_conversation() -> contextlib.AbstractAsyncContextManager[Conversation]:
            return pool.conversation(config.agent_url, turn_timeout_s=turn_timeout, headers=headers)

        def choose_dialect(conversation: Conversation) -> Dialect:
            depth = self.settings.limits.max_json_depth
            if config.dialect == "structured" or (
                config.dialect == "auto" and declares_structured(conversation.card)
            ):
                return StructuredDialect(depth)
            return TextDialect(depth)

        user = self._user_simulator(config)
        data = self.domain(config.domain)
        return TrialDeps(
            data=data,
            tools=[dict(schema) for schema in data.tool_schemas],
            open_conversation=open_conversation,
            choose_dialect=choose_dialect,
            user=user,
            judge=self.judge_for(config),
            normalize_ids=self.settings.normalize_ids,
            emit=emit,
            turn_events=emit is not _ignore,
            limits=self.settings.limits,
            user_model=user.llm.endpoint.model if isinstance(user, LLMUserSimulator) else None,
            prices=self.settings.llm_prices,
            agent_usage_bounds=(
                self.settings.agent_usage_max_tokens_per_reply,
                self.settings.agent_usage_max_cost_per_reply,
            ),
            disclose_task_id=self.settings.disclose_task_id,
            judge_skip_when_failed=self.settings.judge_skip_when_failed,
        )


class AssessmentRun:
    """One assessment opened on the engine (`Engine.open_assessment`): runs its trials one at a time, each
    within the assessment's and the white agent's bounds, then a fair slot of the process, in that order."""

    def __init__(
        self,
        *,
        engine: Engine,
        config: AssessmentConfig,
        deps: TrialDeps,
        seeds: list[int],
        bounds: tuple[Callable[[], contextlib.AbstractAsyncContextManager[Any]], ...],
        slot: Callable[[], contextlib.AbstractAsyncContextManager[Any]],
        pool: WhiteAgentPool,
        gates: Sequence[EndpointGate] = (),
        party: str = "",
        agent_name: str | None = None,
    ) -> None:
        self.config = config
        self._gates = tuple(gates)
        self._party = party
        self.agent_name = agent_name
        """The name on the agent's card, bounded and cleaned (`limits.display_name`); None without one."""
        self._pool = pool
        self._engine = engine
        self._deps = deps
        self._seeds = seeds
        self._bounds = bounds
        self._slot = slot

    async def run_trial(self, task_id: str, trial: int) -> TrialResult:
        """Run and score one trial; its `TrialFinished` is the caller's to report (after the slots are
        released, so that storing it never holds one)."""
        spec = TrialSpec(
            task=self._deps.data.tasks[task_id],
            trial=trial,
            seed=self._seeds[trial],
            max_steps=self.config.max_steps,
            max_errors=self.config.max_errors,
        )
        # No trial starts on an endpoint that is down (it would only wait at its first request, holding a
        # slot another assessment could use): it waits here, before taking any bound.
        for gate in self._gates:
            await gate.wait_until_up()
        party = PARTY.set(self._party)  # the LLM gates take turns between assessments
        try:
            async with contextlib.AsyncExitStack() as held:
                for bound in self._bounds:
                    await held.enter_async_context(bound())
                await held.enter_async_context(self._slot())
                await self._deps.emit(TrialStarted(task_id=task_id, trial=trial))
                return await self._engine.run_with_retries(spec, self._deps, self._gates)
        finally:
            PARTY.reset(party)

    async def rejudge(self, stored: TrialResult) -> TrialResult | None:
        """Judge a stored trial again, without running its conversation again (a retry, for a trial whose
        judge failed or that was stored without a judge): the stored transcript and end, the judge configured
        now; tokens of the customer and the agent stay as stored, the judge's are the new call's. None when
        it cannot be judged from what is stored (its conversation did not finish, or it was stored before
        `conversation_end` was kept and its judge failed): run it again instead."""
        judge = self._deps.judge
        task = self._deps.data.tasks[stored.task_id]
        end = stored.conversation_end or _end_of_unjudged(stored)
        if judge is None or not task.judged or end is None:
            return None
        if end.reason == TerminationReason.INFRASTRUCTURE_ERROR:
            return None
        spec = TrialSpec(
            task=task,
            trial=stored.trial,
            seed=stored.seed,
            max_steps=self.config.max_steps,
            max_errors=self.config.max_errors,
        )
        state = TrialState(
            transcript=list(stored.transcript),
            warnings=list(stored.protocol_warnings),
            steps=stored.steps,
            num_errors=stored.num_errors,
            error=end.error,
            db_hash=stored.db_actual_hash,
            environment=_stored_environment(stored, self._deps.data.gold(task.id).db_hash),
            agent_bytes=end.agent_bytes,
        )
        if judge.llm.gate is not None:
            await judge.llm.gate.wait_until_up()
        party = PARTY.set(self._party)
        try:
            result = await score(spec, self._deps, state, TerminationReason(end.reason), stored.started_at)
        except Exception as exc:  # a scoring bug: as for a trial run (orchestrator.run_trial)
            log.exception("judging trial %s/%s again met an internal error", stored.task_id, stored.trial)
            return unscored(
                spec, self._deps, state, stored.started_at, f"internal error while scoring: {exc}"
            )
        finally:
            PARTY.reset(party)
        kept = stored.usage or TrialUsage()
        new_judge = result.usage.judge if result.usage is not None else None
        return result.model_copy(
            update={"usage": TrialUsage(user=kept.user, agent=kept.agent, judge=new_judge)}
        )

    @property
    def endpoints(self) -> tuple[str, ...]:
        """The names of the LLM endpoints this assessment needs (`EndpointStatus.endpoint`)."""
        return tuple(gate.name for gate in self._gates)

    def waiting_for(self) -> list[EndpointStatus]:
        """The LLM endpoints this assessment needs that are rate limiting or down right now (their
        `describe()` is what a progress display shows); empty when all answer."""
        return [status for gate in self._gates if (status := gate.status()).state != "ok"]

    def mark_reached(self) -> None:
        """The agent answered before (e.g. in another process): a later failure to reach it is a trial's
        `agent_error`, not an agent that was never there."""
        self._deps.contact.reached = True

    async def not_reached(self, failure: FirstContactFailed) -> AgentNotReachedError:
        """The error that fails an assessment whose agent could not be reached: its card was read (at
        opening), but no message could be delivered to the address it advertises."""
        agent_url, headers = self.config.agent_url, self.config.agent_header_values()
        card = await self._pool.card(agent_url, headers)  # cached at opening
        advertised = ", ".join(i.url for i in card.supported_interfaces) or "no address"
        problem = (
            "its agent card was read, but no message could be delivered to the address it advertises "
            f"({advertised})"
        )
        cause = failure.__cause__
        detail = cause.detail if isinstance(cause, AgentUnreachableError) else None
        return AgentNotReachedError(agent_url, problem, f"{problem}: {detail}" if detail else None)


def _end_of_unjudged(stored: TrialResult) -> ConversationEnd | None:
    """The end of a trial stored before `conversation_end` was kept, when its own fields still say it: one
    left unjudged (no judge then) kept its conversation's termination and error. What the agent put before
    our LLMs is counted again from its transcript (its replies and the tool results it asked for; the fixed
    greeting is ours). A failed judge overwrote them: None."""
    if (
        stored.nl_status != "not_judged"
        or stored.termination_reason == TerminationReason.INFRASTRUCTURE_ERROR
    ):
        return None
    agent_bytes = sum(
        message_bytes(m.content, m.tool_calls)
        for m in stored.transcript[1:]
        if m.role in ("assistant", "tool")
    )
    return ConversationEnd(reason=stored.termination_reason, error=stored.error, agent_bytes=agent_bytes)


def _stored_environment(stored: TrialResult, gold_hash: str) -> EnvironmentCheck | None:
    """The environment check a stored trial was scored with, rebuilt from what it stored (a retry judges it
    again without its environment)."""
    if stored.db_actual_hash is None:
        return None
    return EnvironmentCheck(
        db_matched=stored.db_actual_hash == gold_hash,
        db_expected_hash=gold_hash,
        db_actual_hash=stored.db_actual_hash,
        assertions=tuple(AssertionCheck(**check) for check in stored.env_assertion_checks),
    )


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def _ignore(event: Any) -> None:
    return None
