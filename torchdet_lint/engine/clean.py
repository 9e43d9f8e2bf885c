"""`torchdet-lint clean`: remove the result caches (`.torchdet_lint_cache/`) under the
given directories, as `ruff clean` removes `.ruff_cache/`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Iterator, List, Sequence

from torchdet_lint.engine.cache import CACHE_DIR_NAME

# Trees no project keeps its cache in: not walked (a checkout's node_modules can hold 100,000 files).
_NOT_WALKED = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", ".tox", ".nox"})


def cache_directories(roots: Sequence[Path]) -> Iterator[Path]:
    """Every cache directory at or below `roots`, and in the directories above them up to the
    filesystem root (a project's cache lives at its root, which may be above the directory named)."""
    seen = set()
    for root in roots:
        root = Path(os.path.abspath(root))
        for directory in (root, *root.parents):
            candidate = directory / CACHE_DIR_NAME
            if directory != root and candidate.is_dir() and candidate not in seen:
                seen.add(candidate)
                yield candidate
        for base, dirnames, _ in os.walk(root):
            if CACHE_DIR_NAME in dirnames:
                candidate = Path(base) / CACHE_DIR_NAME
                if candidate not in seen:
                    seen.add(candidate)
                    yield candidate
            dirnames[:] = [d for d in dirnames if d != CACHE_DIR_NAME and d not in _NOT_WALKED]


def clean(roots: Sequence[Path]) -> List[Path]:
    """Remove the cache directories of `roots`; the ones removed."""
    removed = []
    for directory in cache_directories(roots):
        shutil.rmtree(directory, ignore_errors=True)
        removed.append(directory)
    return removed
