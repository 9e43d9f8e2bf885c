"""TDL405 `deprecated-cuda-amp`: `torch.cuda.amp.autocast`/`GradScaler`."""

from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

import libcst as cst

from torchdet_lint.checks.performance.call_readings import (
    PERFORMANCE,
    may_name,
    torch_module_name,
)
from torchdet_lint.core.call_edits import KEYWORD_EQUAL, with_first_argument
from torchdet_lint.core.diagnostics import Applicability, FixBuilder
from torchdet_lint.core.names import has_star_args
from torchdet_lint.core.rule import FixAvailability, Rule, last_names

# Deprecated name -> (replacement attribute of torch.amp, target version from which it is deprecated,
# the keywords the old positional arguments map to when the new signature orders them differently).
CUDA_AMP: Dict[str, Tuple[str, Tuple[int, int], Optional[Tuple[str, ...]]]] = {
    "torch.cuda.amp.autocast": ("autocast", (2, 4), ("enabled", "dtype", "cache_enabled")),
    "torch.cuda.amp.autocast_mode.autocast": ("autocast", (2, 4), ("enabled", "dtype", "cache_enabled")),
    # torch.amp.GradScaler(device, init_scale, ...): the old positions follow the device
    "torch.cuda.amp.GradScaler": ("GradScaler", (2, 3), None),
    "torch.cuda.amp.grad_scaler.GradScaler": ("GradScaler", (2, 3), None),
}


_VERSION_GUARD_RE = re.compile(r"(?i)version|greater|_less|_ge_|_lt_|hasattr|torch\.amp|is_torch")


class DeprecatedCudaAmp(Rule):
    """
    ## Why is this bad?
    `torch.cuda.amp.autocast(...)` and `torch.cuda.amp.GradScaler(...)` are
    the old, CUDA-only spellings of mixed precision. PyTorch deprecated them
    (GradScaler in 2.3, autocast in 2.4: each call emits a `FutureWarning`)
    in favour of the device-generic `torch.amp.autocast("cuda", ...)` and
    `torch.amp.GradScaler("cuda", ...)`, and will remove them. The speed-up
    of mixed precision itself (often 1.5-3x on tensor-core GPUs) is what is
    at stake: code on a removed API loses it, or stops running.

    The rule reports only when the target torch (config `torch-version`, else
    the installed torch) is at least the version that deprecated the call;
    before that the old spelling is the right one.

    ## Fix safety
    Safe: the old classes are thin subclasses that pass `"cuda"` and the
    same arguments to the new ones. Positional arguments of `autocast`
    (`enabled`, `dtype`, `cache_enabled`) become keywords, since the new
    signature orders them differently; `GradScaler`'s keep their positions
    after `"cuda"`. A file that reaches the names only through
    `from torch.cuda.amp import autocast` gets `import torch`; the old import
    is left in place (remove it once unused). One difference: without
    `dtype=`, the new `autocast` uses `torch.get_autocast_dtype("cuda")`
    (float16 unless `torch.set_autocast_dtype` changed it), where the old
    one always passed float16.

    ## Known problems
    A call that is visibly a fallback for older torch is not reported: one
    inside an `except` clause, or in a branch chosen by a version or feature
    test (`... if TORCH_GREATER_EQUAL_2_4 else torch.cuda.amp.GradScaler()`,
    `if hasattr(torch, "amp"):`). `torch.cuda.amp.custom_fwd`/`custom_bwd`
    and `torch.cpu.amp.autocast` (deprecated too) are not reported. Calls
    with `*args`/`**kwargs` are reported without a fix.

    ## Options
    `torch-version`. Profile `performance`, or `--select TDL405`.

    ## References
    - Automatic mixed precision package, `torch.amp`: <https://pytorch.org/docs/stable/amp.html>
    - PyTorch performance tuning guide, "Use mixed precision and AMP":
      <https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html>
    """

    code = "TDL405"
    name = "deprecated-cuda-amp"
    summary = '`torch.cuda.amp.autocast`/`GradScaler` are deprecated; use `torch.amp.autocast("cuda")`/`GradScaler("cuda")`'
    trigger_words = last_names(CUDA_AMP)
    profiles = PERFORMANCE
    fix_availability = FixAvailability.SAFE
    example_config = {"torch-version": "2.4"}
    bad = (
        "import torch\nscaler = torch.cuda.amp.GradScaler()\nwith torch.cuda.amp.autocast():\n    pass\n",
        "from torch.cuda.amp import autocast\n\nwith autocast(dtype=torch.bfloat16):\n    pass\n",
    )
    good = (
        "import torch\nscaler = torch.amp.GradScaler('cuda')\nwith torch.amp.autocast('cuda'):\n    pass\n",
        "import torch\nwith torch.autocast(device_type='cuda'):\n    pass\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.compatibility_depth = 0  # inside an `except` or a version-guarded branch
        # Rendering every `if` test is costly; a file that never names these APIs needs none of it.
        self.relevant = "autocast" in context.text or "GradScaler" in context.text
        self.guards: list = []

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self.compatibility_depth += 1

    def leave_ExceptHandler(self, original_node: cst.ExceptHandler) -> None:
        self.compatibility_depth -= 1

    def visit_If(self, node: cst.If) -> None:
        self._enter(node.test)

    def leave_If(self, original_node: cst.If) -> None:
        self.compatibility_depth -= self.guards.pop()

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._enter(node.test)

    def leave_IfExp(self, original_node: cst.IfExp) -> None:
        self.compatibility_depth -= self.guards.pop()

    def _enter(self, test: cst.BaseExpression) -> None:
        guard = self._version_guard(test) if self.relevant else 0
        self.guards.append(guard)
        self.compatibility_depth += guard

    def _version_guard(self, test: cst.BaseExpression) -> int:
        """1 when a condition selects code by torch version or feature (`TORCH_GE_2_4`, `hasattr(torch, "amp")`)."""
        return int(self.context.code_has(test, _VERSION_GUARD_RE))

    def visit_Call(self, node: cst.Call) -> None:
        if not may_name(node, ("autocast", "GradScaler")):
            return
        name = self.context.call_name(node)
        entry = CUDA_AMP.get(name or "")
        if entry is None or self.compatibility_depth:
            return  # a fallback for older torch (`except AttributeError:`, `if TORCH_GE_2_4 ... else`)
        new_name, deprecated_in, positional_keywords = entry
        if self.context.torch_version < deprecated_in:
            return
        self.report(
            node,
            f"`torch.cuda.amp.{new_name}(...)` is deprecated since torch {deprecated_in[0]}.{deprecated_in[1]}; "
            f'use `torch.amp.{new_name}("cuda", ...)`',
            self._fix(node, new_name, positional_keywords),
        )

    def _fix(self, node: cst.Call, new_name: str, positional_keywords) -> Optional[FixBuilder]:
        if has_star_args(node):
            return None
        torch_name = torch_module_name(self)
        if torch_name is None:
            return None  # `torch` is bound to something else in this file
        builder = FixBuilder(f'Use `torch.amp.{new_name}("cuda", ...)`', Applicability.SAFE)
        if not torch_name:
            torch_name = "torch"
            builder.add_import("torch")
        args = list(node.args)
        if positional_keywords is not None:
            positional = [arg for arg in args if arg.keyword is None]
            if len(positional) > len(positional_keywords):
                return None
            for index, arg in enumerate(positional):
                args[args.index(arg)] = arg.with_changes(
                    keyword=cst.Name(positional_keywords[index]),
                    equal=KEYWORD_EQUAL,
                )
        new_call = node.with_changes(func=cst.parse_expression(f"{torch_name}.amp.{new_name}"), args=args)
        return builder.replace(node, with_first_argument(new_call, cst.SimpleString('"cuda"')))
