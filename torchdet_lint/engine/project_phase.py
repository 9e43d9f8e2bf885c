"""The project phase: builds the project model from the file results, runs the
selected project rules over it, drops the file findings an enabling entry
point silences (TDL201 and flag-honouring TDL203; TDL306 where every entry
point reaching it turns Inductor's deterministic mode on), applies
suppressions and places a notebook's findings in its cells.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from torchdet_lint.checks import project_rule_classes
from torchdet_lint.core.diagnostics import (
    DRAW_PLACEHOLDER,
    KEPT_IF_CUDA,
    KEPT_IF_FIRST_PARTY_DRAWS,
    KEPT_IF_REEXPORTED,
    KEPT_IF_TRAINING,
    SILENCED_BY_FLAG,
    SILENCED_BY_REACHED_COVERS,
    SILENCED_BY_SEEDING_CONSTRUCTOR,
    SILENCED_BY_SET_EPOCH,
    TIED_TO_TORCH_SEED,
    Applicability,
    Diagnostic,
    Fix,
)
from torchdet_lint.core.source import LineIndex
from torchdet_lint.engine.discovery import Excluder
from torchdet_lint.engine.file_pass import FileResult, RunOptions
from torchdet_lint.engine.suppressions import UNUSED_NOQA, apply_suppressions, unused_noqa
from torchdet_lint.model.project import Project
from torchdet_lint.model.summary import FileSummary


@dataclass
class ProjectContext:
    """The project's files that are not reported: their summaries, for the analysis only."""

    summaries: Dict[str, FileSummary] = field(default_factory=dict)  # by path as displayed
    paths: Dict[str, Path] = field(default_factory=dict)
    computed: int = 0  # summaries that were not fresh in the summary index


def build_project(
    results: Sequence[FileResult], files: Sequence, options: RunOptions, context: Optional[ProjectContext] = None
) -> Project:
    """The project model over the results of a file pass (`files`: their `SourceFile`s)
    and the summaries of the project's other files; only `results` are reported."""
    linted = {r.path for r in results}
    # The context may hold a summary of a linted file (an editor's or flake8's context is the
    # whole project): the text linted now is that file, even when it has no summary.
    summaries: Dict[str, FileSummary] = {}
    paths: Dict[str, Path] = {}
    if context is not None:
        summaries = {d: s for d, s in context.summaries.items() if d not in linted}
        paths = {d: p for d, p in context.paths.items() if d not in linted}
    summaries.update((r.path, r.summary) for r in results if r.summary is not None)
    paths.update((file.display, file.path) for file in files)
    return Project(
        summaries=summaries,
        paths=paths,
        sources={r.path: r.source for r in results},
        settings=options.settings,
        torch_version=options.torch_version,
        first_party=options.first_party,
        reported=linted if context is not None else None,
        config_files=functools.partial(config_files, options.settings),
    )


CONFIG_SUFFIXES = (".yaml", ".yml")


def config_files(settings) -> List[Path]:
    """The project's YAML configs (what hydra, hyperpyyaml and LightningCLI build from), with
    the project's excludes and `.gitignore` applied."""
    root = Path(settings.root)
    excluder = Excluder(root, list(settings.exclude) + list(settings.extend_exclude))
    found: List[Path] = []
    for directory, dirnames, filenames in os.walk(root):
        base = Path(directory)
        dirnames[:] = sorted(d for d in dirnames if not excluder.excluded(base / d, True))
        found.extend(base / name for name in sorted(filenames) if name.endswith(CONFIG_SUFFIXES))
    return found


def project_phase(
    results: Sequence[FileResult], files: Sequence, options: RunOptions, context: Optional[ProjectContext] = None
) -> Tuple[List[Diagnostic], Optional[Project]]:
    """The project rules' diagnostics on the files of `results` (suppressions applied),
    and the project model they ran over (None when no project rule is selected and
    nothing needed it); `context` holds the summaries of the project's other files.

    Also the project-level filter of TDL201 (and of the third-party kernels the
    flag makes deterministic, TDL203): those file diagnostics are removed from
    `results` (in place) when an entry point enables deterministic mode, so
    callers collect the file diagnostics after calling this.
    """
    rules = [rule() for rule in project_rule_classes(options.selected)]
    has_flag_findings = any(d.extra.get(SILENCED_BY_FLAG) for r in results for d in _file_findings(r))
    has_reach_findings = any(d.extra.get(SILENCED_BY_REACHED_COVERS) for r in results for d in _file_findings(r))
    has_epoch_findings = any(d.extra.get(SILENCED_BY_SET_EPOCH) for r in results for d in _file_findings(r))
    has_handed_rngs = any(d.extra.get(SILENCED_BY_SEEDING_CONSTRUCTOR) for r in results for d in _file_findings(r))
    has_late_builds = any(d.extra.get(KEPT_IF_FIRST_PARTY_DRAWS) for r in results for d in _file_findings(r))
    has_backward_only = any(
        d.extra.get(KEPT_IF_TRAINING) or d.extra.get(KEPT_IF_CUDA) for r in results for d in _file_findings(r)
    )
    has_tied_fixes = any(d.extra.get(TIED_TO_TORCH_SEED) and d.fix is not None for r in results for d in _file_findings(r))
    has_reexports = any(d.extra.get(KEPT_IF_REEXPORTED) for r in results for d in _file_findings(r))
    filters = (
        has_flag_findings,
        has_reach_findings,
        has_epoch_findings,
        has_handed_rngs,
        has_late_builds,
        has_reexports,
        has_backward_only,
        has_tied_fixes,
    )
    if not (rules or any(filters)):
        return _unused_noqa(results, files, {}, options), None
    project = build_project(results, files, options, context)
    # The filters below apply to the findings a `noqa` silenced too: a directive is judged
    # on what the file would report without it (TDL900).
    if has_backward_only:
        # A condition that needs a backward pass cannot happen in runs that never train, nor a
        # CUDA-only one in runs that never leave the CPU.
        _keep(results, lambda d: _condition_can_hold(project, d))
    if has_reexports:
        # TDL101/TDL104: a first-party name read as torch's stands for it only where the project's
        # module re-exports torch's object under that name.
        _keep(
            results,
            lambda d: all(project.external_name(d.path, name) == torch for name, torch in d.extra.get(KEPT_IF_REEXPORTED) or ()),
        )
    if has_flag_findings and project.deterministic_mode_enabled():
        _keep(results, lambda d: not d.extra.get(SILENCED_BY_FLAG))
    if has_reach_findings:
        _keep(results, lambda d: not _silenced_in_reach(project, d))
    if has_epoch_findings:
        _keep(results, lambda d: not _epoch_set_elsewhere(project, d))
    if has_late_builds:
        _keep(results, lambda d: _late_build(project, d) is not None)
    if has_tied_fixes:
        unseeded = [
            (entry, project.reached_nodes(entry))
            for entry in project.runs
            if entry.spawn is not None and "torch" not in project.entry_reach(entry).covers
        ]
        for result in results:
            for diagnostic in _file_findings(result) if unseeded else ():
                _untie_from_unseeded_torch(project, diagnostic, unseeded)
    if has_handed_rngs:
        # TDL005: handed to a first-party
        # constructor that seeds it itself, the object is seeded.
        _keep(
            results,
            lambda d: (
                not any(project.seeds_argument(d.path, *handed) for handed in d.extra.get(SILENCED_BY_SEEDING_CONSTRUCTOR) or ())
            ),
        )
    by_path: Dict[str, List[Diagnostic]] = {}
    for rule in rules:
        for diagnostic in rule.check(project):
            if project.is_reported(diagnostic.path):
                by_path.setdefault(diagnostic.path, []).append(diagnostic)
    kept: List[Diagnostic] = []
    suppressed: Dict[str, List[Diagnostic]] = {}
    for path, diagnostics in by_path.items():
        source = project.sources.get(path)
        text = source.text if source is not None else ""
        where = project.paths.get(path, Path(path))
        notebook = getattr(source, "notebook", None)
        for diagnostic in apply_suppressions(diagnostics, text, options.settings, where, suppressed.setdefault(path, [])):
            # A notebook's findings in cells, as the file pass places its own (idempotent).
            kept.append(notebook.place(diagnostic) if notebook is not None else diagnostic)
    return kept + _unused_noqa(results, files, suppressed, options), project


def _file_findings(result: FileResult) -> List[Diagnostic]:
    return result.diagnostics + (result.suppressed or [])


def _keep(results: Sequence[FileResult], keep) -> None:
    """Filter the file findings of `results` in place, the reported and the suppressed alike."""
    for result in results:
        result.diagnostics = [d for d in result.diagnostics if keep(d)]
        if result.suppressed:
            result.suppressed = [d for d in result.suppressed if keep(d)]


def _unused_noqa(
    results: Sequence[FileResult], files: Sequence, project_suppressed: Dict[str, List[Diagnostic]], options: RunOptions
) -> List[Diagnostic]:
    """TDL900 for each reported file, from the findings its directives silenced that are still
    in its final result. A result whose suppressions were not applied yet (`suppressed` is None)
    is not judged."""
    if UNUSED_NOQA not in options.selected:
        return []
    found: List[Diagnostic] = []
    paths = {file.display: file.path for file in files}
    for result in results:
        if result.suppressed is None or result.source is None:
            continue
        notebook = getattr(result.source, "notebook", None)
        text = notebook.code if notebook is not None else result.source.text
        silenced = result.suppressed + project_suppressed.get(result.path, [])
        path = paths.get(result.path, Path(result.path))
        for diagnostic in unused_noqa(text, silenced, options.settings, path, result.path, options.selected):
            found.append(notebook.place(diagnostic) if notebook is not None else diagnostic)
    return found


def _late_build(project: Project, diagnostic: Diagnostic) -> Optional[Diagnostic]:
    """TDL004: a seed after building a first-party module that
    draws from torch, named in the message; dropped when none of the calls before it does."""
    candidates = diagnostic.extra.get(KEPT_IF_FIRST_PARTY_DRAWS)
    if not candidates:
        return diagnostic
    for target, spelling, line in candidates:
        if project.builds_drawing_module(diagnostic.path, target):
            where = line if isinstance(line, str) else f"line {line}"  # a notebook's cell line, placed already
            diagnostic.message = diagnostic.message.replace(DRAW_PLACEHOLDER, f"`{spelling}(...)` ({where})")
            return diagnostic
    return None


def _untie_from_unseeded_torch(project: Project, diagnostic: Diagnostic, unseeded: list) -> None:
    """TDL101/TDL104: `torch.Generator().manual_seed(torch.initial_seed())` in a function that runs in
    a new process which never seeds torch (TDL001 there; `unseeded`: those runs and what they reach)
    is seeded by the operating system, once per process and run: the fix would look done and still
    vary, so it needs the seed first (unsafe)."""
    if not diagnostic.extra.get(TIED_TO_TORCH_SEED) or diagnostic.fix is None:
        return
    node = project.node_at(diagnostic.path, _analysed_line(project, diagnostic))
    for entry, nodes in unseeded:
        if node not in nodes:
            continue
        diagnostic.fix = Fix(
            f"{diagnostic.fix.title} (unsafe here: `{entry.spawn.function}` never seeds torch)",
            Applicability.UNSAFE,
            diagnostic.fix.edits,
        )
        diagnostic.message += (
            f"; `{entry.spawn.function}`, started by `{entry.spawn.launcher}(...)` at {entry.path}:{entry.line}, never "
            "seeds torch, so a generator seeded from `torch.initial_seed()` still differs on every run until it does (TDL001)"
        )
        return


def _epoch_set_elsewhere(project: Project, diagnostic: Diagnostic) -> bool:
    """TDL105: the epoch loop often lives in another module
    than the sampler's builder. A `.set_epoch(` of another file tells a sampler its epoch when
    its receiver can be that sampler: a name the sampler leaves its function under (returned,
    passed, stored in an attribute), a name bound to a call of a function that returns it alone,
    or `<loader>.sampler` for such a name of the loader built with it."""
    leaves = diagnostic.extra.get(SILENCED_BY_SET_EPOCH)
    if not leaves:
        return False
    names, functions, loader_names, loader_functions = leaves
    for display, summary in project.summaries.items():
        if display == diagnostic.path:
            continue  # the file's own calls were read by the rule, name by name
        for receiver, origin in summary.set_epoch:
            parts = receiver.split(".")
            called = origin.rsplit(".", 1)[-1] if origin else ""  # `sampler = build_sampler(...)`
            if parts[-1] in names or (len(parts) == 1 and called in functions):
                return True
            if len(parts) >= 2 and parts[-1] == "sampler":
                if parts[-2] in loader_names or (len(parts) == 2 and called in loader_functions):
                    return True
    return False


def _analysed_line(project: Project, diagnostic: Diagnostic) -> int:
    """The diagnostic's line in the analysed text (a notebook's joined cells), as the spans count."""
    source = project.sources.get(diagnostic.path)
    if diagnostic.cell is not None and source is not None:
        return LineIndex(source.text).position(diagnostic.start_offset)[0]
    return diagnostic.line


def _condition_can_hold(project: Project, diagnostic: Diagnostic) -> bool:
    backward, cuda = bool(diagnostic.extra.get(KEPT_IF_TRAINING)), bool(diagnostic.extra.get(KEPT_IF_CUDA))
    if not (backward or cuda):
        return True
    return project.condition_can_hold(diagnostic.path, _analysed_line(project, diagnostic), backward, cuda)


def _silenced_in_reach(project: Project, diagnostic: Diagnostic) -> bool:
    kinds = diagnostic.extra.get(SILENCED_BY_REACHED_COVERS)
    if not kinds:
        return False
    return project.covered_where_reached(diagnostic.path, _analysed_line(project, diagnostic), kinds)
