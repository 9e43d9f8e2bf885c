"""First-party module names -> files, as Python would import them: which file an
import statement or a qualified call target names, seen from the importing file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, FrozenSet, List, Optional, Tuple

from torchdet_lint.model.summary import FileSummary


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
        canonical: Dict[Path, Path] = {}
        for display, summary in summaries.items():
            path = paths.get(display, Path(display))
            try:
                path = path.resolve()
            except OSError:
                pass
            self.resolved[display] = path
            root = _import_root(path, summary)
            # One object per root directory: `_visible` compares them by identity, millions of times.
            self.roots[display] = canonical.setdefault(root, root)
        all_roots = set(self.roots.values())
        if project_root is not None:
            root = project_root.resolve()  # the directory `python -m` and tools run from
            all_roots.add(canonical.setdefault(root, root))
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
                        self.names.setdefault(name, []).append((canonical[ancestor], display))
        self._cache: Dict[Tuple[str, str], Optional[Tuple[str, str]]] = {}
        # Per importer, asked for each of its call targets: the directories above it, and every
        # module its `from ... import` statements name with each of that module's packages.
        self._parents: Dict[str, FrozenSet[Path]] = {}
        self._from_prefixes: Dict[str, FrozenSet[str]] = {}

    def _parents_of(self, importer: str) -> FrozenSet[Path]:
        found = self._parents.get(importer)
        if found is None:
            path = self.resolved.get(importer)
            found = self._parents[importer] = frozenset(path.parents) if path is not None else frozenset()
        return found

    def _visible(self, entries: List[Tuple[Optional[Path], str]], importer: str) -> Optional[str]:
        importer_root = self.roots.get(importer)
        best: Optional[Tuple[int, str]] = None
        for root, display in entries:
            if root is None:
                rank = 1
            elif root is importer_root:
                rank = 0
            elif root in self._parents_of(importer):
                rank = 2
            else:
                continue
            if best is None or rank < best[0]:
                best = (rank, display)
        return best[1] if best else None

    def module(self, name: str, importer: str, exports: bool = True) -> Optional[Tuple[str, str]]:
        """(file, remainder) of the longest first-party module prefix of a qualified name.

        A package that re-exports a name of its submodule under the submodule's own name
        (`from .LSTM import LSTM` in `models/__init__.py`) rebinds `models.LSTM` to that
        object, as Python binds it at import: `models.LSTM` is the class
        of `models/LSTM.py`, not the module."""
        key = (importer, name) if exports else (importer, name, False)
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
                    rebound = (
                        self._reexport(parts[:end], importer)
                        if exports and end >= 2 and not self._imported_as_module(parts[:end], importer)
                        else None
                    )
                    if rebound is not None:
                        found = self.module(".".join([rebound, *parts[end:]]), importer, exports=False) or found
                    break
        self._cache[key] = found
        return found

    def _imported_as_module(self, parts: List[str], importer: str) -> bool:
        """Whether the importer names `parts` in a `from ... import` statement (or a module below
        it): `from pkg.Mod import x` imports the submodule `pkg.Mod` itself, so a package's
        re-export of `Mod` does not apply to the names taken from it; only an attribute read
        (`import pkg; pkg.Mod`) sees what `pkg/__init__.py` bound."""
        prefixes = self._from_prefixes.get(importer)
        if prefixes is None:
            summary = self.summaries.get(importer)
            modules = summary.from_modules if summary is not None else ()
            prefixes = self._from_prefixes[importer] = frozenset(
                ".".join(module.split(".")[:end]) for module in modules for end in range(1, module.count(".") + 2)
            )
        return ".".join(parts) in prefixes

    def _reexport(self, parts: List[str], importer: str) -> Optional[str]:
        """What the package `parts[:-1]` binds its submodule's name `parts[-1]` to, when it is a
        name imported from that very submodule (`models.LSTM.LSTM`)."""
        entries = self.names.get(".".join(parts[:-1]))
        package = self._visible(entries, importer) if entries else None
        summary = self.summaries.get(package) if package is not None else None
        if summary is None or not summary.is_package:
            return None
        bound = summary.exports.get(parts[-1])
        module = ".".join(parts)
        return bound if bound is not None and bound.startswith(module + ".") else None

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
            if (
                any(d == display for _, d in entries)
                and self._visible([e for e in entries if e[1] == display], importer) == display
            ):
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
