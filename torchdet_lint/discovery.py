"""File discovery: `.py` and `.ipynb` files under the given paths, honouring
`.gitignore`, the default excludes and the config's `exclude`/`extend-exclude`.
A file named explicitly is always linted, unless `--force-exclude`.
"""

from __future__ import annotations

import os
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


@dataclass(frozen=True)
class SourceFile:
    path: Path  # absolute
    display: str  # as shown to the user: relative to the cwd where possible
    explicit: bool  # named on the command line


def display_path(path: Path, cwd: Optional[Path] = None) -> str:
    cwd = cwd or Path.cwd()
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


def _spec(patterns: Sequence[str]):
    import pathspec  # imported on first use: a one-file run needs no pattern matching

    return pathspec.GitIgnoreSpec.from_lines(patterns)


class _Excluder:
    """Answers "is this path excluded?" for config patterns and .gitignore files."""

    def __init__(self, root: Path, patterns: Sequence[str]) -> None:
        self.root = root
        self.patterns = list(DEFAULT_EXCLUDES) + list(patterns)
        self._config_spec = None
        self._gitignores: Dict[Path, object] = {}

    @property
    def config_spec(self):
        if self._config_spec is None:
            self._config_spec = _spec(self.patterns)
        return self._config_spec

    def _gitignore(self, directory: Path):
        if directory not in self._gitignores:
            spec = None
            try:
                with open(directory / ".gitignore", encoding="utf-8", errors="replace") as handle:
                    spec = _spec(handle.read().splitlines())
            except OSError:
                pass
            self._gitignores[directory] = spec
        return self._gitignores[directory]

    def _git_root(self, path: Path) -> Optional[Path]:
        for candidate in (path, *path.parents):
            if (candidate / ".git").exists():
                return candidate
        return None

    def excluded(self, path: Path, is_dir: bool) -> bool:
        suffix = "/" if is_dir else ""
        if self.config_spec.match_file(path.name + suffix):
            return True
        try:
            relative = path.relative_to(self.root)
            if self.config_spec.match_file(relative.as_posix() + suffix):
                return True
        except ValueError:
            pass
        git_root = self._git_root(path.parent) or path.parent
        for directory in (path.parent, *path.parent.parents):
            spec = self._gitignore(directory)
            if spec is not None:
                relative_path = path.relative_to(directory).as_posix() + suffix
                if spec.match_file(relative_path):
                    return True
            if directory == git_root:
                break
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
    excluder = _Excluder(root, exclude)
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


def _walk(top: Path, excluder: _Excluder) -> Iterator[Path]:
    for directory, dirnames, filenames in os.walk(top):
        base = Path(directory)
        dirnames[:] = sorted(d for d in dirnames if not excluder.excluded(base / d, True))
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES):
                candidate = base / name
                if not excluder.excluded(candidate, False):
                    yield candidate
