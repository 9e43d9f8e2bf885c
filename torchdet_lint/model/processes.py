"""Process boundaries: which calls start a function in a new Python process, and
with which start method. A spawned process
starts with fresh RNG states and default flags; a forked one copies the
parent's, and a thread shares them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional, Tuple

import libcst as cst

from torchdet_lint.core.names import NOT_LITERAL, arg_value, literal

if TYPE_CHECKING:  # pragma: no cover
    from torchdet_lint.core.scopes import ScopeTracker

SPAWN = "spawn"  # a new interpreter: nothing of the parent's RNG state or flags carries over
DEFAULT = "default"  # the platform's default start method: a boundary only after `set_start_method("spawn")`
FORK = "fork"  # a copy of the parent (or a thread): no boundary

# Launchers that start processes themselves: the function's parameter (keyword, position), and the
# start method they use unless told otherwise (`start_method=`).
LAUNCHERS = {
    "torch.multiprocessing.spawn": ("fn", 0),
    "torch.multiprocessing.spawn.spawn": ("fn", 0),
    "torch.multiprocessing.start_processes": ("fn", 0),
    "torch.multiprocessing.spawn.start_processes": ("fn", 0),
    "torch.distributed.elastic.multiprocessing.start_processes": ("entrypoint", 1),
}
# Launchers that call the function with the process's index first (`fn(i, *args)`): in a distributed
# run, that index is the rank on its node.
INDEXING_LAUNCHERS = frozenset(
    {
        "torch.multiprocessing.spawn",
        "torch.multiprocessing.spawn.spawn",
        "torch.multiprocessing.start_processes",
        "torch.multiprocessing.spawn.start_processes",
    }
)
# Executors that run what they are handed as a job of its own (a SLURM job, a local subprocess):
# the training process is the job, so its seeds and flags belong at the top of what runs there.
REMOTE_EXECUTORS = frozenset({"submitit.AutoExecutor", "submitit.SlurmExecutor", "submitit.LocalExecutor"})
PROCESS_CLASSES = frozenset({"multiprocessing.Process", "multiprocessing.context.Process", "torch.multiprocessing.Process"})
POOL_CLASSES = frozenset({"multiprocessing.Pool", "multiprocessing.pool.Pool", "torch.multiprocessing.Pool"})
EXECUTORS = frozenset({"concurrent.futures.ProcessPoolExecutor", "concurrent.futures.process.ProcessPoolExecutor"})
CONTEXT_FACTORIES = frozenset({"multiprocessing.get_context", "torch.multiprocessing.get_context"})
START_METHOD_SETTERS = frozenset({"multiprocessing.set_start_method", "torch.multiprocessing.set_start_method"})
# Methods of a pool or an executor that run the function handed to them in a worker process.
POOL_METHODS = frozenset(
    {"map", "map_async", "imap", "imap_unordered", "starmap", "starmap_async", "apply", "apply_async", "submit"}
)
BOUNDARY_METHODS = frozenset({"spawn", "forkserver"})

Qualify = Callable[[cst.CSTNode], Optional[str]]


def start_method(value: Optional[cst.BaseExpression], unknown: str) -> str:
    """SPAWN, FORK or `unknown` for a start method given as an argument."""
    if value is None:
        return unknown
    method = literal(value)
    if method is NOT_LITERAL or method is None:
        return unknown
    return SPAWN if method in BOUNDARY_METHODS else FORK


def sets_spawn_start(qualified: Optional[str], call: cst.Call) -> bool:
    """`multiprocessing.set_start_method("spawn"|"forkserver")`."""
    return qualified in START_METHOD_SETTERS and start_method(arg_value(call, "method", 0), FORK) == SPAWN


def process_start(
    call: cst.Call, qualified: Optional[str], qualify: Qualify, scopes: "ScopeTracker"
) -> Optional[Tuple[cst.BaseExpression, str]]:
    """(the function started, SPAWN / DEFAULT / FORK) when `call` starts a function in
    another process; None for any other call (threads included: they share the state)."""
    if qualified in LAUNCHERS:
        keyword, position = LAUNCHERS[qualified]
        function = arg_value(call, keyword, position)
        return (function, start_method(arg_value(call, "start_method"), SPAWN)) if function is not None else None
    if qualified in PROCESS_CLASSES:
        function = arg_value(call, "target", 1)
        return (function, DEFAULT) if function is not None else None
    func = call.func
    if type(func) is not cst.Attribute:
        return None
    attribute = func.attr.value
    if attribute == "Process" and qualified is None:
        method = _context_method(func.value, qualify, scopes)
        function = arg_value(call, "target", 1)
        return (function, method) if method is not None and function is not None else None
    if attribute in POOL_METHODS:
        method = _pool_method(func.value, qualify, scopes)
        function = arg_value(call, None, 0) if attribute != "submit" else arg_value(call, "fn", 0)
        return (function, method) if method is not None and function is not None else None
    return None


def _bound(node: cst.BaseExpression, scopes: "ScopeTracker") -> Optional[cst.BaseExpression]:
    """What a name stands for (its last binding in this function, else the module's)."""
    if type(node) is cst.Name:
        return scopes.value(node.value, module_too=True)
    return node


def _context_method(node: cst.BaseExpression, qualify: Qualify, scopes: "ScopeTracker") -> Optional[str]:
    """The start method of a multiprocessing context (`get_context("spawn")`, or the module
    itself); None when `node` is not one."""
    if qualify(node) in ("multiprocessing", "torch.multiprocessing"):
        return DEFAULT
    value = _bound(node, scopes)
    if type(value) is cst.Call and qualify(value.func) in CONTEXT_FACTORIES:
        return start_method(arg_value(value, "method", 0), DEFAULT)
    return None


def _pool_method(node: cst.BaseExpression, qualify: Qualify, scopes: "ScopeTracker") -> Optional[str]:
    """The start method of the processes of a pool or process executor; None when `node`
    is not one (a thread pool, a DataFrame's `.apply`, ...)."""
    value = _bound(node, scopes)
    if type(value) is not cst.Call:
        return None
    qualified = qualify(value.func)
    if qualified in POOL_CLASSES:
        return DEFAULT
    if qualified in EXECUTORS:
        context = arg_value(value, "mp_context", 1)
        if context is None:
            return DEFAULT
        return _context_method(context, qualify, scopes) or DEFAULT
    func = value.func
    if type(func) is cst.Attribute and func.attr.value == "Pool" and qualified is None:
        return _context_method(func.value, qualify, scopes)
    return None
