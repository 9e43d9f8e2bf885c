"""The project phase: builds the project model from the file results, runs the
selected project rules over it, drops the file findings an enabling entry
point silences (TDL201 and flag-honouring TDL203), and applies suppressions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Sequence

from torchdet_lint.checks import project_rule_classes
from torchdet_lint.diagnostics import SILENCED_BY_FLAG, Diagnostic
from torchdet_lint.engine import FileResult, RunOptions
from torchdet_lint.model.project import Project
from torchdet_lint.suppressions import apply_suppressions


def build_project(results: Sequence[FileResult], files: Sequence, options: RunOptions) -> Project:
    """The project model over the results of a file pass (`files`: their `SourceFile`s)."""
    return Project(
        summaries={r.path: r.summary for r in results if r.summary is not None},
        paths={file.display: file.path for file in files},
        sources={r.path: r.source for r in results},
        settings=options.settings,
        torch_version=options.torch_version,
        first_party=options.first_party,
    )


def run_project_rules(results: Sequence[FileResult], files: Sequence, options: RunOptions) -> List[Diagnostic]:
    """The project rules' diagnostics (suppressions applied).

    Also the project-level filter of TDL201 (and of the third-party kernels the
    flag makes deterministic, TDL203): those file diagnostics are removed from
    `results` (in place) when an entry point enables deterministic mode, so
    callers collect the file diagnostics after calling this.
    """
    rules = [rule() for rule in project_rule_classes(options.selected)]
    has_flag_findings = any(d.extra.get(SILENCED_BY_FLAG) for r in results for d in r.diagnostics)
    if not rules and not has_flag_findings:
        return []
    project = build_project(results, files, options)
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
