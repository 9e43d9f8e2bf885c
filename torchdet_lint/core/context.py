"""Per-file state shared by the rules during the one traversal: source text,
name resolver, settings, and the conversion of reports and fixes into
positioned diagnostics and text edits (positions are computed lazily).
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

import libcst as cst

from torchdet_lint.core.diagnostics import Diagnostic, Edit, Fix, FixBuilder
from torchdet_lint.core.import_header import ImportHeader, import_header
from torchdet_lint.core.import_placement import HeaderImportLine, place_import
from torchdet_lint.core.names import NameResolver, canonical, dotted_name
from torchdet_lint.core.positions import LocalPositions, call_with_deep_stack
from torchdet_lint.core.scopes import ScopeTracker
from torchdet_lint.core.settings import Settings
from torchdet_lint.core.source import LineIndex, PythonTree, block_top_line
from torchdet_lint.core.traversal import sub_nodes

if TYPE_CHECKING:  # pragma: no cover
    pass

_IMPORTS_TORCH_RE = re.compile(r"^[ \t]*(?:from[ \t]+torch\b|import[ \t][^\n#]*\btorch\b)", re.M)
# What may stand before a call that starts a statement's expression: `x = `, `x: T = `,
# `return `, `yield `, `await `, or nothing but the indentation.
# (Targets may be tuples, `train_set, val_set = ...`, but hold no parenthesis: `f(a, b=` is an argument.)
_STATEMENT_START_RE = re.compile(
    r"^[ \t]*(?:(?:[\w.\[\]'\", *]+(?:[ \t]*:[^=]+)?[ \t]*[-+*/@%&|^]?=[ \t]*)|return[ \t]+|yield[ \t]+|await[ \t]+)?$"
)


class FileContext:
    def __init__(
        self,
        path: str,
        text: str,
        module: cst.Module,
        settings: Settings,
        torch_version: Tuple[int, int],
        library_versions: Optional[Dict[str, Tuple[int, int]]] = None,
        module_name: Optional[str] = None,
        is_package: bool = False,
        first_party: frozenset = frozenset(),
        tree_positions: Any = None,
    ) -> None:
        self.path = path
        self.text = text
        self.module = module
        self.settings = settings
        self.torch_version = torch_version
        self.library_versions = library_versions or {}
        self.module_name = module_name
        self.first_party = first_party
        # Set when `module` was built from Python's `ast` (engine/ast_tree.py): its positions, and
        # what it cannot answer (a fix's new code made of built nodes) raises `NeedsLibCST`.
        self.tree_positions = tree_positions
        self.resolver = NameResolver(module_name, is_package)
        self.scopes = ScopeTracker(self.resolver)
        self.imports_torch = bool(_IMPORTS_TORCH_RE.search(text))
        self.newline = "\r\n" if "\r\n" in text else ("\r" if "\r" in text and "\n" not in text else "\n")
        self.lines = LineIndex(text)
        self._reports: List[tuple] = []
        self._positions = None
        self._names: Dict[int, Optional[str]] = {}
        self._per_node: Dict[Tuple[str, int], Any] = {}
        self.operation_matcher: Any = None  # core.operations' catalog matcher for this file
        self._local_classes: Optional[Dict[str, Tuple[Tuple[str, ...], bool]]] = None
        # Python's own parse of the file (statement lines, fix anchors): `context.python_tree()`.
        self.python_tree = PythonTree(text)

    # -- shortcuts for rules -----------------------------------------------------
    def qualified_name(self, node: Optional[cst.CSTNode]) -> Optional[str]:
        # Several rules ask about the same node while the walk is at it: resolve once.
        # The nodes live as long as the module, so their ids are stable keys.
        key = id(node)
        try:
            return self._names[key]
        except KeyError:
            name = self._names[key] = self.resolver.qualified_name(node)
            return name

    def per_node(self, purpose: str, node: cst.CSTNode, compute: Callable[[cst.CSTNode], Any]) -> Any:
        """`compute(node)`, made once per file for each purpose (the nodes live as long as the
        module, so their ids are stable keys)."""
        key = (purpose, id(node))
        try:
            return self._per_node[key]
        except KeyError:
            found = self._per_node[key] = compute(node)
            return found

    def call_name(self, call: cst.Call) -> Optional[str]:
        return self.qualified_name(call.func)

    def local_classes(self) -> Dict[str, Tuple[Tuple[str, ...], bool]]:
        """The module-level classes of this file: name -> (their bases, as qualified names or
        ".Name" for a class of this file; whether the class defines `__init__`). Read once."""
        if self._local_classes is None:
            found: Dict[str, Tuple[Tuple[str, ...], bool]] = {}
            final = self.resolver.module_final
            defined = {s.name.value for s in self.module.body if type(s) is cst.ClassDef}
            for statement in self.module.body:
                if type(statement) is not cst.ClassDef or not statement.bases:
                    continue
                bases = []
                for arg in statement.bases:
                    head, _, rest = (dotted_name(arg.value) or "").partition(".") if arg.keyword is None else ("", "", "")
                    bound = final.get(head)
                    if bound:
                        bases.append(canonical(f"{bound}.{rest}" if rest else bound))
                    elif head in defined and not rest:
                        bases.append("." + head)
                body = statement.body.body if type(statement.body) is cst.IndentedBlock else ()
                has_init = any(type(s) is cst.FunctionDef and s.name.value == "__init__" for s in body)
                found[statement.name.value] = (tuple(bases), has_init)
            self._local_classes = found
        return self._local_classes

    @property
    def strict(self) -> bool:
        return self.settings.profile == "strict"

    def version_text(self) -> str:
        return "%d.%d" % self.torch_version

    # -- positions ---------------------------------------------------------------
    @property
    def positions(self) -> LocalPositions:
        if self._positions is None:
            if self.tree_positions is not None:
                self._positions = self.tree_positions
            else:
                self._positions = LocalPositions(self.module, self.lines, self.python_tree)
        return self._positions

    def code_of(self, node: cst.CSTNode) -> str:
        """The node as written in the file, its parentheses included (`module.code_for_node`)."""
        if self.tree_positions is not None:
            if self.tree_positions.is_built(node):
                return self.tree_positions.code(node)
            self._written_only(node)
        return self.module.code_for_node(node)

    def code_has(self, node: cst.CSTNode, pattern: "re.Pattern[str]") -> bool:
        """`pattern` (one that matches no whitespace, parenthesis or backslash) occurs in
        `code_of(node)`. On the `ast`-built tree the node's own text answers, without LibCST's
        parse of its statement, unless a comment may stand among the parentheses around it: the
        parse would add only parentheses, whitespace and line continuations to that text."""
        if self.tree_positions is not None and self.tree_positions.is_built(node):
            text = self.tree_positions.bare_text(node, parentheses_allowed=True)
            if text is not None:
                return pattern.search(text) is not None
        return pattern.search(self.code_of(node)) is not None

    def written(self, node: cst.CSTNode) -> cst.CSTNode:
        """The node as written in the file, whitespace and comments included: what a fix's new
        code is built from. The node itself on LibCST's tree; on the `ast`-built tree, LibCST's
        parse of its statement gives it."""
        if self.tree_positions is None:
            return node
        return self.tree_positions.written(node)

    def _written_only(self, new: cst.CSTNode) -> None:
        """A fix's new code renders as written only when it is made of `written` nodes (or new
        ones): a node of the `ast`-built tree in it would lose its layout."""
        positions = self.tree_positions
        if positions is None:
            return
        stack = [new]
        while stack:
            current = stack.pop()
            if positions.is_built(current):
                positions.need("a fix made of the ast-built tree (use `context.written`)")
            stack.extend(sub_nodes(current))

    def node_range(self, node: cst.CSTNode) -> Tuple[int, int, int, int]:
        """(line, column, end_line, end_column), lines 1-based, columns 0-based."""
        return call_with_deep_stack(self.positions.range, node)

    def node_offsets(self, node: cst.CSTNode) -> Tuple[int, int]:
        line, column, end_line, end_column = self.node_range(node)
        return self.lines.offset(line, column), self.lines.offset(end_line, end_column)

    def replacement_offsets(self, node: cst.CSTNode) -> Tuple[int, int]:
        """The span a fix replacing `node` replaces (what `module.code_for_node(node)` renders)."""
        return self._inclusive_offsets(node)

    def _inclusive_offsets(self, node: cst.CSTNode) -> Tuple[int, int]:
        """The span `module.code_for_node(node)` renders, for replacing the node's text."""
        line, column, end_line, end_column = call_with_deep_stack(self.positions.range, node, True)
        return self.lines.offset(line, column), self.lines.offset(end_line, end_column)

    # -- reporting ---------------------------------------------------------------
    def report(
        self, code: str, name: str, node: cst.CSTNode, message: str, fix: Optional[FixBuilder], extra: Optional[dict] = None
    ) -> None:
        self._reports.append((code, name, node, message, fix, extra))

    @property
    def has_reports(self) -> bool:
        return bool(self._reports)

    def report_at_line(
        self, code: str, name: str, line: int, column: int, message: str, fix: Optional[FixBuilder] = None
    ) -> None:
        self._reports.append((code, name, (line, column), message, fix, None))

    def diagnostics(self) -> List[Diagnostic]:
        result = []
        for code, name, where, message, builder, extra in self._reports:
            if isinstance(where, tuple):
                line, column = where
                end_line, end_column = line, column
            else:
                line, column, end_line, end_column = self.node_range(where)
            fix = None
            if builder is not None:
                try:
                    fix = self.build_fix(builder)
                except _NoFix:
                    fix = None
            start_offset = self.lines.offset(line, column)
            result.append(
                Diagnostic(
                    path=self.path,
                    line=line,
                    column=column + 1,
                    end_line=end_line,
                    end_column=end_column + 1,
                    code=code,
                    name=name,
                    message=message,
                    fix=fix,
                    start_offset=start_offset,
                    end_offset=self.lines.offset(end_line, end_column),
                    extra=dict(extra) if extra else {},
                )
            )
        return result

    # -- fixes -------------------------------------------------------------------
    def build_fix(self, builder: FixBuilder) -> Fix:
        edits: List[Edit] = []
        for old, new in builder.replacements:
            if isinstance(new, cst.CSTNode):
                self._written_only(new)
            start, end = self._inclusive_offsets(old)
            if isinstance(new, str):
                content = new
            elif isinstance(new, cst.Call):
                content = self.call_text(old, new)
            else:
                content = self.code_in_place(old, new)
            edits.append(Edit(start, end, content))
        for kind, anchor, text in builder.insertions:
            edits.append(self._insertion(kind, anchor, text))
        for module, name, alias in builder.imports:
            edit = self.import_edit(module, name, alias)
            if edit is not None:
                edits.append(edit)
        edits = _merge_insertions(edits)
        return Fix(builder.title, builder.applicability, tuple(sorted(edits, key=lambda e: (e.start, e.end))))

    def call_text(self, old: cst.Call, new: cst.Call) -> str:
        """`new`, an edit of the call `old`, as black and ruff-format would write it: on one line
        while `old` was on one line and the line stays within the project's line length, else one
        argument per line with a trailing comma (a layout `old` already spread over lines is kept)."""
        code = self.code_in_place(old, new)
        line, column, end_line, end_column = self.node_range(old)
        if end_line != line or "\n" in code or not new.args:
            return code
        text = self.lines.line_text(line)
        if len(text[:column]) + len(code) + len(text[end_column:]) <= self.settings.line_length:
            return code
        if not _STATEMENT_START_RE.match(text[:column]):
            return code  # inside another expression: a formatter would split the enclosing call first
        indent = text[: len(text) - len(text.lstrip(" \t"))]
        inner = indent + self.module.default_indent
        arguments = [
            call_with_deep_stack(
                self.module.code_for_node,
                arg.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=cst.SimpleWhitespace("")),
            )
            for arg in new.args
        ]
        opening = call_with_deep_stack(self.module.code_for_node, new.with_changes(args=())).rstrip(")")
        return opening + self.newline + "".join(inner + argument + "," + self.newline for argument in arguments) + indent + ")"

    def code_in_place(self, old: cst.CSTNode, new: cst.CSTNode) -> str:
        """`new` as it reads where `old` stands. LibCST writes a line broken inside brackets
        relative to the indentation of the block around it, which `module.code_for_node`
        alone leaves out: an edited call spread over lines in a method would lose its
        indentation. Rendered inside a block with that indentation instead."""
        self._written_only(new)
        code = call_with_deep_stack(self.module.code_for_node, new)
        if "\n" not in code and "\r" not in code:
            return code
        indent = self.block_indentation(old)
        if not indent:
            return code
        newline = self.module.default_newline
        statement = cst.SimpleStatementLine(body=[cst.Expr(value=new)])  # type: ignore[arg-type]
        holder = cst.Module(
            body=[cst.If(test=cst.Name("_"), body=cst.IndentedBlock(body=[statement], indent=indent))],
            default_indent=self.module.default_indent,
            default_newline=newline,
        )
        text = call_with_deep_stack(lambda: holder.code)
        prefix = "if _:" + newline + indent
        if not text.startswith(prefix) or not text.endswith(newline):
            return code
        return text[len(prefix) : len(text) - len(newline)]

    def block_indentation(self, node: cst.CSTNode) -> str:
        """The indentation of the block whose code holds `node` ("" at module level)."""
        statement = self.positions.statement_holding(node)
        if statement is None:
            return ""
        text = self.lines.line_text(self.node_range(statement)[0])
        return text[: len(text) - len(text.lstrip(" \t"))]

    def _indent_lines(self, text: str, indent: str) -> str:
        lines = text.splitlines()
        return "".join((indent + line if line.strip() else line) + self.newline for line in lines)

    def _statement_line_start(self, statement: cst.CSTNode) -> Tuple[int, str]:
        line, column, _, _ = self.node_range(statement)
        start = self.lines.offset(line, 0)
        prefix = self.text[start : start + column]
        if prefix.strip():
            raise _NoFix()  # the statement shares its line with other code
        return start, prefix

    def _after_statement(self, statement: cst.CSTNode) -> int:
        _, _, end_line, _ = self.node_range(statement)
        return self.lines.offset(end_line + 1, 0) if end_line < len(self.lines.starts) else len(self.text)

    def _insertion(self, kind: str, anchor, text: str) -> Edit:
        if kind == "before":
            start, indent = self._statement_line_start(anchor)
            # Above the comment lines that describe the statement, not between them and it.
            start = self.lines.offset(block_top_line(self.lines, self.lines.position(start)[0], indent), 0)
            return Edit(start, start, self._indent_lines(text, indent))
        if kind == "after":
            _, indent = self._statement_line_start(anchor)
            offset = self._after_statement(anchor)
            return Edit(offset, offset, self._eof_newline(offset) + self._indent_lines(text, indent))
        if kind == "before_import_of":
            # The first module-level import of it, in the header or not: what runs first.
            tree = self.python_tree()
            statements = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))] if tree is not None else []
            for line in self._import_lines(statements):
                if line.module == anchor or line.module.startswith(anchor + "."):
                    return Edit(line.start, line.start, self._indent_lines(text, ""))
            kind = "after_imports"
        if kind == "after_imports":
            offset = self.after_imports_offset()
            return Edit(offset, offset, self._eof_newline(offset) + self._indent_lines(text, ""))
        raise ValueError(kind)

    def _eof_newline(self, offset: int) -> str:
        """A newline to put first when inserting at the end of a file without a final newline."""
        if offset == len(self.text) and self.text and not self.text.endswith(("\n", "\r")):
            return self.newline
        return ""

    def _import_header(self) -> Optional[ImportHeader]:
        tree = self.python_tree()
        return None if tree is None else import_header(tree, len(self.lines.starts))

    def _header_import_lines(self) -> List[HeaderImportLine]:
        """The header's top-level imports (core/import_header.py), one per module they name."""
        header = self._import_header()
        return self._import_lines(header.imports if header is not None else ())

    def _import_lines(self, statements: Sequence[ast.stmt]) -> List[HeaderImportLine]:
        lines = []
        for statement in statements:
            start = self.lines.offset(statement.lineno, 0)
            end = self._line_start_after(statement.end_lineno or statement.lineno)
            if isinstance(statement, ast.Import):
                lines.extend(HeaderImportLine(alias.name, False, start, end) for alias in statement.names)
            else:
                lines.append(HeaderImportLine("." * statement.level + (statement.module or ""), True, start, end))
        return lines

    def after_imports_offset(self) -> int:
        """Right after the header's last import (core/import_header.py); after the docstring
        when there is none."""
        header = self._import_header()
        if header is not None:
            return self._line_start_after(header.end_line - 1)
        body = self.module.body  # a text this Python cannot parse: after the docstring
        if body and _is_docstring(body[0]):
            return self._after_statement(body[0])
        if body:
            start, _ = self._statement_line_start(body[0])
            return start
        return len(self.text)

    def _line_start_after(self, line: int) -> int:
        return self.lines.offset(line + 1, 0) if line < len(self.lines.starts) else len(self.text)

    def is_imported(self, module: str, name: Optional[str], alias: Optional[str]) -> bool:
        bound_name = alias or (name if name else module.split(".")[0])
        expected = f"{module}.{name}" if name else (module if alias else module.split(".")[0])
        return self.resolver.module_final.get(bound_name) == expected

    def import_edit(self, module: str, name: Optional[str] = None, alias: Optional[str] = None) -> Optional[Edit]:
        """An edit adding the import where isort would put it, or None when present."""
        if self.is_imported(module, name, alias):
            return None
        if name:
            line = f"from {module} import {name}" + (f" as {alias}" if alias else "")
        else:
            line = f"import {module}" + (f" as {alias}" if alias else "")
        lines = self._header_import_lines()
        header = [line for index, line in enumerate(lines) if index == 0 or line.start != lines[index - 1].start]
        offset = self.after_imports_offset()
        return place_import(line, module, header, self.first_party, offset, bool(self._eof_newline(offset)), self.newline)


class _NoFix(Exception):
    """The fix cannot be expressed at this site; the diagnostic stays, without a fix."""


def _merge_insertions(edits: List[Edit]) -> List[Edit]:
    """Join insertions at the same offset into one edit, dropping duplicates."""
    merged: Dict[Tuple[int, int], Edit] = {}
    result = []
    for edit in edits:
        if edit.start == edit.end and (edit.start, edit.end) in merged:
            previous = merged[(edit.start, edit.end)]
            if edit.content in previous.content:
                continue
            combined = Edit(edit.start, edit.end, previous.content + edit.content)
            result[result.index(previous)] = combined
            merged[(edit.start, edit.end)] = combined
            continue
        if edit.start == edit.end:
            merged[(edit.start, edit.end)] = edit
        result.append(edit)
    return result


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )
