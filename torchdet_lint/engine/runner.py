"""One whole run: each file linted by kind (Python or notebook) through the
cache, the file pass in parallel when asked, the project phase, and the
sorted diagnostics. `run_scopes` runs projects whose unnamed files take part
in the project phase through their summaries (from the summary index when
fresh), without being reported.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import gc
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

from torchdet_lint.core.catalog import load_catalog, newest_version
from torchdet_lint.core.diagnostics import Diagnostic, error_diagnostic, sort_diagnostics
from torchdet_lint.core.source import SourceError, SourceText, decode_source, read_bytes
from torchdet_lint.engine.cache import Cache, SummaryIndex, content_digest, summary_fingerprint
from torchdet_lint.engine.config import Settings, selected_codes, target_library_versions, target_torch_version
from torchdet_lint.engine.discovery import SourceFile
from torchdet_lint.engine.file_pass import (
    LARGE_TREE_BYTES,
    FileResult,
    RunOptions,
    cyclic_gc_paused,
    lint_python,
    release_freed_memory,
    settle_kept_result,
)
from torchdet_lint.engine.project_phase import ProjectContext, config_files, project_phase
from torchdet_lint.engine.results_cache import ConfigListing, ResultsCache, ResultsRecord, file_stamps
from torchdet_lint.engine.workspace import ProjectScope
from torchdet_lint.model.project import Project

# Below this many files, or this much text given in memory (a 1 MB file takes tens of seconds
# to lint), a process pool costs more than it saves.
_PARALLEL_THRESHOLD = 16
_PARALLEL_CHARS = 256 * 1024


@dataclass
class ProjectRun:
    """One project of a run: its named files' results and the summaries of the others."""

    scope: Optional[ProjectScope]
    options: RunOptions
    files: List[SourceFile]  # the named files
    results: List[FileResult]
    context: Optional[ProjectContext] = None
    model: Optional[Project] = None  # the project model the project phase ran over (reach memoised)


@dataclass
class RunResult:
    files: List[FileResult] = field(default_factory=list)  # the named files' results
    diagnostics: List[Diagnostic] = field(default_factory=list)
    timings: Dict[str, float] = field(default_factory=dict)
    projects: List[ProjectRun] = field(default_factory=list)

    def sources(self) -> Dict[str, object]:
        return {f.path: f.source for f in self.files if f.source is not None}


def make_options(settings: Settings, first_party: frozenset = frozenset(), extra_codes: frozenset = frozenset()) -> RunOptions:
    """The options of a run: the configuration's selection (plus `extra_codes`, which a
    consumer such as the report needs whatever the selection), target torch, first party."""
    return RunOptions(
        settings=settings,
        selected=selected_codes(settings) | extra_codes,
        torch_version=target_torch_version(settings, newest_version()),
        first_party=first_party,
        library_versions=target_library_versions(settings, load_catalog()),
    )


def module_name_for(path: Path) -> Tuple[Optional[str], bool]:
    """The dotted module name of a file from its package chain (`__init__.py` files)."""
    directory, _, name = str(path).rpartition(os.sep)
    is_package = name == "__init__.py"
    parts = list(_package_chain(directory))
    if not is_package:
        parts.append(name.rpartition(".")[0] or name)
    if not parts:
        return None, is_package
    return ".".join(parts), is_package


def forget_packages() -> None:
    """Forget which directories are packages (a long-lived process saw an `__init__.py` change)."""
    _package_chain.cache_clear()


@functools.lru_cache(maxsize=8192)
def _package_chain(directory: str) -> Tuple[str, ...]:
    """The package names from the top package down to `directory` (empty outside a package)."""
    parent, _, name = directory.rpartition(os.sep)
    if not name or not os.path.exists(os.path.join(directory, "__init__.py")):
        return ()
    return (*_package_chain(parent), name)


def first_party_names(files: Sequence[SourceFile]) -> frozenset:
    names = set()
    for file in files:
        name, _ = module_name_for(file.path)
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
        from torchdet_lint.engine.notebook import lint_notebook  # imported by the first notebook: most runs have none

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
    """Lint one file from disk, through the cache when one is given. The result
    carries the file's stat (taken before the read) and content digest."""
    try:
        stat = os.stat(path)
        data = read_bytes(path)
    except OSError as error:
        return FileResult(display, [error_diagnostic(display, f"cannot read: {error.strerror or error}")])
    except SourceError as error:
        return FileResult(display, [error_diagnostic(display, str(error))])
    key = cache.key(data, path, module_name) if cache is not None else None
    result = cache.load(key) if key is not None else None
    if result is not None:
        _as_displayed(result, display)  # the same file seen from another working directory
        result.from_cache = True
        result.source = _decoded(data, path)
    else:
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
    result.stat = (stat.st_size, stat.st_mtime_ns)
    result.digest = content_digest(data)
    return result


def _decoded(data: bytes, path: Path) -> Optional[SourceText]:
    """The text of a file linted before (None when it cannot be decoded); a notebook's findings
    are placed in its cells through its source (the project phase's too)."""
    try:
        source = decode_source(data)
    except SourceError:
        return None
    if path.suffix == ".ipynb":
        from torchdet_lint.engine.notebook import notebook_source

        return notebook_source(source)
    return source


def _as_displayed(result: FileResult, display: str) -> None:
    if result.path != display:
        result.path = display
        for diagnostic in result.diagnostics:
            diagnostic.path = display
        if result.summary is not None:
            result.summary.path = display


def _module_of(file: SourceFile) -> Tuple[Optional[str], bool]:
    """The module a file is; standard input without a file name is none."""
    return module_name_for(file.path) if file.display != "-" else (None, False)


# What the file pass is given for one file: nothing (read it from disk, through the
# cache), a text to lint in its place, or the result of an earlier pass to reuse.
Given = Union[None, SourceText, FileResult]


def _lint_one(task, options: RunOptions, cache) -> FileResult:
    given, path, display, module_name, is_package = task
    # The collector paused for the whole file, not only its parse: Python's own parse of a
    # skipped file (its summary) and the cache's pickling would set it off on objects
    # that are about to go, and each collection walks everything the run holds.
    with cyclic_gc_paused():
        if given is None:
            return lint_path(path, display, options, module_name, is_package, cache)
        return lint_source(given, path, display, options, module_name, is_package)


# In a worker process only: what every file of the run shares, set once by
# the pool's initializer rather than sent with each file.
_worker_shared: Dict[str, object] = {}


def _start_worker(options: RunOptions, cache) -> None:
    _worker_shared.update(options=options, cache=cache)


def _lint_in_worker(task) -> FileResult:
    return _lint_one(task, _worker_shared["options"], _worker_shared["cache"])


def _task_size(task) -> int:
    given, path = task[0], task[1]
    if given is not None:
        return len(given.text)
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _reused(result: FileResult) -> FileResult:
    """A copy of an earlier result that the project phase may filter (it drops file findings in
    place) and whose diagnostics it may complete, leaving the caller's result as it was."""
    return dataclasses.replace(result, diagnostics=[copy.copy(d) for d in result.diagnostics])


def run(
    files: Sequence[SourceFile],
    options: RunOptions,
    jobs: int = 1,
    project: bool = True,
    use_cache: bool = False,
    progress: bool = False,
    cache_root: Optional[Path] = None,
    context: Optional[ProjectContext] = None,
    texts: Optional[Dict[str, Given]] = None,
) -> RunResult:
    """Lint `files` inside their project: the one way every face gets diagnostics.

    The file pass (through the cache, in parallel when it pays), then the project
    phase over these files and the summaries of `context`, the project's other
    files (a summary of one of these files in it is left out: the text linted
    here is the file), the project rules, suppressions and notebook placement,
    and the diagnostics sorted. `texts`, by display path, gives a file's text
    in place of its bytes on disk (standard input, an editor's buffer, flake8's
    lines, a fixed text) or a result to reuse (a file a fix round left alone).
    With `project` false, the file pass alone (summaries for a context)."""
    try:
        return _run(files, options, jobs, project, use_cache, progress, cache_root, context, texts or {})
    finally:
        # What the run froze (`settle_kept_result`) is the collector's again: a long-lived
        # process (the language server) drops one run's results for the next one's.
        gc.unfreeze()


def _run(
    files: Sequence[SourceFile],
    options: RunOptions,
    jobs: int,
    project: bool,
    use_cache: bool,
    progress: bool,
    cache_root: Optional[Path],
    context: Optional[ProjectContext],
    texts: Dict[str, Given],
) -> RunResult:
    cache = Cache(cache_root or options.settings.root, options) if use_cache else None
    results: List[Optional[FileResult]] = [None] * len(files)
    tasks = []
    for index, file in enumerate(files):
        given = texts.get(file.display)
        if isinstance(given, FileResult):
            results[index] = _reused(given)
        else:
            tasks.append((index, (given, file.path, file.display, *_module_of(file))))
    bar = ProgressBar(len(tasks)) if progress else None
    started = time.perf_counter()
    # Largest files first: a worker never ends the run alone on a 1 MB file
    # (longest-processing-time-first scheduling), and the largest syntax trees
    # are built while little else is held, which keeps the peak memory down.
    sizes = [_task_size(task) for _, task in tasks]
    order = sorted(range(len(tasks)), key=lambda position: -sizes[position])
    text_size = sum(size for size, (_, task) in zip(sizes, tasks) if task[0] is not None)
    if jobs > 1 and len(tasks) > 1 and (len(tasks) >= _PARALLEL_THRESHOLD or text_size >= _PARALLEL_CHARS):
        from concurrent.futures import ProcessPoolExecutor  # only for long runs

        with ProcessPoolExecutor(max_workers=jobs, initializer=_start_worker, initargs=(options, cache)) as pool:
            ordered_tasks = [tasks[position][1] for position in order]
            # Small chunks keep the largest-first order meaningful across workers.
            chunksize = max(1, min(8, len(tasks) // (jobs * 32)))
            for position, result in zip(order, pool.map(_lint_in_worker, ordered_tasks, chunksize=chunksize)):
                results[tasks[position][0]] = result
                settle_kept_result()
                if bar:
                    bar.advance()
    else:
        for position in order:
            results[tasks[position][0]] = _lint_one(tasks[position][1], options, cache)
            settle_kept_result()
            if sizes[position] >= LARGE_TREE_BYTES:
                release_freed_memory()  # its syntax tree, if it was parsed, is gone now
            if bar:
                bar.advance()
    if bar:
        bar.close()
    file_pass = time.perf_counter() - started
    started = time.perf_counter()
    project_diagnostics: List[Diagnostic] = []
    model = None
    if project:
        # Before collecting the file findings: the project phase may drop some (TDL201).
        project_diagnostics, model = project_phase(results, files, options, context)
    diagnostics = [d for result in results for d in result.diagnostics] + project_diagnostics
    run_result = RunResult(results, sort_diagnostics(diagnostics))
    run_result.timings = {"file_pass": file_pass, "project_phase": time.perf_counter() - started}
    run_result.projects = [ProjectRun(None, options, list(files), results, context, model)]
    return run_result


def lint_text(source: SourceText, file: SourceFile, options: RunOptions, context: Optional[ProjectContext]) -> RunResult:
    """Lint one text as the file `file` of its project (`context`: the project's summaries)."""
    return run([file], options, context=context, texts={file.display: source})


# -- projects: the named files reported, the others analysed through their summaries ----------------


def summary_options(options: RunOptions) -> RunOptions:
    """The file pass for a summary only: no rule runs (the summary does not depend on them)."""
    return dataclasses.replace(options, selected=frozenset())


def _index_key(scope_root: Path, path: Path) -> str:
    """The file's path relative to the project root, in POSIX form (the index outlives the cwd)."""
    root, text = str(scope_root), str(path)
    if text.startswith(root + os.sep):
        return text[len(root) + 1 :].replace(os.sep, "/")
    return Path(os.path.relpath(text, root)).as_posix()


def project_context(
    scope: ProjectScope,
    options: RunOptions,
    skip: Set[Path],
    jobs: int = 1,
    use_cache: bool = True,
    progress: bool = False,
    index: Optional[SummaryIndex] = None,
    pause: Optional[Callable[[], bool]] = None,
    started: Optional[Callable[[ProjectContext], None]] = None,
) -> Tuple[ProjectContext, Optional[SummaryIndex]]:
    """The summaries of the project's files other than `skip`: fresh ones from the
    summary index, the rest computed (in parallel when asked) and added to it.

    With `pause`, the missing summaries are computed one at a time in this
    thread, calling `pause()` before each (a language server yields to buffer
    lints there); when it returns False the work stops with what it has.
    `started` is called with the context once it holds the fresh summaries;
    the computed ones are added to that same context."""
    forget_packages()  # packages may have gained or lost an `__init__.py` since the last call
    if use_cache and index is None:
        index = SummaryIndex(scope.root, summary_fingerprint(options)).load()
    context = ProjectContext()
    summaries, paths = context.summaries, context.paths
    missing: List[SourceFile] = []
    for file in scope.files:
        if file.path in skip:
            continue
        paths[file.display] = file.path
        if index is not None:
            fresh, summary = index.lookup(_index_key(scope.root, file.path), file.path, module_name_for(file.path)[0])
            if fresh:
                if summary is not None:
                    summary.path = file.display
                    summaries[file.display] = summary
                continue
        missing.append(file)
    if started is not None:
        started(context)
    if missing and pause is not None:
        computed = 0
        for file in missing:
            if not pause():
                break
            module_name, is_package = module_name_for(file.path)
            _add_summary(
                context, index, scope, file, lint_path(file.path, file.display, summary_options(options), module_name, is_package)
            )
            computed += 1
        missing = missing[:computed]
    elif missing:
        for file, result in zip(
            missing, run(missing, summary_options(options), jobs=jobs, project=False, progress=progress).files
        ):
            _add_summary(context, index, scope, file, result)
    if index is not None:
        index.forget_missing({_index_key(scope.root, file.path) for file in scope.files})
    context.computed = len(missing)
    return context, index


def _add_summary(context: ProjectContext, index: Optional[SummaryIndex], scope: ProjectScope, file: SourceFile, result) -> None:
    if result.summary is not None:
        context.summaries[file.display] = result.summary
    if index is not None and result.digest is not None:
        record_summary(index, scope, file, result)


def record_summary(index: SummaryIndex, scope: ProjectScope, file: SourceFile, result: FileResult) -> None:
    """Keep a file's summary from a lint of its bytes on disk (its stat and digest are in the result)."""
    index.record(_index_key(scope.root, file.path), result.stat, result.digest, module_name_for(file.path)[0], result.summary)


def run_scopes(
    scopes: Sequence[ProjectScope],
    jobs: int = 1,
    use_cache: bool = True,
    progress: bool = False,
    extra_codes: frozenset = frozenset(),
    reuse_results: bool = False,
) -> RunResult:
    """Lint the named files of each project; the project phase sees every file of it.

    With `reuse_results` (a caller that only reports diagnostics), a project where nothing
    changed since a run reported the named files answers from that run's record (see
    `results_cache`); every run through the cache records its answer."""
    combined = RunResult(
        timings={
            "file_pass": 0.0,
            "project_phase": 0.0,
            "context": 0.0,
            "context_files": 0,
            "context_computed": 0,
            "projects_unchanged": 0,
        }
    )
    for scope in scopes:
        options = make_options(scope.settings, first_party_names(scope.files), extra_codes)
        keyed = [(_index_key(scope.root, file.path), file) for file in scope.files]
        results_cache = ResultsCache.for_project(scope.root, options) if use_cache else None
        if results_cache is not None and reuse_results:
            started = time.perf_counter()
            recorded = _recorded_run(scope, options, keyed, results_cache)
            combined.timings["context"] += time.perf_counter() - started
            if recorded is not None:
                combined.timings["projects_unchanged"] += 1
                combined.files.extend(recorded.results)
                combined.diagnostics.extend(d for result in recorded.results for d in result.diagnostics)
                combined.projects.append(recorded)
                continue
        started = time.perf_counter()
        context, index = project_context(scope, options, scope.named, jobs=jobs, use_cache=use_cache, progress=progress)
        combined.timings["context"] += time.perf_counter() - started
        combined.timings["context_files"] += len(context.paths)
        combined.timings["context_computed"] += context.computed
        named = scope.named_files
        part = run(named, options, jobs=jobs, use_cache=use_cache, progress=progress, cache_root=scope.root, context=context)
        if index is not None:
            for file, result in zip(named, part.files):
                if result.digest is not None:
                    record_summary(index, scope, file, result)
            index.save()
            if results_cache is not None:
                _record_run(results_cache, index, keyed, named, part)
        combined.files.extend(part.files)
        combined.diagnostics.extend(part.diagnostics)
        for name in ("file_pass", "project_phase"):
            combined.timings[name] += part.timings[name]
        combined.projects.append(ProjectRun(scope, options, named, part.files, context, part.projects[0].model))
    combined.diagnostics = sort_diagnostics(combined.diagnostics)
    return combined


def _recorded_run(
    scope: ProjectScope, options: RunOptions, keyed: List[Tuple[str, SourceFile]], results_cache: ResultsCache
) -> Optional[ProjectRun]:
    """The project's run answered from its results record, when nothing it depends on changed;
    only the files with findings are read (for the output's source lines)."""
    key_of = {file.path: key for key, file in keyed}
    named = scope.named_files
    answer = results_cache.answer(
        keyed,
        [key_of[file.path] for file in named],
        lambda path: module_name_for(path)[0],
        functools.partial(config_files, scope.settings),
    )
    if answer is None:
        return None
    results = []
    for file in named:
        diagnostics = answer[key_of[file.path]]
        source = None
        if diagnostics:
            try:
                source = _decoded(read_bytes(file.path), file.path)
            except SourceError:
                return None  # gone since its stamp was checked: lint it for real
        results.append(FileResult(file.display, diagnostics, source=source, from_cache=True))
    return ProjectRun(scope, options, named, results)


def _record_run(
    results_cache: ResultsCache,
    index: SummaryIndex,
    keyed: List[Tuple[str, SourceFile]],
    named: List[SourceFile],
    part: RunResult,
) -> None:
    """Keep the run's answer for the project, with the stamps of what it was computed from."""
    files = file_stamps(index, keyed)
    model = part.projects[0].model
    listing = model.config_files if model is not None else None
    configs = listing.stamps if isinstance(listing, ConfigListing) and listing.listed is not None else None
    key_of = {file.display: key for key, file in keyed}
    reported: Dict[str, List[Diagnostic]] = {key_of[file.display]: [] for file in named}
    for diagnostic in part.diagnostics:
        key = key_of.get(diagnostic.path)
        if key not in reported:
            files = None  # a finding outside the named files: nothing to key it by
            break
        reported[key].append(diagnostic)
    if files is None:
        results_cache.forget()
        return
    results_cache.save(results_cache.merged(ResultsRecord(os.getcwd(), files, reported, configs)))


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
