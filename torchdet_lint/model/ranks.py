"""Ranks in a distributed run, read off the code: which expressions hold a process's rank,
which tests hold on the main process only (`if rank == 0:`, `if is_main_process():`), and
which calls show that a run is distributed (`init_process_group`, DDP, `Accelerator`).
"""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from torchdet_lint.core.names import NOT_LITERAL, dotted_name, literal
from torchdet_lint.core.traversal import sub_nodes

# Names (a variable, an attribute's last part, a function called) that hold a process's rank.
RANK_NAMES = frozenset(
    {
        "rank",
        "local_rank",
        "global_rank",
        "process_index",
        "local_process_index",
        "get_rank",
        "get_global_rank",
        "get_local_rank",
        "get_ordinal",
        "get_process_index",
    }
)
# Predicates (called, or read as attributes) that hold on the main process only.
MAIN_PROCESS_NAMES = frozenset(
    {
        "is_main_process",
        "is_local_main_process",
        "is_main",
        "is_master",
        "is_master_process",
        "is_master_ordinal",
        "is_rank_zero",
        "is_rank_0",
        "is_world_process_zero",
        "is_local_process_zero",
        "is_global_zero",
        "is_primary",
        "main_process",
        "master_process",
    }
)
# Predicates that say whether the run is distributed at all (`not dist.is_initialized() or rank == 0`).
DISTRIBUTED_PREDICATES = frozenset({"is_initialized", "is_available", "is_distributed", "distributed"})
# Calls whose presence makes a run distributed, by qualified name.
DISTRIBUTED_SETUP = frozenset(
    {
        "torch.distributed.init_process_group",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
        "torch.distributed.fsdp.FullyShardedDataParallel",
        "accelerate.Accelerator",
        "accelerate.accelerator.Accelerator",
        "lightning.fabric.Fabric",
        "deepspeed.initialize",
        "deepspeed.init_distributed",
    }
)
# Environment variables torchrun (and the launchers before it) set for each process.
RANK_VARIABLES = frozenset({"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"})

Qualify = Callable[[cst.CSTNode], Optional[str]]


def _last(node: cst.BaseExpression) -> Optional[str]:
    """`rank` for `args.rank`, `get_rank` for `dist.get_rank()`."""
    if type(node) is cst.Call:
        node = node.func
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        return node.attr.value
    return None


def is_rank(node: cst.BaseExpression) -> bool:
    """An expression that holds the process's rank: `rank`, `args.local_rank`, `dist.get_rank()`,
    `args.rank % ngpus_per_node` (the ImageNet example's node-local index)."""
    if type(node) is cst.BinaryOperation and type(node.operator) is cst.Modulo:
        return is_rank(node.left)
    if type(node) is cst.Call and node.args:
        return False
    return _last(node) in RANK_NAMES


def _is_zero(node: cst.BaseExpression) -> bool:
    return literal(node) == 0 and literal(node) is not False


def main_process_test(node: cst.BaseExpression) -> Optional[bool]:
    """True for a test that holds on the main process only (`rank == 0`, `is_main_process()`,
    `local_rank in [-1, 0]`, `not dist.is_initialized() or dist.get_rank() == 0`), False for one
    that holds on every process but the main one (`rank != 0`, `not is_main_process()`), None for
    any other test."""
    kind = type(node)
    if kind is cst.UnaryOperation and type(node.operator) is cst.Not:
        inner = main_process_test(node.expression)
        return None if inner is None else not inner
    if kind is cst.BooleanOperation:
        left, right = main_process_test(node.left), main_process_test(node.right)
        if type(node.operator) is cst.And:
            # Holds only where both hold: on the main process only when either does.
            return True if True in (left, right) else None
        # `not dist.is_initialized() or rank == 0`: outside a distributed run there is one process.
        others = [side for side, test in ((node.left, left), (node.right, right)) if test is not True]
        if True in (left, right) and all(_not_distributed(side) for side in others):
            return True
        return None
    if kind is cst.Comparison and len(node.comparisons) == 1:
        target = node.comparisons[0]
        operator = type(target.operator)
        left, right = node.left, target.comparator
        if is_rank(right) and not is_rank(left):
            left, right = right, left
            operator = {cst.LessThanEqual: cst.GreaterThanEqual, cst.GreaterThan: cst.LessThan}.get(operator, operator)
        if not is_rank(left):
            return None
        if operator is cst.In:
            values = literal(right)
            return True if isinstance(values, (list, tuple, set)) and set(values) <= {-1, 0} and 0 in values else None
        if not _is_zero(right):
            return None
        if operator in (cst.Equal, cst.LessThanEqual, cst.Is):
            return True
        if operator in (cst.NotEqual, cst.GreaterThan, cst.IsNot):
            return False
        return None
    if kind in (cst.Call, cst.Name, cst.Attribute):
        if kind is cst.Call and node.args:
            return None
        return True if _last(node) in MAIN_PROCESS_NAMES else None
    return None


# Parts of names a test that picks processes is likely to use (`if args.gpu == 0:`).
RANKISH = ("rank", "gpu", "master", "main", "primary", "ordinal", "zero", "local", "node", "process")


def may_test_rank(node: cst.CSTNode) -> bool:
    """A test `main_process_test` does not read but that may pick processes: it names something
    rank-like (`args.gpu == 0`, `self.is_chief`... by the parts in RANKISH)."""
    pending = [node]
    while pending:
        current = pending.pop()
        name = current.value if type(current) is cst.Name else None
        if type(current) is cst.Attribute:
            name = current.attr.value
            pending.append(current.value)
        elif type(current) is not cst.Name:
            pending.extend(sub_nodes(current))
        if name is not None and any(part in name.lower() for part in RANKISH):
            return True
    return False


def _not_distributed(node: cst.BaseExpression) -> bool:
    """`not dist.is_initialized()`, `not args.distributed`: the run is not distributed."""
    return (
        type(node) is cst.UnaryOperation and type(node.operator) is cst.Not and _last(node.expression) in DISTRIBUTED_PREDICATES
    )


def rank_variable(node: cst.BaseExpression) -> bool:
    """`os.environ["LOCAL_RANK"]`, `os.environ.get("RANK")`, `os.getenv("WORLD_SIZE")`: a variable a
    distributed launcher sets."""
    if type(node) is cst.Subscript and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index:
        value = literal(node.slice[0].slice.value)
        return isinstance(value, str) and value in RANK_VARIABLES and (dotted_name(node.value) or "").endswith("environ")
    if type(node) is cst.Call and node.args:
        spelled = dotted_name(node.func) or ""
        value = literal(node.args[0].value)
        if value is NOT_LITERAL or not isinstance(value, str):
            return False
        return value in RANK_VARIABLES and (spelled.endswith("environ.get") or spelled.endswith("getenv"))
    return False
