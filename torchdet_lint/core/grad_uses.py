"""Whether an operation's result only ever feeds code where no gradient flows.

`sampled = F.grid_sample(feats, grid)` whose every read is inside `with torch.no_grad():`
(`weight = sampled.mean()` there) computes a tensor that no loss depends on: a backward pass
never runs through the operation. Read from the enclosing function alone, after the walk has
seen the call (the parent map of the module), and only for the few calls that would be reported.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set

import libcst as cst

from torchdet_lint.core.traversal import names_below

# Methods that may hand back the tensor itself (a cast to its own dtype, a move to its own device,
# an in-place method): under `no_grad` they still return the tensor that carries the gradient.
_MAY_RETURN_ITSELF = frozenset(
    {
        "to",
        "cuda",
        "cpu",
        "float",
        "double",
        "half",
        "bfloat16",
        "long",
        "int",
        "short",
        "char",
        "byte",
        "bool",
        "contiguous",
        "type",
        "type_as",
        "pin_memory",
        "requires_grad_",
    }
)
# Calls that keep their argument (a container, a module's buffers): the tensor, with its graph, may
# be read after the `no_grad` block.
_STORING_METHODS = frozenset(
    {"append", "extend", "insert", "add", "update", "setdefault", "put", "register_buffer", "register_parameter", "__setitem__"}
)
_STORING_FUNCTIONS = frozenset({"setattr"})
# Boundaries of code that runs later, elsewhere: a use in them is a use outside the block.
_DEFERRED = (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.GeneratorExp)


def used_only_without_grad(context, call: cst.Call) -> bool:
    """Whether `call`'s result is bound to a plain local name (`x = op(...)`) whose every read in the
    enclosing function, and every read of the names bound from it by plain assignment (`y = x`), is
    inside a `torch.no_grad()`/`inference_mode()` block and computes a new tensor there (an operand,
    a method's receiver, an argument of a call that does not store it). Returned, yielded, stored,
    read after the block or in a nested function: False."""
    parent = context.positions.parent
    statement = parent(call)
    if type(statement) is not cst.Assign or statement.value is not call or len(statement.targets) != 1:
        return False
    target = statement.targets[0].target
    if type(target) is not cst.Name:
        return False
    function = parent(statement)
    while function is not None and not isinstance(function, (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.Module)):
        function = parent(function)
    if type(function) is not cst.FunctionDef:
        return False
    # Several calls of one function ask: its names are gathered once per file.
    names = context.per_node("names below", function.body, names_below)
    checker = _Uses(context, function, names)
    return checker.harmless_name(target.value)


class _Uses:
    def __init__(self, context, function: cst.FunctionDef, names: Dict[str, List[cst.Name]]) -> None:
        self.context = context
        self.parent = context.positions.parent
        self.function = function
        self.names = names
        self.followed: Set[str] = set()

    def harmless_name(self, name: str) -> bool:
        if name in self.followed:
            return True
        self.followed.add(name)
        for node in self.names.get(name, ()):
            up = self.parent(node)
            if self._not_a_read(node, up):
                continue
            if type(up) in (cst.Global, cst.Nonlocal) or type(self.parent(up)) in (cst.Global, cst.Nonlocal):
                return False
            if not self._harmless(node):
                return False
        return True

    def _not_a_read(self, node: cst.Name, up: Optional[cst.CSTNode]) -> bool:
        """A name that names something else (an attribute, a keyword, a parameter, a definition) or
        binds the name anew: no read of the value."""
        kind = type(up)
        if kind is cst.Attribute:
            return up.attr is node
        if kind is cst.Arg:
            return up.keyword is node
        if kind in (cst.Param, cst.FunctionDef, cst.ClassDef, cst.ImportAlias):
            return True
        return self._binding_target(node)

    def _binding_target(self, node: cst.CSTNode) -> bool:
        # `x = ...`, `a, x = ...`, `for x in ...`, `with ... as x`, `(x := ...)`: a new value.
        child, up = node, self.parent(node)
        while type(up) in (cst.Element, cst.StarredElement, cst.Tuple, cst.List):
            child, up = up, self.parent(up)
        kind = type(up)
        if kind is cst.AssignTarget or kind is cst.AsName:
            return True
        if kind in (cst.AnnAssign, cst.NamedExpr):
            return up.target is child
        if kind in (cst.For, cst.CompFor):
            return up.target is child
        return False

    def _harmless(self, node: cst.BaseExpression) -> bool:
        """`node` evaluates to the tensor itself: whether what is done with it here keeps it
        away from every gradient."""
        up = self.parent(node)
        kind = type(up)
        if kind is cst.Assign and up.value is node:
            # `y = x`: the same tensor under another name, followed through its reads.
            targets = up.targets
            return len(targets) == 1 and type(targets[0].target) is cst.Name and self.harmless_name(targets[0].target.value)
        if kind is cst.Del:
            return True
        if not self._inside_no_grad(node):
            return False
        if kind is cst.Attribute and up.value is node:
            call = self.parent(up)
            if type(call) is cst.Call and call.func is up:
                method = up.attr.value
                if method in _MAY_RETURN_ITSELF or (method.endswith("_") and not method.startswith("_")):
                    return self._harmless(call)
            return True
        if kind is cst.Subscript and up.value is node:
            return True  # a view taken under `no_grad` carries no graph
        if kind in (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison):
            return True
        if kind is cst.Element or kind is cst.StarredElement:
            display = self.parent(up)
            if type(display) not in (cst.List, cst.Tuple):
                return False
            up, node = self.parent(display), display
            kind = type(up)
        if kind is cst.Arg and up.value is node:
            return self._not_storing(self.parent(up))
        return False

    def _not_storing(self, call: Optional[cst.CSTNode]) -> bool:
        if type(call) is not cst.Call:
            return False
        func = call.func
        if type(func) is cst.Attribute:
            return func.attr.value not in _STORING_METHODS
        return self.context.qualified_name(func) not in {"builtins." + name for name in _STORING_FUNCTIONS}

    def _inside_no_grad(self, node: cst.CSTNode) -> bool:
        """Inside the body of a `with` that turns gradients off (the innermost `with` that says
        either way decides), within the function itself."""
        child, up = node, self.parent(node)
        while up is not None and up is not self.function:
            if isinstance(up, _DEFERRED):
                return False
            if type(up) is cst.With and child is up.body:
                effects = [self.context.scopes.grad_effect(item.item) for item in up.items]
                known = [effect for effect in effects if effect is not None]
                if known:
                    return known[-1] is False
            child, up = up, self.parent(up)
        return False
