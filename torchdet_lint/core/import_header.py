"""A module's import header: where "after the imports" is, for every fix that inserts there
(seeding lines, `seed_worker`, the TDL008 helpers, new imports), from Python's own `ast`.

The header runs from the top through the last top-level import before the module's code,
across what scripts put between their imports: `try: import x / except ImportError: x = None`
and `if` blocks of imports, `sys.path` / `os.environ` / `warnings` set-up, and the path
computations a `sys.path` line uses (`ROOT = Path(__file__).parents[1]`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

# Calls that set up the imports and the process, as scripts write them between imports (ruff's
# E402 lets imports follow the sys.path and os.environ ones).
_SETUP_CALLS = frozenset(
    {
        "sys.path.insert",
        "sys.path.append",
        "sys.path.extend",
        "sys.path.remove",
        "site.addsitedir",
        "os.environ.setdefault",
        "os.environ.update",
        "warnings.filterwarnings",
        "warnings.simplefilter",
        "matplotlib.use",
        "os.chdir",
    }
)
# What a path computation may call (`Path(__file__).resolve().parents[0]`, `os.path.join(...)`).
_PATH_FUNCTIONS = frozenset({"Path", "pathlib.Path", "str", "os.getcwd", "os.getenv", "os.environ.get", "Path.cwd"})
_PATH_METHODS = frozenset({"resolve", "absolute", "expanduser", "joinpath", "with_name", "with_suffix", "as_posix"})
_MESSAGES = frozenset({"warnings.warn", "print", "logging.warning", "logger.warning"})
_PATH_CHANGERS = frozenset({"sys.path.insert", "sys.path.append", "sys.path.extend", "site.addsitedir"})


@dataclass(frozen=True)
class ImportHeader:
    """The header's top-level import statements (where a new import is sorted in), the line
    after its last import (after the docstring when there is none), and the line after the
    last module-level change of `sys.path` (0: none), which a first-party import needs above it."""

    imports: Tuple[ast.stmt, ...]
    end_line: int
    path_setup_end_line: int = 0


def import_header(tree: ast.Module, line_count: int) -> ImportHeader:
    body = tree.body
    end_line = body[0].lineno if body else line_count + 1
    if body and _is_docstring(body[0]):
        end_line = _after(body[0])
    imports = []
    for statement in body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            imports.append(statement)
            end_line = _after(statement)
        elif _is_import_block(statement):
            end_line = _after(statement)
        elif not _is_setup(statement):  # the docstring and strings too
            break
    return ImportHeader(tuple(imports), end_line, _path_setup_end(body))


def _after(statement: ast.stmt) -> int:
    return (statement.end_lineno or statement.lineno) + 1


def _is_docstring(statement: ast.stmt) -> bool:
    value = statement.value if isinstance(statement, ast.Expr) else None
    return isinstance(value, ast.Constant) and isinstance(value.value, str)


def _is_import_block(statement: ast.stmt) -> bool:
    """`try: import x / except ImportError: x = None`, `if TYPE_CHECKING: import y`: a block
    holding imports and nothing but set-up and simple fallbacks."""
    if not isinstance(statement, (ast.Try, ast.If)) or _is_main_guard(statement):
        return False
    branches = _branches(statement)
    statements = [child for branch in branches for child in branch]
    has_import = any(isinstance(child, (ast.Import, ast.ImportFrom)) for child in statements)
    return has_import and all(_is_header_part(child) for child in statements)


def _branches(statement: ast.stmt) -> Sequence[Sequence[ast.stmt]]:
    branches = [statement.body, getattr(statement, "orelse", []), getattr(statement, "finalbody", [])]
    branches.extend(handler.body for handler in getattr(statement, "handlers", []))
    return branches


def _is_header_part(statement: ast.stmt) -> bool:
    if isinstance(statement, (ast.Import, ast.ImportFrom, ast.Pass)):
        return True
    if isinstance(statement, (ast.Try, ast.If)) and not _is_main_guard(statement):
        return all(_is_header_part(child) for branch in _branches(statement) for child in branch)
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        # a warning or message about the missing package
        return ast_dotted_name(statement.value.func) in _MESSAGES or _is_setup(statement)
    if isinstance(statement, ast.Raise):
        return True
    return _is_setup(statement) or _is_fallback(statement)


def _is_fallback(statement: ast.stmt) -> bool:
    """`comet_ml = None`, `HAS_APEX = False`: the name an import would have bound."""
    value = statement.value if isinstance(statement, (ast.Assign, ast.AnnAssign)) else None
    return isinstance(value, (ast.Constant, ast.Name, ast.Attribute))


def _is_setup(statement: ast.stmt) -> bool:
    """A `sys.path` / `os.environ` / `warnings` set-up statement, an `if` made of them, or a
    path computation (`ROOT = Path(__file__).parents[1]`)."""
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        return ast_dotted_name(call.func) in _SETUP_CALLS and all(_is_path_expression(argument) for argument in call.args)
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return True  # a string between imports, or a notebook's IPython line (`%pip install x`) as linted
    if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if statement.value is None or not all(_is_setup_target(t) for t in targets):
            return False
        return _is_path_expression(statement.value)
    if isinstance(statement, ast.If) and not _is_main_guard(statement):
        children = [child for branch in _branches(statement) for child in branch]
        return _is_path_expression(statement.test) and all(_is_setup(child) for child in children)
    return False


def _is_setup_target(target: ast.expr) -> bool:
    if isinstance(target, ast.Name):
        return True
    if isinstance(target, ast.Subscript):
        return ast_dotted_name(target.value) in ("os.environ", "sys.path")
    return ast_dotted_name(target) == "sys.path"


def _is_path_expression(node: ast.expr) -> bool:
    """Names, constants and the calls that build paths: never a draw, a model or a file read."""
    for child in ast.walk(node):
        if isinstance(child, ast.Call):
            name = ast_dotted_name(child.func) or ""
            method = child.func.attr if isinstance(child.func, ast.Attribute) else ""
            if not (name in _PATH_FUNCTIONS or name.startswith("os.path.") or method in _PATH_METHODS):
                return False
        elif isinstance(child, (ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)):
            return False
    return True


def _path_setup_end(body: Sequence[ast.stmt]) -> int:
    """The line after the last top-level statement that adds to `sys.path` (into `if`, `try`,
    `with` and main blocks, not into functions or classes)."""
    end = 0
    pending = list(body)
    while pending:
        statement = pending.pop()
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(statement, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            pending.extend(child for branch in _branches(statement) for child in branch)
            continue
        if _changes_path(statement):
            end = max(end, _after(statement))
    return end


def _changes_path(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        return ast_dotted_name(statement.value.func) in _PATH_CHANGERS
    if isinstance(statement, (ast.Assign, ast.AugAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return any(ast_dotted_name(t.value if isinstance(t, ast.Subscript) else t) == "sys.path" for t in targets)
    return False


def _is_main_guard(statement: ast.stmt) -> bool:
    if not isinstance(statement, ast.If) or not isinstance(statement.test, ast.Compare):
        return False
    sides = [statement.test.left, *statement.test.comparators]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and any(
        isinstance(s, ast.Constant) and s.value == "__main__" for s in sides
    )


def ast_dotted_name(node: ast.expr) -> Optional[str]:
    """`a.b.c` of a Python `ast` name or attribute chain, None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))
