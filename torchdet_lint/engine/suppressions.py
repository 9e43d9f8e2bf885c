"""Suppressions: `# noqa` comments on the reported line and config `per-file-ignores`."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path
from typing import List, Tuple

from torchdet_lint.core.diagnostics import PARSE_ERROR_CODE, Diagnostic
from torchdet_lint.core.settings import Settings
from torchdet_lint.core.source import LineIndex

_NOQA_RE = re.compile(r"#[ \t]*noqa(?::[ \t]*(?P<codes>[A-Z]+[0-9]+(?:[ \t]*,?[ \t]*[A-Z]+[0-9]+)*))?", re.I)


def apply_suppressions(diagnostics: List[Diagnostic], text: str, settings: Settings, path: Path) -> List[Diagnostic]:
    """Drop diagnostics silenced by `# noqa` on their line or by `per-file-ignores`."""
    ignored = per_file_ignored_codes(settings, path)
    if not diagnostics:
        return diagnostics
    lines = LineIndex(text) if "noqa" in text.lower() else None
    kept = []
    for diagnostic in diagnostics:
        if diagnostic.code != PARSE_ERROR_CODE and any(diagnostic.code.startswith(prefix) for prefix in ignored):
            continue
        if lines is not None and diagnostic.code != PARSE_ERROR_CODE:
            line_number, _ = lines.position(diagnostic.start_offset)
            if noqa_suppresses(lines.line_text(line_number), diagnostic.code):
                continue
        kept.append(diagnostic)
    return kept


def noqa_suppresses(line: str, code: str) -> bool:
    for match in _NOQA_RE.finditer(line):
        codes = match.group("codes")
        if codes is None:
            return True
        if code in {c.upper() for c in re.split(r"[\s,]+", codes) if c}:
            return True
    return False


def per_file_ignored_codes(settings: Settings, path: Path) -> Tuple[str, ...]:
    if not settings.per_file_ignores:
        return ()
    try:
        relative = path.resolve().relative_to(settings.root).as_posix()
    except ValueError:
        relative = path.as_posix()
    codes: List[str] = []
    for pattern, pattern_codes in settings.per_file_ignores:
        if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(path.name, pattern):
            codes.extend(pattern_codes)
    return tuple(codes)
