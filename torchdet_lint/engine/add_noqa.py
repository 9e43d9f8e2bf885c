"""`--add-noqa`: a `# noqa: CODE` on each line that has findings, merged into a directive
already there, as `ruff check --add-noqa` does. The line is the one a `noqa` is read on:
the line where the finding starts."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Dict, List, Sequence, Set

from torchdet_lint.core.diagnostics import PARSE_ERROR_CODE, Diagnostic, Edit
from torchdet_lint.core.source import LineIndex, encode_source
from torchdet_lint.engine.suppressions import _NOQA_RE, UNUSED_NOQA, _split_codes


@dataclass
class NoqaReport:
    added: int = 0  # directives added or extended
    files: List[str] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)


def noqa_edits(text: str, diagnostics: Sequence[Diagnostic]) -> List[Edit]:
    """The edits that put each diagnostic's code into a `noqa` directive on its line."""
    lines = LineIndex(text)
    wanted: Dict[int, Set[str]] = {}
    for diagnostic in diagnostics:
        if diagnostic.code in (PARSE_ERROR_CODE, UNUSED_NOQA):
            continue  # TDL000 cannot be suppressed; a stale directive is removed, not silenced
        line, _ = lines.position(diagnostic.start_offset)
        wanted.setdefault(line, set()).add(diagnostic.code)
    edits = []
    for line, codes in sorted(wanted.items()):
        text_of_line = lines.line_text(line)
        end = lines.starts[line - 1] + len(text_of_line)
        existing = list(_NOQA_RE.finditer(text_of_line))
        if any(match.group("codes") is None for match in existing):
            continue  # a directive without codes already silences the whole line
        if existing:
            match = existing[-1]
            have = _split_codes(match.group("codes"))
            missing = sorted(codes - have)
            if missing:
                at = lines.starts[line - 1] + match.end("codes")
                edits.append(Edit(at, at, ", " + ", ".join(missing)))
            continue
        edits.append(Edit(end, end, "  # noqa: " + ", ".join(sorted(codes))))
    return edits


def _apply(text: str, edits: Sequence[Edit]) -> str:
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        text = text[: edit.start] + edit.content + text[edit.end :]
    return text


def _tree(code: str):
    """The program's syntax tree as text (None when it does not parse): a comment that lands
    inside a string changes it."""
    try:
        return ast.dump(ast.parse(code))
    except (SyntaxError, ValueError):
        return None


_BACKSLASH_RE = re.compile(r"\\[ \t]*$")


def add_noqa(results, diagnostics: Sequence[Diagnostic], write) -> NoqaReport:
    """Add the directives to the files of `results` (`FileResult`s with their sources);
    `write(path_display, data)` writes a file. A file whose directives would change its
    code (a line that continues in a string or after a backslash) is left as it is."""
    report = NoqaReport()
    by_path: Dict[str, List[Diagnostic]] = {}
    for diagnostic in diagnostics:
        by_path.setdefault(diagnostic.path, []).append(diagnostic)
    for result in results:
        found = by_path.get(result.path)
        if not found or result.source is None:
            continue
        notebook = getattr(result.source, "notebook", None)
        code = notebook.code if notebook is not None else result.source.text
        edits = noqa_edits(code, found)
        if not edits:
            continue
        lines = LineIndex(code)
        if any(_BACKSLASH_RE.search(lines.line_text(lines.position(edit.start)[0])) for edit in edits):
            report.errors.append(f"{result.path}: a line to mark ends in a backslash; no `noqa` added")
            continue
        new_code = _apply(code, edits)
        before = _tree(code)
        if before is not None and _tree(new_code) != before:
            report.errors.append(f"{result.path}: a `noqa` comment would land inside a string; no `noqa` added")
            continue
        if notebook is not None:
            raw = result.source.raw
            data = encode_source(raw, notebook.apply_edits(edits))
        else:
            data = encode_source(result.source, new_code)
        write(result.path, data)
        report.added += len(edits)
        report.files.append(result.path)
    return report
