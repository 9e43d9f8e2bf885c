"""Summaries from Python's own `ast`: the whole summary of a file the pre-filter
skipped (it can pass calls on but neither draw nor seed), and, for every
file, the fix anchors the project rules insert at (the project phase has no CST).
"""

from __future__ import annotations

import ast
import builtins
import re
from typing import Dict, List, Optional, Sequence, Set, Tuple

from torchdet_lint.core.import_header import ast_dotted_name, import_header
from torchdet_lint.core.names import canonical
from torchdet_lint.core.registrations import stores_functions
from torchdet_lint.core.source import LineIndex, block_top_line
from torchdet_lint.model.arguments import MAX_CALLS as MAX_ARGUMENT_CALLS
from torchdet_lint.model.arguments import ast_call_arguments, ast_expected_to_raise
from torchdet_lint.model.facts import (
    BACKWARD_METHODS,
    COMMAND_RUNNERS,
    CONTAINERS,
    DEVICE_CALLS,
    DEVICE_KEYWORDS,
    RUNNER_METHODS,
    RUNNERS,
    TRAINING_METHODS,
    is_setup_call,
)
from torchdet_lint.model.facts import facts as seeding_facts
from torchdet_lint.model.makers import COMMON_METHODS, MAX_CANDIDATES, MAX_STEPS, SELF_RETURNING
from torchdet_lint.model.named import COMMAND_DECORATORS, SET_DEFAULTS, TEST_METHOD_PREFIXES, TEST_RUNNERS, seed_by_harness
from torchdet_lint.model.summary import (
    MAIN_KEY,
    MAX_REGISTRY_MEMBERS,
    MAX_SITES,
    MODULE_KEY,
    REGISTRY_MEMBER,
    ClassSummary,
    FileSummary,
    FixAnchors,
    HeaderImport,
    Site,
    epoch_receivers_bound_elsewhere,
)


def line_starts(text: str) -> List[int]:
    return [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]


def _newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def empty_summary(path: str, module_name: Optional[str], text: str, first_party: frozenset = frozenset()) -> FileSummary:
    """The summary of a file the pre-filter skipped (it mentions no torch, random,
    numpy, seed, ...): it can neither draw nor seed, but it can pass calls on
    (`main.py` calling `train.run()`), so imports, definitions, calls and entry
    status come from Python's own (much faster) `ast` parser."""
    summary = FileSummary(path=path, module_name=module_name, parsed=False, is_package=path.endswith("__init__.py"))
    tree = _ast_tree(text)
    if tree is None:
        return summary
    try:
        _AstScanner(summary, text, first_party).scan(tree)
    except RecursionError:
        pass
    return summary


def names_bound_in(tree: ast.Module) -> Set[str]:
    """Every name the file binds anywhere (assigned, deleted, a parameter, a definition, an import,
    a `global`/`nonlocal` declaration), and Python's builtins. Any other name it uses comes from a
    star import."""
    names: Set[str] = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".", 1)[0] for alias in node.names)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
    return names


def _ast_tree(text: str) -> Optional[ast.Module]:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # syntax LibCST accepts but this Python does not: no lines, no fix anchors


def _absolute_module(summary: FileSummary, node: ast.ImportFrom) -> str:
    module = node.module or ""
    if not node.level:
        return module
    parts = summary.module_name.split(".") if summary.module_name else []
    if not summary.is_package:
        parts = parts[:-1]
    if node.level > 1:
        parts = parts[: max(0, len(parts) - (node.level - 1))]
    base = ".".join(parts)
    return f"{base}.{module}" if base and module else (base or module)


def _import_bindings(summary: FileSummary, statement: ast.stmt):
    """(bound name, qualified module or name) for one import statement."""
    if isinstance(statement, ast.Import):
        for alias in statement.names:
            if alias.asname:
                yield alias.asname, alias.name
            else:
                head = alias.name.split(".")[0]
                yield head, head
    elif isinstance(statement, ast.ImportFrom):
        module = _absolute_module(summary, statement)
        for alias in statement.names:
            if alias.name != "*":
                yield alias.asname or alias.name, f"{module}.{alias.name}" if module else alias.name


def _module_level(body: Sequence[ast.stmt]):
    """Module-level statements, into `if` / `try` / `with` blocks, except the main block."""
    for statement in body:
        if _is_main_guard(statement):
            continue
        yield statement
        if isinstance(statement, (ast.If, ast.Try, ast.With)):
            children = [*statement.body, *getattr(statement, "orelse", []), *getattr(statement, "finalbody", [])]
            for handler in getattr(statement, "handlers", []):
                children.extend(handler.body)
            yield from _module_level(children)


def ast_anchors(tree: ast.Module, text: str, summary: FileSummary) -> None:
    """The main guard's line, the module-level import bindings with their lines, and
    the offsets the project fixes insert at (after the imports, top of the main block)."""
    starts = line_starts(text)

    def offset(line: int) -> int:
        return starts[line - 1] if 0 < line <= len(starts) else len(text)

    body = tree.body
    header = import_header(tree, len(starts))
    after_line = header.end_line
    after = offset(after_line)
    anchors = FixAnchors(
        after, after == len(text) and bool(text) and not text.endswith(("\n", "\r")), after_line, newline=_newline_of(text)
    )
    if header.path_setup_end_line:
        anchors.path_setup_end = offset(header.path_setup_end_line)
    for statement in header.imports:
        end = offset((statement.end_lineno or statement.lineno) + 1)
        module = (
            statement.names[0].name if isinstance(statement, ast.Import) else "." * statement.level + (statement.module or "")
        )
        anchors.header_imports.append(HeaderImport(offset(statement.lineno), end, module, isinstance(statement, ast.ImportFrom)))
    for statement in body:
        if _is_main_guard(statement):
            summary.main_guard_line = statement.lineno
            first = statement.body[0]
            if _is_string_statement(first) and len(statement.body) > 1:
                first = statement.body[1]  # inserted lines go after a block's leading string, never above it
            first_line = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", ()))])
            if first_line > statement.lineno:
                line_text = text[offset(first_line) : offset(first_line) + 200]
                anchors.main_indent = line_text[: len(line_text) - len(line_text.lstrip(" \t"))]
                top = block_top_line(LineIndex(text), first_line, anchors.main_indent)
                anchors.main_top = offset(top)
                anchors.main_top_line = top
            break
    bindings: Dict[str, Tuple[str, int]] = {}
    for statement in _module_level(body):
        for name, qualified in _import_bindings(summary, statement):
            bindings.setdefault(name, (qualified, statement.lineno))
    summary.module_bindings = bindings
    summary.anchors = anchors


class _AstScanner:
    def __init__(self, summary: FileSummary, text: str, first_party: frozenset = frozenset()) -> None:
        self.summary = summary
        self.text = text
        self.first_party = first_party
        self.attribute_calls: List[Tuple[object, str, Set[str]]] = []  # method calls on values, for `args.func(...)`
        self.bound_to: Dict[str, Set[str]] = {}  # name -> the calls any function of the file binds it to
        # The names the file binds, when it star-imports a module of the project (None otherwise).
        self.star_bound: Optional[Set[str]] = None
        self.runs_tests = False
        self.test_runner: Optional[Tuple[Site, str]] = None  # the main block's first test runner call
        self.bindings: Dict[str, str] = {}
        self.local_defs: Set[str] = set()
        self.module_names: Set[str] = set()  # names bound by module-level assignments (registries)
        self.types: Dict[str, Dict[str, str]] = {}  # function -> local name -> the class it was built from
        self.values: Dict[str, Dict[str, List[ast.expr]]] = {}  # function -> local name -> values bound
        self.attributes: Dict[str, Dict[str, List[ast.expr]]] = {}  # class -> `self.<attr>` -> values bound

    def scan(self, tree: ast.Module) -> None:
        summary = self.summary
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                summary.imports.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                module = _absolute_module(summary, node)
                if module and module not in summary.from_modules:
                    summary.from_modules.append(module)
                for alias in node.names:
                    summary.imports.append(module if alias.name == "*" else (f"{module}.{alias.name}" if module else alias.name))
        summary.star_imports = [
            _absolute_module(summary, node)
            for node in _module_level(tree.body)
            if isinstance(node, ast.ImportFrom) and node.names[0].name == "*"
        ]
        if any(self._first_party(module) for module in summary.star_imports):
            self.star_bound = names_bound_in(tree)
        for statement in tree.body:
            self._bind_module_level(statement)
        summary.exports = {k: canonical(v) for k, v in self.bindings.items()}
        self._registries(tree)
        for statement in tree.body:
            self._statement(statement, MODULE_KEY, None)
        self.finish()
        # Pre-filtered files are few: give each the anchors (it may be a configured entry point).
        ast_anchors(tree, self.text, summary)

    def _registries(self, tree: ast.Module) -> None:
        """Module-level `MODELS = {"a": NetA, ...}` / `[NetA, NetB]`: the members one may pick."""
        for statement in tree.body:
            if isinstance(statement, ast.Assign) and isinstance(statement.value, (ast.Dict, ast.List, ast.Tuple)):
                members = statement.value.values if isinstance(statement.value, ast.Dict) else statement.value.elts
                targets = [t for t in (self._target(m, None) for m in members if isinstance(m, (ast.Name, ast.Attribute))) if t]
                for name in statement.targets:
                    if targets and isinstance(name, ast.Name):
                        self.summary.registries[name.id] = targets
            elif isinstance(statement, ast.Assign) and isinstance(statement.value, (ast.Name, ast.Attribute)):
                # `REGISTRY["key"] = fn` after the definitions
                member = self._target(statement.value, None)
                for target in statement.targets:
                    if (
                        member
                        and isinstance(target, ast.Subscript)
                        and isinstance(target.value, ast.Name)
                        and target.value.id in self.module_names
                    ):
                        self.summary.registries.setdefault(target.value.id, []).append(member)

    def _bind_module_level(self, statement: ast.stmt, top: bool = True) -> None:
        aliases = self.summary.aliases
        if isinstance(statement, ast.Assign):
            self.module_names.update(t.id for t in statement.targets if isinstance(t, ast.Name))
            # `Model = DetectionModel`: an alias of this file's own function or class (top level only, as the collector)
            value = statement.value
            local = (
                value.id if top and isinstance(value, ast.Name) and (value.id in self.local_defs or value.id in aliases) else None
            )
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    if local is not None and target.id != local:
                        aliases[target.id] = aliases.get(local, "." + local)
                    else:
                        aliases.pop(target.id, None)
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.local_defs.add(statement.name)
            self.bindings.pop(statement.name, None)
            aliases.pop(statement.name, None)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            for name, qualified in _import_bindings(self.summary, statement):
                self.bindings[name] = qualified
        elif isinstance(statement, (ast.If, ast.Try)):
            for child in [*statement.body, *getattr(statement, "orelse", []), *getattr(statement, "finalbody", [])]:
                self._bind_module_level(child, top=False)

    def _target(self, node: ast.AST, class_name: Optional[str]) -> Optional[str]:
        dotted = ast_dotted_name(node)
        if dotted is None:
            return None
        parts = dotted.split(".")
        head = parts[0]
        if head == "self" and class_name and len(parts) == 2:
            return f".{class_name}.{parts[1]}"
        if head in self.local_defs:
            return "." + dotted
        if head in self.summary.aliases:
            return ".".join([self.summary.aliases[head], *parts[1:]])
        if head in self.bindings:
            return canonical(".".join([self.bindings[head], *parts[1:]]))
        if self.star_bound is not None and head not in self.star_bound:
            return "." + dotted  # from a star import: looked up in the imported modules (`FileSummary.star_imports`)
        return None

    def _statement(self, statement: ast.stmt, key: str, class_name: Optional[str]) -> None:
        summary = self.summary
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = f"{class_name}.{statement.name}" if class_name else statement.name
            summary.function(inner)
            if class_name:
                summary.classes[class_name].methods.append(statement.name)
            else:
                arguments = statement.args
                positional = [*arguments.posonlyargs, *arguments.args]
                required = len(positional) - len(arguments.defaults) + sum(1 for d in arguments.kw_defaults if d is None)
                names = {a.arg for a in (*positional, *arguments.kwonlyargs)}
                summary.signatures[statement.name] = (required, positional[0].arg if positional else "", "seed" in names)
                self._decorators(statement)
                self._registrar(statement)
            self._annotations(statement, inner, class_name)
            for child in statement.body:
                self._walk_calls(child, inner, class_name)
            return
        if isinstance(statement, ast.ClassDef):
            # A class of the module, or nested in one's body (`Algo.Policy`, methods `Algo.Policy.act`).
            name = f"{class_name}.{statement.name}" if class_name else statement.name
            summary.classes[name] = ClassSummary(
                statement.lineno, [t for t in (self._target(b, None) for b in statement.bases) if t]
            )
            if class_name is None:
                self._decorators(statement)
            attributes = self.attributes[name] = {}
            for child in statement.body:  # `model: ModelConfig` (dataclass fields)
                if isinstance(child, ast.AnnAssign) and isinstance(child.target, ast.Name):
                    typed = self._annotation_target(child.annotation)
                    if typed is not None and self._first_party(typed):
                        summary.classes[name].attribute_types[child.target.id] = typed
            for child in ast.walk(statement):
                if isinstance(child, ast.Assign):
                    for target in child.targets:
                        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                            attributes.setdefault(target.attr, []).append(child.value)
            for child in statement.body:
                self._statement(child, MODULE_KEY, name)
            return
        if class_name is None and _is_main_guard(statement):
            summary.main_guard_line = statement.lineno
            for child in statement.body:
                self._walk_calls(child, MAIN_KEY, None)
            return
        if class_name is None:
            if isinstance(statement, (ast.For, ast.While, ast.AsyncFor)):
                summary.module_work = True
            elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
                call = statement.value
                if not is_setup_call(self._target(call.func, None), ast_dotted_name(call.func)):
                    summary.module_work = True
            elif isinstance(statement, (ast.If, ast.Try, ast.With)):
                for child in [*statement.body, *getattr(statement, "orelse", []), *getattr(statement, "finalbody", [])]:
                    self._statement(child, key, None)
                for handler in getattr(statement, "handlers", []):
                    for child in handler.body:
                        self._statement(child, key, None)
                return
        elif isinstance(statement, (ast.If, ast.Try, ast.With)) and any(
            isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for c in _child_statements(statement)
        ):
            # `if X: def method(self)` in a class body: still a method (as the collector has it).
            for child in _child_statements(statement):
                self._statement(child, key, class_name)
            return
        self._walk_calls(statement, key, class_name)

    def _typed_method(self, func: ast.expr, types: Dict[str, str], class_name: Optional[str]) -> Optional[str]:
        """`cfg.build` for `cfg: Config` (or `cfg = Config()`), `self.cfg.build` for an annotated
        attribute: that class's method."""
        if not isinstance(func, ast.Attribute):
            return None
        receiver = func.value
        dotted = ast_dotted_name(func)
        head, _, rest = (dotted or "").partition(".")
        if head in types and rest:  # `cfg.build`, `job.model.build` for `job: JobConfig`
            return f"{types[head]}.{rest}"
        if (
            class_name
            and isinstance(receiver, ast.Attribute)
            and isinstance(receiver.value, ast.Name)
            and receiver.value.id == "self"
            and class_name in self.summary.classes
        ):
            typed = self.summary.classes[class_name].attribute_types.get(receiver.attr)
            return f"{typed}.{func.attr}" if typed is not None else None
        return None

    def _dispatch(self, call: ast.Call, func: ast.expr, target: Optional[str], key: str, function, seen: Set[str]) -> None:
        """Command-line dispatch and test runners, as the collector reads them: `cli()` runs the
        group's commands, `set_defaults(func=f)` names what `args.func(...)` runs, a test runner
        in the main block runs the file's tests."""
        registries = self.summary.registries
        if isinstance(func, ast.Name) and func.id in registries and (func.id in self.local_defs or func.id in self.module_names):
            function.add_call(f".{func.id}{REGISTRY_MEMBER}", seen)
        elif isinstance(func, ast.Attribute) and func.attr == "set_defaults":
            for keyword in call.keywords:
                handler = self._target(keyword.value, None) if keyword.arg else None
                if handler is not None and self._first_party(handler):
                    registries.setdefault(f"{SET_DEFAULTS}{keyword.arg}>", []).append(handler)
        elif isinstance(func, ast.Attribute) and (target is None or not self._first_party(target)):
            self.attribute_calls.append((function, func.attr, seen))
        if target in TEST_RUNNERS and key == MAIN_KEY:
            self.runs_tests = True
            if self.test_runner is None:
                self.test_runner = (Site(call.lineno, ""), ast.unparse(func))

    def finish(self) -> None:
        epoch_receivers_bound_elsewhere(self.summary, self.bound_to)
        handlers = {name[len(SET_DEFAULTS) : -1] for name in self.summary.registries if name.startswith(SET_DEFAULTS)}
        for function, attribute, seen in self.attribute_calls if handlers else ():
            if attribute in handlers:
                function.add_call(f".{SET_DEFAULTS}{attribute}>{REGISTRY_MEMBER}", seen)
        if self.runs_tests:
            main = self.summary.function(MAIN_KEY)
            seen = set(main.calls)
            for key in list(self.summary.functions):
                owner, _, name = key.rpartition(".")
                if (owner in self.summary.classes and name.startswith(TEST_METHOD_PREFIXES)) or (
                    not owner and name.startswith("test_")
                ):
                    main.add_call("." + key, seen)
            if self.test_runner is not None:
                runner, spelling = self.test_runner
                seed_by_harness(
                    main, self.summary.classes, seeding_facts().test_bases, runner, spelling, seeding_facts().setup_test_bases
                )

    def _first_party(self, target: str) -> bool:
        return target.startswith(".") or target.split(".", 1)[0] in self.first_party

    def _annotation_target(self, node: Optional[ast.expr], depth: int = 0) -> Optional[str]:
        """The class an annotation names (as the collector reads it): `Trainer`, `"Trainer"`,
        `Optional[Trainer]`, `Trainer | None`."""
        if node is None or depth > 3:
            return None
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self._target(node, None)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                return self._annotation_target(ast.parse(node.value, mode="eval").body, depth + 1)
            except SyntaxError:
                return None
        if isinstance(node, ast.Subscript) and self._target(node.value, None) in ("typing.Optional", "typing.Union"):
            elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            for element in elements:
                found = self._annotation_target(element, depth + 1)
                if found is not None:
                    return found
            return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self._annotation_target(node.left, depth + 1) or self._annotation_target(node.right, depth + 1)
        return None

    def _annotations(self, definition: ast.AST, key: str, class_name: Optional[str]) -> None:
        """Annotated parameters hold instances of their class; a return annotation is what the
        function returns; `self.x: T` and `self.x = param` (annotated) type an attribute."""
        types = self.types.setdefault(key, {})
        arguments = definition.args
        for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
            typed = self._annotation_target(argument.annotation)
            if typed is not None and self._first_party(typed):
                types[argument.arg] = typed
        returned = self._annotation_target(definition.returns)
        if returned is not None and self._first_party(returned):
            self.summary.function(key).returns.append(returned)
        owner = self.summary.classes.get(class_name) if class_name else None
        if owner is None:
            return
        for child in ast.walk(definition):
            target = child.target if isinstance(child, ast.AnnAssign) else None
            if isinstance(child, ast.Assign) and len(child.targets) == 1 and isinstance(child.value, ast.Name):
                target = child.targets[0] if child.value.id in types else None
                typed = types.get(child.value.id)
            elif target is not None:
                typed = self._annotation_target(child.annotation)
                typed = typed if typed is not None and self._first_party(typed) else None
            else:
                continue
            if typed and isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                owner.attribute_types.setdefault(target.attr, typed)

    def _decorators(self, definition: ast.AST) -> None:
        for decorator in definition.decorator_list:  # `@cli.command()`: a command of a click/typer group
            func = decorator.func if isinstance(decorator, ast.Call) else decorator
            if (
                isinstance(func, ast.Attribute)
                and func.attr in COMMAND_DECORATORS
                and isinstance(func.value, ast.Name)
                and (func.value.id in self.local_defs or func.value.id in self.module_names)
            ):
                members = self.summary.registries.setdefault(func.value.id, [])
                if "." + definition.name not in members:
                    members.append("." + definition.name)
        found = [
            t for t in (self._target(d.func if isinstance(d, ast.Call) else d, None) for d in definition.decorator_list) if t
        ]
        if found:
            self.summary.decorators[definition.name] = found

    def _registrar(self, definition: ast.AST) -> None:
        """`def register(fn): _METRICS[fn.__name__] = fn` (also from a nested `deco(fn)`)."""
        for inner in ast.walk(definition):
            if not isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            parameters = {a.arg for a in (*inner.args.posonlyargs, *inner.args.args, *inner.args.kwonlyargs)}
            for child in ast.walk(inner):
                if isinstance(child, ast.Assign) and isinstance(child.value, ast.Name) and child.value.id in parameters:
                    for target in child.targets:
                        if (
                            isinstance(target, ast.Subscript)
                            and isinstance(target.value, ast.Name)
                            and target.value.id in self.module_names
                        ):
                            self.summary.registrars[definition.name] = target.value.id

    def _makers(
        self, node: Optional[ast.expr], key: str, class_name: Optional[str], found: List[str], steps: int = 0
    ) -> List[str]:
        """What an object may be: the calls whose result it can hold (as `makers.Makers`)."""
        if node is None or steps > MAX_STEPS or len(found) >= MAX_CANDIDATES:
            return found
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SELF_RETURNING:
            self._makers(_unwrap_self_returning(node), key, class_name, found, steps)  # `Net(...).to(device)`
        elif isinstance(node, ast.Call):
            made = self._target(node.func, class_name) or self._typed_method(node.func, self.types.get(key, {}), class_name)
            if made and made not in found:
                found.append(made)
        elif isinstance(node, ast.Subscript):  # a getter's `return _MODELS[name]`
            registry = self._target(node.value, class_name)
            if (
                registry is None
                and isinstance(node.value, ast.Name)
                and node.value.id in self.module_names
                and node.value.id not in self.values.get(key, {})
            ):
                registry = "." + node.value.id
            if registry and f"{registry}{REGISTRY_MEMBER}" not in found:
                found.append(f"{registry}{REGISTRY_MEMBER}")
        elif isinstance(node, ast.BoolOp):
            for value in node.values:
                self._makers(value, key, class_name, found, steps)
        elif isinstance(node, ast.IfExp):
            self._makers(node.body, key, class_name, found, steps)
            self._makers(node.orelse, key, class_name, found, steps)
        elif isinstance(node, ast.Name) and node.id != "self":
            for value in self.values.get(key, {}).get(node.id, ()):
                self._makers(value, key, class_name, found, steps + 1)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" and class_name:
            for value in self.attributes.get(class_name, {}).get(node.attr, ()):
                self._makers(value, key, class_name, found, steps + 1)
        return found

    def _commands(self, node: ast.expr, key: str, class_name: Optional[str]) -> List[str]:
        """The functions of a table of commands handed to a command-line launcher (as the collector)."""
        if isinstance(node, (ast.Dict, ast.List, ast.Tuple, ast.Set)):
            members = node.values if isinstance(node, ast.Dict) else node.elts
            if len(members) > MAX_REGISTRY_MEMBERS:
                return []
            return [t for t in (self._target(m, class_name) for m in members if isinstance(m, (ast.Name, ast.Attribute))) if t]
        found: List[str] = []
        if isinstance(node, ast.Name):
            local = self.values.get(key, {}).get(node.id)
            for bound in (local if local is not None else self.values.get(MODULE_KEY, {}).get(node.id, ()))[-MAX_CANDIDATES:]:
                if isinstance(bound, (ast.Dict, ast.List, ast.Tuple, ast.Set)):
                    found += self._commands(bound, key, class_name)
            registry = self._target(node, class_name) if node.id not in self.local_defs else None
            if registry is None and node.id in self.module_names and local is None:
                registry = "." + node.id  # a module-level registry filled elsewhere
            if registry:
                found.append(f"{registry}{REGISTRY_MEMBER}")
        elif isinstance(node, ast.Attribute):
            registry = self._target(node, class_name)
            if registry:
                found.append(f"{registry}{REGISTRY_MEMBER}")
        return found

    def _walk_calls(self, node: ast.AST, key: str, class_name: Optional[str]) -> None:
        function = self.summary.function(key)
        seen = set(function.calls)
        types = self.types.setdefault(key, {})
        values = self.values.setdefault(key, {})
        for child in ast.walk(node):
            # `trainer = Trainer()`, then `trainer.fit()`: the method of that class
            if (
                isinstance(child, ast.Assign)
                and len(child.targets) == 1
                and isinstance(child.targets[0], ast.Name)
                and isinstance(child.value, ast.Call)
            ):
                built = _unwrap_self_returning(child.value)  # `model = Net().to(device)`
                called = self._target(built.func, class_name) if isinstance(built, ast.Call) else None
                if called is None and isinstance(built, ast.Call):
                    called = self._typed_method(built.func, types, class_name)  # `trainer = cfg.build()`
                if called:
                    types[child.targets[0].id] = called
                    self.bound_to.setdefault(child.targets[0].id, set()).add(called)
            if isinstance(child, ast.Assign) and len(child.targets) == 1 and isinstance(child.targets[0], ast.Name):
                values.setdefault(child.targets[0].id, []).append(child.value)
            elif isinstance(child, ast.Return) and key not in (MODULE_KEY, MAIN_KEY):
                for made in self._makers(child.value, key, class_name, []):
                    if made not in function.returns and len(function.returns) < MAX_CANDIDATES:
                        function.returns.append(made)
        imports = self.summary.module_imports if key == MODULE_KEY else function.imports
        raising: Set[int] = set()  # calls a `with pytest.raises(...)` expects to raise (walked before its body)
        for child in ast.walk(node):
            if isinstance(child, (ast.With, ast.AsyncWith)):
                expected = ast_expected_to_raise(child, lambda func: self._target(func, None))
                if expected is not None:
                    raising.add(id(expected))
            if isinstance(child, ast.Import):
                imports.extend(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                module = _absolute_module(self.summary, child)
                imports.extend(module if a.name == "*" else (f"{module}.{a.name}" if module else a.name) for a in child.names)
            if isinstance(child, ast.Call):
                target = self._target(child.func, class_name)
                func = child.func
                if target is None:
                    target = self._typed_method(func, types, class_name)
                if target:
                    function.add_call(target, seen)
                    if self._first_party(target):
                        calls = self.summary.call_arguments.setdefault(target, [])
                        if len(calls) < MAX_ARGUMENT_CALLS and id(child) not in raising:
                            calls.append((key, ast_call_arguments(child)))
                self._dispatch(child, func, target, key, function, seen)
                if isinstance(func, ast.Attribute) and func.attr == "set_epoch":
                    receiver = ast_dotted_name(func.value)
                    entry = (receiver, types.get(receiver.split(".", 1)[0], "")) if receiver is not None else None
                    if entry is not None and entry not in self.summary.set_epoch:
                        self.summary.set_epoch.append(entry)
                if isinstance(child.func, ast.Attribute) and child.func.attr == "cuda" and len(function.cuda) < MAX_SITES:
                    function.cuda.append(Site(child.lineno, "`.cuda()`"))
                if function.moves is None and _may_move(child, func, target):
                    function.moves = Site(child.lineno, f"`{ast_dotted_name(func) or '.' + getattr(func, 'attr', 'call')}(...)`")
                if (
                    isinstance(func, ast.Attribute)
                    and target is None
                    and (
                        func.attr in BACKWARD_METHODS
                        or func.attr in TRAINING_METHODS
                        or (func.attr == "train" and not child.args)
                    )
                ):
                    function.add_trains(Site(child.lineno, f"`{ast_dotted_name(func) or '.' + func.attr}(...)`"))
                runs_arguments = target in RUNNERS or (isinstance(func, ast.Attribute) and func.attr in RUNNER_METHODS)
                callee = (target or ast_dotted_name(func) or "").rsplit(".", 1)[-1]
                # A registration (`atexit.register(fn)`, `x.register_hook(fn)`) stores the function.
                registers = stores_functions(
                    target if target and not target.startswith(".") else None,
                    func.attr if isinstance(func, ast.Attribute) else None,
                )
                stores_nothing = bool(callee) and not callee[:1].isupper() and target not in CONTAINERS and not registers
                for argument in [*child.args, *(k.value for k in child.keywords)]:
                    if isinstance(argument, (ast.Name, ast.Attribute)):
                        reference = self._target(argument, class_name)
                        if reference and runs_arguments:
                            function.add_call(reference, seen)
                        elif reference and stores_nothing:
                            function.add_reference(reference)
                    if runs_arguments:  # `executor.submit(trainer)`: the launcher calls the object
                        for made in self._makers(argument, key, class_name, []):
                            function.add_call(f"{made}.__call__", seen)
                    if target in COMMAND_RUNNERS:  # `fire.Fire({"train": train})`, `CLI(COMMANDS)`
                        for member in self._commands(argument, key, class_name):
                            function.add_call(member, seen)
                if (
                    isinstance(func, ast.Attribute)
                    and func.attr not in COMMON_METHODS
                    and (target is None or not isinstance(func.value, ast.Name) or func.value.id in values)
                ):
                    # `TrainLoop(...).run_loop()`, `self.sampler.sample()`, `loop.run()`
                    for made in self._makers(func.value, key, class_name, []):
                        function.add_call(f"{made}.{func.attr}", seen)
                # Calling an object: `model(x)` for `model = Net()`, `Net()(x)`, `MODELS[name](...)`.
                if isinstance(func, ast.Name) and func.id in types:
                    function.add_call(f"{types[func.id]}.__call__", seen)
                elif isinstance(func, ast.Call):
                    built = _unwrap_self_returning(func)  # `Net().cuda()(x)`
                    made = self._target(built.func, class_name) if isinstance(built, ast.Call) else None
                    if made:
                        function.add_call(f"{made}.__call__", seen)
                elif isinstance(func, ast.Subscript):
                    registry = self._target(func.value, class_name)
                    if (
                        registry is None
                        and isinstance(func.value, ast.Name)
                        and func.value.id in self.module_names
                        and func.value.id not in values
                    ):
                        registry = "." + func.value.id  # the registry's own module
                    if registry:
                        function.add_call(f"{registry}{REGISTRY_MEMBER}", seen)


def _may_move(call: ast.Call, func: ast.expr, target: Optional[str]) -> bool:
    """As the collector reads it, cheaply: `.cuda()`, `.to(x)` or `device=x` where `x` is not the
    literal CPU, `accelerator.prepare(...)`, a library that picks the device."""

    def not_cpu(value: ast.expr) -> bool:
        if isinstance(value, ast.Constant):
            return (
                isinstance(value.value, int)
                and not isinstance(value.value, bool)
                or (isinstance(value.value, str) and not value.value.startswith("cpu"))
            )
        dotted = ast_dotted_name(value) or ""
        return not dotted.startswith("torch.")  # `torch.float16`: a dtype

    if target in DEVICE_CALLS:
        return True
    if isinstance(func, ast.Attribute) and target is None and func.attr in ("cuda", "prepare"):
        return True
    if isinstance(func, ast.Attribute) and func.attr == "to" and any(not_cpu(arg) for arg in call.args):
        return True
    return any(keyword.arg in DEVICE_KEYWORDS and not_cpu(keyword.value) for keyword in call.keywords)


def _is_string_statement(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) and isinstance(statement.value.value, str)
    )


def _unwrap_self_returning(node: ast.expr) -> ast.expr:
    """`Net().cuda().eval()` -> `Net()` (as `makers.unwrap_self_returning`)."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SELF_RETURNING:
        node = node.func.value
    return node


def _is_main_guard(statement: ast.stmt) -> bool:
    if not isinstance(statement, ast.If) or not isinstance(statement.test, ast.Compare):
        return False
    test = statement.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and any(
        isinstance(s, ast.Constant) and s.value == "__main__" for s in sides
    )


def function_spans(tree: ast.Module) -> Dict[str, Tuple[int, int]]:
    """(first line, last line) of every function key of the file, named as the summary
    collector names them: `f`, `Class.method`, `Outer.Inner.method` for a class nested in a
    class body, `<main>` for the main block, `outer.<locals>.inner` for a nested function.
    Code outside them is the module's (`<module>`); a class defined in a function belongs to
    that function."""
    spans: Dict[str, Tuple[int, int]] = {}

    def span(node: ast.AST) -> Tuple[int, int]:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        return first, node.end_lineno or node.lineno

    def walk(
        statements: Sequence[ast.stmt], key: Optional[str], class_name: Optional[str] = None, in_local_class: bool = False
    ) -> None:
        for statement in statements:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = key
                if class_name is not None:
                    inner = f"{class_name}.{statement.name}"
                    spans[inner] = span(statement)
                elif not in_local_class:
                    inner = statement.name if key is None else f"{key}.<locals>.{statement.name}"
                    spans[inner] = span(statement)
                walk(statement.body, inner)
            elif isinstance(statement, ast.ClassDef):
                if key is None and not in_local_class:
                    walk(statement.body, None, f"{class_name}.{statement.name}" if class_name else statement.name)
                else:
                    walk(statement.body, key, in_local_class=True)
            elif key is None and class_name is None and _is_main_guard(statement):
                spans[MAIN_KEY] = span(statement)
                walk(statement.body, MAIN_KEY)
            else:
                walk(_child_statements(statement), key, class_name, in_local_class)

    walk(tree.body, None)
    return spans


def _child_statements(statement: ast.stmt) -> List[ast.stmt]:
    """The statements nested in a compound statement (if, for, while, try, with, match)."""
    children: List[ast.stmt] = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(statement, name, None)
        if isinstance(value, list):
            children.extend(value)
    for handler in getattr(statement, "handlers", None) or ():
        children.extend(handler.body)
    for case in getattr(statement, "cases", None) or ():
        children.extend(case.body)
    return [child for child in children if isinstance(child, ast.stmt)]
