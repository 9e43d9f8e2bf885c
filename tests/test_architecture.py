"""The package's layers, read from every module's imports with `ast` (lazy and
`TYPE_CHECKING` imports included): no import cycle, and imports point down
only, as docs/architecture.md draws it.

A module's layer is the folder it is in, so a new module's layer follows from
where it is put:

    faces   the top-level modules: cli, server, flake8_plugin, __main__, docs, testing
    output/ report/   what the faces print (over the rules' metadata and the model)
    lsp/    the Language Server Protocol for the server (the standard library only)
    engine/ file pass, notebook layer, runner, project phase, fixer, cache, discovery, config, ...
    checks/ the rules and their registry
    model/  summaries, module graph, entry points, reach
    core/   diagnostics, rule base, settings, source, names, scopes, catalog, operations, ...
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, List, Set

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "torchdet_lint"
NAME = "torchdet_lint"

# The layer of each folder of the package; a module in none of them is a face.
FOLDERS = {
    "core": "core",
    "model": "model",
    "checks": "rules",
    "engine": "engine",
    "output": "output",
    "report": "report",
    "lsp": "lsp",
}
# What each layer may import (besides itself).
ALLOWED = {
    "lsp": set(),
    "core": set(),
    "model": {"core"},
    "rules": {"core", "model"},
    "engine": {"core", "model", "rules"},
    "output": {"core", "rules"},
    "report": {"core", "model", "rules"},
    "faces": {"core", "model", "rules", "engine", "output", "report", "lsp"},
}
# The ways in, the only modules the top level holds: a new module goes into the
# folder of its layer, so this list grows only with a new public entry point.
FACES = {"cli", "server", "flake8_plugin", "__main__", "docs", "testing"}


def _modules() -> Dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> Set[str]:
    """Every first-party module `name` imports, anywhere in its body (functions and
    `if TYPE_CHECKING:` blocks included); `from package import module` counts the module."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [module] + [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]  # `import a.b.c` of a module a.b, or a name in it
            if target and target != name:
                found.add(target)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def layer_of(module: str) -> str:
    if module == NAME:
        return "core"  # the package's `__init__` holds only the version, which every layer may read
    folder = module[len(NAME) + 1 :].split(".")[0]
    return FOLDERS.get(folder, "faces")  # a folder's package (`checks/__init__.py`) is in its layer


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_import_reader_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from torchdet_lint.engine.file_pass import FileResult\n"
        "def f():\n    import torchdet_lint.engine.fixer\n    from torchdet_lint import cli\n",
        encoding="utf-8",
    )
    assert _imports(f"{NAME}.sample", sample) == {f"{NAME}.engine.file_pass", f"{NAME}.engine.fixer", f"{NAME}.cli", NAME}


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_in_the_package() -> None:
    assert _cycles(GRAPH) == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down_only(module: str) -> None:
    layer = layer_of(module)
    upward = sorted(i for i in GRAPH[module] if layer_of(i) != layer and layer_of(i) not in ALLOWED[layer])
    assert upward == [], f"{module} ({layer}) imports a higher layer: {upward}"


def test_every_folder_of_the_package_is_a_layer() -> None:
    folders = {path.name for path in PACKAGE.iterdir() if path.is_dir() and any(path.rglob("*.py"))}
    assert folders == set(FOLDERS), "a new folder needs its layer in FOLDERS and in docs/architecture.md"


def test_the_top_level_holds_only_the_faces() -> None:
    top = {path.stem for path in PACKAGE.glob("*.py")} - {"__init__"}
    assert top == FACES, f"put {sorted(top - FACES)} in the folder of its layer (core/, model/, engine/, ...)"


def test_the_layer_comes_from_the_folder() -> None:
    assert layer_of(f"{NAME}.core.names") == "core" and layer_of(f"{NAME}.engine.runner") == "engine"
    assert layer_of(f"{NAME}.checks.seeding.rng_object") == "rules" and layer_of(f"{NAME}.checks") == "rules"
    assert layer_of(f"{NAME}.cli") == "faces" and layer_of(f"{NAME}.testing") == "faces"


_IMPORT_LINE = re.compile(rf"^[ \t]*(?:from[ \t]+({NAME}(?:\.\w+)*)[ \t]+import|import[ \t]+({NAME}(?:\.\w+)*))", re.M)


def test_every_first_party_import_names_a_module() -> None:
    """A lazy import of a module that has moved (or a script in a string, like
    the benchmark's) fails only when it runs: every `torchdet_lint.x` imported at
    the start of a line, in the package, the tests and the benchmarks, is a module."""
    root = PACKAGE.parent
    files = [*PACKAGE.rglob("*.py"), *(root / "tests").glob("*.py"), *(root / "benchmarks").glob("*.py")]
    missing = [
        f"{path.relative_to(root)}: {module}"
        for path in files
        for match in _IMPORT_LINE.finditer(path.read_text(encoding="utf-8"))
        for module in [match.group(1) or match.group(2)]
        if module not in MODULES
    ]
    assert missing == []


@pytest.mark.parametrize("module", ["rule", "names", "catalog"])
def test_the_rule_base_names_and_catalog_import_no_rule(module: str) -> None:
    imports = GRAPH[f"{NAME}.core.{module}"]
    assert not any(layer_of(i) == "rules" for i in imports), imports


def test_the_registry_lives_with_the_rules() -> None:
    from torchdet_lint import checks
    from torchdet_lint.core import rule

    assert hasattr(checks, "all_rules") and not hasattr(rule, "all_rules")
    from torchdet_lint.checks.registry import FAMILIES

    families = set(FAMILIES)
    assert all(r.__module__.startswith(tuple(families)) for r in checks.all_rules().values())
