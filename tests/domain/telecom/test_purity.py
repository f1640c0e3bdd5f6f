"""telecom_domain is a pure domain: it imports the standard library, domain_kit and itself, nothing else of
ours (no sibling domain, no engine, no service) and no third-party package."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[3] / "telecom_domain"


def imported_roots(path: Path) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_telecom_domain_imports_only_the_standard_library_and_domain_kit() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) > 10
    found = {root for path in modules for root in imported_roots(path)}
    assert found - set(sys.stdlib_module_names) == {"domain_kit"}
