"""Source text as read: decoding as Python does (BOM, coding cookie) with line
endings kept, encoding back to the same bytes, line/offset arithmetic, and
Python's own parse of a text.
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
import tokenize
import warnings
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import List, Optional, Tuple

_NEWLINE_RE = re.compile(r"\r\n|\r|\n")


@dataclass
class SourceText:
    text: str
    encoding: str = "utf-8"
    bom: bool = False


class SourceError(Exception):
    """The file cannot be read or decoded; the message says why."""


def decode_source(data: bytes) -> SourceText:
    """Decode as Python does (BOM, coding cookie), keeping line endings untouched."""
    try:
        encoding, _ = tokenize.detect_encoding(BytesIO(data).readline)
    except SyntaxError as error:
        raise SourceError(f"cannot decode: {error}") from None
    bom = encoding == "utf-8-sig"
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as error:
        raise SourceError(f"cannot decode as {encoding}: {error}") from None
    return SourceText(text, "utf-8" if bom else encoding, bom)


def encode_source(source: SourceText, text: str) -> bytes:
    data = text.encode(source.encoding)
    return (b"\xef\xbb\xbf" + data) if source.bom else data


def read_source(path: Path) -> SourceText:
    return decode_source(read_bytes(path))


def read_bytes(path: Path) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except IsADirectoryError:
        raise SourceError("is a directory") from None
    except OSError as error:
        raise SourceError(f"cannot read: {error.strerror or error}") from None


def python_ast(text: str, filename: str = "<source>") -> ast.Module:
    """Python's own parse of a source, without the SyntaxWarnings it would print for the user's code."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compile(text, filename, "exec", ast.PyCF_ONLY_AST)


class PythonTree:
    """Python's own parse of a text, made on first call and then shared (statement lines for
    the summary, positions, fix anchors); None if this Python refuses the text.

    A separate object rather than a method of the file context: the positions keep it, and
    a bound method would tie them back to the context in a cycle, which keeps the whole
    syntax tree alive until the cycle collector runs (and makes it walk the tree).
    """

    _NOT_PARSED = object()

    def __init__(self, text: str) -> None:
        self.text = text
        self._tree: object = self._NOT_PARSED

    def share(self, tree: ast.Module) -> None:
        """The parse already made by the caller."""
        self._tree = tree

    def __call__(self) -> Optional[ast.Module]:
        if self._tree is self._NOT_PARSED:
            try:
                self._tree = python_ast(self.text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._tree = None  # syntax LibCST accepts but this Python does not
        return self._tree  # type: ignore[return-value]


class LineIndex:
    """Converts between (1-based line, 0-based column) and character offsets."""

    def __init__(self, text: str) -> None:
        self.text = text

    @functools.cached_property
    def starts(self) -> List[int]:
        """Each line's start offset, found on first use: most files report nothing."""
        return [0] + [m.end() for m in _NEWLINE_RE.finditer(self.text)]

    def offset(self, line: int, column: int) -> int:
        if line - 1 >= len(self.starts):
            return len(self.text)
        return min(self.starts[line - 1] + column, len(self.text))

    def position(self, offset: int) -> Tuple[int, int]:
        index = bisect.bisect_right(self.starts, offset) - 1
        return index + 1, offset - self.starts[index]

    def line_text(self, line: int) -> str:
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")


def block_top_line(lines: LineIndex, first_line: int, indent: str) -> int:
    """Where lines inserted at the top of a block go, given the line of its first statement
    (after a docstring or `global`): above the comment lines directly over that statement at its
    indentation, which describe it and stay attached to it; and when only blank lines separate
    those comments from the block's opening line (`if __name__ == "__main__":`), right after
    that line, so the blank line keeps setting the commented code apart."""
    line = first_line
    while line > 1 and _is_comment_at(lines.line_text(line - 1), indent):
        line -= 1
    if line == first_line:
        return first_line
    above = line - 1
    while above >= 1 and not lines.line_text(above).strip():
        above -= 1
    if above >= 1 and _opens_block(lines.line_text(above), indent):
        return above + 1
    return line


def _is_comment_at(text: str, indent: str) -> bool:
    return text.startswith(indent) and text[len(indent) :].startswith("#")


def _opens_block(text: str, indent: str) -> bool:
    """The opening line of the block whose body has `indent` (less indented, or ending in `:`)."""
    stripped = text.split("#", 1)[0].rstrip()
    return len(text) - len(text.lstrip(" \t")) < len(indent) or stripped.endswith(":")
