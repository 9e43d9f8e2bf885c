"""TDL407 `inference-without-no-grad`: an eval-mode model called with autograd on."""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.checks.performance.call_readings import (
    PERFORMANCE,
    call_attr,
)
from torchdet_lint.core.names import arg_value, dotted_name, literal
from torchdet_lint.core.rule import Rule
from torchdet_lint.core.traversal import sub_nodes

GRAD_DISABLING = frozenset(
    {
        "torch.no_grad",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
        "torch.inference_mode",
        "torch.autograd.inference_mode",
        "torch.autograd.grad_mode.inference_mode",
        "torch.set_grad_enabled",
        "torch.autograd.set_grad_enabled",
        "torch.autograd.grad_mode.set_grad_enabled",
    }
)
# Calls that show a function needs gradients in eval mode (adversarial inputs, saliency maps,
# fine-tuning with frozen batch norm): the model call there is not pure inference.
_GRADIENT_METHODS = frozenset({"backward", "step", "requires_grad_", "enable_grad", "grad", "vjp", "jacobian", "hessian"})
# Methods that return the module itself, so `model.to(device).eval()` puts `model` in eval mode.
_SELF_RETURNING = frozenset({"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "eval", "train", "requires_grad_"})


class _Frame:
    """One function body (or the module body) for TDL407."""

    __slots__ = ("name", "in_eval", "no_grad", "needs_grad", "candidates")

    def __init__(self, name: Optional[str], no_grad: int) -> None:
        self.name = name
        self.in_eval: Set[str] = set()  # receivers put in eval mode so far (`model`, `self.net`)
        self.no_grad = no_grad  # > 0 inside a no_grad / inference_mode region
        self.needs_grad = False
        self.candidates: List[Tuple[cst.Call, str]] = []


class InferenceWithoutNoGrad(Rule):
    """
    ## Why is this bad?
    `model.eval()` switches dropout and batch norm to inference behaviour but
    does not turn off autograd: a forward pass in eval mode still records
    the graph and keeps every intermediate activation alive for a backward
    pass that never comes. Under `torch.no_grad()` (or the faster
    `torch.inference_mode()`) the same forward runs without that
    bookkeeping: activation memory drops to roughly one layer's worth
    (allowing larger inference batches), and the forward is typically
    5-30% faster, most for small, overhead-bound layers.

    Reported: in one function (or at module level), a call `X.eval()` (or
    `X.train(False)`) followed by a call of the same `X(...)` outside a
    `with torch.no_grad():` / `torch.inference_mode()` /
    `torch.set_grad_enabled(False)` block and outside a function decorated
    with `@torch.no_grad()` / `@torch.inference_mode()`.

    The advice does not apply when gradients are wanted in eval mode:
    adversarial examples, saliency maps, fine-tuning with frozen batch norm,
    test-time optimisation. A function that calls `.backward()`, an
    optimizer `.step()`, `torch.autograd.grad`, `torch.enable_grad`, or
    touches `requires_grad` is therefore not reported.

    ## Known problems
    A function whose every call site in the same file is inside a no-grad
    region is not reported; callers in other files are not seen, so a
    helper only ever called under `no_grad` from another module is
    reported (decorate it with `@torch.no_grad()`, which is also clearer).
    `X.train()` or rebinding `X` ends eval mode for the analysis. A
    module-level `torch.set_grad_enabled(False)` silences the whole file.
    There is no fix: which lines form the inference part is a judgement
    call; wrap them in `with torch.inference_mode():` (or `torch.no_grad()`
    if the outputs are later used in autograd).

    ## Options
    Profile `performance`, or `--select TDL407`.

    ## References
    - PyTorch performance tuning guide, "Disable gradient calculation for validation or inference":
      <https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html>
    - Autograd mechanics, "Locally disabling gradient computation" and "Evaluation Mode":
      <https://pytorch.org/docs/stable/notes/autograd.html#locally-disable-grad-doc>
    - `torch.inference_mode`: <https://pytorch.org/docs/stable/generated/torch.autograd.grad_mode.inference_mode.html>
    """

    code = "TDL407"
    name = "inference-without-no-grad"
    summary = "a model in eval mode is called outside `torch.no_grad()` / `torch.inference_mode()`"
    trigger_words = ("eval", "train")  # a model is put in eval mode by `.eval()` or `.train(False)`
    profiles = PERFORMANCE
    bad = (
        "import torch\n\ndef evaluate(model, x):\n    model.eval()\n    return model(x)\n",
        "import torch\n\ndef predict(self, batch):\n    self.net.to('cuda').eval()\n    out = self.net(batch)\n    return out\n",
    )
    good = (
        "import torch\n\ndef evaluate(model, x):\n    model.eval()\n    with torch.no_grad():\n        return model(x)\n",
        "import torch\n\n@torch.inference_mode()\ndef evaluate(model, x):\n    model.eval()\n    return model(x)\n",
        "import torch\n\ndef attack(model, x):\n    model.eval()\n    x.requires_grad_()\n"
        "    model(x).sum().backward()\n    return x.grad\n",
        "import torch\n\ndef run(model, x):\n    model.eval()\n    model.train()\n    return model(x)\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.active = context.imports_torch
        self.frames: List[_Frame] = [_Frame(None, 0)]
        self.no_grad_withs: Set[int] = set()
        self.finished: List[_Frame] = []
        # simple name of every call -> was each call site inside a no-grad region?
        self.call_sites: Dict[str, List[bool]] = {}
        self.globally_disabled = False

    # -- grad mode -----------------------------------------------------------------
    def _disables_grad(self, node: cst.CSTNode) -> bool:
        """The expression turns gradients off (or may: a non-literal `set_grad_enabled(flag)`)."""
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.Call):
                name = self.context.call_name(current)
                if name in GRAD_DISABLING:
                    if "inference_mode" in name:
                        return literal(arg_value(current, "mode", 0)) is not False
                    if "set_grad_enabled" in name:
                        return literal(arg_value(current, "mode", 0)) is not True
                    return True
            elif isinstance(current, (cst.Name, cst.Attribute)):
                if self.context.qualified_name(current) in GRAD_DISABLING:
                    return True
                if isinstance(current, cst.Name):
                    continue
            stack.extend(sub_nodes(current))
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not self.active:
            return
        decorated = any(self._disables_grad(decorator.decorator) for decorator in node.decorators)
        parent = self.frames[-1]
        # a nested function defined inside a no-grad region usually runs there too
        no_grad = 1 if decorated or (parent.name is not None and parent.no_grad) else 0
        self.frames.append(_Frame(node.name.value, no_grad))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if self.active:
            self.finished.append(self.frames.pop())

    def visit_With(self, node: cst.With) -> None:
        if self.active and any(self._disables_grad(item.item) for item in node.items):
            self.no_grad_withs.add(id(node))
            self.frames[-1].no_grad += 1

    def leave_With(self, original_node: cst.With) -> None:
        if id(original_node) in self.no_grad_withs:
            self.frames[-1].no_grad -= 1

    def visit_Expr(self, node: cst.Expr) -> None:
        # a bare `torch.set_grad_enabled(False)` statement turns gradients off from here on
        # (`torch.no_grad()` or `inference_mode()` alone only build a context manager)
        if self.active and isinstance(node.value, cst.Call) and call_attr(node.value) == "set_grad_enabled":
            if self._disables_grad(node.value):
                frame = self.frames[-1]
                frame.no_grad += 1
                if frame.name is None:
                    self.globally_disabled = True

    # -- eval mode and model calls --------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        if not self.active:
            return
        frame = self.frames[-1]
        func = node.func
        attr = call_attr(node)
        self.call_sites.setdefault(attr, []).append(frame.no_grad > 0)
        if isinstance(func, cst.Attribute):
            if attr in _GRADIENT_METHODS or attr == "requires_grad":
                frame.needs_grad = True
                return
            if attr == "eval" and not node.args:
                receiver = _module_receiver(func.value)
                if receiver is not None:
                    frame.in_eval.add(receiver)
                return
            if attr == "train":
                receiver = _module_receiver(func.value)
                mode = literal(arg_value(node, "mode", 0))
                if receiver is not None:
                    if mode is False:
                        frame.in_eval.add(receiver)
                    else:
                        frame.in_eval.discard(receiver)
                return
        if frame.in_eval and not frame.no_grad:
            callee = dotted_name(func)
            if callee is not None and callee in frame.in_eval:
                frame.candidates.append((node, callee))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self.active and node.attr.value in ("requires_grad", "grad"):
            self.frames[-1].needs_grad = True

    def visit_Arg(self, node: cst.Arg) -> None:
        if self.active and node.keyword is not None and node.keyword.value == "requires_grad":
            self.frames[-1].needs_grad = True

    def leave_Assign(self, original_node: cst.Assign) -> None:
        if not self.active:
            return
        frame = self.frames[-1]
        value = original_node.value
        evaluates = isinstance(value, cst.Call) and call_attr(value) == "eval" and not value.args
        for target in original_node.targets:
            key = dotted_name(target.target)
            if key is None:
                continue
            if evaluates:
                frame.in_eval.add(key)  # `net = model.eval()`
            else:
                frame.in_eval.discard(key)  # a new object, in training mode by default

    def leave_Module(self, original_node: cst.Module) -> None:
        if not self.active or self.globally_disabled:
            return
        self.finished.append(self.frames[0])
        for frame in self.finished:
            if frame.needs_grad or not frame.candidates:
                continue
            if frame.name is not None:
                sites = self.call_sites.get(frame.name, [])
                if sites and all(sites):
                    continue  # every caller in this file already disables gradients
            for call, callee in frame.candidates:
                self.report(
                    call,
                    f"`{callee}` is in eval mode but called with autograd on; wrap inference in "
                    "`with torch.inference_mode():` (or `torch.no_grad()`) to skip recording the graph",
                )


def _module_receiver(node: cst.BaseExpression) -> Optional[str]:
    """`model` for `model`, `model.to(device)`, `model.cuda().half()`: the module a chain returns."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _SELF_RETURNING:
        node = node.func.value
    return dotted_name(node)
