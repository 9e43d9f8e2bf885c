"""The project phase: builds the project model from the file results, runs the
selected project rules over it, lets the file rules that declare a `refine`
settle their findings against the whole project, applies suppressions and
places a notebook's findings in its cells.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Type

from torchdet_lint.checks import get_rule, project_rule_classes
from torchdet_lint.core.diagnostics import Diagnostic
from torchdet_lint.core.rule import Rule
from torchdet_lint.engine.discovery import Excluder
from torchdet_lint.engine.file_pass import FileResult, RunOptions
from torchdet_lint.engine.results_cache import ConfigListing
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
        config_files=ConfigListing(functools.partial(config_files, options.settings)),
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

    The file findings the rules' `refine` drop are removed from `results` (in place), so
    callers collect the file diagnostics after calling this.
    """
    rules = [rule() for rule in project_rule_classes(options.selected)]
    refiners = _refiners(results)
    if not (rules or refiners):
        return _unused_noqa(results, files, {}, options), None
    project = build_project(results, files, options, context)
    for rule, codes in refiners:
        findings = [d for result in results for d in _file_findings(result) if d.code in codes]
        standing = {id(d) for d in rule.refine(findings, project)}
        _keep(results, lambda d: d.code not in codes or id(d) in standing)
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


def _refiners(results: Sequence[FileResult]) -> List[Tuple[Type[Rule], FrozenSet[str]]]:
    """The file rules whose `refine` has findings to decide in `results`, each with the codes
    it decides (rules sharing one `refine` are called once), in the registry's order."""
    needed: Set[str] = set()
    for result in results:
        for diagnostic in _file_findings(result):
            if diagnostic.code in needed:
                continue
            rule = get_rule(diagnostic.code)
            if rule is not None and issubclass(rule, Rule) and rule.needs_project(diagnostic):
                needed.add(diagnostic.code)
    groups: Dict[Any, Tuple[Type[Rule], Set[str]]] = {}
    for code in sorted(needed):
        rule = get_rule(code)
        groups.setdefault(rule.refine.__func__, (rule, set()))[1].add(code)
    return [(rule, frozenset(codes)) for rule, codes in groups.values()]


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
