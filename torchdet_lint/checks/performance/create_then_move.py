"""TDL402 `create-then-move`: a factory followed directly by a copy to the device."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from torchdet_lint.checks.performance.call_readings import (
    PERFORMANCE,
    device_like,
    may_name,
)
from torchdet_lint.core.call_edits import with_keywords
from torchdet_lint.core.diagnostics import Applicability, FixBuilder
from torchdet_lint.core.names import arg_value, find_arg, has_star_args, literal
from torchdet_lint.core.rule import FixAvailability, Rule

EXACT_FACTORIES = frozenset({"zeros", "ones", "empty", "full", "eye", "arange"})
# Random factories draw from the CPU generator on the CPU and from the CUDA one on the GPU.
RANDOM_FACTORIES = frozenset({"rand", "randn", "randint", "randperm"})
FACTORIES = EXACT_FACTORIES | RANDOM_FACTORIES
# Factories whose value is exact in any dtype, so a `dtype` moved from `.to` does not round twice.
_DTYPE_SAFE_FACTORIES = frozenset({"zeros", "ones", "empty", "eye"})
# `.to(...)` keywords that only matter for an existing tensor, dropped by the fix.
_COPY_KEYWORDS = frozenset({"non_blocking", "copy"})


class CreateThenMove(Rule):
    """
    ## Why is this bad?
    `torch.zeros(n).cuda()` or `torch.randn(b, c).to(device)` first builds
    the tensor in host memory, fills it there, then copies it to the device
    and drops the host copy: one host allocation, one host-side fill and one
    host-to-device transfer that `torch.zeros(n, device="cuda")` avoids. The
    PyTorch performance tuning guide lists "create tensors directly on the
    target device" for this reason. Inside a training step the copy is a
    synchronising transfer per call; for a large tensor it costs about its
    size divided by the PCIe bandwidth (≈ 1 ms for 10 MB), against
    microseconds for an on-device fill.

    Reported: `torch.zeros`, `ones`, `empty`, `full`, `eye`, `arange`,
    `rand`, `randn`, `randint`, `randperm` followed directly by `.cuda()` or
    by `.to(...)` with a device-like argument: a device string other than
    `"cpu"`, `torch.device(...)`, an index, or a variable named like a device
    (`device`, `self.device`, `dev`). A dtype-only `.to(torch.float16)` is
    not reported, and neither is a factory that already has `device=`, `out=`
    or, for the random factories, a `generator=` (a CPU generator is a
    deliberate reason to draw on the CPU: it cannot draw on the GPU).

    ## Fix safety
    The fix moves the device into the factory: `torch.zeros(n, device="cuda")`
    (`.cuda()` becomes `device="cuda"`, `.cuda(1)` `device="cuda:1"`,
    `.to(device)` `device=device`; a dtype given to `.to` becomes `dtype=`).
    It is safe for `zeros`, `ones`, `empty`, `full`, `eye` and `arange`
    with an integer step: the values are the same on every device.

    It is unsafe for the random factories: on the device they draw from the
    CUDA generator instead of the CPU one, so the numbers change (they stay
    reproducible under a seed, but differ from the ones the program drew
    before, and seeding only the CPU generator no longer covers them). It is
    unsafe for `arange` with a non-integer step too, since the host and the
    device kernels round `start + i * step` differently in the last bit.
    And it is unsafe with `requires_grad=`: `torch.zeros(n, requires_grad=True).cuda()`
    is a non-leaf copy of a CPU leaf (a classic bug: its `.grad` stays
    `None`), while with `device=` the tensor itself becomes the leaf.
    A dtype is only moved into `zeros`, `ones`, `empty` and `eye` (elsewhere
    creating in one dtype and converting rounds twice); `.cuda(device)` with
    a non-literal device and `.to(...)` with other arguments get no fix.

    ## Known problems
    Only a direct chain is seen: `t = torch.zeros(n); t = t.cuda()` is not.
    A device variable that holds `"cpu"` at run time makes the finding
    moot (the fix is still correct). If the device is set globally with
    `torch.set_default_device`, the factory already creates on it.

    ## Options
    Profile `performance`, or `--select TDL402`.

    ## References
    - PyTorch performance tuning guide, "Create tensors directly on the target device":
      <https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html>
    - Tensor creation with `device=`: <https://pytorch.org/docs/stable/tensor_attributes.html#torch-device>
    """

    code = "TDL402"
    name = "create-then-move"
    summary = "a tensor is created on the CPU and then copied to the device; create it there with `device=`"
    trigger_words = tuple(sorted(FACTORIES))
    profiles = PERFORMANCE
    fix_availability = FixAvailability.SOMETIMES
    bad = (
        "import torch\nx = torch.zeros(8, 3).cuda()\n",
        "import torch\n\ndef f(device):\n    return torch.ones(4).to(device)\n",
        "import torch\nnoise = torch.randn(2, 3).to('cuda:0', non_blocking=True)\n",
    )
    good = (
        "import torch\nx = torch.zeros(8, 3, device='cuda')\n",
        "import torch\nx = torch.zeros(8).to(torch.float16)\n",
        "import torch\ng = torch.Generator().manual_seed(0)\nx = torch.randn(3, generator=g).cuda()\n",
        "import torch\nx = torch.zeros(3).to(other)\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("cuda", "to"):
            return
        factory = func.value
        if not isinstance(factory, cst.Call) or not may_name(factory, FACTORIES):
            return
        name = self.context.call_name(factory)
        if name is None or not name.startswith("torch.") or name.count(".") != 1:
            return
        short = name[len("torch.") :]
        if short not in FACTORIES or has_star_args(factory):
            return
        if any(find_arg(factory, keyword) is not None for keyword in ("device", "out")):
            return
        if short in RANDOM_FACTORIES and find_arg(factory, "generator") is not None:
            return
        if func.attr.value == "cuda":
            moved = self._cuda_target(node)
        else:
            moved = self._to_target(node)
        if moved is None:
            return
        device, dtype, fixable = moved
        where = "`.cuda()`" if func.attr.value == "cuda" else "`.to(...)`"
        self.report(
            node,
            f"`torch.{short}(...)` is created on the CPU and copied by {where}; create it on the device with `device=`",
            self._fix(node, factory, short, device, dtype) if fixable else None,
        )

    def _cuda_target(self, call: cst.Call):
        """(device expression, dtype, fixable) for `.cuda(...)`, None when it is not a move."""
        if has_star_args(call):
            return None, None, False
        device = arg_value(call, "device", 0)
        others = [a for a in call.args if a.value is not device and not (a.keyword and a.keyword.value in _COPY_KEYWORDS)]
        if device is None:
            return cst.SimpleString('"cuda"'), None, not others
        index = literal(device)
        if isinstance(index, int) and not isinstance(index, bool):
            return cst.SimpleString(f'"cuda:{index}"'), None, not others
        return device, None, False  # `.cuda(d)` with d None means the current device, `device=None` the CPU

    def _to_target(self, call: cst.Call):
        if has_star_args(call):
            return None
        device = arg_value(call, "device")
        first = arg_value(call, position=0)
        dtype = arg_value(call, "dtype")
        if device is None and first is not None and device_like(self, first):
            device = first
            if dtype is None:
                dtype = arg_value(call, position=1)
        if device is None or not device_like(self, device):
            return None
        known = {id(device), id(dtype)}
        fixable = all(
            id(arg.value) in known or (arg.keyword is not None and arg.keyword.value in _COPY_KEYWORDS) for arg in call.args
        )
        return device, dtype, fixable

    def _fix(self, call: cst.Call, factory: cst.Call, short: str, device, dtype) -> Optional[FixBuilder]:
        keywords = [("device", device)]
        if dtype is not None:
            if short not in _DTYPE_SAFE_FACTORIES or find_arg(factory, "dtype") is not None:
                return None
            keywords.append(("dtype", dtype))
        if find_arg(factory, "pin_memory") is not None:
            return None  # pinned memory exists only on the host
        exact = short in EXACT_FACTORIES and (short != "arange" or _integer_step(factory))
        # `zeros(n, requires_grad=True).cuda()` is a non-leaf copy of a CPU leaf; with `device=`
        # the tensor itself becomes the leaf that collects `.grad`
        leaf_changes = find_arg(factory, "requires_grad") is not None
        builder = FixBuilder(
            "Create the tensor on the device with `device=`",
            Applicability.SAFE if exact and not leaf_changes else Applicability.UNSAFE,
        )
        written = self.context.written
        return builder.replace(call, with_keywords(written(factory), [(k, written(v)) for k, v in keywords]))


def _integer_step(arange: cst.Call) -> bool:
    """`torch.arange(end)`, `arange(start, end)` or an integer literal step."""
    positional = [arg for arg in arange.args if arg.keyword is None]
    step = arg_value(arange, "step") or (positional[2].value if len(positional) > 2 else None)
    if step is None:
        return all(not isinstance(literal(arg.value), float) for arg in positional)
    value = literal(step)
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and all(not isinstance(literal(arg.value), float) for arg in positional)
    )
