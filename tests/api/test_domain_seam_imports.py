"""The domain seam, held by parsing every module (ast: nothing is imported):

* green_agent/ and api/ never import a domain package (`*_domain`): they reach domains by name through the
  engine's registry, green_agent/domains.py, which imports them with importlib (and nothing else names a
  domain package to importlib);
* a domain package imports domain_kit and itself, never a sibling domain, green_agent or api;
* domain_kit, below every domain, imports nothing of the project's.

Imports inside functions and under TYPE_CHECKING count like any other.
"""

from __future__ import annotations

import ast
from pathlib import Path

from green_agent.domains import DOMAIN_PACKAGES
from tests.api.test_import_direction import imported_modules

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ROOT / "green_agent" / "domains.py"


def domain_packages() -> set[str]:
    """Every domain package at the repository's top: a `*_domain` folder with an `__init__.py`."""
    return {path.parent.name for path in ROOT.glob("*_domain/__init__.py")}


def module_name(path: Path) -> tuple[str, str]:
    """(dotted module name, the package its relative imports resolve against)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        name = ".".join(parts[:-1])
        return name, name
    name = ".".join(parts)
    return name, name.rpartition(".")[0]


def ours(target: str, packages: set[str]) -> str | None:
    """The project's top-level package `target` lands in (a domain, domain_kit, green_agent, api), if any."""
    top = target.split(".")[0]
    return top if top in packages | {"domain_kit", "green_agent", "api"} else None


def importlib_targets(source: str) -> list[tuple[int, str]]:
    """(line, module) of every `import_module("...")` / `__import__("...")` call with a literal name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        first = node.args[0]
        if name in ("import_module", "__import__") and isinstance(first, ast.Constant):
            found.append((node.lineno, str(first.value)))
    return found


def engine_and_service_problems(path: Path, source: str, packages: set[str]) -> list[str]:
    _, package = module_name(path)
    where = path.relative_to(ROOT).as_posix()
    problems = [
        f"{where}:{line} imports {target}"
        for line, target in imported_modules(source, package)
        if ours(target, packages) in packages
    ]
    if path != REGISTRY:
        problems += [
            f"{where}:{line} imports {target} through importlib (only green_agent/domains.py may)"
            for line, target in importlib_targets(source)
            if ours(target, packages) in packages
        ]
    return problems


def domain_problems(path: Path, source: str, packages: set[str]) -> list[str]:
    name, package = module_name(path)
    own = name.split(".")[0]
    allowed = {own} if own == "domain_kit" else {own, "domain_kit"}
    where = path.relative_to(ROOT).as_posix()
    return [
        f"{where}:{line} ({own}) imports {target}"
        for line, target in imported_modules(source, package)
        if (top := ours(target, packages)) is not None and top not in allowed
    ]


def test_the_registry_names_only_domain_packages_that_exist() -> None:
    packages = domain_packages()
    assert {"retail_domain", "airline_domain"} <= packages
    assert set(DOMAIN_PACKAGES.values()) <= packages


def test_the_engine_and_the_service_reach_domains_only_through_the_registry() -> None:
    packages = domain_packages()
    modules = sorted([*(ROOT / "green_agent").rglob("*.py"), *(ROOT / "api").rglob("*.py")])
    assert len(modules) > 80
    problems = [
        problem
        for path in modules
        for problem in engine_and_service_problems(path, path.read_text(), packages)
    ]
    assert problems == []
    # The registry itself imports no domain package (importlib, on first use, by name).
    assert engine_and_service_problems(REGISTRY, REGISTRY.read_text(), packages) == []


def test_domains_import_only_domain_kit_and_themselves() -> None:
    packages = domain_packages()
    modules = sorted(path for package in [*packages, "domain_kit"] for path in (ROOT / package).rglob("*.py"))
    assert len(modules) > 30
    problems = [problem for path in modules for problem in domain_problems(path, path.read_text(), packages)]
    assert problems == []


def test_the_checks_catch_each_way_across_the_seam() -> None:
    packages = {"retail_domain", "airline_domain"}
    engine = ROOT / "green_agent" / "scoring" / "x.py"
    source = (
        "import importlib\n"
        "from retail_domain import Task\n"
        "def f():\n"
        "    import airline_domain.tools\n"
        "    return importlib.import_module('retail_domain.replay')\n"
        "if TYPE_CHECKING:\n"
        "    from airline_domain.loader import AirlineData\n"
    )
    assert engine_and_service_problems(engine, source, packages) == [
        "green_agent/scoring/x.py:2 imports retail_domain",
        "green_agent/scoring/x.py:4 imports airline_domain.tools",
        "green_agent/scoring/x.py:7 imports airline_domain.loader",
        "green_agent/scoring/x.py:5 imports retail_domain.replay through importlib "
        "(only green_agent/domains.py may)",
    ]
    domain = ROOT / "airline_domain" / "tools.py"
    source = (
        "from domain_kit import Task\n"
        "from . import schemas\n"
        "from retail_domain.tools import RetailTools\n"
        "from green_agent.core.models import TrialResult\n"
        "def f():\n"
        "    from api.settings import Settings\n"
    )
    assert domain_problems(domain, source, packages) == [
        "airline_domain/tools.py:3 (airline_domain) imports retail_domain.tools",
        "airline_domain/tools.py:4 (airline_domain) imports green_agent.core.models",
        "airline_domain/tools.py:6 (airline_domain) imports api.settings",
    ]
    kit = ROOT / "domain_kit" / "store.py"
    assert domain_problems(kit, "from retail_domain import x\nfrom .hashing import h\n", packages) == [
        "domain_kit/store.py:1 (domain_kit) imports retail_domain"
    ]
