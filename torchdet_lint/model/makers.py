"""What an object may be: the first-party calls whose result an expression can hold
(`TrainLoop(...)` in `TrainLoop(...).run_loop()`, `self.sampler` bound to `sampler or
create_sampler(...)`, a trainer handed to `executor.submit`, a `return`), or a member of
a registry (`return _MODELS[name]`). Read in the
shared walk from the bindings seen so far; bounded, so that a long chain of rebindings costs
little and an unresolved one is left unknown.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional

import libcst as cst

from torchdet_lint.core.scopes import ScopeTracker

# A factory's branches are a handful; a longer list is a plugin system, and following every
# member of it from each call would make a reach as wide as the project.
MAX_CANDIDATES = 4
MAX_STEPS = 3  # names followed to their values: `loop = make(); runner = loop or other`
# Methods of tensors, containers and strings, called on locals at almost every line of model
# code (`x.view(...)`, `out.append(...)`): looking up what `x` was built by costs the walk time
# and cannot find a first-party method (a project's own class rarely names one so). Names a
# trainer or a loop defines (`train`, `step`, `update`, `run`, `fit`) are not here.
COMMON_METHODS = frozenset(
    """view reshape permute transpose contiguous flatten unsqueeze squeeze expand expand_as repeat
    size dim numel mean sum max min std var norm abs clamp clamp_ exp log sqrt pow sigmoid softmax
    float double half long int bool to cuda cpu detach numpy item tolist type type_as chunk split
    narrow unbind gather masked_fill masked_fill_ fill_ zero_ add add_ sub sub_ mul mul_ div div_
    matmul bmm mm t flip roll argmax argmin topk sort eq ne gt lt ge le all any new_zeros new_ones
    new_empty new_full copy_ clone requires_grad_ register_buffer register_parameter append extend
    insert pop remove items keys values setdefault join format strip lstrip rstrip replace
    startswith endswith lower upper encode decode""".split()
)

# Methods of `nn.Module` (and of tensors) that return the object itself: `Net().to(device)`,
# `Net().cuda().eval()` and `model = model.half()` still hold the `Net`, so reach follows them.
SELF_RETURNING = frozenset("to cuda cpu half float double bfloat16 train eval requires_grad_ to_empty share_memory".split())


def unwrap_self_returning(node: cst.BaseExpression) -> cst.BaseExpression:
    """`Net().cuda().eval()` -> `Net()`: the object a chain of self-returning methods is called on."""
    while type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in SELF_RETURNING:
        node = node.func.value
    return node


Target = Callable[[cst.CSTNode], Optional[str]]


class Makers:
    """`of(expression, target, registry)`: the first-party call targets (qualified, or ".Local"
    of this file) whose result the expression may hold; the project phase tells classes from
    functions. `target` names a call's function, `registry` turns `_MODELS` of `_MODELS[name]`
    into "<registry>[]". They are handed in at each question, never kept: a collector holding a
    Makers that held its bound methods would be a reference cycle, and each file's syntax tree
    would then wait for the cycle collector instead of being freed at once."""

    def __init__(self, scopes: ScopeTracker, first_party: frozenset) -> None:
        self.scopes = scopes
        self.first_party = first_party
        self._made: Dict[int, Optional[str]] = {}  # id of a call -> its first-party target
        self.target: Optional[Target] = None
        self.registry: Optional[Target] = None

    def of(self, expression: cst.BaseExpression, target: Target, registry: Target) -> List[str]:
        found: List[str] = []
        self.target, self.registry = target, registry
        try:
            self._collect(expression, found, 0)
        finally:
            self.target = self.registry = None
        return found

    def _collect(self, node: Optional[cst.BaseExpression], found: List[str], steps: int) -> None:
        if node is None or steps > MAX_STEPS or len(found) >= MAX_CANDIDATES:
            return
        kind = type(node)
        if kind is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in SELF_RETURNING:
            self._collect(unwrap_self_returning(node), found, steps)  # `Net(...).to(device)`
        elif kind is cst.Call:
            made = self._call(node)
            if made is not None and made not in found:
                found.append(made)
        elif kind is cst.Subscript:  # a getter's `return _MODELS[name]`: any member
            member = self.registry(node.value)
            if member is not None and member not in found:
                found.append(member)
        elif kind is cst.BooleanOperation:  # `sampler or create_sampler(...)`
            self._collect(node.left, found, steps)
            self._collect(node.right, found, steps)
        elif kind is cst.IfExp:
            self._collect(node.body, found, steps)
            self._collect(node.orelse, found, steps)
        elif kind is cst.Name:
            if node.value != "self":
                # The latest bindings: a name rebound down a long `forward` (`x = layer(x)`) would
                # otherwise be walked back at each of its uses.
                for value in self.scopes.values(node.value)[-MAX_CANDIDATES:]:
                    self._collect(value, found, steps + 1)
        elif kind is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":
            for value in self.scopes.attribute_values(node.attr.value)[-MAX_CANDIDATES:]:
                self._collect(value, found, steps + 1)

    def _call(self, node: cst.Call) -> Optional[str]:
        key = id(node)
        if key not in self._made:
            made = self.target(node.func)
            first_party = made is not None and (made.startswith(".") or made.split(".", 1)[0] in self.first_party)
            self._made[key] = made if first_party else None
        return self._made[key]
