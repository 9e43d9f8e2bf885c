"""Suppressions: `# noqa` comments on the reported line, file-level
`# torchdet-lint: noqa: CODE` directives, config `per-file-ignores`, and the fixes
`fixable`/`unfixable` withhold; and, once a file's final diagnostics are known,
the directives that suppressed nothing (TDL900, `unused_noqa`).
"""

from __future__ import annotations

import fnmatch
import functools
import io
import re
import tokenize
from pathlib import Path
from typing import FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple

from torchdet_lint.checks import rule_codes
from torchdet_lint.checks.unused_noqa import UnusedNoqa
from torchdet_lint.core.diagnostics import PARSE_ERROR_CODE, Applicability, Diagnostic, Edit, Fix
from torchdet_lint.core.settings import Settings
from torchdet_lint.core.source import LineIndex
from torchdet_lint.engine.config import selector_specificity

_CODE = r"[A-Za-z]+[0-9]+"
_CODES = rf"{_CODE}(?:[ \t]*,?[ \t]*{_CODE})*"
_NOQA_RE = re.compile(rf"#[ \t]*noqa(?::[ \t]*(?P<codes>{_CODES}))?", re.I)
# As Ruff's file-level directive: on a line of its own, anywhere in the file. The bare form
# (`# torchdet-lint: noqa`, no codes) skips the file before it is parsed (`file_pass`).
_FILE_NOQA_RE = re.compile(rf"^[ \t]*#[ \t]*torchdet-lint:[ \t]*noqa:[ \t]*(?P<codes>{_CODES})", re.M | re.I)
# `# torchdet-lint: noqa` alone: the file is skipped whole (the file pass does not parse it).
_FILE_EXEMPT_RE = re.compile(r"^[ \t]*#[ \t]*torchdet-lint:[ \t]*noqa[ \t]*$", re.M | re.I)
_CODE_RE = re.compile(_CODE)
# Diagnostic.extra key of a suppressed diagnostic: "file" (a file-level directive) or "line".
SUPPRESSED_BY = "suppressed_by"
UNUSED_NOQA = UnusedNoqa.code


def _split_codes(codes: str) -> Set[str]:
    return {code.upper() for code in _CODE_RE.findall(codes)}


def file_exempt(text: str) -> bool:
    """Whether a bare file-level `# torchdet-lint: noqa` skips the whole file."""
    return _FILE_EXEMPT_RE.search(text) is not None


def file_level_codes(text: str) -> FrozenSet[str]:
    """The codes of the file-level `# torchdet-lint: noqa: CODE[, CODE]` directives of a text."""
    if "torchdet-lint" not in text.lower():
        return frozenset()
    codes: Set[str] = set()
    for match in _FILE_NOQA_RE.finditer(text):
        codes |= _split_codes(match.group("codes"))
    return frozenset(codes)


def apply_suppressions(
    diagnostics: List[Diagnostic],
    text: str,
    settings: Settings,
    path: Path,
    suppressed: Optional[List[Diagnostic]] = None,
) -> List[Diagnostic]:
    """Drop diagnostics silenced by `# noqa` on their line, a file-level directive or
    `per-file-ignores`, and the fixes of rules that are not fixable. The diagnostics a
    directive silenced are added to `suppressed` (for `unused_noqa`)."""
    ignored = per_file_ignored_codes(settings, path)
    if not diagnostics:
        return diagnostics
    fix_allowed = fixable_checker(settings)
    has_noqa = "noqa" in text.lower()
    if has_noqa and file_exempt(text):
        return []
    lines = LineIndex(text) if has_noqa else None
    file_codes = file_level_codes(text) if has_noqa else frozenset()
    kept = []
    for diagnostic in diagnostics:
        if diagnostic.fix is not None and not fix_allowed(diagnostic.code):
            diagnostic.fix = None
        if diagnostic.code == PARSE_ERROR_CODE:
            kept.append(diagnostic)
            continue
        if any(diagnostic.code.startswith(prefix) for prefix in ignored):
            continue
        how = None
        if diagnostic.code in file_codes:
            how = "file"
        elif lines is not None:
            line_number, _ = lines.position(diagnostic.start_offset)
            if noqa_suppresses(lines.line_text(line_number), diagnostic.code):
                how = "line"
        if how is None:
            kept.append(diagnostic)
        elif suppressed is not None:
            diagnostic.extra[SUPPRESSED_BY] = how
            suppressed.append(diagnostic)
    return kept


def noqa_suppresses(line: str, code: str) -> bool:
    for match in _NOQA_RE.finditer(line):
        codes = match.group("codes")
        if codes is None:
            return True
        if code in _split_codes(codes):
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


@functools.lru_cache(maxsize=64)
def fixable_checker(settings: Settings):
    """Whether a rule's fixes are offered: `fixable` (default: every rule) less `unfixable`,
    the more specific selector winning as in the rule selection."""
    if settings.fixable is None and not settings.unfixable:
        return lambda code: True

    def allowed(code: str) -> bool:
        wanted = 0 if settings.fixable is None else selector_specificity(settings.fixable, code)
        return wanted >= 0 and wanted > selector_specificity(settings.unfixable, code)

    return functools.lru_cache(maxsize=None)(allowed)


# -- unused directives (TDL900) ----------------------------------------------------------------


class _Directive:
    """One `noqa` directive with codes: where it is and where each code is written."""

    def __init__(self, kind: str, start: int, end: int, codes: List[Tuple[str, int, int]], comment: Tuple[int, int]) -> None:
        self.kind = kind  # "line" or "file"
        self.start, self.end = start, end  # the directive, from its `#` to its last code
        self.codes = codes  # (code as written, start, end)
        self.comment = comment  # the whole comment token


def _comments(text: str) -> Iterator[Tuple[int, str]]:
    """(offset, text) of every comment; none when the text does not tokenize."""
    index = LineIndex(text)
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                yield index.offset(token.start[0], token.start[1]), token.string
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return


# Only a directive naming one of our codes can be reported (another tool's codes are left to
# that tool): a file without `noqa` followed by `TDL` on one line has none, and is not tokenized
# to find out. Most `noqa` comments of a big project are for other linters.
_ANY_OWN_NOQA_RE = re.compile(r"noqa[^\r\n]*TDL", re.I)


def _directives(text: str) -> Iterator[_Directive]:
    if _ANY_OWN_NOQA_RE.search(text) is None:
        return
    for offset, comment in _comments(text):
        span = (offset, offset + len(comment))
        file_match = _FILE_NOQA_RE.match(comment)
        if file_match is not None:
            yield _directive("file", file_match, offset, span)
            continue
        for match in _NOQA_RE.finditer(comment):
            if match.group("codes") is not None:
                yield _directive("line", match, offset, span)


def _directive(kind: str, match: "re.Match[str]", offset: int, comment: Tuple[int, int]) -> _Directive:
    codes_start = match.start("codes")
    codes = [
        (code.group(0), offset + codes_start + code.start(), offset + codes_start + code.end())
        for code in _CODE_RE.finditer(match.group("codes"))
    ]
    return _Directive(kind, offset + match.start(), offset + match.end(), codes, comment)


def unused_noqa(
    text: str,
    suppressed: Sequence[Diagnostic],
    settings: Settings,
    path: Path,
    display: str,
    selected: FrozenSet[str],
) -> List[Diagnostic]:
    """TDL900 on the directives of `text` that suppress nothing, given the diagnostics they
    suppressed that are still in the file's final result (see `UnusedNoqa`)."""
    if UNUSED_NOQA not in selected or "noqa" not in text.lower() or file_exempt(text):
        return []
    ignored = per_file_ignored_codes(settings, path)
    if any(UNUSED_NOQA.startswith(prefix) for prefix in ignored) or UNUSED_NOQA in file_level_codes(text):
        return []
    lines = LineIndex(text)
    used_in_file = {d.code for d in suppressed if d.extra.get(SUPPRESSED_BY) == "file"}
    used_on_line = {(lines.position(d.start_offset)[0], d.code) for d in suppressed if d.extra.get(SUPPRESSED_BY) == "line"}
    rules = frozenset(rule_codes())
    found = []
    for directive in _directives(text):
        line = lines.position(directive.start)[0]
        if any(code.upper() == UNUSED_NOQA for code, _, _ in directive.codes):
            continue
        unused, unknown = [], []
        for written, start, end in directive.codes:
            code = written.upper()
            if not code.startswith("TDL"):
                continue  # another tool's code
            if code not in rules and code != PARSE_ERROR_CODE:
                unknown.append((written, start, end))
                continue
            used = code in used_in_file if directive.kind == "file" else (line, code) in used_on_line
            if used or any(code.startswith(prefix) for prefix in ignored):
                continue
            if code in selected or code == PARSE_ERROR_CODE:  # TDL000 is never suppressed
                unused.append((written, start, end))
        if unused or unknown:
            found.append(_unused_diagnostic(text, lines, display, directive, unused, unknown))
    return found


def _unused_diagnostic(text: str, lines: LineIndex, display: str, directive: _Directive, unused, unknown) -> Diagnostic:
    parts = []
    if unused:
        parts.append("unused: " + ", ".join(f"`{written}`" for written, _, _ in unused))
    if unknown:
        parts.append("unknown: " + ", ".join(f"`{written}`" for written, _, _ in unknown))
    line, column = lines.position(directive.start)
    end_line, end_column = lines.position(directive.end)
    dropped = {start for _, start, _ in unused + unknown}
    kept = [written for written, start, _ in directive.codes if start not in dropped]
    if kept:
        first, last = directive.codes[0][1], directive.codes[-1][2]
        edits = (Edit(first, last, ", ".join(kept)),)
        title = "Remove the " + ("unused and unknown" if unused and unknown else "unused" if unused else "unknown") + " codes"
    else:
        edits = (_removal(text, lines, directive),)
        title = "Remove the unused `noqa` directive"
    return Diagnostic(
        path=display,
        line=line,
        column=column + 1,
        end_line=end_line,
        end_column=end_column + 1,
        code=UNUSED_NOQA,
        name=UnusedNoqa.name,
        message=f"unused `noqa` directive ({'; '.join(parts)})",
        fix=Fix(title, Applicability.SAFE, edits),
        start_offset=directive.start,
        end_offset=directive.end,
    )


def _removal(text: str, lines: LineIndex, directive: _Directive) -> Edit:
    """The edit that takes a whole directive away: a file-level one with its line; a line
    directive with the blanks before it, or down to a bare `#` when a comment follows it."""
    comment_start, comment_end = directive.comment
    if directive.kind == "file":
        line, _ = lines.position(directive.start)
        start = lines.starts[line - 1]
        end = lines.starts[line] if line < len(lines.starts) else len(text)
        return Edit(start, end, "")
    if text[directive.end : comment_end].strip():  # `# noqa: TDL301 - why`: the comment stays
        return Edit(directive.start, directive.end, "#" if directive.start == comment_start else "")
    start = directive.start
    while start > 0 and text[start - 1] in " \t":
        start -= 1
    line, _ = lines.position(directive.start)
    if start == lines.starts[line - 1]:  # a comment alone on its line: the line goes
        end = lines.starts[line] if line < len(lines.starts) else len(text)
        return Edit(start, end, "")
    return Edit(start, comment_end, "")
