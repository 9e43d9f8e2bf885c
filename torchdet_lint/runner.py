"""One whole run: each file linted by kind (Python or notebook) through the
cache, the file pass in parallel when asked, the project phase, and the
sorted diagnostics.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from torchdet_lint.cache import Cache
from torchdet_lint.catalog import newest_version
from torchdet_lint.config import Settings, selected_codes, target_torch_version
from torchdet_lint.diagnostics import Diagnostic, error_diagnostic, sort_diagnostics
from torchdet_lint.discovery import SourceFile
from torchdet_lint.engine import FileResult, RunOptions, lint_python
from torchdet_lint.notebook import lint_notebook
from torchdet_lint.project import run_project_rules
from torchdet_lint.source import SourceError, SourceText, decode_source, read_bytes

# Below this many files a process pool costs more than it saves.
_PARALLEL_THRESHOLD = 16


@dataclass
class RunResult:
    files: List[FileResult] = field(default_factory=list)
    diagnostics: List[Diagnostic] = field(default_factory=list)
    timings: Dict[str, float] = field(default_factory=dict)

    def sources(self) -> Dict[str, object]:
        return {f.path: f.source for f in self.files if f.source is not None}


def make_options(settings: Settings, first_party: frozenset = frozenset()) -> RunOptions:
    return RunOptions(
        settings=settings,
        selected=selected_codes(settings),
        torch_version=target_torch_version(settings, newest_version()),
        first_party=first_party,
    )


def module_name_for(path: Path, root: Path) -> Tuple[Optional[str], bool]:
    """The dotted module name of a file from its package chain (`__init__.py` files)."""
    is_package = path.name == "__init__.py"
    parts = [] if is_package else [path.stem]
    directory = path.parent
    while (directory / "__init__.py").exists():
        parts.append(directory.name)
        if directory == directory.parent:
            break
        directory = directory.parent
    if not parts:
        return None, is_package
    return ".".join(reversed(parts)), is_package


def first_party_names(files: Sequence[SourceFile]) -> frozenset:
    names = set()
    for file in files:
        name, _ = module_name_for(file.path, file.path.parent)
        if name:
            names.add(name.split(".")[0])
    return frozenset(names)


def lint_source(
    source: SourceText,
    path: Path,
    display: str,
    options: RunOptions,
    module_name: Optional[str] = None,
    is_package: bool = False,
) -> FileResult:
    """Lint a decoded file (a notebook or Python source), suppressions applied."""
    if path.suffix == ".ipynb":
        return lint_notebook(source, path, display, options)
    return lint_python(source, path, display, options, module_name, is_package)


def lint_path(
    path: Path,
    display: str,
    options: RunOptions,
    module_name: Optional[str] = None,
    is_package: bool = False,
    cache=None,
) -> FileResult:
    """Lint one file from disk, through the cache when one is given."""
    try:
        data = read_bytes(path)
    except SourceError as error:
        return FileResult(display, [error_diagnostic(display, str(error))])
    key = cache.key(data, path, module_name) if cache is not None else None
    if key is not None:
        cached = cache.load(key)
        if cached is not None:
            try:
                cached.source = decode_source(data)
            except SourceError:
                cached.source = None
            cached.from_cache = True
            return cached
    try:
        source = decode_source(data)
    except SourceError as error:
        result = FileResult(display, [error_diagnostic(display, str(error))])
    else:
        result = lint_source(source, path, display, options, module_name, is_package)
    if key is not None:
        source, result.source = result.source, None
        cache.store(key, result)
        result.source = source
    return result


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _lint_one(task, options: RunOptions, cache) -> FileResult:
    path, display, module_name, is_package = task
    return lint_path(path, display, options, module_name, is_package, cache)


# In a worker process only: what every file of the run shares, set once by
# the pool's initializer rather than sent with each file.
_worker_shared: Dict[str, object] = {}


def _start_worker(options: RunOptions, cache) -> None:
    _worker_shared.update(options=options, cache=cache)


def _lint_in_worker(task) -> FileResult:
    return _lint_one(task, _worker_shared["options"], _worker_shared["cache"])


def run(
    files: Sequence[SourceFile],
    options: RunOptions,
    jobs: int = 1,
    project: bool = True,
    use_cache: bool = False,
    progress: bool = False,
    cache_root: Optional[Path] = None,
) -> RunResult:
    cache = Cache(cache_root or options.settings.root, options) if use_cache else None
    tasks = []
    for file in files:
        module_name, is_package = module_name_for(file.path, file.path.parent)
        tasks.append((file.path, file.display, module_name, is_package))
    bar = ProgressBar(len(tasks)) if progress else None
    started = time.perf_counter()
    # Largest files first: a worker never ends the run alone on a 1 MB file
    # (longest-processing-time-first scheduling), and the largest syntax trees
    # are built while little else is held, which keeps the peak memory down.
    order = sorted(range(len(tasks)), key=lambda index: -_size(tasks[index][0]))
    results: List[Optional[FileResult]] = [None] * len(tasks)
    if jobs > 1 and len(tasks) >= _PARALLEL_THRESHOLD:
        from concurrent.futures import ProcessPoolExecutor  # only for long runs

        with ProcessPoolExecutor(max_workers=jobs, initializer=_start_worker, initargs=(options, cache)) as pool:
            ordered_tasks = [tasks[index] for index in order]
            # Small chunks keep the largest-first order meaningful across workers.
            chunksize = max(1, min(8, len(tasks) // (jobs * 32)))
            for index, result in zip(order, pool.map(_lint_in_worker, ordered_tasks, chunksize=chunksize)):
                results[index] = result
                if bar:
                    bar.advance()
    else:
        for index in order:
            results[index] = _lint_one(tasks[index], options, cache)
            if bar:
                bar.advance()
    if bar:
        bar.close()
    file_pass = time.perf_counter() - started
    started = time.perf_counter()
    project_diagnostics: List[Diagnostic] = []
    if project:
        # Before collecting the file findings: the project phase may drop some (TDL201).
        project_diagnostics = run_project_rules(results, files, options)
    diagnostics = [d for result in results for d in result.diagnostics] + project_diagnostics
    run_result = RunResult(results, sort_diagnostics(diagnostics))
    run_result.timings = {"file_pass": file_pass, "project_phase": time.perf_counter() - started}
    return run_result


class ProgressBar:
    """`[#####     ] 120/400 files` on standard error, only on a terminal and for long runs."""

    MIN_FILES = 50

    def __init__(self, total: int, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.total = total
        self.done = 0
        self.enabled = total >= self.MIN_FILES and getattr(self.stream, "isatty", lambda: False)()
        self._last = 0.0

    def advance(self) -> None:
        self.done += 1
        now = time.monotonic()
        if self.enabled and (now - self._last > 0.1 or self.done == self.total):
            self._last = now
            width = 30
            filled = width * self.done // max(self.total, 1)
            self.stream.write(f"\r[{'#' * filled}{' ' * (width - filled)}] {self.done}/{self.total} files")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * 60 + "\r")
            self.stream.flush()


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1
