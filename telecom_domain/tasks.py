"""The 2,285 telecom tasks, held compactly: tasks.json (14 MB) is indexed once, and a task is parsed when it
is asked for, except those of the default split (``base``, 114), which are kept parsed.

Parsing the whole file into task objects costs a process about 0.6 s and 47 MB that it keeps; the index
keeps the file's text (14 MB, ASCII) and each task's place in it. Splits list their tasks in tasks.json
order, as upstream's ``get_tasks(split)`` does (the split file's own order is not used).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from domain_kit.tasks import Task, parse_task

_SPACE = re.compile(r"\s*")


class TaskIndex(Mapping[str, Task]):
    """Every task by id, in tasks.json order; tasks outside ``keep`` are parsed on each access (about 0.2 ms;
    nothing else is cached, so memory stays what the index holds)."""

    def __init__(self, text: str, keep: Collection[str] = ()) -> None:
        self._text = text
        self._spans: dict[str, tuple[int, int]] = {}
        self._kept: dict[str, Task] = {}
        wanted = set(keep)
        decoder = json.JSONDecoder()
        at = _SPACE.match(text, 0).end()  # type: ignore[union-attr]
        if text[at : at + 1] != "[":
            raise ValueError("tasks.json is not a JSON list")
        at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
        while text[at : at + 1] != "]":
            document, end = decoder.raw_decode(text, at)
            task_id = str(document["id"])
            if task_id in self._spans:
                raise ValueError(f"duplicate task id {task_id!r} in tasks.json")
            self._spans[task_id] = (at, end)
            if task_id in wanted:
                self._kept[task_id] = parse_task(document)
            at = _SPACE.match(text, end).end()  # type: ignore[union-attr]
            if text[at : at + 1] == ",":
                at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
            elif text[at : at + 1] != "]":
                raise ValueError(f"tasks.json: expected ',' or ']' at character {at}")

    def __getitem__(self, task_id: str) -> Task:
        kept = self._kept.get(task_id)
        if kept is not None:
            return kept
        return parse_task(self.document(task_id))

    def __iter__(self) -> Iterator[str]:
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._spans

    def is_kept(self, task_id: str) -> bool:
        """Whether the task is kept parsed (a task of the default split)."""
        return task_id in self._kept

    def document(self, task_id: str) -> dict[str, Any]:
        """The task as tasks.json holds it, freshly parsed (the caller owns it). KeyError if unknown."""
        start, end = self._spans[task_id]
        document: dict[str, Any] = json.loads(self._text[start:end])
        return document


def task_splits(raw: Mapping[str, list[Any]], tasks: Mapping[str, Task]) -> dict[str, tuple[str, ...]]:
    """Each split's task ids in tasks.json order; ValueError if a split names a task the file lacks."""
    order = list(tasks)
    splits: dict[str, tuple[str, ...]] = {}
    for name, ids in raw.items():
        members = {str(task_id) for task_id in ids}
        unknown = sorted(members.difference(order))
        if unknown:
            raise ValueError(f"split {name!r} names unknown tasks {unknown[:5]}")
        splits[name] = tuple(task_id for task_id in order if task_id in members)
    return splits
