"""``load_telecom_data``: the verified, parsed telecom data, shared read-only by every trial of a process."""

from __future__ import annotations

import os
import pickle
import threading
from collections.abc import Sequence
from typing import Any

from domain_kit.calls import ToolCall
from domain_kit.catalog import DomainCatalog, PerSource
from domain_kit.outcomes import EnvironmentCheck, GoldOutcome
from domain_kit.protocols import DomainEnvironment
from domain_kit.tasks import Task

from .data import DataSource, locate_data, read_raw
from .environment import TelecomEnvironment
from .evaluation import check_trajectory, replay_gold
from .initial_state import apply_initial_state
from .model import db_hash
from .phone import TelecomUserDB, parse_user_db
from .records import TelecomDB, parse_db
from .schemas import READ_TOOLS, TOOL_SCHEMAS, USER_TOOL_SCHEMAS, WRITE_TOOLS
from .tasks import TaskIndex, task_splits

DOMAIN_NAME = "telecom"
DEFAULT_SPLIT = "base"


class TelecomData(DomainCatalog):
    """The parsed base: the agent's policy, the tasks (tasks.json order; the default split kept parsed), the
    splits, both pristine databases, and a factory for trial environments. Implements domain_kit's
    `DomainData`."""

    name = DOMAIN_NAME
    default_split = DEFAULT_SPLIT
    tool_schemas = TOOL_SCHEMAS
    user_tool_schemas = USER_TOOL_SCHEMAS
    write_tools = WRITE_TOOLS
    read_tools = READ_TOOLS
    tasks: TaskIndex

    def __init__(
        self,
        source: DataSource,
        db: TelecomDB,
        user_db: TelecomUserDB,
        policy: str,
        tasks: TaskIndex,
        splits: dict[str, tuple[str, ...]],
    ) -> None:
        super().__init__(source, policy, tasks, splits)
        self._db = db
        self._user_db = user_db
        self._initial_db_hash = db_hash(db)
        # Each trial starts from a copy of the pristine databases: unpickling a snapshot taken once costs a
        # fifth of a deep copy (0.15 against 0.73 ms for the provider's records).
        self._snapshot = pickle.dumps((db, user_db), pickle.HIGHEST_PROTOCOL)
        # And, for the tasks kept parsed (the default split: bounded by the data), a snapshot of the task's
        # initial state, taken on first use: a trial and its evaluation each start from it instead of
        # setting the state up again (the merge and rebuild of both databases, the setup calls: ~0.1 ms).
        self._task_snapshots: dict[str, bytes] = {}
        self._task_snapshots_lock = threading.Lock()

    def task_id_hint(self) -> str:
        return "ids look like '[mobile_data_issue]airplane_mode_on|data_mode_off[PERSONA:None]'"

    def task_document(self, task_id: str) -> dict[str, Any]:
        """The task exactly as tasks.json holds it (freshly parsed: the caller owns it)."""
        return self.tasks.document(self.task(task_id).id)

    def new_environment(
        self, task_id: str | None = None, *, normalize_ids: bool = False
    ) -> TelecomEnvironment:
        """A fresh environment: with a task, in that task's initial state (its setup run, the phone synced);
        without, the pristine databases. ``normalize_ids`` is retail's and changes nothing here."""
        if task_id is None:
            return TelecomEnvironment(*self._pristine())
        return self._task_environment(self.task(task_id))

    def _pristine(self) -> tuple[TelecomDB, TelecomUserDB]:
        """Fresh copies of both pristine databases."""
        db, user_db = pickle.loads(self._snapshot)
        return db, user_db

    def _task_environment(self, task: Task) -> TelecomEnvironment:
        snapshot = self._task_snapshots.get(task.id)
        if snapshot is not None:
            db, user_db, bill_ids = pickle.loads(snapshot)
            return TelecomEnvironment(db, user_db, bill_ids=bill_ids)
        env = TelecomEnvironment(*self._pristine(), seed=task.id)
        apply_initial_state(env, task.initial_state)
        if self.tasks.is_kept(task.id):
            taken = pickle.dumps((env.db, env.user_db, env.tools.bill_ids), pickle.HIGHEST_PROTOCOL)
            with self._task_snapshots_lock:  # environments are made on several threads (the gold replay)
                self._task_snapshots.setdefault(task.id, taken)
        return env

    def initial_db_hash(self) -> str:
        """The pristine agent DB's hash (a task's initial state may differ: see new_environment)."""
        return self._initial_db_hash

    def _replay_gold(self, task: Task) -> GoldOutcome:
        """The gold replay as upstream's evaluator makes it (no sync)."""
        return replay_gold(task, self._task_environment)

    def check_environment(
        self, task_id: str, live: DomainEnvironment, calls: Sequence[ToolCall]
    ) -> EnvironmentCheck:
        """Upstream's environment evaluation of a trajectory: ``calls`` (both parties, in order, with their
        requestors) replayed on a fresh environment in the task's initial state; the env assertions run on
        that. ``live`` is not read: the replay is what upstream scores."""
        task = self.task(task_id)
        return check_trajectory(task, self.gold(task.id), self._task_environment, calls)


_loaded: PerSource[TelecomData] = PerSource()


def _parse(source: DataSource) -> TelecomData:
    raw = read_raw(source)
    splits_raw = raw.splits
    keep = splits_raw.get(DEFAULT_SPLIT, ())
    tasks = TaskIndex(raw.tasks.decode("utf-8"), keep=[str(task_id) for task_id in keep])
    return TelecomData(
        source=source,
        db=parse_db(raw.db),
        user_db=parse_user_db(raw.user_db),
        policy=raw.policy,
        tasks=tasks,
        splits=task_splits(splits_raw, tasks),
    )


def load_telecom_data(data_dir: str | os.PathLike[str] | None = None) -> TelecomData:
    """Locate (explicit dir, else TAU2_TELECOM_DATA_DIR, else the files `green-agent data install` put in
    <sys.prefix>/share/tau2-green-agent/telecom), verify every file's sha256 and parse once per process and
    source. Raises DataError on a missing or altered file."""
    return _loaded.get(locate_data(data_dir), _parse)
