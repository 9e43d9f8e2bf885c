"""Jupyter notebooks, a layer around the file pass: the code cells joined into
one Python text (IPython magics neutralised to same-length Python so positions
hold) go through the file pass, diagnostics are placed back into cells, and
fixes are written back touching nothing but the edited cell sources.

Positions: `Diagnostic.cell` is the 1-based cell number over ALL cells (as
Jupyter shows them, markdown included), `line` the line within that cell.
`start_offset`/`end_offset` and the offsets of `Fix.edits` stay relative to
the joined code (`Notebook.code`, which is also `FileResult.source.text`), so
the JSON output's `fix.edits` locations are lines of the joined code; the
fixer turns edits into a notebook with `Notebook.apply_edits`.
"""

from __future__ import annotations

import bisect
import difflib
import json
import re
from dataclasses import dataclass, field
from json.decoder import scanstring
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from torchdet_lint.checks import get_rule
from torchdet_lint.core.diagnostics import Diagnostic, Edit, error_diagnostic
from torchdet_lint.core.source import SourceText
from torchdet_lint.engine.file_pass import FileResult, RunOptions, check_text
from torchdet_lint.engine.suppressions import apply_suppressions

# Cell magics whose body is Python run in the notebook: the body is linted.
# Any other cell magic (%%bash, %%writefile, %%html, ...) makes the cell opaque.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "memit", "mprun", "snakeviz"})

_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+")
_WHITESPACE_RE = re.compile(r"[ \t\n\r]*")
_CELL_MAGIC_RE = re.compile(r"%%(\w+)")
# `files = !ls`, `a, b = %sx cmd`: a plain assignment whose value is a magic.
_ASSIGNED_MAGIC_RE = re.compile(r"[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*(?=[!%])")
# `obj?`, `obj.attr??`, `%magic?`: help requests at the end of a line.
_HELP_SUFFIX_RE = re.compile(r"%{0,2}[A-Za-z_][\w.]*\?{1,2}")

# A line a message cites in the joined code (TDL004's `(line 23)`), turned into a cell line.
_CITED_LINE = re.compile(r"\(line (\d+)\)")


class NotebookError(Exception):
    """The file is not a notebook torchdet-lint can read; the message says why."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


@dataclass
class CodeCell:
    number: int  # 1-based over all cells, as Jupyter shows them
    start: int  # offset of the cell's first character in the joined code
    code: str  # the cell's text as linted (magics neutralised, newline-terminated)
    original: str  # the cell's source as stored in the notebook
    added_newline: bool  # the joined code ends the cell with a newline the notebook lacks
    python: bool  # False for an opaque cell (%%bash, ...): no code may be inserted there
    # (start, end) offsets within the cell of the lines neutralisation changed.
    magic_spans: List[Tuple[int, int]] = field(default_factory=list)

    @property
    def end(self) -> int:
        return self.start + len(self.code)

    @property
    def display(self) -> str:
        """The cell as written, newline-terminated: `code` with the magics kept."""
        return self.original + "\n" if self.added_newline else self.original

    def starts_with_cell_magic(self) -> bool:
        return self.original.startswith("%%")


@dataclass
class _SourceSpan:
    """Where a cell's `source` value sits in the notebook's JSON text."""

    start: int
    end: int
    is_list: bool
    items: List[Tuple[int, int]]  # spans of the list's string items


class Notebook:
    """A parsed notebook: `code` is what the rules see, `cells` its code cells."""

    def __init__(self, text: str, data: dict, cells: List[CodeCell], spans: Dict[int, _SourceSpan]) -> None:
        self.text = text
        self.data = data
        self.cells = cells
        self.code = "".join(cell.code for cell in cells)
        # The same text with the magics as written: every line keeps its length,
        # so offsets into `code` are offsets into this (shown in excerpts).
        self.display_code = "".join(cell.display for cell in cells)
        self._spans = spans
        self._starts = [cell.start for cell in cells]
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.code)]

    # -- positions ---------------------------------------------------------------
    def cell_at(self, offset: int) -> Optional[CodeCell]:
        if not self.cells:
            return None
        index = max(0, bisect.bisect_right(self._starts, offset) - 1)
        return self.cells[index]

    def cell_position(self, offset: int) -> Tuple[int, int, int]:
        """(cell number, 1-based line within the cell, 0-based column) of a joined-code offset."""
        cell = self.cell_at(offset)
        if cell is None:
            return 1, 1, 0
        offset = min(max(offset, cell.start), cell.end)
        before = self.code[cell.start : offset]
        line = before.count("\n") + 1
        return cell.number, line, offset - cell.start - (before.rfind("\n") + 1)

    def cell_lines(self, number: int) -> Tuple[int, int]:
        """First and last line (1-based, in the joined code) of code cell `number`."""
        for cell in self.cells:
            if cell.number == number:
                first = self.code.count("\n", 0, cell.start) + 1
                return first, first + cell.code.count("\n") - 1
        raise KeyError(number)

    def line_label(self, line: int) -> str:
        """How a message names a line of the joined code: `cell 5, line 5`."""
        cell, line_in_cell, _ = self.cell_position(self._line_offset(line))
        return f"cell {cell}, line {line_in_cell}"

    def place(self, diagnostic: Diagnostic) -> Diagnostic:
        """Turn a diagnostic positioned in the joined code into a cell position (idempotent),
        and the lines its message cites (`(line 23)`) into cell lines."""
        if diagnostic.cell is not None or not self.cells:
            return diagnostic
        diagnostic.message = _CITED_LINE.sub(lambda match: f"({self.line_label(int(match.group(1)))})", diagnostic.message)
        rule = get_rule(diagnostic.code) if diagnostic.extra else None
        if rule is not None:
            rule.relabel_lines(diagnostic, self.line_label)
        cell = self.cell_at(self._line_offset(diagnostic.line))
        first_line, last_line = self.cell_lines(cell.number)
        diagnostic.cell = cell.number
        end_line = diagnostic.end_line
        if end_line > last_line:  # a range never leaves its cell
            end_line, diagnostic.end_column = last_line, len(self._line_text(last_line)) + 1
        diagnostic.line = diagnostic.line - first_line + 1
        diagnostic.end_line = max(end_line - first_line + 1, diagnostic.line)
        return diagnostic

    def _line_offset(self, line: int) -> int:
        return self._line_starts[min(max(line, 1), len(self._line_starts)) - 1]

    def _line_text(self, line: int) -> str:
        start = self._line_offset(line)
        end = self.code.find("\n", start)
        return self.code[start : end if end >= 0 else len(self.code)]

    # -- writing back -------------------------------------------------------------
    def apply_edits(self, edits: Sequence[Edit]) -> str:
        """The notebook JSON with `edits` (offsets into `code`) applied to the cells.

        Only the edited cells' `source` values change in the JSON text;
        outputs, metadata, key order and indentation stay byte for byte.

        An insertion on a cell boundary goes to the end of the previous code
        cell (the cells run in order, so that is where the code would have
        run), or to the start of the next one when the previous cell is not
        Python. An edit spanning two cells, or one that would break an
        IPython magic, raises ValueError: the fixer must then leave the file.
        """
        per_cell: Dict[int, List[Edit]] = {}
        for edit in sorted(edits, key=lambda e: (e.start, e.end)):
            index = self._cell_index_for(edit)
            cell = self.cells[index]
            per_cell.setdefault(index, []).append(Edit(edit.start - cell.start, edit.end - cell.start, edit.content))
        new_sources: Dict[int, str] = {}
        for index, cell_edits in per_cell.items():
            cell = self.cells[index]
            text = cell.display
            previous_start = len(text) + 1
            for edit in reversed(cell_edits):
                if edit.end > previous_start:
                    raise ValueError(f"overlapping edits in cell {cell.number}")
                _check_magics_kept(cell, edit)
                text = text[: edit.start] + edit.content + text[edit.end :]
                previous_start = edit.start
            if cell.added_newline and text.endswith("\n"):
                text = text[:-1]
            new_sources[index] = text
        return self._render_cells(new_sources)

    def render(self, new_code: str) -> str:
        """The notebook JSON for an edited joined code (the whole text after fixes).

        `new_code` is `display_code` (or `code`) after the edits. The change
        is located with a line diff, then applied as edits; prefer
        `apply_edits` when the edits are known (a line diff cannot tell which
        cell an inserted line next to an identical one belongs to).
        """
        if new_code == self.display_code:
            return self.text
        return self.apply_edits(_diff_edits(self.display_code, new_code))

    def _cell_index_for(self, edit: Edit) -> int:
        if not self.cells:
            raise ValueError("the notebook has no code cells to edit")
        index = max(0, bisect.bisect_right(self._starts, edit.start) - 1)
        if edit.start == edit.end and index > 0 and edit.start == self.cells[index].start:
            if self.cells[index - 1].python:
                index -= 1
        cell = self.cells[index]
        if edit.start == edit.end == cell.start and cell.starts_with_cell_magic():
            raise ValueError(f"cannot insert code before the cell magic of cell {cell.number}")
        if edit.end > cell.end:
            raise ValueError(f"an edit spans cells {cell.number} and the next code cell")
        if not cell.python:
            raise ValueError(f"cell {cell.number} is not Python; it cannot be edited")
        return index

    def _render_cells(self, new_sources: Dict[int, str]) -> str:
        pieces: List[str] = []
        position = 0
        for index in sorted(new_sources, key=lambda i: self.cells[i].number):
            cell = self.cells[index]
            if new_sources[index] == cell.original:
                continue
            span = self._spans[cell.number - 1]
            pieces.append(self.text[position : span.start])
            pieces.append(self._source_json(span, new_sources[index]))
            position = span.end
        pieces.append(self.text[position:])
        return "".join(pieces)

    def _source_json(self, span: _SourceSpan, source: str) -> str:
        ascii_only = self.text.isascii()
        if not span.is_list:
            return json.dumps(source, ensure_ascii=ascii_only)
        original_items = {}
        for start, end in span.items:
            original_items.setdefault(json.loads(self.text[start:end]), self.text[start:end])
        # sphinx-gallery and some converters store a cell as one string holding
        # every line; keep that style rather than nbformat's line per item.
        one_string = any("\n" in item.rstrip("\n") for item in original_items)
        lines = ([source] if source else []) if one_string else _LINE_RE.findall(source)
        items = [original_items.get(line) or json.dumps(line, ensure_ascii=ascii_only) for line in lines]
        if not items:
            return "[]"
        if span.items:
            lead = self.text[span.start + 1 : span.items[0][0]]
            trail = self.text[span.items[-1][1] : span.end - 1]
            if len(span.items) > 1:
                between = self.text[span.items[0][1] : span.items[1][0]]
            else:
                between = "," + lead
        else:
            lead, trail, between = self._fresh_list_layout(span)
        return "[" + lead + between.join(items) + trail + "]"

    def _fresh_list_layout(self, span: _SourceSpan) -> Tuple[str, str, str]:
        """Whitespace for a list that was empty: nbformat's layout at this depth."""
        line_start = self.text.rfind("\n", 0, span.start) + 1
        if line_start == 0:  # the whole notebook on one line: json.dumps's compact layout
            return "", "", ", "
        key_indent = re.match(r"[ \t]*", self.text[line_start:]).group(0)
        first_key = _WHITESPACE_RE.match(self.text, self.text.index("{") + 1).group(0)
        unit = first_key.rsplit("\n", 1)[-1] or " "
        return "\n" + key_indent + unit, "\n" + key_indent, ",\n" + key_indent + unit


def _diff_edits(old: str, new: str) -> List[Edit]:
    """Line-level edits turning `old` into `new` (what changed, where)."""
    old_lines = _LINE_RE.findall(old)
    new_lines = _LINE_RE.findall(new)
    old_starts = [0]
    for line in old_lines:
        old_starts.append(old_starts[-1] + len(line))
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    return [
        Edit(old_starts[i1], old_starts[i2], "".join(new_lines[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


# -- loading -----------------------------------------------------------------------


def load_notebook(text: str) -> Notebook:
    """Parse a notebook's JSON text; NotebookError when it is not a usable notebook."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise NotebookError(f"not a valid notebook: invalid JSON: {error.msg}", error.lineno, error.colno) from None
    except RecursionError:
        raise NotebookError("not a valid notebook: the JSON is nested too deeply") from None
    if not isinstance(data, dict):
        raise NotebookError("not a valid notebook: the JSON is not an object")
    if "cells" not in data:
        if "worksheets" in data:
            raise NotebookError("nbformat 3 notebooks are not supported: convert with `jupyter nbconvert --to notebook`")
        raise NotebookError("not a valid notebook: it has no `cells` list")
    raw_cells = data["cells"]
    if not isinstance(raw_cells, list):
        raise NotebookError("not a valid notebook: `cells` is not a list")
    spans = _locate_sources(text)
    cells: List[CodeCell] = []
    offset = 0
    for index, raw in enumerate(raw_cells):
        if not isinstance(raw, dict):
            raise NotebookError(f"not a valid notebook: cell {index + 1} is not an object")
        if raw.get("cell_type") != "code":
            continue
        source = raw.get("source", "")
        if isinstance(source, list) and all(isinstance(part, str) for part in source):
            source = "".join(source)
        elif not isinstance(source, str):
            raise NotebookError(f"not a valid notebook: the source of cell {index + 1} is not text")
        if index not in spans:
            raise NotebookError(f"not a valid notebook: cell {index + 1} has no `source`")
        cell = _code_cell(index + 1, offset, source)
        cells.append(cell)
        offset = cell.end
    return Notebook(text, data, cells, spans)


def is_python_notebook(data: dict) -> bool:
    """False for notebooks whose kernel is another language (R, Julia, ...)."""
    metadata = data.get("metadata")
    if not isinstance(metadata, dict):
        return True
    for key, field_name in (("language_info", "name"), ("kernelspec", "language")):
        section = metadata.get(key)
        if isinstance(section, dict) and isinstance(section.get(field_name), str):
            return section[field_name].lower() in ("python", "python3", "ipython", "ipython3")
    return True


def _code_cell(number: int, start: int, source: str) -> CodeCell:
    added_newline = not source.endswith("\n")
    text = source + "\n" if added_newline else source
    lines = _LINE_RE.findall(text)
    python = True
    match = _CELL_MAGIC_RE.match(text)
    if match:
        if match.group(1) in PYTHON_CELL_MAGICS:
            neutral = [_comment_out(lines[0])]
            neutral += _neutralise_lines(lines[1:])
        else:
            python = False
            neutral = [_comment_out(line) for line in lines]
    else:
        neutral = _neutralise_lines(lines)
    magic_spans: List[Tuple[int, int]] = []
    offset = 0
    for old, new in zip(lines, neutral):
        if old != new:
            magic_spans.append((offset, offset + len(old.rstrip("\r\n"))))
        offset += len(old)
    return CodeCell(number, start, "".join(neutral), source, added_newline, python, magic_spans)


def _check_magics_kept(cell: CodeCell, edit: Edit) -> None:
    """An edit may insert before or after an IPython-only line, never touch it."""
    for start, end in cell.magic_spans:
        if edit.start < end and edit.end > start or start < edit.start < end:
            raise ValueError(f"a fix would change an IPython magic line of cell {cell.number}")


def _comment_out(line: str) -> str:
    content = line.rstrip("\r\n")
    return ("#" + content[1:] if content else "") + line[len(content) :]


def _neutral_expression(text: str) -> str:
    """A Python expression with a comment, exactly as long as `text`."""
    return "0" + ("#" + text[2:] if len(text) >= 2 else "")


def _neutralise_lines(lines: List[str]) -> List[str]:
    """Replace IPython-only lines (`%magic`, `!cmd`, `x = !cmd`, `?obj`, `obj?`) by
    same-length Python; lines inside strings, brackets or continuations are left alone.
    """
    result = []
    scanner = _CodeScanner()
    magic_continues = False
    for line in lines:
        content = line.rstrip("\r\n")
        ending = line[len(content) :]
        if magic_continues:
            result.append(_comment_out(line))
            magic_continues = content.endswith("\\")
            continue
        if scanner.at_statement_start():
            body = content.lstrip(" \t")
            indent = content[: len(content) - len(body)]
            magic_start = _magic_start(body)
            if magic_start is not None:
                magic = body[magic_start:]
                result.append(indent + body[:magic_start] + _neutral_expression(magic) + ending)
                magic_continues = content.endswith("\\")
                continue
        scanner.feed(content)
        result.append(line)
    return result


def _magic_start(body: str) -> Optional[int]:
    """Where the IPython-only part of a logical line starts, or None for Python."""
    if not body:
        return None
    if body[0] in "%!?":
        return 0
    if body.endswith("?") and _HELP_SUFFIX_RE.fullmatch(body):
        return 0
    match = _ASSIGNED_MAGIC_RE.match(body)
    if match:
        return match.end()
    return None


class _CodeScanner:
    """Just enough of Python's tokenizer to know whether a line starts a statement:
    not inside a string, brackets or a backslash continuation."""

    def __init__(self) -> None:
        self.quote: Optional[str] = None
        self.depth = 0
        self.continued = False

    def at_statement_start(self) -> bool:
        return self.quote is None and self.depth == 0 and not self.continued

    def feed(self, line: str) -> None:
        self.continued = False
        index, length = 0, len(line)
        while index < length:
            char = line[index]
            if self.quote is not None:
                if char == "\\":
                    index += 2
                    continue
                if line.startswith(self.quote, index):
                    index += len(self.quote)
                    self.quote = None
                    continue
                index += 1
                continue
            if char == "#":
                break
            if char in "\"'":
                self.quote = char * 3 if line.startswith(char * 3, index) else char
                index += len(self.quote)
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            elif char == "\\" and index == length - 1:
                self.continued = True
            index += 1
        if self.quote in ("'", '"') and not line.endswith("\\"):
            self.quote = None  # an unterminated one-line string ends at the line end


def _skip(text: str, position: int) -> int:
    return _WHITESPACE_RE.match(text, position).end()


def _locate_sources(text: str) -> Dict[int, _SourceSpan]:
    """Spans of every cell's `source` value in the JSON text, by cell index.

    The text is known to be valid JSON (json.loads accepted it); values we do
    not need are skipped with the standard decoder's raw_decode.
    """
    decoder = json.JSONDecoder()
    spans: Dict[int, _SourceSpan] = {}

    def members(position: int):
        """Yield (key, value position) of the object at `position`; returns the end."""
        position = _skip(text, position) + 1  # '{'
        while True:
            position = _skip(text, position)
            if text[position] == "}":
                return position + 1
            key, position = scanstring(text, position + 1)
            position = _skip(text, _skip(text, position) + 1)  # ':'
            position = yield key, position
            position = _skip(text, position)
            if text[position] == ",":
                position += 1

    def walk_object(position: int, visit) -> int:
        walker = members(position)
        try:
            key, value_at = next(walker)
            while True:
                key, value_at = walker.send(visit(key, value_at))
        except StopIteration as stop:
            return stop.value

    def items(position: int) -> Tuple[List[Tuple[int, int]], int]:
        position = _skip(text, position) + 1  # '['
        found = []
        while True:
            position = _skip(text, position)
            if text[position] == "]":
                return found, position + 1
            _, end = decoder.raw_decode(text, position)
            found.append((position, end))
            position = _skip(text, end)
            if text[position] == ",":
                position += 1

    def visit_cell(index: int):
        def visit(key: str, position: int) -> int:
            _, end = decoder.raw_decode(text, position)
            if key == "source":
                is_list = text[position] == "["
                spans[index] = _SourceSpan(position, end, is_list, items(position)[0] if is_list else [])
            return end

        return visit

    def visit_top(key: str, position: int) -> int:
        if key != "cells" or text[position] != "[":
            return decoder.raw_decode(text, position)[1]
        spans.clear()  # a repeated key: json.loads keeps the last one
        cells, end = items(position)
        for index, (start, _) in enumerate(cells):
            if text[start] == "{":
                walk_object(start, visit_cell(index))
        return end

    walk_object(_skip(text, 0), visit_top)
    return spans


# -- linting -------------------------------------------------------------------------


@dataclass
class NotebookSource(SourceText):
    """A notebook's source for the output and the fixer: `text` is the joined
    cells as written (`Notebook.display_code`: the offsets of diagnostics and
    edits refer to it), `raw` the notebook file's text. To fix, call
    `notebook.apply_edits(edits)` and write the JSON it returns with `raw`'s encoding."""

    notebook: Optional[Notebook] = None
    raw: Optional[SourceText] = None


def notebook_source(source: SourceText, notebook: Optional[Notebook] = None) -> Optional[NotebookSource]:
    """What a notebook's result carries as its source (None when it is no notebook we can read)."""
    if notebook is None:
        try:
            notebook = load_notebook(source.text)
        except NotebookError:
            return None
    # Another kernel's language: nothing is linted.
    code = notebook.display_code if is_python_notebook(notebook.data) else ""
    return NotebookSource(code, source.encoding, source.bom, notebook=notebook, raw=source)


def lint_notebook(source: SourceText, path: Path, display: str, options: RunOptions) -> FileResult:
    """Lint a notebook: its joined code cells, with cell-aware positions."""
    try:
        notebook = load_notebook(source.text)
    except NotebookError as error:
        return FileResult(display, [error_diagnostic(display, str(error), error.line, error.column)])
    if not is_python_notebook(notebook.data):
        # Nothing to lint, and no entry point for the project phase.
        return FileResult(display, source=notebook_source(source, notebook))
    code = notebook.code
    result = check_text(code, display, options, module_name=None)
    result.source = notebook_source(source, notebook)
    if result.summary is not None:
        mark_notebook_summary(result.summary)
    result.suppressed = []
    kept = apply_suppressions(result.diagnostics, code, options.settings, path, result.suppressed)
    result.diagnostics = [notebook.place(d) for d in kept]
    result.suppressed = [notebook.place(d) for d in result.suppressed]
    return result


def mark_notebook_summary(summary) -> None:
    """A notebook is an entry point of its own: no module name, flagged as a notebook."""
    summary.module_name = None
    summary.is_notebook = True
