"""The values a few global settings (`cudnn.benchmark`, `cudnn.deterministic`) hold together
on each path through a file's bodies: `if`/`else` branches, loops, `try`, early `return`s,
and calls of the file's module-level functions (their effect on the caller's settings).
"""

from __future__ import annotations

from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst

from torchdet_lint.core.traversal import sub_nodes

# A function's body starts from the caller's settings: this marks a setting it has not changed.
KEEP = "keep"
# Per setting: None (never set), KEEP, or (the value as `literal` reads it, the assignment).
Setting = object
State = Tuple[Setting, ...]
MAX_STATES = 64  # distinct combinations followed at one point (more only repeat what is known)


class SettingPaths:
    """Walks the module's body and every function's body once (a function from `KEEP`, the
    module from "never set") and calls `check(state)` after each statement that changes a
    setting: `state` holds one path's settings there."""

    def __init__(
        self, module: cst.Module, assignments: Dict[int, Tuple[int, object]], count: int, check: Callable[[State], None]
    ) -> None:
        self.assignments = assignments  # id of an `Assign` -> (index of its setting, its value)
        self.count = count
        self.check = check
        self.functions = {s.name.value: s for s in module.body if type(s) is cst.FunctionDef}
        self.effects: Dict[str, FrozenSet[State]] = {}
        self.computing: Set[str] = set()
        self.module = module

    def walk(self) -> None:
        self._body(self.module.body, {(None,) * self.count})
        for node in _function_defs(self.module):
            self._function(node)

    # -- a function's effect on its caller's settings -------------------------------------
    def _function(self, node: cst.FunctionDef) -> FrozenSet[State]:
        name = node.name.value
        known = self.effects.get(name) if self.functions.get(name) is node else None
        if known is not None:
            return known
        if name in self.computing:
            return frozenset({(KEEP,) * self.count})  # a recursive call: no effect of its own
        self.computing.add(name)
        returns: Set[State] = set()
        ends = self._body(_statements(node.body), {(KEEP,) * self.count}, returns)
        self.computing.discard(name)
        effect = frozenset(ends | returns)
        if self.functions.get(name) is node:
            self.effects[name] = effect
        return effect

    # -- statements -----------------------------------------------------------------------
    def _body(
        self,
        statements: Sequence[cst.BaseStatement],
        states: Set[State],
        returns: Optional[Set[State]] = None,
        jumps: Optional[Set[State]] = None,
    ) -> Set[State]:
        for statement in statements:
            if not states:
                break  # nothing reaches here
            states = self._statement(statement, states, returns, jumps)
            if len(states) > MAX_STATES:
                states = set(sorted(states, key=repr)[:MAX_STATES])
        return states

    def _statement(self, statement: cst.CSTNode, states: Set[State], returns, jumps) -> Set[State]:
        kind = type(statement)
        if kind is cst.SimpleStatementLine or kind is cst.SimpleStatementSuite:
            for small in statement.body:
                states = self._small(small, states, returns, jumps)
            return states
        if kind is cst.If:
            after = self._body(_statements(statement.body), states, returns, jumps)
            orelse = statement.orelse
            if orelse is None:
                return after | states
            if type(orelse) is cst.If:
                return after | self._statement(orelse, states, returns, jumps)
            return after | self._body(_statements(orelse.body), states, returns, jumps)
        if kind is cst.For or kind is cst.While:
            loop_jumps: Set[State] = set()
            once = self._body(_statements(statement.body), states, returns, loop_jumps)
            twice = self._body(_statements(statement.body), once | loop_jumps, returns, loop_jumps)
            after = states | once | twice | loop_jumps
            if statement.orelse is not None:
                after = self._body(_statements(statement.orelse.body), after, returns, jumps)
            return after
        if kind is cst.Try or kind is cst.TryStar:
            body = self._body(_statements(statement.body), states, returns, jumps)
            handled = set()
            for handler in statement.handlers:
                handled |= self._body(_statements(handler.body), states | body, returns, jumps)
            if statement.orelse is not None:
                body = self._body(_statements(statement.orelse.body), body, returns, jumps)
            after = body | handled
            if statement.finalbody is not None:
                after = self._body(_statements(statement.finalbody.body), after, returns, jumps)
            return after
        if kind is cst.With:
            return self._body(_statements(statement.body), states, returns, jumps)
        if kind is cst.Match:
            after = set()
            for case in statement.cases:
                after |= self._body(_statements(case.body), states, returns, jumps)
            return after | states
        return states  # definitions run nothing here; their bodies are walked on their own

    def _small(self, small: cst.BaseSmallStatement, states: Set[State], returns, jumps) -> Set[State]:
        kind = type(small)
        if kind is cst.Return:
            states = self._calls(small, states)
            if returns is not None:
                returns |= states
            return set()
        if kind is cst.Raise:
            return set()
        if kind is cst.Break or kind is cst.Continue:
            if jumps is not None:
                jumps |= states
            return set()
        states = self._calls(small, states)
        setting = self.assignments.get(id(small))
        if setting is not None:
            index, value = setting
            changed = set()
            for state in states:
                new = state[:index] + ((value, small),) + state[index + 1 :]
                self.check(new)
                changed.add(new)
            states = changed
        return states

    def _calls(self, node: cst.CSTNode, states: Set[State]) -> Set[State]:
        """The effect of the file's functions called in `node` (not in lambdas)."""
        for call in _calls_in(node):
            function = self.functions.get(call.func.value) if type(call.func) is cst.Name else None
            if function is None:
                continue
            effect = self._function(function)
            if effect == {(KEEP,) * self.count}:
                continue
            combined = set()
            for state in states:
                for exit_state in effect:
                    new = tuple(mine if theirs == KEEP else theirs for mine, theirs in zip(state, exit_state))
                    if new != state:
                        self.check(new)
                    combined.add(new)
            states = combined
        return states


def _statements(block: cst.BaseSuite) -> Sequence[cst.CSTNode]:
    return block.body if type(block) is cst.IndentedBlock else [block]


def _function_defs(module: cst.Module) -> List[cst.FunctionDef]:
    found: List[cst.FunctionDef] = []
    stack: List[cst.CSTNode] = list(module.body)
    while stack:
        node = stack.pop()
        if type(node) is cst.FunctionDef:
            found.append(node)
        if type(node) in (cst.FunctionDef, cst.ClassDef, cst.IndentedBlock, cst.If, cst.Else, cst.For, cst.While):
            stack.extend(sub_nodes(node))
        elif type(node) in (cst.Try, cst.TryStar, cst.With, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally):
            stack.extend(sub_nodes(node))
    return found


def _calls_in(node: cst.CSTNode) -> List[cst.Call]:
    """The calls in `node` in the order they run (arguments first, left to right), not those
    in lambdas."""
    found: List[cst.Call] = []
    stack: List[Tuple[cst.CSTNode, bool]] = [(node, False)]
    while stack:
        current, expanded = stack.pop()
        if expanded:
            found.append(current)  # type: ignore[arg-type]
            continue
        if type(current) is cst.Lambda:
            continue
        if type(current) is cst.Call:
            stack.append((current, True))
        stack.extend((child, False) for child in reversed(sub_nodes(current)))
    return found
