"""api/ is laid out in rooms, and imports run one way: cli -> web -> runtime -> security -> db.

Every module under api/ is parsed (ast: nothing is imported) and each `api.*` import it makes, at any depth
(imports inside functions and under TYPE_CHECKING included), is mapped to the room it lands in. A room may
import its own modules and the rooms below it, never one above. `api/settings.py` (the operator settings) may
be imported by every room and itself imports only from db; the package `api` (for `__version__`) by any
module. At api/'s top nothing lives besides `__init__.py` and `settings.py`.
"""

from __future__ import annotations

import ast
from pathlib import Path

API = Path(__file__).resolve().parents[2] / "api"

ORDER = ("api", "db", "settings", "security", "runtime", "web", "cli")
"""From the bottom up: a module may import its own room and the ones before it here ("api" is the package
itself, `api/__init__.py`)."""
TOP_LEVEL = {"__init__.py", "settings.py"}


def room_of(module: str) -> str:
    """The room of a dotted name under api: `api.web.routes.trials` is in "web"; `api.__version__`, a name of
    the package rather than a module, is "api"."""
    parts = module.split(".")
    if len(parts) > 1 and ((API / parts[1]).is_dir() or (API / f"{parts[1]}.py").is_file()):
        return parts[1]
    return "api"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(API.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, package: str) -> list[tuple[int, str]]:
    """(line, dotted name) of every import in `source`, a module of `package`; `from api import x` counts as
    `api.x` (x may be a module), relative imports are resolved against `package`."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" for alias in node.names] if base == "api" else [base]
            found.extend((node.lineno, name) for name in names)
    return found


def upward_imports(path: Path) -> list[str]:
    name = module_name(path)
    own = room_of(name)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    wrong = []
    for line, target in imported_modules(path.read_text(), package):
        if target != "api" and not target.startswith("api."):
            continue
        room = room_of(target)
        if room not in ORDER or ORDER.index(room) > ORDER.index(own):
            wrong.append(f"{path.relative_to(API.parent)}:{line} ({own}) imports {target} ({room})")
    return wrong


def test_only_init_and_settings_at_the_top() -> None:
    assert {path.name for path in API.glob("*.py")} == TOP_LEVEL
    rooms = {path.name for path in API.iterdir() if (path / "__init__.py").is_file()}
    assert rooms == set(ORDER) - {"api", "settings"}


def test_every_module_is_in_a_room_and_imports_only_downward() -> None:
    modules = sorted(API.rglob("*.py"))
    assert len(modules) > 40
    assert [str(path) for path in modules if room_of(module_name(path)) not in ORDER] == []
    assert [problem for path in modules for problem in upward_imports(path)] == []


def test_the_parser_sees_every_form_of_import() -> None:
    source = (
        "from api import cli, settings\n"
        "import api.web.app\n"
        "if TYPE_CHECKING:\n"
        "    from api.runtime.runtime import Runtime\n"
        "def f():\n"
        "    from . import views\n"
        "    from ..db.tables import X\n"
    )
    assert sorted(name for _, name in imported_modules(source, "api.web.ui")) == [
        "api.cli",
        "api.runtime.runtime",
        "api.settings",
        "api.web.app",
        "api.web.db.tables",
        "api.web.ui",
    ]
