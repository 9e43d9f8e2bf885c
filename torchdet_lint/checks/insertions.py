"""Edits at precomputed anchors, for the project rules' fixes (the project phase
has no CST): lines inserted at an entry point's start, an import where isort
would put it, insertions merged per offset.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from torchdet_lint.core.diagnostics import Applicability, Edit, Fix
from torchdet_lint.core.import_placement import place_import
from torchdet_lint.model.project import EntryPoint, Project
from torchdet_lint.model.summary import RNG_KINDS, FileSummary, FixAnchors


def import_edit(anchors: FixAnchors, line: str, module: str, first_party: frozenset) -> Edit:
    """An edit adding the import line where isort would put it among the header imports."""
    return place_import(line, module, anchors.header_imports, first_party, anchors.after_imports, anchors.after_imports_eof)


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


# Parameters that hold a process's rank by name, whoever starts the process (`Process(target=train,
# args=(rank, ...))`).
RANK_PARAMETERS = ("rank", "local_rank", "global_rank", "process_rank", "proc_rank", "rank_id")


def spawned_rank(entry: EntryPoint, positional: Sequence[str]) -> Optional[str]:
    """The parameter of a spawned function that holds its rank: the first one when the launcher
    passes the process's index there (`mp.spawn(fn, ...)` calls `fn(i, *args)`), else one named
    for it."""
    if entry.spawn is not None and entry.spawn.indexed and positional:
        return positional[0]
    return next((name for name in positional if name in RANK_PARAMETERS), None)


def local_module_name(summary: FileSummary, module: str, before_line: int) -> Optional[str]:
    """A module-level name bound to `module` by an import above `before_line` and never rebound."""
    candidates = [
        name
        for name, (bound, line) in summary.module_bindings.items()
        if bound == module and line < before_line and summary.exports.get(name) == module
    ]
    if not candidates:
        return None
    preferred = {"torch": "torch", "random": "random", "numpy": "np"}.get(module)
    return preferred if preferred in candidates else sorted(candidates)[0]


class Insertion:
    """Lines to insert at an entry point's start, with the imports they need."""

    def __init__(self, project: Project, entry: EntryPoint, avoid_module_level: Iterable[str]) -> None:
        self.project = project
        self.summary = entry.summary
        self.entry = entry
        anchors = self.summary.anchors
        self.anchors = anchors
        self.valid = anchors is not None
        self.edits: List[Edit] = []
        self.first_party = project.first_party
        self.names: Optional[List[str]] = None  # for a function's top: the names bound there
        self.rank: Optional[str] = None  # for a spawned function's top: the parameter that holds its rank
        # Why no fix can be offered here, when the lines belong in another file.
        self.elsewhere: Optional[str] = None
        if not self.valid:
            return
        if entry.spawn is not None:
            self._at_function_top(entry)
            return
        launched = project.launched(entry)
        if launched:
            # The main block only hands the work to a job (submitit): the job runs the launched
            # function in a process of its own, without the main block's lines.
            self._at_launched_top(launched[0])
            return
        # The seeding lines go at the main block's top, unless the file's own module-level code
        # draws (or does the work) before the main block runs. Draws by the module-level code of
        # the modules it imports do not count: they run at import time, before any line placed
        # after the imports could. A file that other first-party files import never gets
        # module-level lines: they would reseed every importer.
        imported = self.entry.path in project.imported_files()
        if anchors.main_top is not None and (imported or not self._module_code_draws(avoid_module_level)):
            self.offset, self.indent, self.line, self.at_main = anchors.main_top, anchors.main_indent, anchors.main_top_line, True
        elif self.summary.main_guard_line is not None and imported:
            self.valid = False  # a main block on the guard's own line has no top to insert at
        else:
            self.offset, self.indent, self.line, self.at_main = anchors.after_imports, "", anchors.after_imports_line, False

    def _module_code_draws(self, kinds: Iterable[str]) -> bool:
        own = self.project.module_code_reach(self.entry.path)
        return any(own.draws.get(kind) for kind in kinds if kind in RNG_KINDS) or ("cuda" in kinds and bool(own.cuda or own.ops))

    def _at_function_top(self, entry: EntryPoint) -> None:
        """A spawned entry point's lines go at the top of the function started, when that
        function is in the file of the call that starts it (a fix edits one file)."""
        top = next((self.summary.function_tops.get(key) for path, key in entry.targets if path == entry.path), None)
        self.valid = top is not None
        if top is not None:
            # The module's imports and definitions are in place when the function runs.
            self.offset, self.indent, self.line, self.at_main = top.offset, top.indent, 1 << 30, True
            self.names = top.names
            self.rank = spawned_rank(entry, top.positional)

    def _at_launched_top(self, node: Tuple[str, str]) -> None:
        path, key = node
        function = key.rpartition(".")[0] if key.endswith(".__call__") else key
        top = self.summary.function_tops.get(key) if path == self.entry.path else None
        self.valid = top is not None
        if top is not None:
            self.offset, self.indent, self.line, self.at_main = top.offset, top.indent, 1 << 30, True
            self.names = top.names
        else:
            self.elsewhere = f"`{function}` ({path}), which the job runs in a process of its own"

    def module(self, module: str) -> Optional[str]:
        """The name to use for a module, adding `import module` when needed."""
        name = local_module_name(self.summary, module, self.line)
        if name is not None:
            return name
        alias = "np" if module == "numpy" and "np" not in self.summary.exports else None
        name = alias or module
        if name in self.summary.exports and self.summary.exports[name] != module:
            return None  # the name means something else here
        line = f"import {module}" + (f" as {alias}" if alias else "")
        self.edits.append(import_edit(self.anchors, line, module, self.first_party))
        return name

    def fix(self, title: str, lines: List[str]) -> Fix:
        import_here = any(e.start == self.offset for e in self.edits)
        prefix = ""
        if not self.at_main:
            if self.anchors.after_imports_eof and not import_here:
                prefix = "\n"
            # A blank line between the imports (or the docstring) and the inserted statements;
            # a first import inserted here brings its own.
            if self.anchors.header_imports or (self.offset > 0 and not import_here):
                prefix += "\n"
        text = prefix + "".join(self.indent + line + "\n" for line in lines)
        return Fix(title, Applicability.UNSAFE, merge_edits([*self.edits, Edit(self.offset, self.offset, text)]))
