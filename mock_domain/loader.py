"""``load_mock_data``: the verified, parsed mock data, shared read-only by every trial of a process."""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from domain_kit.calls import ToolCall
from domain_kit.data_files import DataSource
from domain_kit.outcomes import AssertionCheck, EnvironmentCheck, GoldOutcome
from domain_kit.protocols import DomainEnvironment
from domain_kit.tasks import EnvAssertion, Task, parse_splits, parse_tasks

from .data import locate_data, read_raw
from .environment import MockEnvironment
from .records import MockDB, MockUserDB
from .schemas import READ_TOOLS, TOOL_SCHEMAS, USER_TOOL_SCHEMAS, WRITE_TOOLS

DOMAIN_NAME = "mock"


class MockData:
    """The parsed mock data: policy, the 10 tasks (file order; split ``base`` holds all of them, as
    upstream's split file does), both pristine DBs, and a factory for trial environments. Implements
    domain_kit's `DomainData`."""

    name = DOMAIN_NAME
    default_split = "base"
    tool_schemas: Sequence[Mapping[str, Any]] = TOOL_SCHEMAS
    user_tool_schemas: Sequence[Mapping[str, Any]] = USER_TOOL_SCHEMAS
    write_tools = WRITE_TOOLS
    read_tools = READ_TOOLS

    def __init__(
        self,
        source: DataSource,
        db: MockDB,
        user_db: MockUserDB,
        policy: str,
        tasks: dict[str, Task],
        task_documents: Mapping[str, Mapping[str, Any]],
    ) -> None:
        self.source = source
        self.db = db
        self.user_db = user_db
        self.policy = policy
        self.tasks = tasks
        self.splits = parse_splits({}, tasks)
        self._task_documents = dict(task_documents)
        self._gold: dict[str, GoldOutcome] = {}
        self._gold_lock = threading.Lock()

    @property
    def source_description(self) -> str:
        return self.source.describe()

    def task(self, task_id: str) -> Task:
        try:
            return self.tasks[str(task_id)]
        except KeyError:
            shown = str(task_id) if len(str(task_id)) <= 60 else str(task_id)[:60] + "..."
            raise KeyError(f"unknown mock task id {shown!r} (ids: {', '.join(self.tasks)})") from None

    def task_document(self, task_id: str) -> dict[str, Any]:
        """The task exactly as tasks.json holds it (a deep copy)."""
        return copy.deepcopy(dict(self._task_documents[self.task(task_id).id]))

    def split(self, name: str) -> tuple[str, ...]:
        try:
            return self.splits[name]
        except KeyError:
            raise KeyError(f"unknown split {name!r}; known: {sorted(self.splits)}") from None

    def new_environment(self, task_id: str | None = None, *, normalize_ids: bool = False) -> MockEnvironment:
        """Fresh copies of both DBs; with `task_id`, the task's initial state applied (initialization data,
        setup calls, the message history's writes). `normalize_ids` changes nothing here."""
        env = MockEnvironment(self.db.copy(), self.user_db.copy())
        if task_id is not None:
            state = self.task(task_id).initial_state
            if state is not None:
                env.apply_initial_state(state)
        return env

    def initial_db_hash(self) -> str:
        return self.db.hash()

    def gold(self, task_id: str) -> GoldOutcome:
        """The task's gold replay (upstream's evaluator: its initial state, then every gold action for its
        requestor, failures skipped), once per process."""
        task = self.task(task_id)
        with self._gold_lock:
            outcome = self._gold.get(task.id)
            if outcome is None:
                outcome = self._replay_gold(task)
                self._gold[task.id] = outcome
            return outcome

    def _replay_gold(self, task: Task) -> GoldOutcome:
        env = self.new_environment(task.id)
        calls = tuple(action.to_tool_call() for action in task.gold_actions)
        failed: list[tuple[int, str, str]] = []
        for index, call in enumerate(calls):
            result = env.call_tool(call)
            if result.error:
                failed.append((index, call.name, result.content))
        return GoldOutcome(
            db_hash=env.db_hash(),
            reference_calls=calls,
            failed_calls=tuple(failed),
            user_db_hash=env.user_db_hash(),
        )

    def check_environment(
        self, task_id: str, live: DomainEnvironment, calls: Sequence[ToolCall]
    ) -> EnvironmentCheck:
        """Upstream's environment evaluator: `calls` (the trial's own calls of both parties, in order; not
        the task's message history, which is part of the initial state) are replayed on a fresh environment
        with the task's initial state; both DBs are compared with the gold replay's, and every env assertion
        runs on the replayed state. A task with neither gold actions nor env assertions compares nothing
        (upstream: DB matched). An assertion that raises (upstream's evaluation would crash) is not met, its
        error recorded. `live` is not used: the replay is what upstream scores."""
        task = self.task(task_id)
        predicted = self.new_environment(task.id)
        predicted.replay(calls)
        actual, actual_user = predicted.db_hash(), predicted.user_db_hash()
        criteria = self._task_documents[task.id].get("evaluation_criteria") or {}
        if criteria.get("actions") is None and criteria.get("env_assertions") is None:
            return EnvironmentCheck(
                db_matched=True, db_expected_hash=actual, db_actual_hash=actual, user_db_hash=actual_user
            )
        gold = self.gold(task.id)
        checks = []
        for assertion in task.env_assertions:
            result: bool | None = None
            error = None
            try:
                result = predicted.assertion(assertion.func_name, assertion.arguments, assertion.env_type)
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
            checks.append(
                AssertionCheck(
                    func_name=assertion.func_name,
                    env_type=assertion.env_type,
                    arguments=copy.deepcopy(assertion.arguments),
                    expected=assertion.assert_value,
                    actual=result,
                    message=assertion.message,
                    error=error,
                    found=None if result in (None, assertion.assert_value) else finding(predicted, assertion),
                )
            )
        return EnvironmentCheck(
            db_matched=actual == gold.db_hash and actual_user == gold.user_db_hash,
            db_expected_hash=gold.db_hash,
            db_actual_hash=actual,
            assertions=tuple(checks),
            user_db_hash=actual_user,
        )


def finding(env: MockEnvironment, assertion: EnvAssertion) -> str | None:
    """What the end state holds where a failed assertion looked ("task task_2 is pending"), for a reader of
    the failure; None for a function this does not know."""
    arguments, dbs = assertion.arguments, env.dump()
    if assertion.func_name == "assert_task_status":
        task = dbs["agent"].get("tasks", {}).get(arguments.get("task_id"), {})
        return f"task {arguments.get('task_id')} is {task.get('status')}"
    if assertion.func_name == "assert_number_of_tasks":
        user = dbs["agent"].get("users", {}).get(arguments.get("user_id"), {})
        return f"user {arguments.get('user_id')} has {len(user.get('tasks', []))} tasks"
    if assertion.func_name == "assert_notification_status":
        notification = dbs["user"].get("notifications", {}).get(arguments.get("notification_id"), {})
        return f"notification {arguments.get('notification_id')} is {notification.get('status')}"
    return None


_cache: dict[tuple[str, ...], MockData] = {}
_cache_lock = threading.Lock()


def load_mock_data(data_dir: str | os.PathLike[str] | None = None) -> MockData:
    """Locate (explicit dir, else TAU2_MOCK_DATA_DIR, else the installed tau2-mock-mcp-eval package and
    `green-agent data install`'s policy.md), verify every file's sha256 and parse, once per process and
    source. Raises DataError on a missing or altered file."""
    source = locate_data(data_dir)
    key = tuple(str(path) for _, path in source.paths)
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None:
            return cached
        raw = read_raw(source)
        data = MockData(
            source=source,
            db=MockDB.validate(raw.db),
            user_db=MockUserDB.validate(raw.user_db),
            policy=raw.policy,
            tasks=parse_tasks(raw.tasks),
            task_documents={str(item["id"]): item for item in raw.tasks},
        )
        _cache[key] = data
        return data
