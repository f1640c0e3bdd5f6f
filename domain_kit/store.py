"""A domain's DB as plain dicts: one shared read-only base per process, one copy-on-write overlay per trial.

Why plain dicts: upstream holds a domain's DB as pydantic models and deep-copies it per trial (2.8 MB for
retail, 7 MB for airline). Here every entity is kept exactly in the shape of upstream's ``model_dump()``
(keys in declared field order, defaulted fields present), so a tool result is ``json.dumps(entity)`` and the
DB hash is ``sha256(json.dumps(whole_db, sort_keys=True))``, both byte-identical to upstream.

The DB is a mapping of named tables (``orders``, ``users``, ``flights``...), each a mapping of entity id to
entity. A trial reads through to the base, copies an entity on its first write, and may add entities the
base does not have (airline's new reservations); entities are never deleted (no upstream tool deletes a
top-level entity).

Hashing cost: the base is serialized once per process into one byte string, with a sha256 checkpoint at the
start of every table and entity. An overlay's hash resumes from the checkpoint before its first edit and
streams the unchanged spans from the base bytes, so nothing is re-serialized except the entities a trial
changed or added. (sha256 is sequential: the bytes after the first edit are hashed again, about 1 ms per MiB.)
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .hashing import SORTED_ENCODER

Entity = dict[str, Any]
Tables = Mapping[str, Mapping[str, Entity]]


def entity_fragment(entity: Any) -> bytes:
    """One entity as it appears inside upstream's hashed serialization."""
    return SORTED_ENCODER.encode(entity).encode()


def _key_bytes(key: str) -> bytes:
    return json.dumps(key).encode()


def copy_entity(value: Any) -> Any:
    """Deep copy of JSON-shaped data (dicts, lists, scalars); much faster than copy.deepcopy."""
    if isinstance(value, dict):
        return {key: copy_entity(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_entity(item) for item in value]
    return value


EntityKey = tuple[str, str]  # (table, entity id)
Edit = tuple[int, int, bytes, EntityKey]  # replace blob[start:end] by bytes; the entity it concerns


@dataclass(frozen=True)
class DbFingerprint:
    """A DB over the shared base, told apart without hashing it whole: every entity that differs from the
    base or is not in it, with the sha256 of its serialization, in serialization order, and the DB's hash.
    Two DBs over one base are the same bytes exactly when their `changes` are equal (sha256 of each differing
    entity: the trust placed in the DB hash itself), so a DB with the `changes` of a fingerprint has its
    hash."""

    changes: tuple[tuple[str, str, bytes], ...]
    db_hash: str


@dataclass(frozen=True)
class HashLayout:
    """The base DB serialized once as upstream hashes it (tables and ids sorted), with the byte span of
    every entity, the sorted ids of every table (to place added entities) and sha256 checkpoints."""

    blob: bytes
    spans: dict[EntityKey, tuple[int, int]]  # (table, id) -> (start, end) of its serialization
    table_heads: dict[str, int]  # table -> offset just after its opening brace
    sorted_ids: dict[str, tuple[str, ...]]
    checkpoint_offsets: tuple[int, ...]  # ascending, starting with 0
    checkpoints: tuple[Any, ...]  # hashlib objects: the state after blob[:offset]
    initial_hash: str

    @classmethod
    def build(cls, tables: Tables) -> HashLayout:
        parts: list[bytes] = [b"{"]
        offset = 1
        spans: dict[EntityKey, tuple[int, int]] = {}
        heads: dict[str, int] = {}
        sorted_ids: dict[str, tuple[str, ...]] = {}
        marks: list[int] = [0]
        for t_index, table in enumerate(sorted(tables)):
            head = (b", " if t_index else b"") + _key_bytes(table) + b": {"
            parts.append(head)
            offset += len(head)
            heads[table] = offset
            marks.append(offset)
            ids = tuple(sorted(tables[table]))
            sorted_ids[table] = ids
            for e_index, key in enumerate(ids):
                prefix = (b", " if e_index else b"") + _key_bytes(key) + b": "
                fragment = entity_fragment(tables[table][key])
                parts.append(prefix)
                offset += len(prefix)
                spans[(table, key)] = (offset, offset + len(fragment))
                marks.append(offset)
                parts.append(fragment)
                offset += len(fragment)
            parts.append(b"}")
            offset += 1
        parts.append(b"}")
        blob = b"".join(parts)
        checkpoints: list[Any] = []
        running = hashlib.sha256()
        previous = 0
        view = memoryview(blob)
        for mark in marks:
            running.update(view[previous:mark])
            checkpoints.append(running.copy())
            previous = mark
        running.update(view[previous:])
        return cls(blob, spans, heads, sorted_ids, tuple(marks), tuple(checkpoints), running.hexdigest())

    def edits(self, changed: Mapping[EntityKey, Entity], added: Mapping[EntityKey, Entity]) -> list[Edit]:
        """The byte edits that turn the base into the DB with `changed` entities in place of the base's and
        `added` ones inserted where sorting puts them; a copy that ended up equal to the base costs
        nothing. Sorted by position."""
        view = memoryview(self.blob)
        out: list[Edit] = []
        for key, entity in changed.items():
            start, end = self.spans[key]
            fragment = entity_fragment(entity)
            if fragment != view[start:end]:
                out.append((start, end, fragment, key))
        # Added entities: each goes right after the base entity sorting before it, or at the table's head.
        for table, entity_id in sorted(added):
            ids = self.sorted_ids[table]
            index = bisect.bisect_left(ids, entity_id)
            member = _key_bytes(entity_id) + b": " + entity_fragment(added[(table, entity_id)])
            if index:
                at = self.spans[(table, ids[index - 1])][1]
                out.append((at, at, b", " + member, (table, entity_id)))
            else:  # before every base entity of the table
                at = self.table_heads[table]
                out.append((at, at, member + (b", " if ids else b""), (table, entity_id)))
        out.sort(key=lambda edit: (edit[0], edit[1], edit[3]))
        return _join_head_insertions(out, self.table_heads, self.sorted_ids)

    @staticmethod
    def changes(edits: list[Edit]) -> tuple[tuple[str, str, bytes], ...]:
        return tuple((key[0], key[1], hashlib.sha256(data).digest()) for _, _, data, key in edits)

    def hash_of(self, edits: list[Edit]) -> str:
        """sha256 of the base with `edits` (from `edits`) applied; the cost grows with the changes and the
        bytes after the first edit, never with re-serializing the DB."""
        if not edits:
            return self.initial_hash
        view = memoryview(self.blob)
        first = edits[0][0]
        index = bisect.bisect_right(self.checkpoint_offsets, first) - 1
        running = self.checkpoints[index].copy()
        cursor = self.checkpoint_offsets[index]
        for start, end, data, _ in edits:
            running.update(view[cursor:start])
            running.update(data)
            cursor = end
        running.update(view[cursor:])
        result: str = running.hexdigest()
        return result


def _join_head_insertions(
    edits: list[Edit], heads: Mapping[str, int], sorted_ids: Mapping[str, tuple[str, ...]]
) -> list[Edit]:
    """Insertions into an empty base table all sit at its head and were each given no separator: join them
    with ", " (in key order, which the sort kept)."""
    empty_heads = {heads[table] for table, ids in sorted_ids.items() if not ids}
    if not empty_heads:
        return edits
    joined: list[Edit] = []
    for edit in edits:
        previous = joined[-1] if joined else None
        if (
            previous is not None
            and edit[0] in empty_heads
            and previous[0] == edit[0] == previous[1] == edit[1]
        ):
            joined.append((edit[0], edit[1], b", " + edit[2], edit[3]))
        else:
            joined.append(edit)
    return joined


def _walk(node: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        node = node[step]
    return node


def _copy_along(node: Any, base_node: Any, path: tuple[Any, ...]) -> Any:
    """Follow `path` from a trial's copy and the base entity side by side, copying every container still
    shared with the base (shallowly on the way, deeply at the end), and return the object at the end."""
    for index, step in enumerate(path):
        child = node[step]
        try:
            base_child = base_node[step] if base_node is not None else None
        except (KeyError, IndexError, TypeError):
            base_child = None
        if child is base_child:
            if index == len(path) - 1:
                child = copy_entity(child)
            elif isinstance(child, dict):
                child = dict(child)
            elif isinstance(child, list):
                child = list(child)
            else:
                raise TypeError(f"a write path goes through dicts and lists, not {type(child).__name__}")
            node[step] = child
        node, base_node = child, base_child
    return node


class BaseDb:
    """The parsed DB shared read-only by every environment of a process. Never mutate its entities."""

    def __init__(self, tables: Mapping[str, dict[str, Entity]]) -> None:
        self.tables: dict[str, dict[str, Entity]] = dict(tables)
        self.layout = HashLayout.build(self.tables)

    @property
    def initial_hash(self) -> str:
        return self.layout.initial_hash


class OverlayDb:
    """One trial's view of the DB: reads fall through to the base, the first write to an entity copies it,
    and entities the trial adds live only here.

    Tools look entities up with ``get`` (read-only result) and call ``for_write`` immediately before
    mutating, which is when the copy happens; ``add`` stores a new entity.
    """

    __slots__ = ("_added", "_base", "_copies", "_partial")

    def __init__(self, base: BaseDb) -> None:
        self._base = base
        self._copies: dict[str, dict[str, Entity]] = {}
        self._added: dict[str, dict[str, Entity]] = {}
        self._partial: set[EntityKey] | None = None  # copies made along a path only (see `for_write`)

    @property
    def base(self) -> BaseDb:
        return self._base

    def has(self, table: str, key: Any) -> bool:
        # The base lookup comes first so an unhashable key raises Python's own TypeError, as upstream's
        # `key in dict` does.
        if key in self._base.tables[table]:
            return True
        added = self._added.get(table)
        return added is not None and key in added

    def get(self, table: str, key: str) -> Entity:
        """The entity as this trial sees it. Read-only: call `for_write` before changing it."""
        copies = self._copies.get(table)
        if copies is not None:
            found = copies.get(key)
            if found is not None:
                return found
        base = self._base.tables[table]
        if key in base:
            return base[key]
        return self._added[table][key]

    def for_write(self, table: str, key: str, *path: Any) -> Any:
        """The entity, owned by this trial (copied from the base on first use).

        Given a `path` of keys and indexes inside the entity, the object there, owned by this trial, while
        only the containers along the path are copied: the rest of the entity stays shared with the base and
        must not be written through any other reference. A seat count in one of a flight's 30 dates then
        costs two small dicts and the path, not the flight. Take the reference right before writing: a later
        whole-entity `for_write` replaces a path copy with a deep one."""
        added = self._added.get(table)
        if added is not None and key in added:
            return _walk(added[key], path)
        copies = self._copies.setdefault(table, {})
        found = copies.get(key)
        entity_key = (table, key)
        partial = self._partial is not None and entity_key in self._partial
        if found is None:
            base_entity = self._base.tables[table][key]
            if not path:
                found = copies[key] = copy_entity(base_entity)
                return found
            found = copies[key] = dict(base_entity)
            if self._partial is None:
                self._partial = set()
            self._partial.add(entity_key)
            partial = True
        if not partial:
            return _walk(found, path)
        if not path:  # the whole entity is wanted now: finish the copy
            found = copies[key] = copy_entity(found)
            assert self._partial is not None
            self._partial.discard(entity_key)
            return found
        return _copy_along(found, self._base.tables[table][key], path)

    def add(self, table: str, key: str, entity: Entity) -> None:
        """Store a new entity (the caller hands it over: it must not be shared with anything else)."""
        if not isinstance(key, str):
            raise TypeError(f"entity ids are strings, not {type(key).__name__}")
        if self.has(table, key):
            raise KeyError(f"{table}/{key} already exists")
        self._added.setdefault(table, {})[key] = entity

    def keys(self, table: str) -> Iterator[str]:
        """Every id in the table in insertion order: the base's, then those this trial added."""
        yield from self._base.tables[table]
        yield from self._added.get(table, {})

    def items(self, table: str) -> list[tuple[str, Entity]]:
        """All entities in insertion order, this trial's copies in place of base entities."""
        copies = self._copies.get(table, {})
        found = [(key, copies.get(key, entity)) for key, entity in self._base.tables[table].items()]
        found.extend(self._added.get(table, {}).items())
        return found

    def values(self, table: str) -> Iterator[Entity]:
        """Like `items`, without the ids and without building a list (searches scan whole tables)."""
        copies = self._copies.get(table)
        if copies:
            for key, entity in self._base.tables[table].items():
                yield copies.get(key, entity)
        else:
            yield from self._base.tables[table].values()
        yield from self._added.get(table, {}).values()

    def changed(self) -> dict[EntityKey, Entity]:
        """Base entities this trial copied (possibly without changing them)."""
        return {
            (table, key): entity for table, found in self._copies.items() for key, entity in found.items()
        }

    def added(self) -> dict[EntityKey, Entity]:
        return {(table, key): entity for table, found in self._added.items() for key, entity in found.items()}

    def changed_count(self) -> int:
        """How many entities this trial holds (copied or added): a measure of its memory cost."""
        return sum(len(copies) for copies in self._copies.values()) + sum(
            len(found) for found in self._added.values()
        )

    def _edits(self) -> list[Edit]:
        return self._base.layout.edits(self.changed(), self.added())

    def db_hash(self, known: DbFingerprint | None = None) -> str:
        """The DB's hash; when it is the DB `known` was taken of (the gold end state, most often), that one's
        hash without hashing again."""
        layout = self._base.layout
        edits = self._edits()
        if known is not None and known.changes == layout.changes(edits):
            return known.db_hash
        return layout.hash_of(edits)

    def fingerprint(self) -> DbFingerprint:
        layout = self._base.layout
        edits = self._edits()
        return DbFingerprint(layout.changes(edits), layout.hash_of(edits))

    def dump(self) -> dict[str, dict[str, Entity]]:
        """The whole DB as upstream's model_dump() (a fresh deep copy; for debugging and tests)."""
        return {
            table: {key: copy_entity(entity) for key, entity in self.items(table)}
            for table in self._base.tables
        }
