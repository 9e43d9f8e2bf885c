"""Helpers to lint sources in memory through the real engine (tests, fixtures, docs)."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from torchdet_lint.core.diagnostics import Diagnostic
from torchdet_lint.engine.config import Settings
from torchdet_lint.engine.discovery import discover
from torchdet_lint.engine.runner import RunResult, first_party_names, make_options, run

_HEADER_RE = re.compile(r"^#\s*fixture:\s*(\{.*\})\s*$", re.M)
_KEYS = {
    "select": "select",
    "ignore": "ignore",
    "extend-select": "extend_select",
    "profile": "profile",
    "torch-version": "torch_version",
    "library-versions": "library_versions",
    "seed": "seed",
    "assume-deterministic-mode": "assume_deterministic_mode",
    "entry-points": "entry_points",
    "seed-functions": "seed_functions",
}


def settings_from(config: Dict[str, object], root: Path, select: Optional[Sequence[str]] = None) -> Settings:
    values = {}
    for key, value in config.items():
        attribute = _KEYS[key]
        if isinstance(value, list):
            value = tuple(value)
        if attribute == "seed_functions":
            value = tuple((k, tuple(v)) for k, v in value.items())
        if attribute == "library_versions":
            value = tuple(sorted(value.items()))
        values[attribute] = value
    if select is not None and "select" not in values:
        values["select"] = tuple(select)
    return Settings(root=root, **values)


def fixture_config(text: str) -> Dict[str, object]:
    """A fixture's settings from a `# fixture: {json}` line, e.g. `{"torch-version": "2.3"}`."""
    match = _HEADER_RE.search(text)
    return json.loads(match.group(1)) if match else {}


def lint_tree(root: Path, settings: Settings, paths: Optional[Sequence[str]] = None) -> RunResult:
    files, _ = discover([str(p) for p in (paths or [root])], root, cwd=root)
    options = make_options(settings, first_party_names(files))
    return run(files, options, jobs=1)


def lint_sources(
    sources: Dict[str, str], config: Optional[Dict[str, object]] = None, select: Optional[Sequence[str]] = None
) -> List[Diagnostic]:
    """Write the sources into a temporary project and lint it: the diagnostics."""
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        for name, text in sources.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        settings = settings_from(config or {}, root, select)
        return lint_tree(root, settings).diagnostics


def concise(diagnostics: Sequence[Diagnostic]) -> str:
    lines = []
    for d in diagnostics:
        where = f"{d.path}:cell {d.cell}:{d.line}:{d.column}" if d.cell is not None else f"{d.path}:{d.line}:{d.column}"
        lines.append(f"{where}: {d.code} {d.message}")
    return "".join(line + "\n" for line in lines)
