"""File discovery: `.py` and `.ipynb` files under the given paths, honouring
`.gitignore`, the default excludes and the config's `exclude`/`extend-exclude`.
A file named explicitly is always linted, unless `--force-exclude`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

DEFAULT_EXCLUDES = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".torchdet_lint_cache",
    "build",
    "dist",
    "node_modules",
    "__pycache__",
    "site-packages",
    "__pypackages__",
)
SOURCE_SUFFIXES = (".py", ".ipynb")
_GLOB_OR_PATH_RE = re.compile(r"[/*?\[\]!\\]|^#")


@dataclass(frozen=True)
class SourceFile:
    path: Path  # absolute
    display: str  # as shown to the user: relative to the cwd where possible
    explicit: bool  # named on the command line


def display_path(path: Path, cwd: Optional[Path] = None) -> str:
    """The path relative to the working directory where it is inside it, else absolute."""
    text, prefix = str(path), str(cwd or Path.cwd()).rstrip(os.sep) + os.sep
    return text[len(prefix) :] if text.startswith(prefix) else text


def _spec(patterns: Sequence[str]):
    import pathspec  # imported on first use: a one-file run needs no pattern matching

    return pathspec.GitIgnoreSpec.from_lines(patterns)


class Excluder:
    """Answers "is this path excluded?" for config patterns and `.gitignore` files.

    The `.gitignore` files that apply are those of the path's directory and its
    parents up to the repository root (the directory holding `.git`); outside a
    repository, up to `root`. Paths are handled as strings: a walk over thousands
    of files asks this once per file and directory.
    """

    def __init__(self, root: Path, patterns: Sequence[str]) -> None:
        self.root = root
        self._root_prefix = str(root).rstrip(os.sep) + os.sep
        self.patterns = list(DEFAULT_EXCLUDES) + list(patterns)
        # Plain names (the default excludes, `venv`) match any path component: a set
        # lookup on the name, since the walk never enters an excluded directory.
        self._names = frozenset(p.rstrip("/") for p in self.patterns if not _GLOB_OR_PATH_RE.search(p.rstrip("/")))
        self._other_patterns = [p for p in self.patterns if _GLOB_OR_PATH_RE.search(p.rstrip("/"))]
        self._config_spec = None
        self._chains: Dict[str, List[Tuple[str, object]]] = {}

    @property
    def config_spec(self):
        if self._config_spec is None:
            self._config_spec = _spec(self._other_patterns) if self._other_patterns else False
        return self._config_spec

    def _gitignore(self, directory: str):
        try:
            with open(os.path.join(directory, ".gitignore"), encoding="utf-8", errors="replace") as handle:
                return _spec(handle.read().splitlines())
        except OSError:
            return None

    def _chain(self, directory: str) -> List[Tuple[str, object]]:
        """(directory prefix, spec) of every `.gitignore` that applies to files of `directory`."""
        chain = self._chains.get(directory)
        if chain is None:
            spec = self._gitignore(directory)
            chain = [(directory.rstrip(os.sep) + os.sep, spec)] if spec is not None else []
            parent = os.path.dirname(directory)
            stop = (
                parent == directory
                or os.path.exists(os.path.join(directory, ".git"))
                or not (directory + os.sep).startswith(self._root_prefix)
                or directory + os.sep == self._root_prefix
                and not self._in_repository(directory)
            )
            if not stop:
                chain = chain + self._chain(parent)
            self._chains[directory] = chain
        return chain

    def _in_repository(self, directory: str) -> bool:
        current = directory
        while True:
            if os.path.exists(os.path.join(current, ".git")):
                return True
            parent = os.path.dirname(current)
            if parent == current:
                return False
            current = parent

    def excluded(self, path: Path, is_dir: bool) -> bool:
        text = str(path)
        suffix = "/" if is_dir else ""
        directory, _, name = text.rpartition(os.sep)
        inside = text.startswith(self._root_prefix)
        relative = text[len(self._root_prefix) :] if inside else name
        if not self._names.isdisjoint(relative.split(os.sep)):
            return True
        spec = self.config_spec
        if spec and spec.match_file(name + suffix):
            return True
        if spec and inside and spec.match_file(relative.replace(os.sep, "/") + suffix):
            return True
        for prefix, ignore in self._chain(directory or os.sep):
            if ignore.match_file(text[len(prefix) :].replace(os.sep, "/") + suffix):
                return True
        return False


def discover(
    paths: Sequence[str],
    root: Path,
    exclude: Sequence[str] = (),
    force_exclude: bool = False,
    cwd: Optional[Path] = None,
) -> Tuple[List[SourceFile], List[str]]:
    """The files to lint, sorted, and the paths that do not exist."""
    cwd = cwd or Path.cwd()
    excluder = Excluder(root, exclude)
    found: Dict[Path, SourceFile] = {}
    missing: List[str] = []
    for raw in paths:
        path = Path(raw)
        absolute = path if path.is_absolute() else cwd / path
        absolute = Path(os.path.normpath(absolute))
        if absolute.is_dir():
            if force_exclude and excluder.excluded(absolute, True):
                continue
            for file in _walk(absolute, excluder):
                found.setdefault(file, SourceFile(file, display_path(file, cwd), False))
        elif absolute.exists() or absolute.is_symlink():
            if force_exclude and excluder.excluded(absolute, False):
                continue
            found[absolute] = SourceFile(absolute, display_path(absolute, cwd), True)
        else:
            missing.append(raw)
    return sorted(found.values(), key=lambda f: f.display), missing


def _walk(top: Path, excluder: Excluder) -> Iterator[Path]:
    for directory, dirnames, filenames in os.walk(top):
        base = Path(directory)
        dirnames[:] = sorted(d for d in dirnames if not excluder.excluded(base / d, True))
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES):
                candidate = base / name
                if not excluder.excluded(candidate, False):
                    yield candidate
