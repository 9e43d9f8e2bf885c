"""What TDL201-TDL203 share: the calls that enable deterministic mode, the markers their
findings carry into the project phase, and the base classes that decide, per finding, whether a
gradient can flow, the flag is enabled, and a run that trains or uses CUDA reaches it."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import libcst as cst

from torchdet_lint.checks.switches.switch_settings import LIGHTNING_CLI, trainer_argument_of
from torchdet_lint.core.catalog import (
    NOT_LITERAL,
)
from torchdet_lint.core.diagnostics import Diagnostic
from torchdet_lint.core.grad_uses import used_only_without_grad
from torchdet_lint.core.names import find_arg, literal
from torchdet_lint.core.operations import (
    backward_only_module,
    gradient_parameters,
    match_operations,
)
from torchdet_lint.core.rule import Rule

FLAG_CALL = "`torch.use_deterministic_algorithms(True)`"

# -- does this file enable the flag? ---------------------------------------------------

_ENABLING_SEGMENTS = frozenset(
    {
        "use_deterministic_algorithms",
        "set_deterministic",
        "set_deterministic_debug_mode",
        "Trainer",
        "LightningCLI",
        "set_seed",
        "enable_full_determinism",
    }
)
_TRAINERS = frozenset({"lightning.pytorch.Trainer", LIGHTNING_CLI})
_SEED_HELPERS_WITH_FLAG = frozenset({"transformers.set_seed", "accelerate.utils.set_seed"})


def _may_be_true(node: Optional[cst.BaseExpression], accepted: Sequence[Any] = (True,)) -> bool:
    if node is None:
        return False
    value = literal(node)
    return value is NOT_LITERAL or any(value == a and type(value) is type(a) for a in accepted)


def enables_deterministic_mode(context, call: cst.Call) -> bool:
    """Whether a call turns `torch.use_deterministic_algorithms` on: a literal True or a non-literal mode, `warn_only`
    included; `set_deterministic_debug_mode("warn"|"error"|1|2)`;
    `Trainer(deterministic=True)`; `transformers.set_seed(..., deterministic=True)`;
    `enable_full_determinism`; `accelerate.utils.set_seed(..., deterministic=True)`."""
    func = call.func
    last = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
    if last not in _ENABLING_SEGMENTS:
        if not isinstance(func, cst.Name) or not (context.resolver.module_final.get(func.value) or "").endswith(
            tuple(_ENABLING_SEGMENTS)
        ):
            return False
    name = context.call_name(call)
    if name in ("torch.use_deterministic_algorithms", "torch.set_deterministic"):
        arg = find_arg(call, "mode", 0) or find_arg(call, "d")
        return arg is not None and _may_be_true(arg.value)
    if name == "torch.set_deterministic_debug_mode":
        arg = find_arg(call, "debug_mode", 0)
        return arg is not None and _may_be_true(arg.value, ("warn", "error", 1, 2))
    if name in _TRAINERS:
        arg = trainer_argument_of(context, call, "deterministic")
        return arg is not None and _may_be_true(arg.value, (True, "warn"))
    if name in _SEED_HELPERS_WITH_FLAG:
        arg = find_arg(call, "deterministic")
        return arg is not None and _may_be_true(arg.value)
    return name == "transformers.enable_full_determinism"


# -- the rules ---------------------------------------------------------------------------


# `Diagnostic.extra` keys these rules leave for their `refine`:
# the finding disappears when an entry point enables torch.use_deterministic_algorithms;
SILENCED_BY_FLAG = "silenced_by_deterministic_mode"
# the operation's condition needs a backward pass, so the finding stands only where a run that
# reaches it trains, or where no run reaches it (library code);
KEPT_IF_TRAINING = "kept_if_a_reaching_run_trains"
# the condition needs a CUDA device, so the finding stands only where a reaching run may use one
# (or no run reaches it).
KEPT_IF_CUDA = "kept_if_a_reaching_run_uses_cuda"
# the tensors a backward-only condition differentiates get their gradient only from these parameters
# of the enclosing function ([name, position]): the finding stands unless every call of the function
# in the project passes them values without gradient (or runs where none flows).
KEPT_IF_PASSED_A_GRADIENT = "kept_if_a_caller_passes_a_gradient"


class AutogradAware(Rule):
    """Decides at the end of the file the findings that hang on whether a gradient can flow
    in the enclosing function: one this file only calls where no gradient flows (a pipeline's
    helper called from its `@torch.no_grad()` `__call__`) is taken to run without one."""

    @classmethod
    def needs_project(cls, diagnostic: Diagnostic) -> bool:
        extra = diagnostic.extra
        keys = (SILENCED_BY_FLAG, KEPT_IF_TRAINING, KEPT_IF_CUDA, KEPT_IF_PASSED_A_GRADIENT)
        return any(extra.get(key) for key in keys)

    @classmethod
    def refine(cls, diagnostics: List[Diagnostic], project) -> List[Diagnostic]:
        """A condition that needs a backward pass cannot happen in runs that never train, nor a
        CUDA-only one in runs that never leave the CPU; one entry point that enables the flag
        silences the findings it makes deterministic."""
        kept = [d for d in diagnostics if _condition_can_hold(project, d) and not _callers_pass_no_gradient(project, d)]
        if any(d.extra.get(SILENCED_BY_FLAG) for d in kept) and project.deterministic_mode_enabled():
            kept = [d for d in kept if not d.extra.get(SILENCED_BY_FLAG)]
        return kept

    def __init__(self, context) -> None:
        super().__init__(context)
        self.undecided: List[
            Tuple[cst.CSTNode, Tuple[Optional[str], str], Optional[str], Optional[str], Tuple[Tuple[str, int], ...]]
        ] = []

    def message_for(self, node: cst.Call, assume_no_grad: bool) -> Optional[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def consider(self, node: cst.Call) -> Optional[str]:
        """The message for the call now, or None: nothing to report, or decided at the end."""
        message = self.message_for(node, False)
        if message is None:
            return None
        scopes = self.context.scopes
        if backward_only_module(self.context, node):
            # A module's backward runs where it is called, so a
            # module bound to a name that this file only calls where no gradient flows is silent.
            identity = scopes.bound_calls.get(id(node))
            if identity is None:
                return message
        else:
            if self.message_for(node, True) is None and used_only_without_grad(self.context, node):
                return None  # backward-only, and no loss depends on the result
            identity = scopes.function_identity
            if identity is None or scopes.grad_disabled:
                return message
        without_grad = self.message_for(node, True)
        if without_grad == message:
            return message
        # Read now, while the function's bindings are in view.
        params = gradient_parameters(self.context, node) if without_grad is None else ()
        self.undecided.append((node, identity, message, without_grad, params))
        return None

    def extra_for(self, node: cst.Call, params: Tuple[Tuple[str, int], ...] = ()) -> Optional[dict]:
        """A finding whose condition holds only in a backward pass stands only where a run trains
        (and, when its gradient can only come from the function's parameters, where a caller passes
        one); one whose condition needs CUDA, only where a run may use it (`refine` decides)."""
        extra: dict = {}
        if self.message_for(node, True) is None:
            extra[KEPT_IF_TRAINING] = True
            if params:
                extra[KEPT_IF_PASSED_A_GRADIENT] = [list(param) for param in params]
        if all(match.cuda_only for match in match_operations(self.context, node)):
            extra[KEPT_IF_CUDA] = True
        return extra or None

    def decided(self) -> List[Tuple[cst.CSTNode, str, Tuple[Tuple[str, int], ...]]]:
        scopes = self.context.scopes
        found = []
        for node, identity, message, without_grad, params in self.undecided:
            chosen = without_grad if scopes.only_called_without_grad(identity) else message
            if chosen is not None:
                # A function also used other than by a call (passed, stored) may be called with anything.
                handed_on = identity in scopes.escapes
                found.append((node, chosen, params if chosen is message and not handed_on else ()))
        self.undecided = []
        return found


def _callers_pass_no_gradient(project, diagnostic: Diagnostic) -> bool:
    params = diagnostic.extra.get(KEPT_IF_PASSED_A_GRADIENT)
    if not params:
        return False
    node = project.node_at(diagnostic.path, project.analysed_line(diagnostic))
    return project.passed_without_gradient(node, tuple((name, position) for name, position in params))


def _condition_can_hold(project, diagnostic: Diagnostic) -> bool:
    backward, cuda = bool(diagnostic.extra.get(KEPT_IF_TRAINING)), bool(diagnostic.extra.get(KEPT_IF_CUDA))
    if not (backward or cuda):
        return True
    return project.condition_can_hold(diagnostic.path, project.analysed_line(diagnostic), backward, cuda)


class ReportedWhereCalled(AutogradAware):
    """Reports each call the flag cannot help, once its gradient question is decided."""

    def visit_Call(self, node: cst.Call) -> None:
        message = self.consider(node)
        if message is not None:
            self.report(node, message, extra=self.extra_for(node))

    def leave_Module(self, original_node: cst.Module) -> None:
        for node, message, params in self.decided():
            self.report(node, message, extra=self.extra_for(node, params))


class FlagAware(AutogradAware):
    """Buffers diagnostics that an enabled flag anywhere in the file silences."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self.assume_enabled = bool(context.settings.assume_deterministic_mode)
        self.enabled = False
        self.pending: List[Tuple[cst.CSTNode, str, Tuple[Tuple[str, int], ...]]] = []

    def note_flag(self, call: cst.Call) -> None:
        if not self.enabled and enables_deterministic_mode(self.context, call):
            self.enabled = True

    def leave_Module(self, original_node: cst.Module) -> None:
        self.pending.extend(self.decided())
        if not (self.enabled or self.assume_enabled):
            # An entry point elsewhere may enable the flag: the project phase decides.
            for node, message, params in self.pending:
                self.report(node, message, extra={SILENCED_BY_FLAG: True, **(self.extra_for(node, params) or {})})
        self.pending = []


def quoted(name: str) -> str:
    return f"`{name}`"
