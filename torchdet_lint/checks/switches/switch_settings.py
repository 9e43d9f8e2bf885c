"""The switches' shared reading: the qualified names of the cuDNN flags and deterministic mode,
Lightning's Trainer arguments, and which `if` branch an assignment sits in."""

from __future__ import annotations

from typing import Dict, FrozenSet, List, Optional, Tuple

import libcst as cst

from torchdet_lint.core.diagnostics import Applicability, FixBuilder
from torchdet_lint.core.names import dict_entry, find_arg
from torchdet_lint.core.rule import Rule

CUDNN = "torch.backends.cudnn"
BENCHMARK = CUDNN + ".benchmark"
DETERMINISTIC = CUDNN + ".deterministic"
CUDNN_FLAGS = CUDNN + ".flags"
TRAINERS = frozenset({"lightning.pytorch.Trainer"})
LIGHTNING_CLI = "lightning.pytorch.cli.LightningCLI"
USE_DETERMINISTIC = frozenset({"torch.use_deterministic_algorithms", "torch.set_deterministic"})
DEBUG_MODE = "torch.set_deterministic_debug_mode"
CUBLAS_VARIABLE = "CUBLAS_WORKSPACE_CONFIG"
CUBLAS_VALUES = (":4096:8", ":16:8")
CUBLAS_FIX_VERSION = (2, 10)


def false_fix(value: cst.BaseExpression, what: str) -> FixBuilder:
    return FixBuilder(f"Set `{what}` to `False`", Applicability.SAFE).replace(value, cst.Name("False"))


def cudnn_assignments(rule: Rule, node: cst.Assign) -> List[Tuple[str, cst.BaseExpression]]:
    """(qualified target, value) for `cudnn.<flag> = value` targets of an assignment. Only an
    attribute target sets the flag: `benchmark = torch.backends.cudnn.benchmark` reads it into a
    name (the name's binding is the flag's value, which its qualified name would follow)."""
    found = []
    for target in node.targets:
        if type(target.target) is not cst.Attribute:
            continue
        name = rule.context.qualified_name(target.target)
        if name in (BENCHMARK, DETERMINISTIC):
            found.append((name, node.value))
    return found


def trainer_argument_of(context, call: cst.Call, keyword: str) -> Optional[cst.Arg]:
    """A Lightning Trainer setting: `Trainer(benchmark=...)`, or an entry of
    `LightningCLI(trainer_defaults={"benchmark": ...})` (a dict literal, or a name bound to one)."""
    name = context.call_name(call)
    if name in TRAINERS:
        return find_arg(call, keyword)
    if name == LIGHTNING_CLI:
        defaults = find_arg(call, "trainer_defaults")
        value = defaults.value if defaults is not None else None
        if isinstance(value, cst.Name):
            value = context.scopes.value(value.value, module_too=True)
        return dict_entry(value, keyword)
    return None


def trainer_argument(rule: Rule, call: cst.Call, keyword: str) -> Optional[cst.Arg]:
    return trainer_argument_of(rule.context, call, keyword)


def truthy(value) -> bool:
    return value is True or value == "warn" or (isinstance(value, int) and not isinstance(value, bool) and value > 0)


class BranchTracker:
    """Which `if` branches a statement is in, for rules that pair or weigh assignments: two
    assignments in different branches of one `if` never run together, and a branch that also
    sets `cudnn.deterministic = False` is a deliberate fast mode."""

    def __init__(self) -> None:
        self._branches: Dict[int, Tuple[int, int]] = {}  # block or `elif` node -> (its `if`, branch)
        self._path: List[Tuple[int, int]] = []
        self._blocks: List[int] = [0]  # the innermost block (0: the module)

    def visit_If(self, node: cst.If) -> None:
        self._enter(node)
        self._branches[id(node.body)] = (id(node), 0)
        if type(node.orelse) is cst.Else:
            self._branches[id(node.orelse.body)] = (id(node), 1)
        elif type(node.orelse) is cst.If:
            self._branches[id(node.orelse)] = (id(node), 1)

    def leave_If(self, original_node: cst.If) -> None:
        self._leave(original_node)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._enter(node)
        self._blocks.append(id(node))

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self._leave(original_node)
        self._blocks.pop()

    def _enter(self, node: cst.CSTNode) -> None:
        branch = self._branches.get(id(node))
        if branch is not None:
            self._path.append(branch)

    def _leave(self, node: cst.CSTNode) -> None:
        if id(node) in self._branches:
            self._path.pop()

    def branch_path(self) -> FrozenSet[Tuple[int, int]]:
        return frozenset(self._path)

    def block(self) -> int:
        return self._blocks[-1]


def exclusive(one: FrozenSet[Tuple[int, int]], other: FrozenSet[Tuple[int, int]]) -> bool:
    """Whether two statements sit in different branches of one `if` (they never run together)."""
    branches = dict(one)
    return any(if_node in branches and branches[if_node] != branch for if_node, branch in other)
