"""TDL107's analysis: one function's statements read in source order, a small local
dataflow that follows sets through names (`_Analysis`), over the value model of
`set_order_values` and the known calls of `set_order_calls`. The rule
(`unordered_set_iteration`) runs it on the functions that build sets and reports its events.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.checks.dataloader.set_order_calls import (
    _BUILDING_METHODS,
    _DRAWS,
    _LOG_METHODS,
    _LOOP_DRAWS,
    _NUMBER_METHODS,
    _RESOLVE,
    _SET_OPERATORS,
    _SET_RESULTS,
    _SET_UPDATES,
    _SPLITS,
    _STR_METHODS,
    _TORCH_DRAWS,
    known_call,
)
from torchdet_lint.checks.dataloader.set_order_values import (
    _FIRED,
    _FREE,
    _INDEX,
    _NONSTR,
    _NOTHING,
    _ORDER,
    _OTHER,
    _PENDING,
    _SORTED,
    _SORTED_STATE,
    _STR,
    _annotated_set,
    _annotated_value,
    _declared_set,
    _Elem,
    _element_kind,
    _item,
    _KeysView,
    _Kinds,
    _Mapping,
    _one_element_display,
    _Ordered,
    _Seq,
    _Set,
    _TupleValue,
)
from torchdet_lint.core.names import _BUILTIN_NAMES, canonical, dotted_name
from torchdet_lint.core.rule import Rule
from torchdet_lint.core.traversal import child_fields, kept_node_types


class _Frame:
    """A function (or the module's own code) as the walk saw it."""

    __slots__ = ("node", "class_name", "builds_set", "calls", "self_calls")

    def __init__(self, node: Optional[cst.CSTNode], class_name: Optional[str]) -> None:
        self.node = node
        self.class_name = class_name  # the class a method is defined in
        self.builds_set = False
        self.calls: Set[str] = set()
        self.self_calls: Set[str] = set()


class _Analysis:
    """Reads one function's statements in source order, following sets through names, for
    the rule (TDL107's `UnorderedSetIteration`: its events, its view of the file's functions)."""

    def __init__(self, rule: Rule, frame: _Frame, module_env: Optional[Dict[str, object]]) -> None:
        self.rule = rule
        self.frame = frame
        self.env: Dict[str, object] = {}
        self.module_env = module_env
        self.events = rule.events
        self.imports: Dict[str, Optional[str]] = {}  # names imported in this function (or module code)
        self.probing = False
        self.final = rule.context.resolver.module_final

    def resolve(self, func: cst.BaseExpression) -> Optional[str]:
        """The qualified name of a called name or attribute chain, after the walk: the function's
        own imports, then the module's final bindings, then the builtins; a local name is None."""
        dotted = dotted_name(func)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if head in self.imports:
            bound = self.imports[head]
        elif head in self.env:
            return None
        elif head in self.final:
            bound = self.final[head]
        elif not rest and head in _BUILTIN_NAMES:
            bound = "builtins." + head
        else:
            return None
        if bound is None:
            return None
        return canonical(f"{bound}.{rest}" if rest else bound)

    # -- uses -------------------------------------------------------------------------------
    def use(self, value: object, node: cst.CSTNode, how: int) -> None:
        kind = type(value)
        if kind is _Set:
            if how == _ORDER or how == _INDEX:
                self.events.append((value, node, how == _INDEX))
            elif how == _OTHER and not value.parts:
                value.filled_elsewhere = True
        elif kind is _Ordered:
            if value.state == _PENDING:
                if how == _SORTED:
                    value.state = _SORTED_STATE
                elif how >= _ORDER:
                    value.state = _FIRED
                    value.how = how
                    self.events.append((value.set, value.node, how == _INDEX))
            elif value.state == _FIRED and how == _INDEX:
                value.how = how
                self.events.append((value.set, value.node, True))
        elif kind is _TupleValue and how >= _ORDER:
            for item in value.items:
                self.use(item, node, _OTHER)

    def probe(self, function: cst.FunctionDef) -> Dict[str, _Ordered]:
        """Read the function with each parameter holding a stand-in for a list made from a set:
        how the function uses each parameter (see `UnorderedSetIteration.parameter_use`)."""
        params = function.params
        stand_ins = {}
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            stand_in = _Ordered(_Set(slot=True), None, None)  # never a set: reports nothing itself
            stand_ins[param.name.value] = self.env[param.name.value] = stand_in
        self.block(function.body)
        return stand_ins

    def parameters(self, function: cst.FunctionDef) -> None:
        """Parameters and a return value annotated as sets (`names: set[str]`, `-> Set[str]`)."""
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            declared = _annotated_set(param.annotation)
            if declared is not False:
                self.env[param.name.value] = _declared_set(declared)
            else:
                value = _annotated_value(param.annotation)
                if value is not None:
                    self.env[param.name.value] = value
        if type(params.star_kwarg) is cst.Param:
            self.env[params.star_kwarg.name.value] = _Mapping(_STR)  # keyword names
        declared = _annotated_set(function.returns)
        if declared is not False:
            self.rule.slot(function).declared = declared

    def consume(self, node: cst.BaseExpression, how: int) -> object:
        value = self.expr(node)
        self.use(value, node, how)
        return value

    # -- statements -------------------------------------------------------------------------
    def block(self, body: cst.CSTNode) -> None:
        if type(body) is cst.IndentedBlock:
            for statement in body.body:
                self.statement(statement)
        elif type(body) is cst.SimpleStatementSuite:
            for small in body.body:
                self.small(small)

    def statements(self, statements) -> None:
        for statement in statements:
            self.statement(statement)

    def statement(self, node: cst.CSTNode) -> None:
        kind = type(node)
        if kind is cst.SimpleStatementLine:
            for small in node.body:
                self.small(small)
        elif kind is cst.If:
            self.consume(node.test, _FREE)
            self.block(node.body)
            orelse = node.orelse
            if type(orelse) is cst.If:
                self.statement(orelse)
            elif orelse is not None:
                self.block(orelse.body)
        elif kind is cst.For:
            self.loop(node)
        elif kind is cst.While:
            self.consume(node.test, _FREE)
            self.block(node.body)
            if node.orelse is not None:
                self.block(node.orelse.body)
        elif kind is cst.With:
            for item in node.items:
                value = self.consume(item.item, _FREE)
                if item.asname is not None:
                    self.bind(item.asname.name, value, item.item)
            self.block(node.body)
        elif kind is cst.Try or kind is cst.TryStar:
            self.block(node.body)
            for handler in node.handlers:
                if handler.name is not None:
                    self.bind(handler.name.name, None, None)
                self.block(handler.body)
            if node.orelse is not None:
                self.block(node.orelse.body)
            if node.finalbody is not None:
                self.block(node.finalbody.body)
        elif kind is cst.FunctionDef or kind is cst.ClassDef:
            self.env[node.name.value] = None
        elif kind is cst.Match:
            self.consume(node.subject, _FREE)
            for case in node.cases:
                self.block(case.body)

    def small(self, node: cst.CSTNode) -> None:
        kind = type(node)
        if kind is cst.Expr:
            self.expr(node.value)
        elif kind is cst.Assign:
            value = self.expr(node.value)
            for target in node.targets:
                self.bind(target.target, value, node.value)
        elif kind is cst.AnnAssign:
            declared = _annotated_set(node.annotation)
            if node.value is not None:
                value = self.expr(node.value)
                if declared is not False:
                    if type(value) is not _Set:
                        value = _Set()
                    value.declared = declared
                elif value is None or (type(value) is _Seq and value.item is _NOTHING):
                    value = _annotated_value(node.annotation) or value
                self.bind(node.target, value, node.value)
        elif kind is cst.AugAssign:
            self.augmented(node)
        elif kind is cst.Return:
            if node.value is not None:
                value = self.expr(node.value)
                function = None if self.probing else self.frame.node
                if function is not None and value is not _NONSTR:
                    elements = self.rule.returned_elements.get(id(function))
                    if elements is None:
                        elements = self.rule.returned_elements[id(function)] = _Set()
                        elements.owner = function
                    elements.parts.append(_element_kind(_item(value)))
                if type(value) is _Set and function is not None:
                    self.rule.slot(function).parts.append(value)
                elif self.frame.node is None or self.frame.node.name.value != "__dir__":  # `dir()` sorts it
                    self.use(value, node.value, _OTHER)
        elif kind is cst.Del:
            target = node.target
            if type(target) is cst.Name:
                self.env.pop(target.value, None)
        elif kind is cst.Import or kind is cst.ImportFrom:
            for name, qualified in self.rule.context.resolver._import_bindings(node):
                self.imports[name] = qualified
                self.env.pop(name, None)
        elif kind is cst.Assert and type(node.test) is cst.Comparison:
            self.singleton_check(node.test)
        # `raise` and `assert` only build messages; `global`, `pass`, ... bind nothing.

    def augmented(self, node: cst.AugAssign) -> None:
        target, operator = node.target, type(node.operator)
        current = self.env.get(target.value) if type(target) is cst.Name else None
        if type(current) is _Set and operator in (cst.BitOrAssign, cst.BitAndAssign, cst.BitXorAssign, cst.SubtractAssign):
            value = self.consume(node.value, _FREE)
            if operator is not cst.SubtractAssign:
                current.parts.append(_element_kind(_item(value)))
            return
        value = self.expr(node.value)
        if operator is cst.AddAssign and type(value) in (_Ordered, _Set):
            if type(target) is cst.Name and target.value in self.env:
                # `names += list(s)` on a list of this function: it now holds the set's order.
                if type(value) is _Set:
                    value = _Ordered(value, node.value, _Elem(value))
                self.env[target.value] = value
            else:
                # A list from elsewhere (a parameter, a module-level list, an attribute) is
                # extended in place: the caller's list holds the order.
                self.use(value, node.value, _ORDER)
                if type(target) is not cst.Name:
                    self.expr(target)
            return
        self.use(value, node.value, _OTHER)
        if type(target) is not cst.Name:
            self.expr(target)

    def bind(self, target: cst.CSTNode, value: object, value_node: Optional[cst.CSTNode]) -> None:
        kind = type(target)
        if kind is cst.Name:
            self.env[target.value] = value
            self.imports.pop(target.value, None)
        elif kind is cst.Tuple or kind is cst.List:
            elements = target.elements
            if type(value) is _TupleValue and len(value.items) == len(elements):
                items = value.items
            else:
                if value_node is not None and type(value) in (_Set, _Ordered):
                    self.use(value, value_node, _ORDER)  # `a, b = s`: unpacked in set order
                items = [_item(value)] * len(elements)
            for element, item in zip(elements, items):
                if type(element) is cst.StarredElement:
                    self.bind(element.value, None, None)
                else:
                    self.bind(element.value, item, None)
        elif kind is cst.Attribute or kind is cst.Subscript:
            if value_node is not None:
                self.use(value, value_node, _OTHER)  # stored where this function cannot follow it
            if kind is cst.Subscript:
                self.expr(target)
            else:
                dotted = dotted_name(target)
                if dotted is not None:
                    self.env[dotted] = value  # `self.rows = ...` read back in the same function
        elif kind is cst.StarredElement:
            self.bind(target.value, None, None)

    def loop(self, node: cst.For) -> None:
        iterated = self.expr(node.iter)
        kind = type(iterated)
        if kind is _Set or kind is _Ordered:
            building = _loop_builds(node, self.resolve)
            if building is not None:
                if building:
                    # The loop's lists are what the set became: sorted later, nothing is reported.
                    ordered = iterated if kind is _Ordered else _Ordered(iterated, node.iter, _Elem(iterated))
                    for name in building:
                        self.env[name] = ordered
                else:
                    self.use(iterated, node.iter, _ORDER)
        self.bind(node.target, _item(iterated), None)
        self.block(node.body)
        if node.orelse is not None:
            self.block(node.orelse.body)

    # -- expressions ------------------------------------------------------------------------
    def expr(self, node: cst.CSTNode) -> object:
        kind = type(node)
        if kind is cst.Name:
            name = node.value
            if name in self.env:
                return self.env[name]
            if name == "None" or name == "True" or name == "False":
                return _NONSTR
            if self.module_env is not None:
                value = self.module_env.get(name)
                if type(value) is _Set:
                    return value
            return None
        if kind is cst.Call:
            return self.call(node)
        if kind is cst.SimpleString or kind is cst.ConcatenatedString:
            return _STR
        if kind is cst.FormattedString:
            for part in node.parts:
                if type(part) is cst.FormattedStringExpression:
                    self.consume(part.expression, _FREE)
            return _STR
        if kind is cst.Integer or kind is cst.Float or kind is cst.Imaginary:
            return _NONSTR
        if kind is cst.Attribute:
            dotted = dotted_name(node)
            if dotted is not None and dotted in self.env:
                return self.env[dotted]
            value = self.expr(node.value)
            attribute = node.attr.value
            if attribute == "stem" or attribute == "suffix" or (attribute in ("name", "parent") and value is _STR):
                return _STR
            return None
        if kind is cst.Subscript:
            return self.subscript(node)
        if kind is cst.BinaryOperation:
            return self.binary(node)
        if kind is cst.Set:
            parts = []
            for element in node.elements:
                if type(element) is cst.StarredElement:
                    parts.append(_element_kind(_item(self.consume(element.value, _FREE))))
                else:
                    parts.append(_element_kind(self.consume(element.value, _FREE)))
            return _Set(parts)
        if kind is cst.List or kind is cst.Tuple:
            return self.display(node)
        if kind is cst.ListComp or kind is cst.GeneratorExp or kind is cst.SetComp or kind is cst.DictComp:
            return self.comprehension(node)
        if kind is cst.Comparison:
            left = node.left
            self.consume(left, _FREE)
            for target in node.comparisons:
                self.consume(target.comparator, _FREE)
            self.singleton_check(node)
            return _NONSTR
        if kind is cst.BooleanOperation or kind is cst.IfExp:
            if kind is cst.IfExp:
                self.consume(node.test, _FREE)
                left, right = self.expr(node.body), self.expr(node.orelse)
            else:
                left, right = self.expr(node.left), self.expr(node.right)
            return left if type(left) in (_Set, _Ordered) or right is None else right
        if kind is cst.UnaryOperation:
            value = self.consume(node.expression, _FREE)
            return _NONSTR if type(node.operator) is cst.Not else value
        if kind is cst.Dict:
            keys = set()
            for element in node.elements:
                if type(element) is cst.DictElement:
                    key = self.consume(element.key, _OTHER)
                    keys.add(key if key is _STR or key is _NONSTR else None)
                    self.consume(element.value, _OTHER)
                else:
                    self.consume(element.value, _FREE)
                    keys.add(None)
            return _Mapping(keys.pop() if len(keys) == 1 else None)
        if kind is cst.NamedExpr:
            value = self.expr(node.value)
            self.bind(node.target, value, node.value)
            return value
        if kind is cst.Await:
            return self.expr(node.expression)
        if kind is cst.Yield:
            if node.value is not None and type(node.value) is not cst.From:
                self.consume(node.value, _OTHER)
            return None
        return None

    def singleton_check(self, node: cst.Comparison) -> None:
        """`len(s) == 1` (or `!= 1`, `<= 1`, `< 2`, `> 1`, `>= 2`) on a set or what it became:
        whatever branch follows (`if len(s) > 1: raise ...` then `s.pop()`), the order of a
        set that is put in order there is fixed."""
        left = node.left
        if len(node.comparisons) != 1 or type(left) is not cst.Call or len(left.args) != 1:
            return
        if type(left.func) is not cst.Name or left.func.value != "len" or type(left.args[0].value) is not cst.Name:
            return
        comparator = node.comparisons[0].comparator
        if type(comparator) is not cst.Integer or comparator.value not in ("1", "2"):
            return
        operator = type(node.comparisons[0].operator)
        if comparator.value == "1" and operator not in (cst.Equal, cst.NotEqual, cst.LessThanEqual, cst.GreaterThan):
            return
        if comparator.value == "2" and operator not in (cst.LessThan, cst.GreaterThanEqual):
            return
        value = self.env.get(left.args[0].value.value)
        if type(value) is _Ordered:
            value = value.set
        if type(value) is _Set:
            value.singleton = True

    def display(self, node: cst.CSTNode) -> object:
        items = []
        for element in node.elements:
            if type(element) is cst.StarredElement:
                value = self.expr(element.value)
                if type(value) is _Set and len(node.elements) == 1:
                    return _Ordered(value, element.value, _Elem(value))  # `[*s]` is `list(s)`
                self.use(value, element.value, _ORDER)
                items.append(None)
            else:
                items.append(self.expr(element.value))
        if type(node) is cst.Tuple:
            return _TupleValue(items)
        if not items:
            return _Seq(_NOTHING)
        for item, element in zip(items, node.elements):
            self.use(item, element.value, _OTHER)
        kinds = {item for item in items if item is _STR or item is _NONSTR}
        return _Seq(kinds.pop() if len(kinds) == 1 and all(item in (_STR, _NONSTR) for item in items) else None)

    def subscript(self, node: cst.Subscript) -> object:
        value = self.expr(node.value)
        elements = node.slice
        index_only = len(elements) == 1 and type(elements[0].slice) is cst.Index
        for element in elements:
            part = element.slice
            if type(part) is cst.Index:
                self.consume(part.value, _OTHER)
            else:
                for bound in (part.lower, part.upper, part.step):
                    if bound is not None:
                        self.consume(bound, _FREE)
        kind = type(value)
        if kind is _Ordered:
            self.use(value, node.value, _ORDER)
            return value.item if index_only else _Seq(value.item)
        if kind is _Seq:
            return _item(value) if index_only else value
        if kind is _TupleValue and index_only:
            position = elements[0].slice.value
            if type(position) is cst.Integer:
                number = int(position.value, 0)
                if -len(value.items) <= number < len(value.items):
                    return value.items[number]
            return None
        if value is _STR:
            return _STR
        return None

    def binary(self, node: cst.BinaryOperation) -> object:
        left, right = self.expr(node.left), self.expr(node.right)
        operator = type(node.operator)
        if operator in _SET_OPERATORS and (type(left) in (_Set, _KeysView) or type(right) in (_Set, _KeysView)):
            self.use(left, node.left, _FREE)
            self.use(right, node.right, _FREE)
            parts = [left if type(left) is _Set else _element_kind(_item(left))]
            if operator is not cst.Subtract:
                parts.append(right if type(right) is _Set else _element_kind(_item(right)))
            result = _Set(parts)
            result.meet = operator is cst.BitAnd
            # `({"a"} & s).pop()`: at most one element, one order.
            result.singleton = operator is cst.BitAnd and (_one_element_display(node.left) or _one_element_display(node.right))
            return result
        if operator is cst.Add:
            if type(left) is _Ordered:
                self.use(right, node.right, _OTHER)
                return left
            if type(right) is _Ordered:
                self.use(left, node.left, _OTHER)
                return right
            if left is _STR or right is _STR:
                return _STR
            if type(left) is _Seq:
                return left
        if operator is cst.Modulo and left is _STR:
            self.use(right, node.right, _FREE)  # `"%s" % (names,)` formats a message
            return _STR
        self.use(left, node.left, _OTHER)
        self.use(right, node.right, _OTHER)
        return _NONSTR if left is _NONSTR and right is _NONSTR else None

    def comprehension(self, node: cst.CSTNode) -> object:
        saved: Dict[str, object] = {}
        missing = object()
        iterated: List[Tuple[cst.BaseExpression, object]] = []
        step = node.for_in
        while step is not None:
            value = self.expr(step.iter)
            iterated.append((step.iter, value))
            for name in _target_names(step.target):
                if name not in saved:
                    saved[name] = self.env.get(name, missing)
            self.bind(step.target, _item(value), None)
            for condition in step.ifs:
                self.consume(condition.test, _FREE)
            step = step.inner_for_in
        kind = type(node)
        if kind is cst.DictComp:
            # Keys and values can only come from the elements (an index comes from `enumerate` or
            # `zip`, reported there): the same mapping whatever the order, only its own order varies.
            key = self.consume(node.key, _OTHER)
            self.consume(node.value, _OTHER)
            result: object = _Mapping(key if key is _STR or key is _NONSTR else None)
        else:
            element = self.consume(node.elt, _FREE)
            if kind is cst.SetComp:
                result = _Set([_element_kind(element)])
            else:
                result = _Seq(element)
                for iter_node, value in iterated:
                    if type(value) is _Ordered:
                        value.item = element if value.item is None else value.item
                        result = value
                        break
                    if type(value) is _Set:
                        result = _Ordered(value, iter_node, element)
                        break
        for name, value in saved.items():
            if value is missing:
                self.env.pop(name, None)
            else:
                self.env[name] = value
        return result

    def arguments(self, call: cst.Call, how: int) -> None:
        for arg in call.args:
            if arg.star == "*":
                self.consume(arg.value, _FREE if how == _FREE else _ORDER)
            else:
                self.consume(arg.value, how if arg.star == "" else _FREE)

    def passed(self, node: cst.Call, function: cst.FunctionDef, method: bool) -> None:
        """Arguments of a call of a function of this file: a set or what it became is put in order
        there only if that function puts the parameter in order (read once per function)."""
        params = function.params
        positional = [param.name.value for param in (*params.posonly_params, *params.params)][1 if method else 0 :]
        keywords = {param.name.value for param in (*params.params, *params.kwonly_params)}
        for index, arg in enumerate(node.args):
            value = self.expr(arg.value)
            kind = type(value)
            if kind is not _Set and kind is not _Ordered:
                continue
            if kind is _Set and not value.parts:
                value.filled_elsewhere = True
            if not _Kinds().of(value if kind is _Set else value.set)[0]:
                # Not (yet) known to hold strings: the function is not read for it (a list made from
                # a set of unknown elements counts only in an index mapping, which `_OTHER` is not).
                self.use(value, arg.value, _OTHER)
                continue
            name = None
            if arg.star == "" and arg.keyword is None and index < len(positional):
                name = positional[index]
            elif arg.star == "" and arg.keyword is not None and arg.keyword.value in keywords:
                name = arg.keyword.value
            how = self.rule.parameter_use(function, name) if name is not None else _OTHER
            if kind is _Set and how == _OTHER:
                continue  # a set handed on is not put in order by that alone
            self.use(value, arg.value, how)

    def call(self, node: cst.Call) -> object:
        func = node.func
        kind = type(func)
        args = node.args
        first = args[0].value if args and args[0].keyword is None and args[0].star == "" else None
        if kind is cst.Name:
            spelled = func.value
            name = self.resolve(func) if spelled in _RESOLVE else (None if spelled in self.env else self.final.get(spelled))
            if name is None:
                target = self.rule.first_party(spelled, None)
                if target is not None:
                    self.passed(node, target, False)
                    return self.rule.call_result(target)
                self.arguments(node, _OTHER)
                return None
        elif kind is cst.Attribute:
            attribute = func.attr.value
            receiver_node = func.value
            name = self.resolve(func) if attribute in _RESOLVE else None
            if name is None or not name.startswith(
                (
                    "os.",
                    "glob.",
                    "numpy.",
                    "torch.",
                    "random.",
                    "csv.",
                    "logging.",
                    "warnings.",
                    "json.",
                    "pathlib.",
                    "collections.",
                )
            ):
                return self.method(node, attribute, receiver_node, first)
        else:
            self.expr(func)
            self.arguments(node, _OTHER)
            return None
        return self.known_call(node, name, first)

    def known_call(self, node: cst.Call, name: str, first: Optional[cst.BaseExpression]) -> object:
        if name == "builtins.set" or name == "builtins.frozenset":
            if first is None:
                self.arguments(node, _FREE)
                return _Set()
            value = self.consume(first, _FREE)
            return _Set([_element_kind(_item(value))])
        if name == "builtins.list" or name == "builtins.tuple" or name == "builtins.reversed" or name == "builtins.iter":
            if first is None:
                self.arguments(node, _OTHER)
                return _Seq(None)
            value = self.expr(first)
            if type(value) is _Set:
                if name == "builtins.iter":
                    return value
                if name == "builtins.list" and len(node.args) == 1:
                    self.rule.list_of[id(first)] = node
                return _Ordered(value, first, _Elem(value))
            return value if type(value) in (_Ordered, _Seq) else None
        if name == "builtins.sorted" or name == "numpy.unique":
            value = self.consume(first, _SORTED) if first is not None else None
            for arg in node.args[1:]:
                self.consume(arg.value, _FREE)
            return _Seq(_item(value))
        if name == "builtins.enumerate" or name == "builtins.zip":
            items = [] if name == "builtins.zip" else [_NONSTR]
            for arg in node.args:
                if arg.keyword is None:
                    items.append(_item(self.consume(arg.value, _INDEX)))
            return _Seq(_TupleValue(items))
        if name == "builtins.map" or name == "builtins.filter":
            values = [self.expr(arg.value) for arg in node.args]
            source = values[-1] if values else None
            if type(source) is _Set:
                return _Ordered(source, node.args[-1].value, _Elem(source) if name == "builtins.filter" else None)
            if type(source) is _Ordered:
                return source
            return None
        found = known_call(name)
        if found is None:
            self.arguments(node, _OTHER)
            return None
        use, result = found
        self.arguments(node, use)
        return _value(result)

    def method(self, node: cst.Call, attribute: str, receiver_node: cst.BaseExpression, first) -> object:
        receiver = self.expr(receiver_node)
        kind = type(receiver)
        if kind is _Set:
            if attribute == "add" and first is not None:
                receiver.parts.append(_element_kind(self.consume(first, _FREE)))
                return None
            if attribute in _SET_UPDATES:
                for arg in node.args:
                    value = self.consume(arg.value, _FREE)
                    receiver.parts.append(value if type(value) is _Set else _element_kind(_item(value)))
                return None
            if attribute in _SET_RESULTS:
                parts: list = [receiver]
                for arg in node.args:
                    value = self.consume(arg.value, _FREE)
                    if attribute != "difference":
                        parts.append(value if type(value) is _Set else _element_kind(_item(value)))
                result = _Set(parts)
                result.meet = attribute == "intersection"
                result.singleton = result.meet and (
                    _one_element_display(receiver_node) or any(_one_element_display(arg.value) for arg in node.args)
                )
                return result
            if attribute == "pop" and not node.args:
                self.rule.no_fix.add(id(receiver_node))  # `sorted(s).pop()` would leave `s` whole
                if not (receiver.filled_elsewhere and not receiver.parts):
                    # (an out-parameter filled by a helper is usually one reason or one name)
                    self.use(receiver, receiver_node, _ORDER)
                return _Elem(receiver)
            self.arguments(node, _FREE)
            return None
        if kind is _Ordered:
            if attribute == "sort":
                self.use(receiver, receiver_node, _SORTED)
            elif attribute == "index":
                self.use(receiver, receiver_node, _INDEX)
            elif attribute == "pop":
                self.use(receiver, receiver_node, _ORDER)
            elif attribute in ("copy", "count", "remove", "append", "insert", "extend", "reverse", "clear"):
                self.arguments(node, _OTHER)
                return receiver if attribute == "copy" else None
            else:
                self.use(receiver, receiver_node, _OTHER)
            self.arguments(node, _FREE)
            return receiver.item if attribute == "pop" else (_NONSTR if attribute == "index" else None)
        if attribute == "join" and first is not None and len(node.args) == 1:
            value = self.expr(first)
            if type(value) is _Set:
                return _Ordered(value, first, _STR)  # a string: used as data or only displayed?
            if type(value) is _Ordered:
                return value
            return _STR
        if attribute in _STR_METHODS:
            self.arguments(node, _FREE)
            return _STR
        if attribute in _NUMBER_METHODS and not node.args:
            return _NONSTR
        if attribute == "keys" and not node.args and type(receiver) is _Mapping:
            return _KeysView(receiver.key)
        if attribute == "keys" and not node.args and not (type(receiver_node) is cst.Name and receiver_node.value == "self"):
            return _KeysView(None)
        if attribute == "state_dict" and not node.args:
            return _Mapping(_STR)  # parameter and buffer names
        if attribute in _SPLITS:
            self.arguments(node, _FREE)
            return _Seq(_STR)
        if attribute == "replace" and receiver is _STR:
            self.arguments(node, _FREE)
            return _STR
        if kind is _Seq and attribute == "append" and first is not None:
            value = self.consume(first, _OTHER)
            known = value if value is _STR or value is _NONSTR else None
            receiver.item = known if receiver.item is _NOTHING or receiver.item is known else None
            return None
        if type(receiver) is _Seq and receiver.item is _STR:
            if attribute == "read":
                return _STR
            if attribute == "readlines":
                return _Seq(_STR)
            if attribute == "get":
                self.arguments(node, _FREE)
                return _STR
        if attribute in ("glob", "rglob", "iterdir"):
            self.arguments(node, _FREE)
            return _Seq(_STR)
        if attribute in _LOG_METHODS:
            self.arguments(node, _FREE)
            return None
        if attribute in _DRAWS:
            self.arguments(node, _ORDER)
            return None
        if attribute == "extend":
            self.arguments(node, _ORDER)
            return None
        if type(receiver_node) is cst.Name and receiver_node.value == "self":
            target = self.rule.first_party(attribute, self.frame.class_name)
            if target is not None:
                self.passed(node, target, True)
                return self.rule.call_result(target)
        self.arguments(node, _OTHER)
        return None


def _target_names(target: cst.CSTNode) -> List[str]:
    kind = type(target)
    if kind is cst.Name:
        return [target.value]
    if kind is cst.Tuple or kind is cst.List:
        return [name for element in target.elements for name in _target_names(element.value)]
    if kind is cst.StarredElement:
        return _target_names(target.value)
    return []


def _nodes(root: cst.CSTNode) -> List[cst.CSTNode]:
    """Every node under `root` (trivia left out), not entering nested functions, classes and lambdas."""
    keep = kept_node_types(frozenset())
    found: List[cst.CSTNode] = []
    stack = [root]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.FunctionDef or kind is cst.ClassDef or kind is cst.Lambda:
            continue
        found.append(node)
        for field_name in child_fields(kind):
            value = getattr(node, field_name)
            if type(value) in keep:
                stack.append(value)
            elif type(value) is tuple or type(value) is list:
                stack.extend(item for item in value if type(item) in keep)
    return found


def _position_dependent(value: cst.CSTNode, counters: Set[str], elements: Set[str]) -> bool:
    """A value stored per element that depends on how many came before: `len(d)`, `next(ids)`,
    or a counter the loop increments. `len(history[x])` measures the element's own entry."""
    for node in _nodes(value):
        kind = type(node)
        if kind is cst.Call and type(node.func) is cst.Name and node.func.value in ("len", "next"):
            if not (node.func.value == "len" and node.args and _mentions(node.args[0].value, elements)):
                return True
        if kind is cst.Name and node.value in counters:
            return True
    return False


def _mentions(value: cst.CSTNode, names: Set[str]) -> bool:
    return any(type(part) is cst.Name and part.value in names for part in _nodes(value))


def _keyed_by(node: cst.CSTNode, elements: Set[str]) -> bool:
    """`d[x]`, `d[x.lower()]`: a subscript whose one key is computed from the element."""
    if type(node) is not cst.Subscript:
        return False
    keys = node.slice
    return len(keys) == 1 and type(keys[0].slice) is cst.Index and _mentions(keys[0].slice.value, elements)


def _draws(name: Optional[str]) -> bool:
    """A call that draws from an RNG: `random.*`, `numpy.random.*`, torch's samplers, and
    building a `torch.nn` module or calling `torch.nn.init` (initialisation draws)."""
    if name is None:
        return False
    if name.startswith(("random.", "numpy.random.")):
        return not name.endswith(("seed", "get_state", "set_state", "getstate", "setstate"))
    if name.startswith("torch.nn."):
        last = name.rsplit(".", 1)[-1]
        return last[:1].isupper() or name.startswith("torch.nn.init.") or "dropout" in last
    return name in _TORCH_DRAWS


def _loop_builds(loop: cst.For, resolve) -> Optional[List[str]]:
    """How a loop over a set puts its order into data: the names of the lists it appends to
    (what the set became, followed further), an empty list for anything else that keeps the
    order (a position stored by subscript, `yield`, a draw, building an `nn` module, which
    draws its initial weights, an append to an attribute), None
    when it does neither. Containers made in the body are per element, and `d[x] = f(x)`
    keyed by the element (`d[x.lower()]`, `d["f1-" + x]` through a local, or what an inner
    loop takes from it) fills the same mapping in any order; so do `d[x] += 1` and
    `d[x].append(v)`, which touch only the element's own entry."""
    nodes = _nodes(loop.body)
    local: Set[str] = set()
    counters: Set[str] = set()
    elements = set(_target_names(loop.target))  # the element, and what inner loops take from it
    derived: List[Tuple[List[str], cst.CSTNode]] = []  # `key = "f1-" + x`: names computed in the body
    for node in nodes:
        kind = type(node)
        if kind is cst.Assign:
            for target in node.targets:
                local.update(_target_names(target.target))
                if type(target.target) is cst.Name:
                    derived.append(([target.target.value], node.value))
        elif kind is cst.AugAssign and type(node.target) is cst.Name:
            counters.add(node.target.value)
        elif kind is cst.For:
            elements.update(_target_names(node.target))
    # A name computed from the element keys by the element too; two passes follow one chain
    # (`stem = x.lower()`, `key = stem + "_f1"`) without a fixpoint loop over long bodies.
    for _ in range(2):
        for names, value in derived:
            if names[0] not in counters and _mentions(value, elements):
                elements.update(names)
    appended: List[str] = []
    for node in nodes:
        kind = type(node)
        if kind is cst.Call:
            func = node.func
            if type(func) is cst.Attribute:
                attribute = func.attr.value
                if attribute in _BUILDING_METHODS:
                    if _keyed_by(func.value, elements):
                        continue  # `d[x].append(v)`: the element's own list
                    if type(func.value) is not cst.Name:
                        return []
                    name = func.value.value
                    if name not in local and name not in appended:
                        appended.append(name)
                elif attribute in _LOOP_DRAWS:
                    return []
            elif type(func) is cst.Name and func.value in _LOOP_DRAWS:
                return []
            if _draws(resolve(func)):
                return []
        elif kind is cst.Assign or kind is cst.AugAssign or kind is cst.AnnAssign:
            targets = [target.target for target in node.targets] if kind is cst.Assign else [node.target]
            for target in targets:
                if type(target) is not cst.Subscript:
                    continue
                if type(target.value) is cst.Name and target.value.value in local:
                    continue
                if not _keyed_by(target, elements) or node.value is None or _position_dependent(node.value, counters, elements):
                    return []
        elif kind is cst.Yield:
            return []
    return appended or None


def _value(spec: object) -> object:
    """A fresh value of the model for a result of the known-calls table."""
    if spec == "str":
        return _STR
    if spec == "nonstr":
        return _NONSTR
    if type(spec) is tuple:
        kind, *items = spec
        if kind == "seq":
            return _Seq(_value(items[0]))
        if kind == "tuple":
            return _TupleValue([_value(item) for item in items])
        if kind == "mapping":
            return _Mapping(_value(items[0]))
    return None
