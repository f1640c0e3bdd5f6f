"""Locating and verifying a domain's upstream data files.

The files are never part of this repository. Each comes, in this order, from a directory the operator names
(argument, else the domain's environment variable), else from where it is installed: a pinned data-only
distribution (read through its metadata, never imported) or the environment's share directory, which
`green-agent data install` fills with files taken from a distribution that must not be installed. Every file
is checked against its pinned sha256 before it is parsed: a score only means what a published tau2 score
means if the data is the same, so there is no fallback to unverified data.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SHARE_DIR_NAME = "tau2-green-agent"


def installed_share_dir(domain: str) -> Path:
    """Where `green-agent data install` puts a domain's files: inside the running environment, like package
    data (``<sys.prefix>/share/tau2-green-agent/<domain>``)."""
    return Path(sys.prefix) / "share" / SHARE_DIR_NAME / domain


class DataError(RuntimeError):
    """A data file is missing or does not have the pinned sha256."""


@dataclass(frozen=True)
class DataSpec:
    """What one domain's data is: its files with their sha256, where they are installed, and how to fix a
    missing or altered file (``fix``, one sentence shown with every DataError)."""

    domain: str
    env_var: str
    sha256: Mapping[str, str]
    fix: str
    distribution: str | None = None
    """The data-only distribution holding the files not in `share_files`."""
    package_prefix: str = ""
    """The files' folder inside that distribution."""
    share_files: frozenset[str] = field(default_factory=frozenset)
    """Files found in `installed_share_dir(domain)` rather than in the distribution."""

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(self.sha256)

    def error(self, text: str) -> DataError:
        return DataError(f"{text} {self.fix}")


@dataclass(frozen=True)
class DataSource:
    """Where the files were found: ``kind`` is ``directory``, ``environment``, ``package`` (a data-only
    distribution) or ``installed`` (some files from the share directory)."""

    kind: str
    paths: tuple[tuple[str, Path], ...]

    def path(self, name: str) -> Path:
        return dict(self.paths)[name]

    def describe(self) -> str:
        folders = sorted({str(path.parent) for _, path in self.paths})
        return f"{self.kind}: {', '.join(folders)}"


def _directory_source(spec: DataSpec, kind: str, directory: Path) -> DataSource:
    name = spec.domain.capitalize()
    if not directory.is_dir():
        raise spec.error(
            f"The {spec.domain} data directory {str(directory)!r} (from {kind}) does not exist or is not a "
            "directory."
        )
    paths: list[tuple[str, Path]] = []
    for file in spec.files:
        path = directory / file
        if not path.is_file():
            raise spec.error(
                f"{name} data file {file} is missing from {str(directory)!r} (from {kind}); expected sha256 "
                f"{spec.sha256[file]}."
            )
        paths.append((file, path))
    return DataSource(kind, tuple(paths))


def _distribution_paths(spec: DataSpec, wanted: list[str]) -> dict[str, Path]:
    """Find files through package metadata, without importing the package (its server module is heavy)."""
    assert spec.distribution is not None
    name = spec.domain.capitalize()
    try:
        dist = importlib.metadata.distribution(spec.distribution)
    except importlib.metadata.PackageNotFoundError as exc:
        raise spec.error(
            f"No {spec.domain} data: no directory was named ({spec.env_var} is unset) and the package "
            f"{spec.distribution} is not installed."
        ) from exc
    files = {str(f).replace("\\", "/"): f for f in (dist.files or [])}
    found: dict[str, Path] = {}
    for file in wanted:
        entry = files.get(spec.package_prefix + file)
        located = Path(str(dist.locate_file(entry))) if entry is not None else None
        if located is None or not located.is_file():
            raise spec.error(
                f"{name} data file {file} is missing from the installed package {spec.distribution} "
                f"{dist.version} (looked for {spec.package_prefix + file}); expected sha256 "
                f"{spec.sha256[file]}."
            )
        found[file] = located
    return found


def _installed_source(spec: DataSpec) -> DataSource:
    share = installed_share_dir(spec.domain)
    found: dict[str, Path] = {}
    from_package = [file for file in spec.files if file not in spec.share_files]
    if from_package:
        found.update(_distribution_paths(spec, from_package))
    for file in spec.files:
        if file in spec.share_files:
            path = share / file
            if not path.is_file():
                raise spec.error(
                    f"No {spec.domain} data file {file}: no directory was named ({spec.env_var} is unset) "
                    f"and it is not installed in {str(share)!r}."
                )
            found[file] = path
    kind = "installed" if spec.share_files else "package"
    return DataSource(kind, tuple((file, found[file]) for file in spec.files))


def locate(spec: DataSpec, data_dir: str | os.PathLike[str] | None = None) -> DataSource:
    """Resolve the data source: explicit directory, else the environment variable, else where installed."""
    if data_dir is not None and str(data_dir) != "":
        return _directory_source(spec, "directory", Path(data_dir).expanduser().resolve())
    from_env = os.environ.get(spec.env_var, "")
    if from_env:
        return _directory_source(spec, "environment", Path(from_env).expanduser().resolve())
    return _installed_source(spec)


def verified_bytes(spec: DataSpec, file: str, path: Path) -> bytes:
    """The file's bytes, after checking its sha256; DataError names the file, both hashes and the fix."""
    name = spec.domain.capitalize()
    try:
        content = path.read_bytes()
    except OSError as exc:
        raise spec.error(f"{name} data file {file} at {str(path)!r} cannot be read: {exc}.") from exc
    actual = hashlib.sha256(content).hexdigest()
    expected = spec.sha256[file]
    if actual != expected:
        raise spec.error(
            f"{name} data file {file} at {str(path)!r} has sha256 {actual}, expected {expected}: it is not "
            "the upstream file, and scores computed on it would not be comparable."
        )
    return content


def read_verified(spec: DataSpec, source: DataSource) -> dict[str, bytes]:
    """Every file of `source`, verified. Raises DataError before anything unverified is returned."""
    return {file: verified_bytes(spec, file, source.path(file)) for file in spec.files}


@dataclass(frozen=True)
class JsonDomainFiles:
    """The four files of a domain stored as upstream's JSON layout (retail, airline): db.json, tasks.json,
    policy.md and split_tasks.json, verified, decoded and parsed once."""

    source: DataSource
    db: dict[str, Any]
    tasks: list[dict[str, Any]]
    policy: str
    splits: dict[str, list[str]]


def read_json_domain(spec: DataSpec, source: DataSource) -> JsonDomainFiles:
    """Read, verify and parse the four files of ``source``. Raises DataError before parsing anything
    unverified."""
    contents = read_verified(spec, source)
    return JsonDomainFiles(
        source=source,
        db=json.loads(contents["db.json"]),
        tasks=json.loads(contents["tasks.json"]),
        policy=contents["policy.md"].decode("utf-8"),
        splits=json.loads(contents["split_tasks.json"]),
    )
