"""Positions of a few reported nodes without regenerating the whole module.

LibCST's PositionProvider renders the whole module with position tracking,
about twice the cost of the parse, even when one node in a 6,000-line file is
reported. Here the innermost statement that contains the node (descending into
the blocks of class and function bodies, `if`/`elif`/`else`, loops, `with` and
`try` handlers) is located with Python's own parser, which is far cheaper, and
the provider runs on that statement alone (its cost grows with the nodes it
renders); the result is
shifted to the statement's real line and indentation. Anything unexpected
falls back to the whole-module provider.
"""

from __future__ import annotations

import ast
import re
import sys
import threading
from typing import Callable, Dict, List, Optional, Tuple

import libcst as cst
from libcst.metadata import (
    MetadataWrapper,
    PositionProvider,
    WhitespaceInclusivePositionProvider,
)
from libcst.metadata.position_provider import (
    PositionProvidingCodegenState,
    WhitespaceInclusivePositionProvidingCodegenState,
)

from torchdet_lint.core.traversal import child_fields, kept_node_types

_NEWLINE_RE = re.compile(r"\r\n|\r|\n")
Range = Tuple[int, int, int, int]  # line (1-based), column (0-based), end line, end column
_INDENT_OWNERS = (
    cst.BaseStatement,
    cst.BaseSuite,
    cst.Decorator,
    cst.EmptyLine,
    cst.Else,
    cst.Finally,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.MatchCase,
)


class _Unmappable(Exception):
    pass


_STATES = {
    PositionProvider: PositionProvidingCodegenState,
    WhitespaceInclusivePositionProvider: WhitespaceInclusivePositionProvidingCodegenState,
}


def rendered_positions(module: cst.Module, provider) -> Tuple[Dict[cst.CSTNode, object], str]:
    """Every node's range in `module` from one rendering, and the code rendered.

    This is what `MetadataWrapper(module).resolve(provider)` computes, without what the
    wrapper does next: once the provider is done it runs a batched visit for the batchable
    providers, and with none left that visit still rebuilds the whole tree, checking every
    node again (as much again as the rendering). The rendering's tokens are the module's
    code, so it is not rendered a second time either. Where LibCST is laid out differently,
    the wrapper does it."""
    state_class = _STATES.get(provider)
    if state_class is not None:
        try:
            found = provider()
            state = state_class(default_indent=module.default_indent, default_newline=module.default_newline, provider=found)
        except (TypeError, AttributeError):
            state = None
        if state is not None:
            module._codegen(state)
            return found._computed, "".join(state.tokens)
    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(provider), module.code


def parent_map(module: cst.Module) -> Dict[int, cst.CSTNode]:
    """The parent of every node a rule can report (one lean walk, only for files that report)."""
    parents: Dict[int, cst.CSTNode] = {}
    stack: List[cst.CSTNode] = [module]
    keep = kept_node_types(frozenset())
    while stack:
        node = stack.pop()
        for field_name in child_fields(type(node)):
            value = getattr(node, field_name)
            if type(value) in keep:
                parents[id(value)] = node
                stack.append(value)
            elif type(value) is tuple or type(value) is list:
                for item in value:
                    if type(item) in keep:
                        parents[id(item)] = node
                        stack.append(item)
    return parents


def _ast_statements_for(cst_body, ast_body) -> List[Tuple[cst.CSTNode, ast.stmt]]:
    """Pairs (LibCST statement, first AST statement of it): `a; b` is one LibCST line, two AST statements."""
    pairs = []
    index = 0
    for statement in cst_body:
        if index >= len(ast_body):
            raise _Unmappable()
        pairs.append((statement, ast_body[index]))
        index += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
    if index != len(ast_body):
        raise _Unmappable()
    return pairs


def _blocks(statement: cst.CSTNode, tree: ast.stmt) -> List[Tuple[Tuple[cst.CSTNode, ...], list, list]]:
    """The indented blocks of a compound statement with their AST statement lists, each as (the
    nodes from the statement down to its statements, LibCST statements, AST statements)."""
    found: List[Tuple[Tuple[cst.CSTNode, ...], list, list]] = []

    def block(path: Tuple[cst.CSTNode, ...], suite: cst.BaseSuite, statements: list) -> None:
        if type(suite) is cst.IndentedBlock:
            found.append((path + (suite,), list(suite.body), statements))

    body = getattr(statement, "body", None)
    if isinstance(body, cst.BaseSuite) and isinstance(getattr(tree, "body", None), list):
        block((), body, tree.body)
    orelse = getattr(statement, "orelse", None)
    if type(orelse) is cst.Else and isinstance(getattr(tree, "orelse", None), list):
        block((orelse,), orelse.body, tree.orelse)
    elif type(orelse) is cst.If and isinstance(tree, ast.If) and len(tree.orelse) == 1:
        # `elif`: its blocks, never the `elif` alone (rendered alone it would read `if`).
        found.extend(((orelse,) + path, inner, statements) for path, inner, statements in _blocks(orelse, tree.orelse[0]))
    if type(statement) in (cst.Try, cst.TryStar) and isinstance(tree, (ast.Try, getattr(ast, "TryStar", ast.Try))):
        if len(statement.handlers) != len(tree.handlers):
            return found
        for handler, tree_handler in zip(statement.handlers, tree.handlers):
            block((handler,), handler.body, tree_handler.body)
        if statement.finalbody is not None:
            block((statement.finalbody,), statement.finalbody.body, tree.finalbody)
    return found


def _block_holding(
    statement: cst.CSTNode, tree: ast.stmt, chain: List[cst.CSTNode], position: int
) -> Optional[Tuple[list, list, int]]:
    """The block of `statement` (at `chain[position]`) that holds a statement holding the node, as
    (its LibCST statements, its AST statements, the position of that statement in the chain)."""
    if not isinstance(statement, cst.BaseCompoundStatement) or position + 1 >= len(chain):
        return None
    for path, cst_statements, ast_statements in _blocks(statement, tree):
        after = position + 1 + len(path)
        if after >= len(chain) or any(chain[position + 1 + i] is not node for i, node in enumerate(path)):
            continue
        if any(candidate is chain[after] for candidate in cst_statements):
            return cst_statements, ast_statements, after
    return None


def _first_line(node: ast.stmt) -> int:
    # LibCST's syntactic start of a decorated definition is its `def`/`class`
    # line, like ast's lineno (the decorators have their own positions).
    return node.lineno


class LocalPositions:
    def __init__(self, module: cst.Module, lines, python_tree: Callable[[], Optional[ast.Module]]) -> None:
        self.module = module
        self.lines = lines  # context.LineIndex of the source text
        self.python_tree = python_tree  # the file's `ast`, parsed once and shared with the summary
        self._parents: Optional[Dict[int, cst.CSTNode]] = None
        self._tree: Optional[ast.Module] = None
        self._local: Dict[Tuple[int, type], Tuple[object, Tuple[int, int]]] = {}
        self._whole: Dict[type, object] = {}

    def range(self, node: cst.CSTNode, inclusive: bool = False) -> Range:
        provider = WhitespaceInclusivePositionProvider if inclusive else PositionProvider
        try:
            return self._local_range(node, provider)
        except (_Unmappable, SyntaxError, ValueError, KeyError, RecursionError, MemoryError):
            return self._whole_range(node, provider)

    # -- the fallback: LibCST over the whole module ---------------------------------
    def _whole_range(self, node: cst.CSTNode, provider) -> Range:
        if provider not in self._whole:
            self._whole[provider] = call_with_deep_stack(rendered_positions, self.module, provider)[0]
        code_range = self._whole[provider][node]
        return code_range.start.line, code_range.start.column, code_range.end.line, code_range.end.column

    # -- the local computation --------------------------------------------------------
    def _statement_and_line(self, node: cst.CSTNode) -> Tuple[cst.CSTNode, int]:
        """The innermost mappable statement holding `node`, and its first line in the file."""
        if self._parents is None:
            self._parents = parent_map(self.module)
        if self._tree is None:
            self._tree = self.python_tree()
        if self._tree is None:
            raise _Unmappable()
        chain = [node]
        while chain[-1] is not self.module:
            parent = self._parents.get(id(chain[-1]))
            if parent is None:
                raise _Unmappable()
            chain.append(parent)
        chain.reverse()  # module, top-level statement, ...
        cst_body, ast_body = self.module.body, self._tree.body
        statement, line = None, 0
        position = 1
        while position < len(chain):
            candidate = chain[position]
            pairs = _ast_statements_for(cst_body, ast_body)
            match = next((pair for pair in pairs if pair[0] is candidate), None)
            if match is None:
                raise _Unmappable()
            statement, line = match[0], _first_line(match[1])
            # Descend into a block of the statement (a body, an `else`, a handler) when the
            # node lies inside it: only the innermost statement is rendered.
            inner = _block_holding(statement, match[1], chain, position)
            if inner is None:
                break
            cst_body, ast_body, position = inner
        if statement is None:
            raise _Unmappable()
        return statement, line

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The node that holds `node` (None for the module and for whitespace)."""
        if self._parents is None:
            self._parents = parent_map(self.module)
        return self._parents.get(id(node))

    def statement_holding(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The innermost statement line or compound statement that holds `node` (None for the module)."""
        if self._parents is None:
            self._parents = parent_map(self.module)
        current: Optional[cst.CSTNode] = node
        while current is not None and current is not self.module:
            if isinstance(current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return current
            current = self._parents.get(id(current))
        return None

    def _local_range(self, node: cst.CSTNode, provider) -> Range:
        if node is self.module:
            raise _Unmappable()
        statement, first_line = self._statement_and_line(node)
        key = (id(statement), provider)
        if key not in self._local:
            mini = cst.Module(
                body=[statement],
                header=(),
                footer=(),
                encoding=self.module.encoding,
                default_indent=self.module.default_indent,
                default_newline=self.module.default_newline,
                has_trailing_newline=True,
            )
            positions, code = rendered_positions(mini, provider)
            start = positions[statement].start
            if provider is WhitespaceInclusivePositionProvider:
                # the inclusive range starts at the leading comments; anchor on the syntactic start
                start = rendered_positions(mini, PositionProvider)[0][statement].start
            rendered = _NEWLINE_RE.split(code)
            self._local[key] = (positions, (start.line, start.column), rendered)
        positions, (statement_line, _), rendered = self._local[key]
        code_range = positions[node]
        inclusive = provider is WhitespaceInclusivePositionProvider
        # An inclusive range that starts a line owns the indentation in front of it
        # when the node renders that indentation itself (statements, decorators, ...);
        # one that ends at a line start ends before the next line's indentation.
        owns_indent = inclusive and isinstance(node, _INDENT_OWNERS)
        start_line, start_column = self._shift(
            code_range.start.line, code_range.start.column, statement_line, first_line, rendered, owns_indent
        )
        end_line, end_column = self._shift(
            code_range.end.line, code_range.end.column, statement_line, first_line, rendered, owns_indent
        )
        return start_line, start_column, end_line, end_column

    def _shift(
        self, mini_line: int, mini_column: int, statement_line: int, first_line: int, rendered: List[str], keep_line_start: bool
    ) -> Tuple[int, int]:
        line = first_line + (mini_line - statement_line)
        if line < 1 or line > len(self.lines.starts):
            raise _Unmappable()
        if keep_line_start and mini_column == 0:
            return line, 0
        if mini_line - 1 >= len(rendered):
            return line, mini_column  # the end of the last line
        mini_text = rendered[mini_line - 1]
        real_text = self.lines.line_text(line)
        # A nested statement is rendered without its block's indentation; continuation
        # lines and string contents are rendered verbatim. Either way the real line ends
        # with the rendered one, and the difference in length is the shift.
        if not real_text.endswith(mini_text):
            raise _Unmappable()
        return line, mini_column + len(real_text) - len(mini_text)


def call_with_deep_stack(function, *args):
    """Call `function`; if it recurses too deeply, retry on a thread with a large stack.

    LibCST computes positions and code by recursing over the tree, so a
    1,000-term sum overflows Python's default recursion limit. Deep files are
    rare, so the common path pays nothing.
    """
    try:
        return function(*args)
    except RecursionError:
        pass
    outcome: dict = {}

    def target() -> None:
        previous = sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous, 200_000))
        try:
            outcome["value"] = function(*args)
        except BaseException as error:  # handed to the calling thread
            outcome["error"] = error
        finally:
            sys.setrecursionlimit(previous)

    previous_size = threading.stack_size()
    threading.stack_size(512 * 1024 * 1024)
    try:
        thread = threading.Thread(target=target, name="torchdet-lint-deep")
        thread.start()
    finally:
        threading.stack_size(previous_size)
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
