"""A LibCST-shaped syntax tree built from Python's own `ast`, for the analysis.

The analysis (the summary collector, the scope tracker, the name resolver and
the rules) reads LibCST nodes: their types, names, values and children, not
the whitespace, commas and comments around them, which are for writing code
back. LibCST's parser builds all of them, and its parse was half of a run.
Python's parser is over ten times faster, so the file pass builds the nodes the
analysis reads from Python's tree instead: the same node classes, the same
children in the same fields, LibCST's default layout. Names, numbers and
string literals keep their source spelling (sliced from the text).

Where the layout matters (a fix's new code, a node's code as LibCST renders
it) the node is looked up in LibCST's parse of the one statement that holds
it, which has the same shape (`AstPositions.written`). The tree says so
instead of guessing (`NeedsLibCST`) where it cannot answer: syntax it does not
build (a `case` whose pattern starts on a later line; 3.12's type parameters,
which this Python's parser refuses anyway), a fix whose new code holds built
nodes, a node outside any statement.
The file pass then analyses the file again on LibCST's whole tree. Both give
the same diagnostics, fixes and summaries (tests/test_ast_tree.py).

Positions: a node built from an `ast` node whose range is LibCST's keeps that
node's range (LibCST's syntactic ranges leave a node's own parentheses out, as
`ast` does), and so do the names `ast` places (an attribute's, a keyword's, a
definition's, a parameter's). Any other node (an argument, whose range holds
its value's parentheses; a tuple or a generator expression, whose parentheses
`ast` counts; a decorator's `@`) takes its range from the statement's parse.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from typing import Callable, Dict, List, Optional, Tuple

import libcst as cst
from libcst.metadata import PositionProvider, WhitespaceInclusivePositionProvider

from torchdet_lint.core.positions import parent_map, rendered_positions
from torchdet_lint.core.source import LineIndex
from torchdet_lint.core.traversal import child_fields


class NeedsLibCST(Exception):
    """What the `ast`-built tree cannot answer for this file: analyse it on LibCST's tree."""


# A string literal on its own (prefix, quotes, body); anything else in a string constant's
# range is an implicit concatenation, built by LibCST's expression parser.
_SINGLE_STRING_RE = re.compile(
    r"""[rRbBuUfF]{0,2}(?:'''(?:(?!''')[^\\]|\\.)*'''|\"\"\"(?:(?!\"\"\")[^\\]|\\.)*\"\"\"|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")""",
    re.S,
)

_NEWLINE_RE = re.compile(r"\r\n|\r|\n")
_BINARY = {
    ast.Add: cst.Add,
    ast.Sub: cst.Subtract,
    ast.Mult: cst.Multiply,
    ast.MatMult: cst.MatrixMultiply,
    ast.Div: cst.Divide,
    ast.Mod: cst.Modulo,
    ast.Pow: cst.Power,
    ast.LShift: cst.LeftShift,
    ast.RShift: cst.RightShift,
    ast.BitOr: cst.BitOr,
    ast.BitXor: cst.BitXor,
    ast.BitAnd: cst.BitAnd,
    ast.FloorDiv: cst.FloorDivide,
}
_AUGMENTED = {
    ast.Add: cst.AddAssign,
    ast.Sub: cst.SubtractAssign,
    ast.Mult: cst.MultiplyAssign,
    ast.MatMult: cst.MatrixMultiplyAssign,
    ast.Div: cst.DivideAssign,
    ast.Mod: cst.ModuloAssign,
    ast.Pow: cst.PowerAssign,
    ast.LShift: cst.LeftShiftAssign,
    ast.RShift: cst.RightShiftAssign,
    ast.BitOr: cst.BitOrAssign,
    ast.BitXor: cst.BitXorAssign,
    ast.BitAnd: cst.BitAndAssign,
    ast.FloorDiv: cst.FloorDivideAssign,
}
_UNARY = {ast.UAdd: cst.Plus, ast.USub: cst.Minus, ast.Not: cst.Not, ast.Invert: cst.BitInvert}
_COMPARE = {
    ast.Eq: cst.Equal,
    ast.NotEq: cst.NotEqual,
    ast.Lt: cst.LessThan,
    ast.LtE: cst.LessThanEqual,
    ast.Gt: cst.GreaterThan,
    ast.GtE: cst.GreaterThanEqual,
    ast.Is: cst.Is,
    ast.IsNot: cst.IsNot,
    ast.In: cst.In,
    ast.NotIn: cst.NotIn,
}
_SMALL_STATEMENTS = (
    ast.Expr,
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.Return,
    ast.Pass,
    ast.Break,
    ast.Continue,
    ast.Delete,
    ast.Raise,
    ast.Assert,
    ast.Global,
    ast.Nonlocal,
    ast.Import,
    ast.ImportFrom,
)

# `ast` counts the parentheses of these (a tuple's own, a generator's or the call's around it);
# LibCST's ranges leave them out.
_RANGE_NOT_AST = frozenset({ast.Tuple, ast.GeneratorExp})

Span = Tuple[int, int, int, int]  # line, UTF-8 byte column, end line, end byte column (as `ast` counts)


class AstPositions:
    """Ranges of the nodes of an `ast`-built tree, as LibCST's syntactic positions give them,
    and the other questions the file context asks of a tree (parents, a node as written).

    A node built from an `ast` node whose range is LibCST's has it at once. Any other node
    (an argument, whose range holds its value's parentheses; a tuple; a decorator's `@`) is
    found in LibCST's parse of the one statement that holds it, which has the same shape as
    the `ast`-built statement; so is the code of a node as LibCST renders it.
    """

    def __init__(self, text: str, lines: LineIndex) -> None:
        self.text = text
        self.lines = lines
        self.spans: Dict[int, object] = {}  # id(node) -> the ast node, or a Span
        self.module: Optional[cst.Module] = None
        self._parents: Optional[Dict[int, cst.CSTNode]] = None
        self._statements: Dict[int, Tuple[Dict[int, cst.CSTNode], cst.Module, int]] = {}
        self._positions: Dict[Tuple[int, bool], Dict[cst.CSTNode, object]] = {}
        self._built_of: Dict[int, cst.CSTNode] = {}  # id(LibCST's node of a statement's parse) -> the built node
        # Why the file needs LibCST's tree, once something asked what this one cannot answer. Kept
        # as well as raised, so that no `except` on the way can hide it from the file pass.
        self.needs_libcst: Optional[str] = None

    def need(self, what: str) -> None:
        self.needs_libcst = self.needs_libcst or what
        raise NeedsLibCST(what)

    def range(self, node: cst.CSTNode, inclusive: bool = False) -> Tuple[int, int, int, int]:
        """(line, column, end line, end column): lines 1-based, columns 0-based in characters.
        `node` is a node of the built tree or one `written` gave; `inclusive` asks for the span
        LibCST renders for it (`module.code_for_node`), whitespace included, as a fix replaces it."""
        built = self._built_of.get(id(node))
        if built is not None:
            node = built
        found = self.spans.get(id(node))
        if found is None or inclusive:
            if inclusive and isinstance(node, (cst.BaseStatement, cst.BaseSuite)):
                self.need("the span of a whole statement (its comments stand outside its parse)")
            mini_node, _, statement = self._counterpart(node)
            positions, shift = self._positions_of(statement, inclusive)
            code_range = positions[mini_node]
            return (
                code_range.start.line + shift,  # type: ignore[attr-defined]
                code_range.start.column,  # type: ignore[attr-defined]
                code_range.end.line + shift,  # type: ignore[attr-defined]
                code_range.end.column,  # type: ignore[attr-defined]
            )
        if type(found) is tuple:
            line, column, end_line, end_column = found  # type: ignore[misc]
        else:
            line, column = found.lineno, found.col_offset  # type: ignore[attr-defined]
            end_line, end_column = found.end_lineno, found.end_col_offset  # type: ignore[attr-defined]
        return line, self.column(line, column), end_line, self.column(end_line, end_column)

    def column(self, line: int, byte_column: int) -> int:
        text = self.lines.line_text(line)
        if text.isascii():
            return byte_column
        return len(text.encode("utf-8", "surrogatepass")[:byte_column].decode("utf-8", "surrogatepass"))

    def code(self, node: cst.CSTNode) -> str:
        """The node as LibCST renders it (`module.code_for_node`): its text, parentheses included.
        That is the text of its range, on one line and unless parentheses of its own may stand
        around it."""
        found = self.bare_text(node)
        # (Over several lines LibCST renders a node without the indentation of its block.)
        if found is not None and "\n" not in found and "\r" not in found:
            return found
        mini_node, mini, _ = self._counterpart(node)
        return mini.code_for_node(mini_node)

    def bare_text(self, node: cst.CSTNode, parentheses_allowed: bool = False) -> Optional[str]:
        """The text of the node's `ast` range when LibCST's code of the node adds nothing to it
        but, with `parentheses_allowed`, parentheses, whitespace and line continuations (no
        comment); None when it may add more (then only LibCST's parse of its statement tells)."""
        if id(node) not in self.spans or isinstance(node, cst.BaseStatement):
            return None
        line, column, end_line, end_column = self.range(node)
        start, end = self.lines.offset(line, column), self.lines.offset(end_line, end_column)
        text = self.text
        skipped = " \t\r\n\\(" if parentheses_allowed else " \t\r\n\\"
        before = start - 1
        while before >= 0 and text[before] in skipped:
            before -= 1
        if before >= 0 and text[before] == "(":
            return None  # a parenthesis of its own may stand there
        if before < self.lines.starts[line - 1] and "#" in text[text.rfind("\n", 0, max(before, 0)) + 1 : before + 1]:
            return None  # a comment may stand between the node and a parenthesis of its own
        if parentheses_allowed:
            after = end
            while after < len(text) and text[after] in " \t\r\n\\)":
                after += 1
            if after < len(text) and text[after] == "#":
                return None
        return text[start:end]

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        if self._parents is None:
            self._parents = parent_map(self.module)  # type: ignore[arg-type]
        return self._parents.get(id(node))

    def statement_holding(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        current: Optional[cst.CSTNode] = self._built_of.get(id(node), node)
        while current is not None and current is not self.module:
            if isinstance(current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return current
            current = self.parent(current)
        return None

    def _statement_to_parse(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The innermost statement around the node that parses alone: an `elif` is part of its `if`."""
        statement = self.statement_holding(node)
        while type(statement) is cst.If:
            parent = self.parent(statement)
            if type(parent) is not cst.If or parent.orelse is not statement:
                break
            statement = parent
        return statement

    def _counterpart(self, node: cst.CSTNode):
        """The node's counterpart in LibCST's parse of its statement, that parse (a module) and
        the statement."""
        statement = self._statement_to_parse(node)
        if statement is None or id(statement) not in self.spans:
            self.need(f"no statement around a {type(node).__name__}")
        found = self._statements.get(id(statement))
        if found is None:
            found = self._statements[id(statement)] = self._parse_statement(statement)
        counterparts, mini, _ = found
        mini_node = counterparts.get(id(node))
        if mini_node is None:
            self.need(f"a {type(node).__name__} not found again in its statement")
        return mini_node, mini, statement

    def written(self, node: cst.CSTNode) -> cst.CSTNode:
        """LibCST's node for `node`, as written in the file (its whitespace, commas, comments):
        what a fix's new code is made from. A node not of the built tree (a new one) is itself."""
        if not self.is_built(node):
            return node
        return self._counterpart(node)[0]

    def is_built(self, node: cst.CSTNode) -> bool:
        """A node of the `ast`-built tree (which has no layout to write back). Most nodes asked
        about have an `ast` range, and answer without the parent map (a walk of the whole tree)."""
        return id(node) in self.spans or node is self.module or self.parent(node) is not None

    def _positions_of(self, statement: cst.CSTNode, inclusive: bool = False):
        """LibCST's positions in the parse of `statement`, and the line shift from it to the file."""
        _, mini, shift = self._statements[id(statement)]
        key = (id(statement), inclusive)
        found = self._positions.get(key)
        if found is None:
            provider = WhitespaceInclusivePositionProvider if inclusive else PositionProvider
            found = self._positions[key] = rendered_positions(mini, provider)[0]
        return found, shift

    def _parse_statement(self, statement: cst.CSTNode):
        first, last = self._line_range(statement)
        lines = self.lines
        start = lines.starts[first - 1]
        end = lines.starts[last] if last < len(lines.starts) else len(self.text)
        code = self.text[start:end]
        if not code.endswith(("\n", "\r")):
            code += "\n"
        indented = bool(code[:1].strip() == "" and code[:1] in (" ", "\t"))
        shift = first - 1
        if indented:
            code = "if 1:\n" + code  # the statement keeps its columns inside a block
            shift -= 1
        try:
            mini = cst.parse_module(code)
        except cst.ParserSyntaxError:
            self.need("its statement does not parse alone")
        parsed = mini.body[0].body.body[0] if indented else mini.body[0]  # type: ignore[attr-defined]
        counterparts: Dict[int, cst.CSTNode] = {}
        try:
            _match(statement, parsed, counterparts, self._built_of)
        except NeedsLibCST as error:
            self.need(str(error))
        return counterparts, mini, shift

    def _line_range(self, statement: cst.CSTNode) -> Tuple[int, int]:
        found = self.spans[id(statement)]
        if type(found) is tuple:
            return found[0], found[2]  # type: ignore[index]
        first = found.lineno  # type: ignore[attr-defined]
        for decorator in getattr(found, "decorator_list", ()):
            first = min(first, decorator.lineno)  # the `@` stands on the decorator's line
        return first, found.end_lineno  # type: ignore[attr-defined]


def _closes_at_end(source: str) -> bool:
    """The bracket `source` opens with is closed by its last character (`(a, b)`, not `(a), (b)`)."""
    depth = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type != tokenize.OP:
                continue
            if token.string in "([{":
                depth += 1
            elif token.string in ")]}":
                depth -= 1
                if depth == 0:
                    return token.end[1] == len(source) and token.end[0] == source.count("\n") + 1
    except (tokenize.TokenError, SyntaxError):
        raise NeedsLibCST("a sequence pattern whose brackets could not be read") from None
    return False


def _match(
    built: cst.CSTNode, parsed: cst.CSTNode, counterparts: Dict[int, cst.CSTNode], built_of: Dict[int, cst.CSTNode]
) -> None:
    """Pair each node of an `ast`-built subtree with LibCST's node in the same place (both ways)."""
    stack = [(built, parsed)]
    while stack:
        left, right = stack.pop()
        if type(left) is not type(right):
            raise NeedsLibCST(f"a {type(left).__name__} where LibCST has a {type(right).__name__}")
        counterparts[id(left)] = right
        built_of[id(right)] = left
        for name in child_fields(type(left)):
            a, b = getattr(left, name), getattr(right, name)
            if isinstance(a, cst.CSTNode):
                if isinstance(b, cst.CSTNode):
                    stack.append((a, b))
            elif type(a) in (list, tuple) and type(b) in (list, tuple) and len(a) == len(b):
                stack.extend((x, y) for x, y in zip(a, b) if isinstance(x, cst.CSTNode) and isinstance(y, cst.CSTNode))


class AstTreeBuilder:
    """Builds the LibCST-shaped tree of one parsed text (call `module`)."""

    def __init__(self, text: str, lines: LineIndex, positions: AstPositions) -> None:
        self.text = text
        self.lines = lines
        self.spans = positions.spans
        self._indents = [""]  # the indentation of each block being built, outermost first
        self._default_indent: Optional[str] = None
        self._expression: Dict[type, Callable] = {
            ast.Name: self._name,
            ast.Attribute: self._attribute,
            ast.Call: self._call,
            ast.Constant: self._constant,
            ast.BinOp: self._binary,
            ast.BoolOp: self._boolean,
            ast.UnaryOp: self._unary,
            ast.Compare: self._compare,
            ast.Subscript: self._subscript,
            ast.Tuple: self._tuple,
            ast.List: self._list,
            ast.Set: self._set,
            ast.Dict: self._dict,
            ast.IfExp: self._if_expression,
            ast.Lambda: self._lambda,
            ast.ListComp: self._list_comprehension,
            ast.SetComp: self._set_comprehension,
            ast.DictComp: self._dict_comprehension,
            ast.GeneratorExp: self._generator,
            ast.Await: self._await,
            ast.Yield: self._yield,
            ast.YieldFrom: self._yield_from,
            ast.NamedExpr: self._named,
            ast.JoinedStr: self._formatted_string,
            ast.Starred: self._starred_alone,
            ast.Slice: self._slice_alone,
        }
        self._statement: Dict[type, Callable] = {
            ast.Expr: lambda s: cst.Expr(value=self.expression(s.value)),
            ast.Assign: self._assign,
            ast.AugAssign: self._augmented_assign,
            ast.AnnAssign: self._annotated_assign,
            ast.Return: lambda s: cst.Return(value=self.optional(s.value)),
            ast.Pass: lambda s: cst.Pass(),
            ast.Break: lambda s: cst.Break(),
            ast.Continue: lambda s: cst.Continue(),
            ast.Delete: self._delete,
            ast.Raise: self._raise,
            ast.Assert: lambda s: cst.Assert(test=self.expression(s.test), msg=self.optional(s.msg)),
            ast.Global: lambda s: cst.Global(names=[cst.NameItem(name=cst.Name(value=n)) for n in s.names]),
            ast.Nonlocal: lambda s: cst.Nonlocal(names=[cst.NameItem(name=cst.Name(value=n)) for n in s.names]),
            ast.Import: self._import,
            ast.ImportFrom: self._import_from,
            ast.If: self._if,
            ast.For: self._for,
            ast.AsyncFor: self._for,
            ast.While: self._while,
            ast.With: self._with,
            ast.AsyncWith: self._with,
            ast.FunctionDef: self._function,
            ast.AsyncFunctionDef: self._function,
            ast.ClassDef: self._class,
            ast.Try: self._try,
            ast.Match: self._match_statement,
        }
        self._pattern: Dict[type, Callable] = {
            ast.MatchValue: lambda p: cst.MatchValue(value=self.expression(p.value)),
            ast.MatchSingleton: lambda p: cst.MatchSingleton(value=cst.Name(value=repr(p.value))),
            ast.MatchSequence: self._sequence_pattern,
            ast.MatchMapping: self._mapping_pattern,
            ast.MatchClass: self._class_pattern,
            ast.MatchAs: self._as_pattern,
            ast.MatchOr: self._or_pattern,
        }
        try_star = getattr(ast, "TryStar", None)
        if try_star is not None:
            self._statement[try_star] = self._try

    # -- source text ------------------------------------------------------------
    def _offset(self, line: int, byte_column: int) -> int:
        text = self.lines.line_text(line)
        start = self.lines.starts[line - 1]
        if text.isascii():
            return start + byte_column
        return start + len(text.encode("utf-8", "surrogatepass")[:byte_column].decode("utf-8", "surrogatepass"))

    def source_of(self, node: ast.AST) -> str:
        start = self._offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        return self.text[start : self._offset(node.end_lineno, node.end_col_offset)]  # type: ignore[attr-defined]

    def _starts_line(self, node: ast.stmt) -> bool:
        """Only indentation stands before the statement on its line (an indented block, not `if x: y`)."""
        text = self.lines.line_text(node.lineno)
        prefix = text.encode("utf-8", "surrogatepass")[: node.col_offset] if not text.isascii() else text[: node.col_offset]
        return not prefix.strip()

    # -- module and statements ------------------------------------------------------
    def module(self, tree: ast.Module) -> cst.Module:
        body = self.statements(tree.body)
        newline = _NEWLINE_RE.search(self.text)
        return cst.Module(
            body=body,
            default_indent=self._default_indent or "    ",
            default_newline=newline.group() if newline else "\n",
            has_trailing_newline=self.text.endswith(("\n", "\r")),
        )

    def statements(self, body: List[ast.stmt]) -> list:
        """LibCST's statement list: small statements sharing a line (`a; b`) are one line."""
        result: list = []
        line: list = []  # the small statements of the line being gathered
        first: Optional[ast.stmt] = None
        last: Optional[ast.stmt] = None
        small = _SMALL_STATEMENTS
        for statement in body:
            kind = type(statement)
            if kind in small:
                built = self._statement[kind](statement)
                self.spans[id(built)] = statement
                if not line or not self._after_semicolon(last, statement):  # type: ignore[arg-type]
                    if line:
                        result.append(self._line(line, first, last))  # type: ignore[arg-type]
                    line, first = [], statement
                line.append(built)
                last = statement
                continue
            if line:
                result.append(self._line(line, first, last))  # type: ignore[arg-type]
                line = []
            handler = self._statement.get(kind)
            if handler is None:
                raise NeedsLibCST(f"no LibCST-shaped node for `{kind.__name__}`")
            built = handler(statement)
            self.spans[id(built)] = statement
            result.append(built)
        if line:
            result.append(self._line(line, first, last))  # type: ignore[arg-type]
        return result

    def _after_semicolon(self, previous: ast.stmt, statement: ast.stmt) -> bool:
        """The statement follows the previous one on its line after a `;`."""
        if statement.lineno != previous.end_lineno:
            return False
        text = self.lines.line_text(statement.lineno)
        between = (
            text[previous.end_col_offset : statement.col_offset]
            if text.isascii()
            else text.encode("utf-8", "surrogatepass")[previous.end_col_offset : statement.col_offset].decode("utf-8", "replace")
        )
        return between.strip() == ";"

    def _line(self, body: list, first: ast.stmt, last: ast.stmt) -> cst.SimpleStatementLine:
        line = cst.SimpleStatementLine(body=body)
        self.spans[id(line)] = (first.lineno, first.col_offset, last.end_lineno, last.end_col_offset)
        return line

    def suite(self, body: List[ast.stmt]):
        """An indented block, or the statements on the line of the header (`if x: return`)."""
        if body and not self._starts_line(body[0]):
            return cst.SimpleStatementSuite(body=[self._small(statement) for statement in body])
        indent = self._enter_block(self.lines.line_text(body[0].lineno) if body else "")
        try:
            block = cst.IndentedBlock(body=self.statements(body), indent=indent)
        finally:
            self._indents.pop()
        if body:
            first, last = body[0], body[-1]
            self.spans[id(block)] = (first.lineno, first.col_offset, last.end_lineno, last.end_col_offset)
        return block

    def _enter_block(self, first_line: str) -> Optional[str]:
        """Enter a block whose first line is `first_line` (the caller leaves it): its indentation
        as LibCST keeps it, relative to the block around it, None when it is the module's (the
        first block's)."""
        outer = self._indents[-1]
        indentation = first_line[: len(first_line) - len(first_line.lstrip(" \t"))]
        relative = indentation[len(outer) :] if indentation.startswith(outer) else indentation
        if self._default_indent is None:
            self._default_indent = relative
        self._indents.append(indentation)
        return None if relative == self._default_indent else relative

    def _small(self, statement: ast.stmt):
        handler = self._statement.get(type(statement))
        if handler is None or type(statement) not in _SMALL_STATEMENTS:
            raise NeedsLibCST(f"no LibCST-shaped node for `{type(statement).__name__}` on a header's line")
        built = handler(statement)
        self.spans[id(built)] = statement
        return built

    def _orelse(self, body: List[ast.stmt]) -> Optional[cst.Else]:
        return cst.Else(body=self.suite(body)) if body else None

    def _assign(self, statement: ast.Assign) -> cst.Assign:
        targets = []
        for target in statement.targets:
            targets.append(cst.AssignTarget(target=self.expression(target)))
        return cst.Assign(targets=targets, value=self.expression(statement.value))

    def _augmented_assign(self, statement: ast.AugAssign) -> cst.AugAssign:
        return cst.AugAssign(
            target=self.expression(statement.target),
            operator=_AUGMENTED[type(statement.op)](),
            value=self.expression(statement.value),
        )

    def _annotated_assign(self, statement: ast.AnnAssign) -> cst.AnnAssign:
        return cst.AnnAssign(
            target=self.expression(statement.target),
            annotation=self._annotation(statement.annotation),
            value=self.optional(statement.value),
        )

    def _annotation(self, expression: ast.expr) -> cst.Annotation:
        return cst.Annotation(annotation=self.expression(expression))

    def _delete(self, statement: ast.Delete) -> cst.Del:
        if len(statement.targets) == 1:
            return cst.Del(target=self.expression(statement.targets[0]))
        return cst.Del(target=cst.Tuple(elements=[cst.Element(value=self.expression(t)) for t in statement.targets]))

    def _raise(self, statement: ast.Raise) -> cst.Raise:
        cause = cst.From(item=self.expression(statement.cause)) if statement.cause is not None else None
        return cst.Raise(exc=self.optional(statement.exc), cause=cause)

    def _dotted(self, dotted: str):
        """`a.b.c` as LibCST's Name/Attribute chain (an import's module)."""
        parts = dotted.split(".")
        node = cst.Name(value=parts[0])
        for part in parts[1:]:
            node = cst.Attribute(value=node, attr=cst.Name(value=part))
        return node

    def _alias(self, alias: ast.alias) -> cst.ImportAlias:
        asname = cst.AsName(name=cst.Name(value=alias.asname)) if alias.asname else None
        built = cst.ImportAlias(name=self._dotted(alias.name), asname=asname)
        self.spans[id(built)] = alias
        return built

    def _import(self, statement: ast.Import) -> cst.Import:
        return cst.Import(names=[self._alias(alias) for alias in statement.names])

    def _import_from(self, statement: ast.ImportFrom) -> cst.ImportFrom:
        if len(statement.names) == 1 and statement.names[0].name == "*":
            names = cst.ImportStar()
        else:
            names = [self._alias(alias) for alias in statement.names]  # type: ignore[assignment]
        module = self._dotted(statement.module) if statement.module else None
        return cst.ImportFrom(module=module, names=names, relative=[cst.Dot() for _ in range(statement.level or 0)])

    def _if(self, statement: ast.If) -> cst.If:
        orelse = None
        if statement.orelse:
            first = statement.orelse[0]
            if len(statement.orelse) == 1 and type(first) is ast.If and self._is_elif(first):
                orelse = self._if(first)
                self.spans[id(orelse)] = first
            else:
                orelse = cst.Else(body=self.suite(statement.orelse))
        return cst.If(test=self.expression(statement.test), body=self.suite(statement.body), orelse=orelse)

    def _is_elif(self, statement: ast.If) -> bool:
        text = self.lines.line_text(statement.lineno)
        if not text.isascii():
            return text.encode("utf-8", "surrogatepass")[statement.col_offset :].startswith(b"elif")
        return text.startswith("elif", statement.col_offset)

    def _for(self, statement) -> cst.For:
        return cst.For(
            target=self.expression(statement.target),
            iter=self.expression(statement.iter),
            body=self.suite(statement.body),
            orelse=self._orelse(statement.orelse),
            asynchronous=cst.Asynchronous() if type(statement) is ast.AsyncFor else None,
        )

    def _while(self, statement: ast.While) -> cst.While:
        return cst.While(
            test=self.expression(statement.test), body=self.suite(statement.body), orelse=self._orelse(statement.orelse)
        )

    def _with(self, statement) -> cst.With:
        items = []
        for item in statement.items:
            asname = cst.AsName(name=self.expression(item.optional_vars)) if item.optional_vars is not None else None
            items.append(cst.WithItem(item=self.expression(item.context_expr), asname=asname))
        return cst.With(
            items=items,
            body=self.suite(statement.body),
            asynchronous=cst.Asynchronous() if type(statement) is ast.AsyncWith else None,
        )

    def _decorators(self, expressions: List[ast.expr]) -> list:
        return [cst.Decorator(decorator=self.expression(expression)) for expression in expressions]

    def _function(self, statement) -> cst.FunctionDef:
        return cst.FunctionDef(
            name=self._definition_name(statement),
            params=self.parameters(statement.args),
            body=self.suite(statement.body),
            decorators=self._decorators(statement.decorator_list),
            returns=self._annotation(statement.returns) if statement.returns is not None else None,
            asynchronous=cst.Asynchronous() if type(statement) is ast.AsyncFunctionDef else None,
        )

    def _definition_name(self, statement) -> cst.Name:
        """The name of a `def`/`class`, with its range (the first word after the keyword)."""
        name = cst.Name(value=statement.name)
        text = self.lines.line_text(statement.lineno)
        if text.isascii():
            keyword = "class" if type(statement) is ast.ClassDef else "def"
            at = text.find(keyword, statement.col_offset)
            if at >= 0:
                at = text.find(statement.name, at + len(keyword))
                if at >= 0:
                    self.spans[id(name)] = (statement.lineno, at, statement.lineno, at + len(statement.name))
        return name

    def _class(self, statement: ast.ClassDef) -> cst.ClassDef:
        bases = [self._argument(base) for base in statement.bases]
        keywords = [self._keyword(keyword) for keyword in statement.keywords]
        return cst.ClassDef(
            name=self._definition_name(statement),
            body=self.suite(statement.body),
            bases=bases,
            keywords=keywords,
            decorators=self._decorators(statement.decorator_list),
        )

    def _try(self, statement) -> cst.Try:
        star = type(statement) is not ast.Try
        handler_class = cst.ExceptStarHandler if star else cst.ExceptHandler
        handlers = []
        for handler in statement.handlers:
            name = cst.AsName(name=cst.Name(value=handler.name)) if handler.name else None
            built = handler_class(body=self.suite(handler.body), type=self.optional(handler.type), name=name)
            handlers.append(built)
        finalbody = cst.Finally(body=self.suite(statement.finalbody)) if statement.finalbody else None
        return (cst.TryStar if star else cst.Try)(
            body=self.suite(statement.body), handlers=handlers, orelse=self._orelse(statement.orelse), finalbody=finalbody
        )

    # -- match statements -------------------------------------------------------
    def _match_statement(self, statement: ast.Match) -> cst.Match:
        # The cases are a block of their own: LibCST keeps their indentation (relative to the
        # `match`) on the statement, and each case's body is indented relative to its `case`.
        line = self.lines.line_text(statement.cases[0].pattern.lineno)  # `ast` places no `case`
        if not line.lstrip(" \t").startswith("case"):
            raise NeedsLibCST("a case whose pattern starts below its `case`")
        indent = self._enter_block(line)
        try:
            cases = [
                cst.MatchCase(pattern=self.pattern(case.pattern), body=self.suite(case.body), guard=self.optional(case.guard))
                for case in statement.cases
            ]
        finally:
            self._indents.pop()
        return cst.Match(
            subject=self.expression(statement.subject),
            cases=cases,
            indent=indent,
        )

    def pattern(self, node: ast.pattern):
        built = self._pattern[type(node)](node)
        # LibCST's range of a value pattern holds its value's parentheses (`case (2):`), and
        # leaves out a tuple pattern's own, the reverse of `ast`: those come from the parse.
        if type(built) is not cst.MatchValue and type(built) is not cst.MatchTuple:
            self.spans[id(built)] = node
        return built

    def _or_pattern(self, node: ast.MatchOr) -> cst.MatchOr:
        last = len(node.patterns) - 1
        return cst.MatchOr(
            patterns=[
                cst.MatchOrElement(pattern=self.pattern(p), separator=cst.BitOr() if at < last else cst.MaybeSentinel.DEFAULT)
                for at, p in enumerate(node.patterns)
            ]
        )

    def _sequence_pattern(self, node: ast.MatchSequence):
        elements = [
            cst.MatchStar(name=cst.Name(value=p.name) if p.name else None)
            if type(p) is ast.MatchStar
            else cst.MatchSequenceElement(value=self.pattern(p))
            for p in node.patterns
        ]
        source = self.source_of(node)
        if source.startswith("(") and _closes_at_end(source):
            return cst.MatchTuple(patterns=elements)
        if source.startswith("[") and _closes_at_end(source):
            return cst.MatchList(patterns=elements, lbracket=cst.LeftSquareBracket(), rbracket=cst.RightSquareBracket())
        # An open sequence (`case a, b:`): LibCST makes it a list pattern without brackets.
        return cst.MatchList(patterns=elements)

    def _mapping_pattern(self, node: ast.MatchMapping) -> cst.MatchMapping:
        elements = [
            cst.MatchMappingElement(key=self.expression(key), pattern=self.pattern(p)) for key, p in zip(node.keys, node.patterns)
        ]
        return cst.MatchMapping(elements=elements, rest=cst.Name(value=node.rest) if node.rest else None)

    def _class_pattern(self, node: ast.MatchClass) -> cst.MatchClass:
        return cst.MatchClass(
            cls=self.expression(node.cls),
            patterns=[cst.MatchSequenceElement(value=self.pattern(p)) for p in node.patterns],
            kwds=[
                cst.MatchKeywordElement(key=cst.Name(value=key), pattern=self.pattern(p))
                for key, p in zip(node.kwd_attrs, node.kwd_patterns)
            ],
        )

    def _as_pattern(self, node: ast.MatchAs) -> cst.MatchAs:
        return cst.MatchAs(
            pattern=self.pattern(node.pattern) if node.pattern is not None else None,
            name=cst.Name(value=node.name) if node.name is not None else None,
        )

    # -- parameters -------------------------------------------------------------
    def _param(self, argument: ast.arg, default: Optional[ast.expr], star) -> cst.Param:
        annotation = self._annotation(argument.annotation) if argument.annotation is not None else None
        param = cst.Param(name=cst.Name(value=argument.arg), annotation=annotation, default=self.optional(default), star=star)
        self.spans[id(param.name)] = (
            argument.lineno,
            argument.col_offset,
            argument.lineno,
            argument.col_offset + len(argument.arg),
        )
        return param

    def parameters(self, arguments: ast.arguments) -> cst.Parameters:
        positional = arguments.posonlyargs + arguments.args
        defaults: List[Optional[ast.expr]] = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
        built = [self._param(argument, default, "") for argument, default in zip(positional, defaults)]
        posonly, params = built[: len(arguments.posonlyargs)], built[len(arguments.posonlyargs) :]
        if arguments.vararg is not None:
            star_arg = self._param(arguments.vararg, None, "*")
        elif arguments.kwonlyargs:
            star_arg = cst.ParamStar()
        else:
            star_arg = cst.MaybeSentinel.DEFAULT
        kwonly = [self._param(argument, default, "") for argument, default in zip(arguments.kwonlyargs, arguments.kw_defaults)]
        star_kwarg = self._param(arguments.kwarg, None, "**") if arguments.kwarg is not None else None
        return cst.Parameters(
            params=params,
            star_arg=star_arg,
            kwonly_params=kwonly,
            star_kwarg=star_kwarg,
            posonly_params=posonly,
            posonly_ind=cst.ParamSlash() if posonly else cst.MaybeSentinel.DEFAULT,
        )

    # -- expressions ----------------------------------------------------------------
    def expression(self, node: ast.expr):
        kind = type(node)
        built = self._expression[kind](node)
        if kind not in _RANGE_NOT_AST:
            self.spans[id(built)] = node
        return built

    def optional(self, node: Optional[ast.expr]):
        return None if node is None else self.expression(node)

    def _name(self, node: ast.Name) -> cst.Name:
        return cst.Name(value=node.id)

    def _attribute(self, node: ast.Attribute) -> cst.Attribute:
        attr = cst.Name(value=node.attr)
        end = node.end_col_offset
        self.spans[id(attr)] = (node.end_lineno, end - len(node.attr.encode("utf-8", "surrogatepass")), node.end_lineno, end)
        return cst.Attribute(value=self.expression(node.value), attr=attr)

    def _argument(self, node: ast.expr) -> cst.Arg:
        if type(node) is ast.Starred:
            return cst.Arg(value=self.expression(node.value), star="*")
        # Its range is its value's with the value's parentheses, which `ast` does not give.
        return cst.Arg(value=self.expression(node))

    def _keyword(self, node: ast.keyword) -> cst.Arg:
        if node.arg is None:
            arg = cst.Arg(value=self.expression(node.value), star="**")
        else:
            keyword = cst.Name(value=node.arg)
            self.spans[id(keyword)] = (node.lineno, node.col_offset, node.lineno, node.col_offset + len(node.arg.encode("utf-8")))
            arg = cst.Arg(value=self.expression(node.value), keyword=keyword)
        return arg

    def _call(self, node: ast.Call) -> cst.Call:
        func = self.expression(node.func)
        if not node.keywords:
            args = [self._argument(argument) for argument in node.args]
        elif not node.args:
            args = [self._keyword(keyword) for keyword in node.keywords]
        else:
            # LibCST keeps the arguments in source order; `ast` puts keywords apart.
            ordered = sorted(node.args + node.keywords, key=lambda a: (a.lineno, a.col_offset))  # type: ignore[operator]
            args = [self._keyword(a) if type(a) is ast.keyword else self._argument(a) for a in ordered]
        return cst.Call(func=func, args=args)

    def _constant(self, node: ast.Constant):
        value = node.value
        kind = type(value)
        if kind is str or kind is bytes:
            source = self.source_of(node)
            if _SINGLE_STRING_RE.fullmatch(source):
                return cst.SimpleString(value=source)
            return self._parsed_expression(source)
        if value is None or kind is bool:
            return cst.Name(value=str(value))
        if value is Ellipsis:
            return cst.Ellipsis()
        source = self.source_of(node)
        if kind is int:
            return cst.Integer(value=source)
        if kind is float:
            return cst.Float(value=source)
        return cst.Imaginary(value=source)

    def _parsed_expression(self, source: str):
        """What `ast` folds (implicitly joined strings) from LibCST's own expression parser.
        Its inner nodes have no range here: a position asked of them asks for LibCST's tree."""
        try:
            parsed = cst.parse_expression("(" + source + ")")
        except cst.ParserSyntaxError as error:
            raise NeedsLibCST(f"cannot build `{source[:40]}`") from error
        return parsed.with_changes(lpar=(), rpar=())

    def _formatted_string(self, node: ast.JoinedStr):
        return self._parsed_expression(self.source_of(node))

    def _binary(self, node: ast.BinOp) -> cst.BinaryOperation:
        return cst.BinaryOperation(
            left=self.expression(node.left), operator=_BINARY[type(node.op)](), right=self.expression(node.right)
        )

    def _boolean(self, node: ast.BoolOp):
        operator = cst.And if type(node.op) is ast.And else cst.Or
        values = node.values
        result = self.expression(values[0])
        for index in range(1, len(values)):
            result = cst.BooleanOperation(left=result, operator=operator(), right=self.expression(values[index]))
        return result

    def _unary(self, node: ast.UnaryOp) -> cst.UnaryOperation:
        return cst.UnaryOperation(operator=_UNARY[type(node.op)](), expression=self.expression(node.operand))

    def _compare(self, node: ast.Compare) -> cst.Comparison:
        targets = [
            cst.ComparisonTarget(operator=_COMPARE[type(op)](), comparator=self.expression(comparator))
            for op, comparator in zip(node.ops, node.comparators)
        ]
        return cst.Comparison(left=self.expression(node.left), comparisons=targets)

    def _subscript(self, node: ast.Subscript) -> cst.Subscript:
        index = node.slice
        if type(index) is ast.Tuple and index.elts and not self._parenthesized(index):
            elements = [self._subscript_element(element) for element in index.elts]
        else:
            elements = [self._subscript_element(index)]
        return cst.Subscript(value=self.expression(node.value), slice=elements)

    def _subscript_element(self, node: ast.expr) -> cst.SubscriptElement:
        if type(node) is ast.Slice:
            inner = self._slice_alone(node)
        elif type(node) is ast.Starred:
            inner = cst.Index(value=self.expression(node.value), star="*")
        else:
            inner = cst.Index(value=self.expression(node))
        return cst.SubscriptElement(slice=inner)

    def _slice_alone(self, node: ast.Slice) -> cst.Slice:
        return cst.Slice(lower=self.optional(node.lower), upper=self.optional(node.upper), step=self.optional(node.step))

    def _parenthesized(self, node: ast.Tuple) -> bool:
        """A tuple written in parentheses: its range starts before its first element (`ast`
        gives a parenthesized tuple the range of its parentheses)."""
        first = node.elts[0]
        return (node.lineno, node.col_offset) < (first.lineno, first.col_offset) and self.source_of(node).startswith("(")

    def _elements(self, elements: List[ast.expr]) -> list:
        result = []
        for element in elements:
            if type(element) is ast.Starred:
                result.append(cst.StarredElement(value=self.expression(element.value)))
            else:
                result.append(cst.Element(value=self.expression(element)))
        return result

    def _tuple(self, node: ast.Tuple) -> cst.Tuple:
        return cst.Tuple(elements=self._elements(node.elts))

    def _list(self, node: ast.List) -> cst.List:
        return cst.List(elements=self._elements(node.elts))

    def _set(self, node: ast.Set) -> cst.Set:
        return cst.Set(elements=self._elements(node.elts))

    def _dict(self, node: ast.Dict) -> cst.Dict:
        elements = []
        for key, value in zip(node.keys, node.values):
            if key is None:
                elements.append(cst.StarredDictElement(value=self.expression(value)))
            else:
                elements.append(cst.DictElement(key=self.expression(key), value=self.expression(value)))
        return cst.Dict(elements=elements)

    def _if_expression(self, node: ast.IfExp) -> cst.IfExp:
        return cst.IfExp(test=self.expression(node.test), body=self.expression(node.body), orelse=self.expression(node.orelse))

    def _lambda(self, node: ast.Lambda) -> cst.Lambda:
        return cst.Lambda(params=self.parameters(node.args), body=self.expression(node.body))

    def _comprehension(self, generators: List[ast.comprehension]) -> cst.CompFor:
        inner = None
        for generator in reversed(generators):
            inner = cst.CompFor(
                target=self.expression(generator.target),
                iter=self.expression(generator.iter),
                ifs=[cst.CompIf(test=self.expression(test)) for test in generator.ifs],
                inner_for_in=inner,
                asynchronous=cst.Asynchronous() if generator.is_async else None,
            )
        return inner  # type: ignore[return-value]

    def _list_comprehension(self, node: ast.ListComp) -> cst.ListComp:
        return cst.ListComp(elt=self.expression(node.elt), for_in=self._comprehension(node.generators))

    def _set_comprehension(self, node: ast.SetComp) -> cst.SetComp:
        return cst.SetComp(elt=self.expression(node.elt), for_in=self._comprehension(node.generators))

    def _dict_comprehension(self, node: ast.DictComp) -> cst.DictComp:
        return cst.DictComp(
            key=self.expression(node.key), value=self.expression(node.value), for_in=self._comprehension(node.generators)
        )

    def _generator(self, node: ast.GeneratorExp) -> cst.GeneratorExp:
        return cst.GeneratorExp(elt=self.expression(node.elt), for_in=self._comprehension(node.generators))

    def _await(self, node: ast.Await) -> cst.Await:
        return cst.Await(expression=self.expression(node.value))

    def _yield(self, node: ast.Yield) -> cst.Yield:
        return cst.Yield(value=self.optional(node.value))

    def _yield_from(self, node: ast.YieldFrom) -> cst.Yield:
        return cst.Yield(value=cst.From(item=self.expression(node.value)))

    def _named(self, node: ast.NamedExpr) -> cst.NamedExpr:
        return cst.NamedExpr(target=self.expression(node.target), value=self.expression(node.value))

    def _starred_alone(self, node: ast.Starred):
        raise NeedsLibCST("a starred expression outside a call, a collection or a subscript")


def ast_shaped_module(text: str, tree: ast.Module, lines: LineIndex) -> Tuple[cst.Module, AstPositions]:
    """The LibCST-shaped tree of `text` (already parsed by Python into `tree`), and its positions."""
    positions = AstPositions(text, lines)
    builder = AstTreeBuilder(text, lines, positions)
    try:
        positions.module = builder.module(tree)
    finally:
        # The builder's dispatch tables hold its own bound methods: a reference cycle that
        # would keep the builder, and through its spans the whole `ast` tree, alive until the
        # cycle collector (off during a file) walks them all.
        builder._expression.clear()
        builder._statement.clear()
        builder._pattern.clear()
    return positions.module, positions
