"""What an object may be: the first-party calls whose result an expression can hold
(`TrainLoop(...)` in `TrainLoop(...).run_loop()`, `self.sampler` bound to `sampler or
create_sampler(...)`, a trainer handed to `executor.submit`, a `return`), or a member of
a registry (`return _MODELS[name]`). Read in the
shared walk from the bindings seen so far; bounded (RULES.md, "Reach also follows").
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional

import libcst as cst

from torchdet_lint.scopes import ScopeTracker

# A factory's branches are a handful; a longer list is a plugin system, and following every
# member of it from each call would make a reach as wide as the project.
MAX_CANDIDATES = 4
MAX_STEPS = 3  # names followed to their values: `loop = make(); runner = loop or other`


class Makers:
    """`of(expression)`: the first-party call targets (qualified, or ".Local" of this file)
    whose result the expression may hold; the project phase tells classes from functions."""

    def __init__(
        self,
        scopes: ScopeTracker,
        target: Callable[[cst.CSTNode], Optional[str]],
        registry: Callable[[cst.BaseExpression], Optional[str]],
        first_party: frozenset,
    ) -> None:
        self.scopes = scopes
        self.target = target
        self.registry = registry  # `_MODELS` in `_MODELS[name]` -> "<registry>[]", or None
        self.first_party = first_party
        self._made: Dict[int, Optional[str]] = {}  # id of a call -> its first-party target

    def of(self, expression: cst.BaseExpression) -> List[str]:
        found: List[str] = []
        self._collect(expression, found, 0)
        return found

    def _collect(self, node: Optional[cst.BaseExpression], found: List[str], steps: int) -> None:
        if node is None or steps > MAX_STEPS or len(found) >= MAX_CANDIDATES:
            return
        kind = type(node)
        if kind is cst.Call:
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
