"""The rules as a flake8 plugin (`flake8 --select TDL`): each file goes through the
same engine as the command line, configured from `[tool.torchdet-lint]`.

flake8's `--select`/`--extend-select` selectors that name TDL codes choose the
rules to run, exactly as `torchdet-lint --select`/`--extend-select` would; flake8
then applies its own select/ignore/noqa filtering to what is reported. flake8
hands plugins one file at a time: the project rules see that file with the
rest of its project (the other files' summaries, from the summary index,
loaded once per flake8 process and project), as `torchdet-lint FILE` does.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from torchdet_lint import __version__
from torchdet_lint.core.diagnostics import error_diagnostic
from torchdet_lint.core.source import SourceText
from torchdet_lint.engine.config import ConfigError, Settings, with_overrides
from torchdet_lint.engine.discovery import SourceFile
from torchdet_lint.engine.file_pass import RunOptions
from torchdet_lint.engine.project_phase import ProjectContext
from torchdet_lint.engine.runner import first_party_names, lint_text, make_options, project_context
from torchdet_lint.engine.workspace import Workspace

_STDIN_NAMES = ("stdin", "-")


def _tdl_selectors(values: Optional[Sequence[str]]) -> Optional[Tuple[str, ...]]:
    """The selectors of `values` that reach TDL codes (`T` and `TD` mean every rule)."""
    if not values:
        return None
    selected = []
    for value in values:
        value = value.strip().upper()
        if value.startswith("TDL"):
            selected.append(value)
        elif value and "TDL".startswith(value):
            selected.append("TDL")
    return tuple(selected) or None


class Flake8Plugin:
    name = "torchdet-lint"
    version = __version__

    # Set once per flake8 process from its options (see parse_options).
    select: Optional[Tuple[str, ...]] = None
    extend_select: Optional[Tuple[str, ...]] = None
    torch_version: Optional[str] = None
    profile: Optional[str] = None
    _workspace: Optional[Workspace] = None
    # Per project root: its options and the summaries of its files (loaded once).
    _projects: Dict[Path, Tuple[RunOptions, ProjectContext]] = {}

    def __init__(self, tree: Any, lines: List[str], filename: str) -> None:
        # `tree` (flake8's ast) is not used: the engine parses with LibCST. It is
        # requested because flake8 runs file-level plugins only when they take it.
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, parser: Any) -> None:
        parser.add_option(
            "--torchdet-torch-version",
            parse_from_config=True,
            help="torchdet-lint: target torch version (default: config `torch-version`, else the installed torch)",
        )
        parser.add_option(
            "--torchdet-profile",
            parse_from_config=True,
            choices=("reproducible", "strict", "performance"),
            help="torchdet-lint: rule profile (default: config `profile`, else reproducible)",
        )

    @classmethod
    def parse_options(cls, options: argparse.Namespace) -> None:
        cls.select = _tdl_selectors(getattr(options, "select", None))
        cls.extend_select = _tdl_selectors(getattr(options, "extend_select", None))
        cls.torch_version = getattr(options, "torchdet_torch_version", None)
        cls.profile = getattr(options, "torchdet_profile", None)
        cls._workspace = None
        cls._projects = {}

    @classmethod
    def _overrides(cls, settings: Settings) -> Settings:
        return with_overrides(
            settings,
            select=cls.select,
            extend_select=settings.extend_select + cls.extend_select if cls.extend_select else None,
            torch_version=cls.torch_version,
            profile=cls.profile,
        )

    @classmethod
    def project(cls, path: Path) -> Tuple[str, RunOptions, ProjectContext]:
        """The file's path as the command line shows it, its project's options, and the
        summaries of the project's files."""
        if cls._workspace is None:
            cls._workspace = Workspace(Path.cwd(), None, cls._overrides)
        scope = cls._workspace.scope_of_file(path)
        if scope.root not in cls._projects:
            options = make_options(scope.settings, first_party_names(scope.files))
            context, index = project_context(scope, options, set())
            if index is not None:
                index.save()
            cls._projects[scope.root] = (options, context)
        options, context = cls._projects[scope.root]
        display = next(file.display for file in scope.files if file.path == path)
        return display, options, context

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        path = Path.cwd() / "stdin.py" if self.filename in _STDIN_NAMES else Path(self.filename).resolve()
        try:
            display, options, context = self.project(path)
        except ConfigError as error:
            diagnostics = [error_diagnostic(self.filename, f"not analysed: {error}")]
        else:
            source = SourceText("".join(self.lines))
            diagnostics = lint_text(source, SourceFile(path, display, True), options, context).diagnostics
        for d in diagnostics:
            yield d.line, max(d.column - 1, 0), f"{d.code} {d.message}", type(self)
