"""The project phase: builds the first-party module graph from the file
summaries (no re-parsing), finds the entry points, answers what each one
reaches, and runs the project rules over it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from torchdet_lint.engine import FileResult, RunOptions, apply_suppressions
from torchdet_lint.rule import SILENCED_BY_FLAG, Diagnostic, Edit, ProjectRule, all_rules
from torchdet_lint.summary import MAIN_KEY, MAX_SITES, MODULE_KEY, FileSummary, FixAnchors, Site, config_helpers, entry_configured

Node = Tuple[str, str]  # (file path as displayed, function key)
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"__future__"}
# Rules whose findings an entry point that enables deterministic mode silences project-wide.


@dataclass
class Located:
    path: str
    site: Site

    def where(self) -> str:
        return f"{self.path}:{self.site.line}" if self.site.line else self.path


@dataclass
class Reach:
    """What code reachable from a node does: draws, seedings, CUDA work, operations."""

    draws: Dict[str, List[Located]] = field(default_factory=dict)
    covers: Dict[str, Located] = field(default_factory=dict)
    cuda: List[Located] = field(default_factory=list)
    ops: List[Located] = field(default_factory=list)

    def merge(self, other: "Reach") -> None:
        for kind, sites in other.draws.items():
            mine = self.draws.setdefault(kind, [])
            _extend(mine, sites)
        for kind, site in other.covers.items():
            self.covers.setdefault(kind, site)
        _extend(self.cuda, other.cuda)
        _extend(self.ops, other.ops)


def _extend(mine: List[Located], more: Iterable[Located]) -> None:
    for item in more:
        if len(mine) >= MAX_SITES:
            return
        if all(item.path != m.path or item.site.line != m.site.line for m in mine):
            mine.append(item)


@dataclass
class EntryPoint:
    path: str
    reason: str  # "main block", "__main__.py", "notebook", "configured", "script"
    summary: FileSummary

    @property
    def line(self) -> int:
        return self.summary.main_guard_line or 1


class ModuleIndex:
    """First-party module names -> files, as Python would import them.

    A file in a package chain is importable everywhere under its package name;
    besides, every file is importable relative to the import root of any file
    above it (the directory of a script, the parent of a top-level package):
    `train.py` next to `utils/seed.py` imports `utils.seed` without any
    `__init__.py` (namespace packages, plain script directories)."""

    def __init__(self, summaries: Dict[str, FileSummary], paths: Dict[str, Path], project_root: Optional[Path] = None) -> None:
        self.summaries = summaries
        self.roots: Dict[str, Path] = {}
        self.resolved: Dict[str, Path] = {}
        for display, summary in summaries.items():
            path = paths.get(display, Path(display))
            try:
                path = path.resolve()
            except OSError:
                pass
            self.resolved[display] = path
            self.roots[display] = _import_root(path, summary)
        all_roots = set(self.roots.values())
        if project_root is not None:
            all_roots.add(project_root.resolve())  # the directory `python -m` and tools run from
        # name -> [(root it is relative to or None when importable everywhere, display path)]
        self.names: Dict[str, List[Tuple[Optional[Path], str]]] = {}
        for display, summary in summaries.items():
            path = self.resolved[display]
            if summary.module_name and not summary.is_notebook and ("." in summary.module_name or summary.is_package):
                self.names.setdefault(summary.module_name, []).append((None, display))
            for ancestor in path.parents:
                if ancestor in all_roots:
                    name = _dotted_relative(path, ancestor)
                    if name:
                        self.names.setdefault(name, []).append((ancestor, display))
        self._cache: Dict[Tuple[str, str], Optional[Tuple[str, str]]] = {}

    def _visible(self, entries: List[Tuple[Optional[Path], str]], importer: str) -> Optional[str]:
        importer_path = self.resolved.get(importer)
        importer_root = self.roots.get(importer)
        best: Optional[Tuple[int, str]] = None
        for root, display in entries:
            if root is None:
                rank = 1
            elif root == importer_root:
                rank = 0
            elif importer_path is not None and root in importer_path.parents:
                rank = 2
            else:
                continue
            if best is None or rank < best[0]:
                best = (rank, display)
        return best[1] if best else None

    def module(self, name: str, importer: str) -> Optional[Tuple[str, str]]:
        """(file, remainder) of the longest first-party module prefix of a qualified name."""
        key = (importer, name)
        if key in self._cache:
            return self._cache[key]
        found = None
        parts = name.split(".")
        for end in range(len(parts), 0, -1):
            entries = self.names.get(".".join(parts[:end]))
            if entries:
                display = self._visible(entries, importer)
                if display is not None:
                    found = (display, ".".join(parts[end:]))
                    break
        self._cache[key] = found
        return found

    def modules_of_import(self, name: str, importer: str) -> List[str]:
        """Every first-party file an import statement runs: the module and its packages."""
        parts = name.split(".")
        found = []
        for end in range(1, len(parts) + 1):
            entries = self.names.get(".".join(parts[:end]))
            if entries:
                display = self._visible(entries, importer)
                if display is not None and display != importer:
                    found.append(display)
        return found

    def import_name(self, display: str, importer: str) -> Optional[str]:
        """The name under which `importer` can import the file `display`."""
        best = None
        for name, entries in self.names.items():
            if any(d == display for _, d in entries) and self._visible([e for e in entries if e[1] == display], importer) == display:
                if best is None or len(name) < len(best):
                    best = name
        return best


def _import_root(path: Path, summary: FileSummary) -> Path:
    if summary.module_name and not summary.is_notebook:
        depth = summary.module_name.count(".") + (1 if summary.is_package else 0)
        parents = path.parents
        return parents[min(depth, len(parents) - 1)]
    return path.parent


def _dotted_relative(path: Path, root: Path) -> Optional[str]:
    try:
        parts = list(path.relative_to(root).parts)
    except ValueError:
        return None
    if not parts or not parts[-1].endswith(".py"):
        return None
    last = parts[-1][:-3]
    parts = parts[:-1] if last == "__init__" else parts[:-1] + [last]
    if not parts or not all(part.isidentifier() for part in parts):
        return None
    return ".".join(parts)


class Project:
    """Every file's summary, indexed for the project rules; the analysis is computed once, lazily."""

    def __init__(self, results: Sequence[FileResult], files: Sequence, options: RunOptions) -> None:
        self.options = options
        self.settings = options.settings
        self.results = list(results)
        self.paths: Dict[str, Path] = {file.display: file.path for file in files}
        self.summaries: Dict[str, FileSummary] = {r.path: r.summary for r in self.results if r.summary is not None}
        self.sources = {r.path: r.source for r in self.results}
        self._index: Optional[ModuleIndex] = None
        self._entry_points: Optional[List[EntryPoint]] = None
        self._reach: Dict[Node, Reach] = {}
        self._edges: Dict[Node, List[Node]] = {}
        self._resolved: Dict[Tuple[str, str], List[Node]] = {}
        self._helpers: Optional[List[Tuple[Node, Reach]]] = None

    # -- the module graph ------------------------------------------------------------------
    @property
    def index(self) -> ModuleIndex:
        if self._index is None:
            self._index = ModuleIndex(self.summaries, self.paths, self.settings.root)
        return self._index

    def imported_files(self) -> Set[str]:
        imported: Set[str] = set()
        for display, summary in self.summaries.items():
            for name in summary.imports:
                imported.update(self.index.modules_of_import(name, display))
        return imported

    @property
    def entry_points(self) -> List[EntryPoint]:
        if self._entry_points is None:
            self._entry_points = self._find_entry_points()
        return self._entry_points

    def _find_entry_points(self) -> List[EntryPoint]:
        entries = []
        imported: Optional[Set[str]] = None
        for display in sorted(self.summaries):
            summary = self.summaries[display]
            name = Path(display).name
            reason = None
            if summary.is_notebook or display.endswith(".ipynb"):
                reason = "notebook"
            elif summary.main_guard_line is not None:
                reason = "main block"
            elif name == "__main__.py":
                reason = "__main__.py"
            elif summary.configured_entry or entry_configured(self.settings, display):
                reason = "configured"
            elif summary.module_work and name != "__init__.py" and "." not in (summary.module_name or ""):
                # A module inside a package is library code even when nothing in the
                # run imports it (a one-file run, or an API imported by users): only a
                # main block, `__main__.py` or config `entry-points` make it an entry point.
                if imported is None:
                    imported = self.imported_files()
                if display not in imported:
                    reason = "script"
            if reason is not None:
                entries.append(EntryPoint(display, reason, summary))
        return entries

    def entry_point(self, display: str) -> Optional[EntryPoint]:
        return next((e for e in self.entry_points if e.path == display), None)

    # -- resolving calls ---------------------------------------------------------------------
    def resolve(self, display: str, target: str, depth: int = 0) -> List[Node]:
        """The first-party functions a call target names (a class: its `__init__`s)."""
        key = (display, target)
        cached = self._resolved.get(key)
        if cached is not None:
            return cached
        result: List[Node] = []
        if depth <= 4:
            if target.startswith("."):
                result = self._local(display, target[1:], depth)
            else:
                found = self.index.module(target, display)
                if found is not None and found[1]:
                    result = self._local(found[0], found[1], depth)
        self._resolved[key] = result
        return result

    def _local(self, display: str, name: str, depth: int) -> List[Node]:
        summary = self.summaries.get(display)
        if summary is None:
            return []
        if name in summary.functions and name not in (MODULE_KEY, MAIN_KEY):
            return [(display, name)]
        head, _, rest = name.partition(".")
        if head in summary.classes:
            if not rest:
                return self._constructor(display, head, set())
            if "." not in rest:
                method = self._method(display, head, rest, set())
                return [method] if method else []
            return []
        if head in summary.exports:
            alias = summary.exports[head]
            return self.resolve(display, alias + ("." + rest if rest else ""), depth + 1) if not alias.startswith(".") else []
        return []

    def class_node(self, display: str, target: str, depth: int = 0) -> Optional[Tuple[str, str]]:
        """(file, class name) of a first-party class named by a qualified or local target."""
        if depth > 4:
            return None
        if target.startswith("."):
            display_, name = display, target[1:]
        else:
            found = self.index.module(target, display)
            if found is None or not found[1]:
                return None
            display_, name = found
        summary = self.summaries.get(display_)
        if summary is None:
            return None
        if name in summary.classes:
            return display_, name
        head, _, rest = name.partition(".")
        if head in summary.exports and not rest:
            return self.class_node(display_, summary.exports[head], depth + 1)
        return None

    def base_classes(self, display: str, name: str, seen: Set[Tuple[str, str]]) -> List[Tuple[str, str]]:
        """The class and its first-party bases, nearest first."""
        if (display, name) in seen:
            return []
        seen.add((display, name))
        chain = [(display, name)]
        for base in self.summaries[display].classes[name].bases:
            found = self.class_node(display, base if not base.startswith(".") else base)
            if found is not None:
                chain.extend(self.base_classes(found[0], found[1], seen))
        return chain

    def _constructor(self, display: str, name: str, seen: Set) -> List[Node]:
        nodes = []
        for file, cls in self.base_classes(display, name, seen):
            key = f"{cls}.__init__"
            if key in self.summaries[file].functions:
                nodes.append((file, key))
        return nodes

    def _method(self, display: str, name: str, method: str, seen: Set) -> Optional[Node]:
        for file, cls in self.base_classes(display, name, seen):
            key = f"{cls}.{method}"
            if key in self.summaries[file].functions:
                return (file, key)
        return None

    def edges(self, node: Node) -> List[Node]:
        found = self._edges.get(node)
        if found is not None:
            return found
        display, key = node
        summary = self.summaries[display]
        targets: List[Node] = []
        function = summary.functions.get(key)
        if key != MODULE_KEY:
            targets.append((display, MODULE_KEY))  # a function of a module runs after its import
        # Importing a first-party module runs its module-level code: at import time for
        # module-level imports, when the function runs for the lazy ones.
        imported_here = summary.module_imports if key == MODULE_KEY else (function.imports if function is not None else [])
        for name in imported_here:
            for imported in self.index.modules_of_import(name, display):
                targets.append((imported, MODULE_KEY))
        if function is not None:
            for call in function.calls:
                targets.extend(self.resolve(display, call))
        unique = list(dict.fromkeys(t for t in targets if t != node and t[0] in self.summaries))
        self._edges[node] = unique
        return unique

    # -- reach: strongly connected components, successors first -------------------------------
    def reach(self, node: Node) -> Reach:
        if node not in self._reach:
            self._compute(node)
        return self._reach[node]

    def _own(self, node: Node) -> Reach:
        display, key = node
        function = self.summaries[display].functions.get(key)
        own = Reach()
        if function is None:
            return own
        for kind, sites in function.draws.items():
            own.draws[kind] = [Located(display, s) for s in sites]
        for kind, site in function.covers.items():
            own.covers[kind] = Located(display, site)
        own.cuda = [Located(display, s) for s in function.cuda]
        own.ops = [Located(display, s) for s in function.ops]
        return own

    def _compute(self, start: Node) -> None:
        """Iterative Tarjan: every node reachable from `start` gets the union of what it reaches."""
        index: Dict[Node, int] = {}
        low: Dict[Node, int] = {}
        stack: List[Node] = []
        on_stack: Set[Node] = set()
        counter = 0
        work = [(start, 0)]
        while work:
            node, position = work.pop()
            if position == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            successors = self.edges(node)
            recursed = False
            while position < len(successors):
                successor = successors[position]
                position += 1
                if successor in self._reach:
                    continue
                if successor not in index:
                    work.append((node, position))
                    work.append((successor, 0))
                    recursed = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if recursed:
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                combined = Reach()
                members = set(component)
                for member in sorted(component):
                    combined.merge(self._own(member))
                for member in component:
                    for successor in self.edges(member):
                        if successor not in members:
                            combined.merge(self._reach[successor])
                for member in component:
                    self._reach[member] = combined
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])

    def entry_reach(self, entry: EntryPoint) -> Reach:
        combined = Reach()
        keys = [MAIN_KEY, MODULE_KEY]
        if entry.reason == "configured":
            # A launcher runs the file's functions (a job runner, `fire`, ...): each may be its start.
            keys += [key for key in entry.summary.functions if "." not in key and not key.startswith("<")]
        for key in keys:
            if key in entry.summary.functions:
                combined.merge(self.reach((entry.path, key)))
        return combined

    def enables_deterministic_mode(self) -> bool:
        return any("deterministic" in self.entry_reach(e).covers for e in self.entry_points)

    def files_reached(self, entry: EntryPoint) -> Set[str]:
        """The files whose code an entry point runs."""
        start = [(entry.path, key) for key in entry.summary.functions if key in (MAIN_KEY, MODULE_KEY) or entry.reason == "configured"]
        seen: Set[Node] = set(start)
        pending = list(start)
        while pending:
            for successor in self.edges(pending.pop()):
                if successor not in seen:
                    seen.add(successor)
                    pending.append(successor)
        return {display for display, _ in seen}

    def deterministic_mode_enabled(self) -> bool:
        """RULES.md: one entry point that enables the flag silences TDL201 project-wide
        (library code included); with no entry point, nothing enables it."""
        return any("deterministic" in self.entry_reach(entry).covers for entry in self.entry_points)

    # -- seeding helpers the fixes can call -----------------------------------------------------------
    def seeding_helpers(self) -> List[Tuple[Node, Reach]]:
        """First-party module-level functions whose bodies (transitively) seed, best first."""
        if self._helpers is None:
            self._helpers = self._find_seeding_helpers()
        return self._helpers

    def _find_seeding_helpers(self) -> List[Tuple[Node, Reach]]:
        found = []
        configured = set()
        for name, covers in config_helpers(self.settings).items():
            for display in self.summaries:
                for node in self.resolve(display, name):
                    if node not in configured and "." not in node[1]:
                        configured.add(node)
                        reach = Reach(covers={kind: Located(node[0], Site(0, f"`{name}(...)`")) for kind in covers})
                        found.append((node, reach))
                break
        for display, summary in sorted(self.summaries.items()):
            for name, function in summary.functions.items():
                if "." in name or name.startswith(("_", "<")) or (display, name) in configured:
                    continue
                if not (function.covers or "seed" in name.lower() or any("seed" in c.lower() for c in function.calls)):
                    continue
                reach = self.reach((display, name))
                # A helper seeds and does nothing else worth naming: no draws, no device work.
                if any(kind in reach.covers for kind in ("torch", "random", "numpy")) and not (reach.draws or reach.cuda or reach.ops):
                    found.append(((display, name), reach))
        return found

    def where(self, located: Located) -> str:
        """`path:line`, or `path:cell N:line` in a notebook."""
        notebook = getattr(self.sources.get(located.path), "notebook", None)
        if notebook is None or not located.site.line:
            return located.where()
        cell, line, _ = notebook.cell_position(_line_offset(notebook.code, located.site.line))
        return f"{located.path}:cell {cell}:{line}"

    # -- diagnostics on an entry point -----------------------------------------------------------------
    def entry_diagnostic(self, entry: EntryPoint, code: str, name: str, message: str, fix=None) -> Diagnostic:
        source = self.sources.get(entry.path)
        text = getattr(source, "text", "") or ""
        line = entry.line
        offset = _line_offset(text, line)
        diagnostic = Diagnostic(
            path=entry.path,
            line=line,
            column=1,
            end_line=line,
            end_column=1,
            code=code,
            name=name,
            message=message,
            fix=fix,
            start_offset=offset,
            end_offset=offset,
        )
        notebook = getattr(source, "notebook", None)
        if notebook is not None:
            diagnostic = notebook.place(diagnostic)
        return diagnostic


def _line_offset(text: str, line: int) -> int:
    offset = 0
    for _ in range(line - 1):
        found = text.find("\n", offset)
        if found < 0:
            return len(text)
        offset = found + 1
    return offset


# -- building fixes without a CST: insertions at precomputed anchors ----------------------------------


def import_section(module: str, first_party: frozenset) -> int:
    top = module.split(".")[0]
    if top == "__future__":
        return 0
    if top in _STDLIB:
        return 1
    if module.startswith(".") or top in first_party:
        return 3
    return 2


def import_edit(anchors: FixAnchors, line: str, module: str, first_party: frozenset) -> Edit:
    """An edit adding the import line where isort would put it among the header imports."""
    section = import_section(module, first_party)
    key = (0 if line.startswith("import ") else 1, module.lower())
    after_same = None
    for header in anchors.header_imports:
        if header.module == "__future__":
            continue
        other = import_section(header.module, first_party)
        if other == section:
            if (1 if header.is_from else 0, header.module.lower()) > key:
                return Edit(header.start, header.start, line + "\n")
            after_same = header
        elif other > section:
            if after_same is not None:
                break
            return Edit(header.start, header.start, line + "\n")
    if after_same is not None:
        return Edit(after_same.end, after_same.end, line + "\n")
    prefix = "\n" if anchors.after_imports_eof else ""
    return Edit(anchors.after_imports, anchors.after_imports, prefix + line + "\n")


def merge_edits(edits: Sequence[Edit]) -> Tuple[Edit, ...]:
    """Sorted edits, insertions at one offset joined in their given order."""
    merged: Dict[Tuple[int, int], Edit] = {}
    order: List[Tuple[int, int]] = []
    for edit in edits:
        key = (edit.start, edit.end)
        if key in merged and edit.start == edit.end:
            if edit.content not in merged[key].content:
                merged[key] = Edit(edit.start, edit.end, merged[key].content + edit.content)
            continue
        merged[key] = edit
        order.append(key)
    return tuple(sorted((merged[k] for k in order), key=lambda e: (e.start, e.end)))


# -- the phase -------------------------------------------------------------------------------------------


def run_project_rules(results: Sequence[FileResult], files: Sequence, options: RunOptions) -> List[Diagnostic]:
    """The project rules' diagnostics (suppressions applied).

    Also the project-level filter of TDL201 (and of the third-party kernels the
    flag makes deterministic, TDL203): those file diagnostics are removed from
    `results` (in place) when an entry point enables deterministic mode, so
    callers collect the file diagnostics after calling this.
    """
    rules = [rule() for code, rule in all_rules().items() if code in options.selected and issubclass(rule, ProjectRule)]
    has_flag_findings = any(d.extra.get(SILENCED_BY_FLAG) for r in results for d in r.diagnostics)
    if not rules and not has_flag_findings:
        return []
    project = Project(results, files, options)
    if has_flag_findings and project.deterministic_mode_enabled():
        for result in results:
            result.diagnostics = [d for d in result.diagnostics if not d.extra.get(SILENCED_BY_FLAG)]
    by_path: Dict[str, List[Diagnostic]] = {}
    for rule in rules:
        for diagnostic in rule.check(project):
            by_path.setdefault(diagnostic.path, []).append(diagnostic)
    kept: List[Diagnostic] = []
    for path, diagnostics in by_path.items():
        source = project.sources.get(path)
        text = source.text if source is not None else ""
        kept.extend(apply_suppressions(diagnostics, text, options.settings, project.paths.get(path, Path(path))))
    return kept
