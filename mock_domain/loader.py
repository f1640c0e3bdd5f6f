"""``load_mock_data``: the verified, parsed mock data, shared read-only by every trial of a process."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from domain_kit.assertions import run_assertions
from domain_kit.calls import ToolCall
from domain_kit.catalog import DomainCatalog, PerSource
from domain_kit.data_files import DataSource
from domain_kit.outcomes import EnvironmentCheck, GoldOutcome
from domain_kit.protocols import DomainEnvironment
from domain_kit.tasks import EnvAssertion, Task, parse_splits, parse_tasks

from .data import locate_data, read_raw
from .environment import MockEnvironment
from .records import MockDB, MockUserDB
from .schemas import READ_TOOLS, TOOL_SCHEMAS, USER_TOOL_SCHEMAS, WRITE_TOOLS

DOMAIN_NAME = "mock"


class MockData(DomainCatalog):
    """The parsed mock data: policy, the 10 tasks (file order; split ``base`` holds all of them, as
    upstream's split file does), both pristine DBs, and a factory for trial environments. Implements
    domain_kit's `DomainData`."""

    name = DOMAIN_NAME
    default_split = "base"
    tool_schemas = TOOL_SCHEMAS
    user_tool_schemas = USER_TOOL_SCHEMAS
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
        super().__init__(source, policy, tasks, parse_splits({}, tasks), task_documents)
        self.db = db
        self.user_db = user_db

    def task_id_hint(self) -> str:
        return f"ids: {', '.join(self.tasks)}"

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

    def _replay_gold(self, task: Task) -> GoldOutcome:
        """Upstream's gold replay: the task's initial state, then every gold action for its requestor,
        failures skipped."""
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
        checks = run_assertions(task.env_assertions, predicted, finding)
        return EnvironmentCheck(
            db_matched=actual == gold.db_hash and actual_user == gold.user_db_hash,
            db_expected_hash=gold.db_hash,
            db_actual_hash=actual,
            assertions=checks,
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


_loaded: PerSource[MockData] = PerSource()


def _parse(source: DataSource) -> MockData:
    raw = read_raw(source)
    return MockData(
        source=source,
        db=MockDB.validate(raw.db),
        user_db=MockUserDB.validate(raw.user_db),
        policy=raw.policy,
        tasks=parse_tasks(raw.tasks),
        task_documents={str(item["id"]): item for item in raw.tasks},
    )


def load_mock_data(data_dir: str | os.PathLike[str] | None = None) -> MockData:
    """Locate (explicit dir, else TAU2_MOCK_DATA_DIR, else the installed tau2-mock-mcp-eval package and
    `green-agent data install`'s policy.md), verify every file's sha256 and parse, once per process and
    source. Raises DataError on a missing or altered file."""
    return _loaded.get(locate_data(data_dir), _parse)
