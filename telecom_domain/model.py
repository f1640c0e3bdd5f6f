"""The plumbing shared by both telecom databases: building typed records from parsed TOML, and dumping them
the way upstream's ``model_dump()`` does.

Records are plain dataclasses. Upstream's are pydantic models validated when loaded but never on assignment,
so a tool that assigns a value keeps it as given; plain attribute assignment here does the same. A dump keeps
enums as enum members and dates as date objects, exactly as upstream's python-mode ``model_dump()``: JSON
encoding (with ``default=str``) then gives the same text, hence the same hash.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import operator
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from domain_kit import upstream_hash

R = TypeVar("R")


class RecordError(ValueError):
    """A database file does not have the shape of upstream's model (a missing, unknown or mistyped field)."""


def dump(record: Any) -> Any:
    """Upstream's ``model_dump()`` of a record: nested records become dicts in field order; enum members,
    dates, numbers and strings are kept as they are (a deep copy: the caller may keep or change it; the
    leaves are immutable). Walked by hand: `dataclasses.asdict` deep-copies every leaf, which made a hash of
    the provider's records cost ~1 ms, twice per trial."""
    names = _FIELDS.get(type(record))
    if names is not None:
        return {name: dump(getattr(record, name)) for name in names}
    if isinstance(record, list):
        return [dump(item) for item in record]
    if isinstance(record, dict):
        return {key: dump(value) for key, value in record.items()}
    if isinstance(record, tuple):
        return tuple(dump(item) for item in record)
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        _FIELDS[type(record)] = tuple(field.name for field in dataclasses.fields(record))
        return dump(record)
    return record


_FIELDS: dict[type, tuple[str, ...]] = {}
"""Field names per record class, in declared order (what `dump` walks)."""


def db_hash(record: Any) -> str:
    """Upstream's DB hash: sha256 of ``json.dumps(model_dump(), sort_keys=True, default=str)``."""
    return upstream_hash(_hash_view(record))


def _hash_view(value: Any) -> Any:
    """What ``json.dumps(dump(value), default=str)`` encodes, built in one walk: a value JSON encodes itself
    (str, numbers, booleans, None, str- and int-based enums) is kept, one it cannot (a date, a plain enum) is
    its ``str()`` already, as ``default=str`` would make it. Three times faster than `dump` then the
    encoder's callbacks (a trial hashes both databases of its evaluation): each type's handling is looked up
    once, a record's fields are read at once (`attrgetter`) and a plain field's value is taken as it is."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    handle = _VIEWS.get(kind)
    if handle is None:
        handle = _VIEWS[kind] = _view_of(kind)
    return handle(value)


_PLAIN = frozenset({str, int, float, bool, type(None)})
"""Types JSON encodes as they are (exactly these: a subclass, such as an enum, takes `_view_of`)."""


def _view_of(kind: type) -> Any:
    if dataclasses.is_dataclass(kind):
        names = tuple(field.name for field in dataclasses.fields(kind))
        read = operator.attrgetter(*names)  # one name: the value itself, not a tuple of one
        values = read if len(names) > 1 else lambda record: (read(record),)

        def view_record(record: Any) -> dict[str, Any]:
            return {
                name: value if type(value) in _PLAIN else _hash_view(value)
                for name, value in zip(names, values(record), strict=True)
            }

        return view_record
    if issubclass(kind, list | tuple):
        return lambda items: [_hash_view(item) for item in items]
    if issubclass(kind, dict):
        return lambda mapping: {key: _hash_view(item) for key, item in mapping.items()}
    if issubclass(kind, str | int | float):  # str- and int-based enums
        return lambda value: value
    return str


_VIEWS: dict[type, Any] = {}


def validated_float(value: Any) -> Any:
    """What upstream's validation makes of a number bound for a float field of a new record: an integer
    becomes a float (an assigned value is never validated, so this is only for records being built)."""
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def build(cls: type[R], data: Any, where: str) -> R:
    """A record of dataclass ``cls`` from parsed TOML: unknown keys are refused, absent optional fields take
    their defaults, enum values and ISO dates are converted, integers in float fields become floats (as
    pydantic's validation does upstream)."""
    if not isinstance(data, Mapping):
        raise RecordError(f"{where}: expected a table, found {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {field.name: field for field in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = [key for key in data if key not in fields]
    if unknown:
        raise RecordError(f"{where}: unknown field(s) {unknown}")
    values: dict[str, Any] = {}
    for name, field in fields.items():
        if name in data:
            values[name] = _convert(hints[name], data[name], f"{where}.{name}")
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise RecordError(f"{where}: missing field {name!r}")
    return cls(**values)


def _convert(hint: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        # The first alternative is the one values are validated as (Customer.created_at: a date-time,
        # whose default alone is a date).
        inner = next(arg for arg in args if arg is not type(None))
        return _convert(inner, value, where)
    if origin is list:
        if not isinstance(value, list):
            raise RecordError(f"{where}: expected a list, found {type(value).__name__}")
        return [_convert(args[0], item, f"{where}[{index}]") for index, item in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping):
            raise RecordError(f"{where}: expected a table, found {type(value).__name__}")
        return {
            _convert(args[0], key, f"{where} key"): _convert(args[1], item, f"{where}.{key}")
            for key, item in value.items()
        }
    if dataclasses.is_dataclass(hint):
        return build(hint, value, where)  # type: ignore[arg-type]
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except ValueError:
            raise RecordError(f"{where}: {value!r} is not one of {[m.value for m in hint]}") from None
    if hint is bool:
        if not isinstance(value, bool):
            raise RecordError(f"{where}: expected a boolean, found {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RecordError(f"{where}: expected a number, found {value!r}")
        return float(value)
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise RecordError(f"{where}: expected an integer, found {value!r}")
        return value
    if hint is str:
        if not isinstance(value, str):
            raise RecordError(f"{where}: expected a string, found {value!r}")
        return value
    if hint is datetime.datetime:
        return _moment(value, where)
    if hint is datetime.date:
        return _day(value, where)
    raise RecordError(f"{where}: unsupported field type {hint!r}")  # pragma: no cover - a model bug


def _moment(value: Any, where: str) -> datetime.datetime:
    if isinstance(value, datetime.datetime):
        return value
    if isinstance(value, datetime.date):
        return datetime.datetime(value.year, value.month, value.day)
    try:
        return datetime.datetime.fromisoformat(str(value))
    except ValueError:
        raise RecordError(f"{where}: {value!r} is not an ISO date-time") from None


def _day(value: Any, where: str) -> datetime.date:
    if isinstance(value, datetime.datetime):
        raise RecordError(f"{where}: expected a date, found the date-time {value!r}")
    if isinstance(value, datetime.date):
        return value
    try:
        return datetime.date.fromisoformat(str(value))
    except ValueError:
        raise RecordError(f"{where}: {value!r} is not an ISO date") from None
