"""Built-in prompt texts (the project's own wording); an operator may replace them with files."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def load_prompt(name: str, override: Path | None = None) -> str:
    """The operator's file when given, else the packaged `prompts/<name>`; read once at engine start."""
    if override is not None:
        return override.read_text(encoding="utf-8")
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
