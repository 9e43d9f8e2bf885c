"""Diagnostics and fixes as data: what a rule reports (a position, a code, a
message) and the text edits of its fix, with their applicability.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import libcst as cst

# TDL000 is not a rule: the diagnostic of a file that cannot be read or parsed.
PARSE_ERROR_CODE = "TDL000"
PARSE_ERROR_NAME = "file-not-analysed"


class Applicability(str, enum.Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True)
class Edit:
    """Replace text[start:end] (character offsets into the decoded source) by `content`."""

    start: int
    end: int
    content: str


@dataclass(frozen=True)
class Fix:
    title: str
    applicability: Applicability
    edits: Tuple[Edit, ...]


@dataclass
class Diagnostic:
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    name: str
    message: str
    fix: Optional[Fix] = None
    cell: Optional[int] = None  # 1-based notebook cell, None for .py files
    # Character offsets of the reported range in the (cell-joined) source,
    # used by the fixer, noqa handling and the language server.
    start_offset: int = 0
    end_offset: int = 0
    extra: Dict[str, Any] = field(default_factory=dict)

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.column, self.code, self.message)


def error_diagnostic(path: str, message: str, line: int = 1, column: int = 1) -> Diagnostic:
    return Diagnostic(
        path=path,
        line=line,
        column=column,
        end_line=line,
        end_column=column,
        code=PARSE_ERROR_CODE,
        name=PARSE_ERROR_NAME,
        message=message,
    )


def sort_diagnostics(diagnostics: Sequence[Diagnostic]) -> List[Diagnostic]:
    return sorted(diagnostics, key=Diagnostic.sort_key)


class FixBuilder:
    """A fix described in CST terms; the file context turns it into text edits.

    Operations are recorded now and resolved to character offsets only when
    the diagnostic is emitted, so files without fixable findings never pay
    for positions.
    """

    def __init__(self, title: str, applicability: Applicability) -> None:
        self.title = title
        self.applicability = applicability
        self.replacements: list = []  # (old_node, new_node or source text)
        self.insertions: list = []  # (anchor kind, anchor node or None, text)
        self.imports: list = []  # (module, name or None, alias or None)

    def replace(self, old: cst.CSTNode, new: Any) -> "FixBuilder":
        self.replacements.append((old, new))
        return self

    def insert_before(self, statement: cst.CSTNode, text: str) -> "FixBuilder":
        """Insert whole lines before a statement, with the statement's indentation."""
        self.insertions.append(("before", statement, text))
        return self

    def insert_after(self, statement: cst.CSTNode, text: str) -> "FixBuilder":
        self.insertions.append(("after", statement, text))
        return self

    def insert_at_top(self, text: str) -> "FixBuilder":
        """Insert module-level lines right after the imports (docstring and imports kept first)."""
        self.insertions.append(("after_imports", None, text))
        return self

    def insert_before_module(self, module_prefix: str, text: str) -> "FixBuilder":
        """Insert module-level lines before the first import of `module_prefix`."""
        self.insertions.append(("before_import_of", module_prefix, text))
        return self

    def add_import(self, module: str, name: Optional[str] = None, alias: Optional[str] = None) -> "FixBuilder":
        self.imports.append((module, name, alias))
        return self
