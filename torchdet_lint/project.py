"""The project phase: builds the first-party module graph from the file
summaries (no re-parsing) and runs the project rules over it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Sequence

from torchdet_lint.engine import FileResult, RunOptions, apply_suppressions
from torchdet_lint.rule import Diagnostic, ProjectRule, all_rules


class Project:
    """Every file's summary, indexed for the project rules."""

    def __init__(self, results: Sequence[FileResult], files: Sequence, options: RunOptions) -> None:
        self.options = options
        self.settings = options.settings
        self.results = list(results)
        self.paths: Dict[str, Path] = {file.display: file.path for file in files}
        self.summaries = {r.path: r.summary for r in self.results if r.summary is not None}


def run_project_rules(results: Sequence[FileResult], files: Sequence, options: RunOptions) -> List[Diagnostic]:
    rules = [rule() for code, rule in all_rules().items() if code in options.selected and issubclass(rule, ProjectRule)]
    if not rules:
        return []
    project = Project(results, files, options)
    by_path: Dict[str, List[Diagnostic]] = {}
    for rule in rules:
        for diagnostic in rule.check(project):
            by_path.setdefault(diagnostic.path, []).append(diagnostic)
    sources = {r.path: r.source for r in results}
    kept: List[Diagnostic] = []
    for path, diagnostics in by_path.items():
        source = sources.get(path)
        text = source.text if source is not None else ""
        kept.extend(apply_suppressions(diagnostics, text, options.settings, project.paths.get(path, Path(path))))
    return kept
