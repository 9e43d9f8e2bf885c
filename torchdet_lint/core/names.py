"""Qualified-name resolution and literal-argument helpers.

A small scope-aware resolver that runs first in the shared batched traversal:
it follows every import form, alias assignments (`cudnn = torch.backends.cudnn`)
and rebinding (a local `def DataLoader` shadows the import). It is much cheaper
than LibCST's QualifiedNameProvider, which builds full scope graphs.
"""

from __future__ import annotations

import ast
import builtins
import random
import re
import threading
from functools import lru_cache
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import libcst as cst

# The public names of standard-library modules a file may star-import (`from random import *`):
# known without importing anything heavy.
_STAR_NAMES = {"random": frozenset(name for name in dir(random) if not name.startswith("_"))}

NOT_LITERAL: Any = type("NotLiteral", (), {"__repr__": lambda self: "NOT_LITERAL"})()
_BUILTIN_NAMES = frozenset(dir(builtins))

# Re-export paths users reach through, mapped to the public name rules match on.
_CANONICAL_PATTERNS = [
    (re.compile(r"^torch\.nn\.modules\.[\w.]+\.(\w+)$"), r"torch.nn.\1"),
    (re.compile(r"^torch\.utils\.data\.(?:dataloader|sampler|dataset|distributed)\.(\w+)$"), r"torch.utils.data.\1"),
    (re.compile(r"^torch\.random\.(manual_seed|seed|initial_seed|get_rng_state|set_rng_state)$"), r"torch.\1"),
    (re.compile(r"^torch\.functional\.(\w+)$"), r"torch.\1"),
    (re.compile(r"^torch\._tensor\.Tensor\b"), r"torch.Tensor"),
    (re.compile(r"^torch\.nn\.modules$"), r"torch.nn"),
    (re.compile(r"^torch\.backends\.cudnn\.rnn\b"), r"torch.backends.cudnn"),
    (re.compile(r"^pytorch_lightning\b"), r"lightning.pytorch"),
    (re.compile(r"^lightning\.(Trainer|LightningModule|LightningDataModule)$"), r"lightning.pytorch.\1"),
    (re.compile(r"^lightning\.pytorch\.trainer(?:\.trainer)?\.Trainer$"), r"lightning.pytorch.Trainer"),
    (re.compile(r"^lightning\.pytorch\.(?:utilities\.)?cli\.LightningCLI$"), r"lightning.pytorch.cli.LightningCLI"),
    (
        re.compile(
            r"^(?:lightning|lightning\.pytorch|lightning\.fabric|lightning_lite|lightning\.fabric\.utilities"
            r"|lightning\.fabric\.utilities\.seed|lightning\.pytorch\.utilities|lightning\.pytorch\.utilities\.seed"
            r"|lightning_lite\.utilities\.seed|lightning_fabric|lightning_fabric\.utilities\.seed)\.seed_everything$"
        ),
        r"lightning.seed_everything",
    ),
    (re.compile(r"^transformers\.(?:trainer_utils)\.(set_seed|enable_full_determinism)$"), r"transformers.\1"),
    (re.compile(r"^accelerate\.utils\.random\.set_seed$"), r"accelerate.utils.set_seed"),
    (re.compile(r"^accelerate\.set_seed$"), r"accelerate.utils.set_seed"),
    (re.compile(r"^colossalai\.initialize\.(launch\w*)$"), r"colossalai.\1"),
    (re.compile(r"^colossalai\.utils\.common\.set_seed$"), r"colossalai.utils.set_seed"),
    (re.compile(r"^np\."), r"numpy."),
]


@lru_cache(maxsize=8192)
def canonical(qualified: str) -> str:
    # Cached: every call node is canonicalised, and most names repeat within a run.
    for pattern, replacement in _CANONICAL_PATTERNS:
        if pattern.search(qualified):
            qualified = pattern.sub(replacement, qualified)
    return qualified


def dotted_name(node: cst.CSTNode) -> Optional[str]:
    """`a.b.c` for a chain of names, else None."""
    # Exact type tests: LibCST's node classes are ABCs, and a failing isinstance() goes
    # through ABCMeta's Python-level check, which this function (called for every call
    # and reference of a file, by many rules) would pay several times per node.
    parts: List[str] = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
    if type(node) is cst.Name:
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def last_part(node: cst.BaseExpression) -> Optional[str]:
    """`x` for `x` and for `a.b.x`: the name a value is spelled with last; None for other expressions."""
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        return node.attr.value
    return None


def _module_name_of(node: Union[cst.Attribute, cst.Name]) -> str:
    return dotted_name(node) or ""


class _Scope:
    __slots__ = ("kind", "bindings")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        # name -> qualified name for imports and aliases, None for a local binding
        self.bindings: Dict[str, Optional[str]] = {}


class NameResolver(cst.BatchableCSTVisitor):
    """Tracks bindings during the traversal; `qualified_name(expr)` answers at any node."""

    def __init__(self, module_name: Optional[str] = None, is_package: bool = False) -> None:
        super().__init__()
        self.module_name = module_name
        self.is_package = is_package
        self.scopes: List[_Scope] = [_Scope("module")]
        self.module_final: Dict[str, Optional[str]] = {}
        self._except_depth = 0
        self._function_depth = 0
        self.imported_modules: List[str] = []  # every imported module, in order, for the project graph
        self.star_imports: List[str] = []  # modules whose names `from m import *` brings in
        # Modules named by `from m import ...`: Python imports `m` itself as a module, whatever a
        # package above it binds the submodule's name to.
        self.from_modules: List[str] = []

    # -- queries -----------------------------------------------------------------
    def lookup(self, name: str) -> Optional[str]:
        innermost = self.scopes[-1]
        in_function = self._function_depth > 0
        for scope in reversed(self.scopes):
            if scope.kind == "class" and scope is not innermost:
                continue  # class bodies are not visible from their methods
            if scope.kind == "module":
                # Module code sees bindings in flow order; a function body runs
                # later, so it sees the module's final binding.
                if in_function and name in self.module_final:
                    return self.module_final[name]
                if name in scope.bindings:
                    return scope.bindings[name]
                break
            if name in scope.bindings:
                return scope.bindings[name]
        for module in self.star_imports:
            if name in _STAR_NAMES.get(module, ()):
                return f"{module}.{name}"  # `from random import *`, then `shuffle(items)`
        if name in _BUILTIN_NAMES:
            return "builtins." + name
        return None

    def qualified_name(self, node: Optional[cst.CSTNode]) -> Optional[str]:
        # The head is looked up before the dotted spelling is built: most chains start at a
        # local name (`self.layer.weight`) that resolves to nothing.
        head = node
        while type(head) is cst.Attribute:
            head = head.value  # type: ignore[attr-defined]
        if type(head) is not cst.Name:
            return None
        bound = self.lookup(head.value)  # type: ignore[attr-defined]
        if bound is None:
            return None
        rest = dotted_name(node).partition(".")[2]  # type: ignore[union-attr]
        return canonical(f"{bound}.{rest}" if rest else bound)

    def in_function(self) -> bool:
        return self._function_depth > 0

    # -- binding -----------------------------------------------------------------
    def _bind(self, name: str, qualified: Optional[str], is_import: bool = False) -> None:
        scope = self.scopes[-1]
        current = scope.bindings.get(name)
        if current is not None and not is_import and (self._except_depth or qualified == "builtins.None"):
            return  # `except ImportError: X = None` keeps the import's meaning
        scope.bindings[name] = qualified

    def _bind_target(self, target: cst.CSTNode, value: Optional[cst.CSTNode] = None) -> None:
        if isinstance(target, cst.Name):
            alias = None
            if value is not None:
                if isinstance(value, cst.Name) and value.value == "None":
                    alias = "builtins.None"
                elif isinstance(value, (cst.Name, cst.Attribute)):
                    alias = self.qualified_name(value)
                    if alias and alias.startswith("builtins."):
                        alias = None
            self._bind(target.value, alias)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind_target(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value)

    def resolve_relative(self, node: cst.ImportFrom) -> str:
        module = _module_name_of(node.module) if node.module else ""
        dots = len(node.relative)
        if not dots:
            return module
        if self.module_name is None:
            return "." * dots + module
        parts = self.module_name.split(".")
        if not self.is_package:
            parts = parts[:-1]
        if dots > 1:
            parts = parts[: len(parts) - (dots - 1)] if dots - 1 <= len(parts) else []
        base = ".".join(parts)
        return f"{base}.{module}" if base and module else (base or module)

    def _import_bindings(self, node: Union[cst.Import, cst.ImportFrom]):
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = _module_name_of(alias.name)
                self.imported_modules.append(full)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    yield alias.asname.name.value, full
                else:
                    head = full.split(".")[0]
                    yield head, head
        else:
            module = self.resolve_relative(node)
            if module and module not in self.from_modules:
                self.from_modules.append(module)
            if isinstance(node.names, cst.ImportStar):
                self.imported_modules.append(module)
                if module not in self.star_imports:
                    self.star_imports.append(module)
                return
            for alias in node.names:
                imported = _module_name_of(alias.name)
                full = f"{module}.{imported}" if module else imported
                self.imported_modules.append(full)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    yield alias.asname.name.value, full
                else:
                    yield imported, full

    # -- module pre-scan: the final binding of each module-level name -------------
    def visit_Module(self, node: cst.Module) -> None:
        self._prescan(node.body)
        self.imported_modules.clear()  # the traversal records them again, in order

    def _prescan(self, body: Sequence[cst.CSTNode], in_except: bool = False) -> None:
        final = self.module_final
        for statement in body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, (cst.Import, cst.ImportFrom)):
                        for name, qualified in self._import_bindings(small):
                            final[name] = qualified
                    elif isinstance(small, cst.Assign):
                        for target in small.targets:
                            self._prescan_target(target.target, small.value, in_except)
                    elif isinstance(small, cst.AnnAssign) and small.value is not None:
                        self._prescan_target(small.target, small.value, in_except)
            elif isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
                final[statement.name.value] = None
            elif isinstance(statement, cst.Try):
                self._prescan(statement.body.body)
                for handler in statement.handlers:
                    self._prescan(handler.body.body, in_except=True)
                if statement.orelse:
                    self._prescan(statement.orelse.body.body)
                if statement.finalbody:
                    self._prescan(statement.finalbody.body.body)
            elif isinstance(statement, (cst.If, cst.With, cst.For, cst.While)):
                block = statement.body
                if isinstance(block, cst.IndentedBlock):
                    self._prescan(block.body, in_except)
                orelse = getattr(statement, "orelse", None)
                while orelse is not None:
                    if isinstance(orelse.body, cst.IndentedBlock):
                        self._prescan(orelse.body.body, in_except)
                    orelse = getattr(orelse, "orelse", None)

    def _prescan_target(self, target: cst.CSTNode, value: cst.CSTNode, in_except: bool) -> None:
        if isinstance(target, cst.Name):
            name = target.value
            if self.module_final.get(name) is not None and (in_except or (isinstance(value, cst.Name) and value.value == "None")):
                return
            if isinstance(value, (cst.Name, cst.Attribute)) and not (isinstance(value, cst.Name) and value.value == "None"):
                head, _, rest = (dotted_name(value) or "").partition(".")
                bound = self.module_final.get(head)
                if bound:
                    self.module_final[name] = canonical(f"{bound}.{rest}" if rest else bound)
                    return
            self.module_final[name] = None
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._prescan_target(element.value, cst.Name("_"), in_except)

    # -- traversal ------------------------------------------------------------------
    def visit_Import(self, node: cst.Import) -> None:
        for name, qualified in self._import_bindings(node):
            self._bind(name, qualified, is_import=True)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        for name, qualified in self._import_bindings(node):
            self._bind(name, qualified, is_import=True)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind_target(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind_target(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name):
            self._bind(node.target.value, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind_target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_target(node.asname.name)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._except_depth += 1
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self._bind(node.name.name.value, None)

    def leave_ExceptHandler(self, original_node: cst.ExceptHandler) -> None:
        self._except_depth -= 1

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bind(node.name.value, None)
        scope = _Scope("function")
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            scope.bindings[param.name.value] = None
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope.bindings[star.name.value] = None
        self.scopes.append(scope)
        self._function_depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scopes.pop()
        self._function_depth -= 1

    def visit_Lambda(self, node: cst.Lambda) -> None:
        scope = _Scope("function")
        for param in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
            scope.bindings[param.name.value] = None
        self.scopes.append(scope)
        self._function_depth += 1

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.scopes.pop()
        self._function_depth -= 1

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._bind(node.name.value, None)
        self.scopes.append(_Scope("class"))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.scopes.pop()


# -- literal and argument helpers ----------------------------------------------------


_NAMED_LITERALS = {"True": True, "False": False, "None": None}
# The value of each number and string spelling seen: `ast.literal_eval` compiles its text every
# time, and the same literals (`"cuda"`, `0`, `"mean"`) come back thousands of times in a project.
_EVALUATED: Dict[Tuple[type, str], Any] = {}
_MAX_EVALUATED = 100_000


def display_length(node: Optional[cst.CSTNode]) -> Optional[int]:
    """The number of elements of a tuple or list display without `*` (`(p // 2, p - p // 2)`: 2),
    also repeated a literal number of times (`[p] * 4`), and of a conditional expression whose
    branches both have it (`(0, p) if row else (p, 0)`)."""
    kind = type(node)
    if kind is cst.Tuple or kind is cst.List:
        if any(type(element) is cst.StarredElement for element in node.elements):
            return None
        return len(node.elements)
    if kind is cst.BinaryOperation and type(node.operator) is cst.Multiply:
        for sequence, times in ((node.left, node.right), (node.right, node.left)):
            count = literal(times) if type(times) is cst.Integer else None
            length = display_length(sequence) if type(sequence) in (cst.Tuple, cst.List) else None
            if isinstance(count, int) and length is not None:
                return length * count
        return None
    if kind is cst.IfExp:
        length = display_length(node.body)
        return length if length is not None and display_length(node.orelse) == length else None
    return None


def literal(node: Optional[cst.CSTNode]) -> Any:
    """The Python value of a literal expression, or NOT_LITERAL."""
    kind = type(node)
    if kind is cst.Name:
        return _NAMED_LITERALS.get(node.value, NOT_LITERAL)
    if kind is cst.Integer or kind is cst.Float or kind is cst.Imaginary or kind is cst.SimpleString:
        key = (kind, node.value)
        value = _EVALUATED.get(key, _EVALUATED)
        if value is _EVALUATED:
            value = _evaluated(node)
            if len(_EVALUATED) < _MAX_EVALUATED:
                _EVALUATED[key] = value
        return value
    if kind is cst.ConcatenatedString:
        value = node.evaluated_value
        return NOT_LITERAL if value is None else value
    if kind is cst.UnaryOperation and type(node.operator) in (cst.Minus, cst.Plus):
        inner = literal(node.expression)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner if type(node.operator) is cst.Minus else inner
        return NOT_LITERAL
    if kind is cst.Tuple or kind is cst.List:
        values = []
        for element in node.elements:
            if type(element) is cst.StarredElement:
                return NOT_LITERAL
            value = literal(element.value)
            if value is NOT_LITERAL:
                return NOT_LITERAL
            values.append(value)
        return tuple(values) if kind is cst.Tuple else list(values)
    return NOT_LITERAL


def _evaluated(node: cst.CSTNode) -> Any:
    if type(node) is cst.SimpleString:
        value = node.evaluated_value
        return NOT_LITERAL if value is None else value
    try:
        return ast.literal_eval(node.value)
    except (ValueError, SyntaxError):
        return NOT_LITERAL


# `**name` arguments whose dictionary the scope tracker saw (a dict literal or `dict(k=...)`
# bound in the same function or module): id of the Arg -> the keyword arguments it carries.
# Per thread (a language server lints a buffer while it indexes files), reset per file.
_keyword_dicts = threading.local()


def forget_keyword_dicts() -> None:
    _keyword_dicts.table = {}


def remember_keyword_dict(arg: cst.Arg, pairs: Sequence[tuple]) -> None:
    """`arg` (a `**name`) carries these (keyword, value) pairs."""
    table = getattr(_keyword_dicts, "table", None)
    if table is None:
        table = _keyword_dicts.table = {}
    # A key that is not an identifier (`**{"np.bool_": ...}`) can only reach a **kwargs parameter.
    table[id(arg)] = tuple(cst.Arg(value=value, keyword=cst.Name(keyword)) for keyword, value in pairs if keyword.isidentifier())


def _expanded(arg: cst.Arg) -> Optional[tuple]:
    table = getattr(_keyword_dicts, "table", None)
    return table.get(id(arg)) if table else None


def opaque_keywords(call: cst.Call) -> bool:
    """Whether a `**kwargs` of the call may carry keywords nobody can see."""
    return any(arg.star == "**" and _expanded(arg) is None for arg in call.args)


def has_star_args(call: cst.Call) -> bool:
    """`*args`, or a `**kwargs` whose keywords are not visible."""
    return any(arg.star == "*" for arg in call.args) or opaque_keywords(call)


def find_arg(call: cst.Call, keyword: Optional[str] = None, position: Optional[int] = None) -> Optional[cst.Arg]:
    """The argument given by keyword (also inside a visible `**dict`), or at a 0-based
    position (positional arguments only)."""
    if keyword is not None:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == keyword:
                return arg
        for arg in call.args:
            if arg.star == "**":
                for expanded in _expanded(arg) or ():
                    if expanded.keyword.value == keyword:
                        return expanded
    if position is not None:
        index = 0
        for arg in call.args:
            if arg.keyword is not None or arg.star:
                if arg.star == "*":
                    return None  # positions after *args are unknowable
                continue
            if index == position:
                return arg
            index += 1
    return None


def arg_value(call: cst.Call, keyword: Optional[str] = None, position: Optional[int] = None) -> Optional[cst.BaseExpression]:
    arg = find_arg(call, keyword, position)
    return arg.value if arg is not None else None


def reported_argument(call: cst.Call, arg: cst.Arg) -> cst.CSTNode:
    """Where to report an argument `find_arg` found: the argument itself, or, for a keyword
    carried by a visible `**dict`, its value inside that dict."""
    return arg if any(own is arg for own in call.args) else arg.value


def dict_entry(node: Optional[cst.BaseExpression], key: str) -> Optional[cst.Arg]:
    """A dict literal's `"key": value` entry, as a keyword argument (`trainer_defaults={...}`)."""
    if not isinstance(node, cst.Dict):
        return None
    if not key.isidentifier():
        return None
    for element in node.elements:
        if isinstance(element, cst.DictElement) and literal(element.key) == key:
            return cst.Arg(value=element.value, keyword=cst.Name(key))
    return None


def may_have_keyword(call: cst.Call, keyword: str) -> bool:
    """True when the keyword is given, or may be hidden in **kwargs."""
    return find_arg(call, keyword) is not None or opaque_keywords(call)
