"""What every domain's loaded data shares: task and split lookup, the gold replay cached per task, and
parsing the data once per process and source. A domain subclasses `DomainCatalog` and adds its
environments, its gold replay and its environment check (the rest of `DomainData`)."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, Protocol, Self, TypeVar

from .calls import Requestor, ToolCall, ToolResult
from .data_files import DataSource, JsonDomainFiles
from .outcomes import EnvironmentCheck, GoldOutcome
from .protocols import DomainEnvironment
from .store import BaseDb, DbFingerprint
from .tasks import Task, parse_splits, parse_tasks

MAX_SHOWN_ID_CHARS = 120
"""An unknown task id is quoted up to this many characters in the error (it comes from a requester)."""


class DomainCatalog:
    """The tasks (in the task file's order), splits and policy of one domain, its source, and its gold
    replays (each computed once, on first use, under a lock: trials of several threads may ask)."""

    name: str

    def __init__(
        self,
        source: DataSource,
        policy: str,
        tasks: Mapping[str, Task],
        splits: Mapping[str, tuple[str, ...]],
        task_documents: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.source = source
        self.policy = policy
        self.tasks = tasks
        self.splits = splits
        self._task_documents = dict(task_documents or {})
        self._gold: dict[str, GoldOutcome] = {}
        self._gold_lock = threading.Lock()

    @property
    def source_description(self) -> str:
        return self.source.describe()

    def task(self, task_id: str) -> Task:
        try:
            return self.tasks[str(task_id)]
        except KeyError:
            shown = str(task_id)
            shown = shown if len(shown) <= MAX_SHOWN_ID_CHARS else shown[:MAX_SHOWN_ID_CHARS] + "..."
            hint = f" ({self.task_id_hint()})" if self.task_id_hint() else ""
            raise KeyError(f"unknown {self.name} task id {shown!r}{hint}") from None

    def task_id_hint(self) -> str:
        """What valid ids look like, appended to an unknown id's error ("ids are '0'..'49'")."""
        return ""

    def task_document(self, task_id: str) -> dict[str, Any]:
        """The task exactly as the task file holds it (a deep copy), e.g. to embed in a tau2 results file."""
        return copy.deepcopy(dict(self._task_documents[self.task(task_id).id]))

    def split(self, name: str) -> tuple[str, ...]:
        try:
            return self.splits[name]
        except KeyError:
            raise KeyError(f"unknown split {name!r}; known: {sorted(self.splits)}") from None

    def gold(self, task_id: str) -> GoldOutcome:
        """The task's gold replay, computed once per process."""
        task = self.task(task_id)
        with self._gold_lock:
            outcome = self._gold.get(task.id)
            if outcome is None:
                outcome = self._gold[task.id] = self._replay_gold(task)
            return outcome

    def _replay_gold(self, task: Task) -> GoldOutcome:
        """The domain's gold replay of one task, as upstream's evaluator makes it."""
        raise NotImplementedError


Loaded = TypeVar("Loaded")


class PerSource(Generic[Loaded]):
    """A domain's data parsed once per process and source (the same files found again are not parsed
    again; another directory is another source)."""

    def __init__(self) -> None:
        self._loaded: dict[tuple[str, ...], Loaded] = {}
        self._lock = threading.Lock()

    def get(self, source: DataSource, parse: Callable[[DataSource], Loaded]) -> Loaded:
        key = tuple(str(path) for _, path in source.paths)
        with self._lock:
            loaded = self._loaded.get(key)
            if loaded is None:
                loaded = self._loaded[key] = parse(source)
            return loaded


class StoreEnvironment(Protocol):
    """An environment over a copy-on-write `store.BaseDb` (retail's, airline's)."""

    def call(
        self, name: str, arguments: Mapping[str, Any] | None = None, requestor: Requestor = "assistant"
    ) -> ToolResult: ...

    def db_hash(self, known: object | None = None) -> str: ...

    def db_fingerprint(self) -> DbFingerprint: ...


StoreEnv = TypeVar("StoreEnv", bound=StoreEnvironment)


class StoreCatalog(DomainCatalog, Generic[StoreEnv]):
    """A domain whose trials share one parsed DB, copied on write (`store.BaseDb`), with no initial state
    per task and no customer DB (retail, airline). The subclass names its environment (`_environment`)."""

    default_split = "base"
    user_tool_schemas: Sequence[Mapping[str, Any]] = ()

    def __init__(
        self,
        source: DataSource,
        base: BaseDb,
        policy: str,
        tasks: Mapping[str, Task],
        splits: Mapping[str, tuple[str, ...]],
        task_documents: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        super().__init__(source, policy, tasks, splits, task_documents)
        self.base = base

    @classmethod
    def from_files(
        cls, files: JsonDomainFiles, normalize_db: Callable[[dict[str, Any]], dict[str, dict[str, Any]]]
    ) -> Self:
        """The domain from its verified files, the DB brought into upstream's dump shape by
        `normalize_db` and laid out once for hashing."""
        tasks = parse_tasks(files.tasks)
        return cls(
            source=files.source,
            base=BaseDb(normalize_db(files.db)),
            policy=files.policy,
            tasks=tasks,
            splits=parse_splits(files.splits, tasks),
            task_documents={str(item["id"]): item for item in files.tasks},
        )

    def _environment(self, normalize_ids: bool) -> StoreEnv:
        raise NotImplementedError

    def new_environment(self, task_id: str | None = None, *, normalize_ids: bool = False) -> StoreEnv:
        """A fresh trial environment (copy-on-write over the shared base; microseconds). The tasks have no
        initial state of their own, so `task_id` changes nothing."""
        return self._environment(normalize_ids)

    def initial_db_hash(self) -> str:
        return self.base.initial_hash

    def check_environment(
        self, task_id: str, live: DomainEnvironment, calls: Sequence[ToolCall]
    ) -> EnvironmentCheck:
        """The live DB against gold. Upstream replays the trajectory's writes on a fresh DB; the tools are
        deterministic and reads change nothing, so the live end state is that replay's end state (checked on
        every gold trajectory of both domains upstream); an end state equal to gold takes its hash without
        hashing again."""
        gold = self.gold(task_id)
        actual = live.db_hash(known=gold.fingerprint)
        return EnvironmentCheck(
            db_matched=actual == gold.db_hash, db_expected_hash=gold.db_hash, db_actual_hash=actual
        )

    def _replay_gold(self, task: Task) -> GoldOutcome:
        """Every gold action in order on a fresh environment, reads and generic calls included; a gold call
        that fails is recorded and skipped, as upstream's evaluator does."""
        env = self._environment(normalize_ids=False)
        failed: list[tuple[int, str, str]] = []
        actions = tuple(action.to_tool_call() for action in task.gold_actions)
        for index, call in enumerate(actions):
            result = env.call(call.name, call.arguments)
            if result.error:
                failed.append((index, call.name, result.content))
        fingerprint = env.db_fingerprint()
        return GoldOutcome(
            db_hash=fingerprint.db_hash,
            reference_calls=actions,
            failed_calls=tuple(failed),
            fingerprint=fingerprint,
        )
