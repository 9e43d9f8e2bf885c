"""TDL301 `cudnn-benchmark-enabled`: cuDNN autotuning picks algorithms by timing, differently per run."""

from __future__ import annotations

from typing import List, Tuple

import libcst as cst

from torchdet_lint.checks.switches.switch_settings import (
    BENCHMARK,
    CUDNN_FLAGS,
    DETERMINISTIC,
    LIGHTNING_CLI,
    TRAINERS,
    BranchTracker,
    cudnn_assignments,
    false_fix,
    trainer_argument,
)
from torchdet_lint.core.names import NOT_LITERAL, find_arg, literal, reported_argument
from torchdet_lint.core.rule import FixAvailability, Rule


class CudnnBenchmarkEnabled(BranchTracker, Rule):
    """
    ## Why is this bad?
    With `torch.backends.cudnn.benchmark = True`, cuDNN times several
    convolution algorithms for every new input shape and keeps the fastest.
    Timing noise and the hardware decide which one wins, so two runs of the
    same program can use different algorithms and produce different numbers,
    even when each algorithm is deterministic on its own. PyTorch's
    reproducibility notes ask for `benchmark = False`; deterministic mode
    (`torch.use_deterministic_algorithms(True)`) does not turn it off.
    Lightning's `Trainer(benchmark=True)` sets the same flag.

    A value that is not a literal (`cudnn.benchmark = args.benchmark`) is
    reported too, as "may enable". Only an assignment to the flag counts:
    reading it into a name (`saved = torch.backends.cudnn.benchmark`, to
    restore it later) sets nothing, here and for TDL304, TDL305 and TDL406.

    ## Fix safety
    Setting the flag to `False` is safe: results keep their meaning, the
    convolution algorithm no longer varies between runs. Training can be
    slower on GPUs with fixed input shapes. Non-literal values get no fix.
    A chained assignment (`cudnn.benchmark = cudnn.deterministic = True`)
    gets no fix, since changing the value would change both flags. Nor does
    an assignment in a block that also sets `cudnn.deterministic = False`:
    that block is a fast mode on purpose (torchtune's `set_seed(...,
    debug_mode=0)` documents and tests it), and turning benchmarking off
    there would change what the project promises; it is still reported.

    ## Known problems
    Only the first process is seen: a flag set by a library at import time
    is invisible. The performance profile turns this rule off and turns
    TDL406 on, which asks for the opposite.

    ## Options
    Profiles `reproducible` and `strict`; off in `performance`.

    ## References
    - PyTorch, Reproducibility: "CUDA convolution benchmarking"
      <https://pytorch.org/docs/stable/notes/randomness.html>
    - `torch.backends.cudnn.benchmark`
      <https://pytorch.org/docs/stable/backends.html#torch.backends.cudnn.benchmark>
    """

    code = "TDL301"
    name = "cudnn-benchmark-enabled"
    summary = "`cudnn.benchmark = True` picks convolution algorithms by timing, which can differ between runs"
    trigger_words = ("benchmark",)
    profiles = frozenset({"reproducible", "strict"})
    fix_availability = FixAvailability.SAFE
    bad = (
        "import torch\ntorch.backends.cudnn.benchmark = True\n",
        "from torch.backends import cudnn\ncudnn.benchmark = True\n",
        "import torch.backends.cudnn as cb\ncb.benchmark = True\n",
        "from lightning.pytorch import Trainer\ntrainer = Trainer(max_epochs=3, benchmark=True)\n",
    )
    good = (
        "import torch\ntorch.backends.cudnn.benchmark = False\n",
        "class Config:\n    benchmark = True\n",
        "import pytorch_lightning as pl\ntrainer = pl.Trainer(benchmark=False)\n",
    )

    def __init__(self, context) -> None:
        Rule.__init__(self, context)
        BranchTracker.__init__(self)
        self.enabled: List[Tuple[cst.Assign, cst.BaseExpression, int]] = []  # (assignment, value, block)
        self.fast_blocks: set = set()  # blocks that also set `cudnn.deterministic = False`

    def visit_Assign(self, node: cst.Assign) -> None:
        for name, value in cudnn_assignments(self, node):
            constant = literal(value)
            if name == DETERMINISTIC and constant is False:
                self.fast_blocks.add(self.block())
            if name != BENCHMARK:
                continue
            if constant is True:
                self.enabled.append((node, value, self.block()))
            elif constant is NOT_LITERAL:
                self.report(
                    node, "`cudnn.benchmark` is set from a non-literal value and may enable run-to-run algorithm selection"
                )

    def leave_Module(self, original_node: cst.Module) -> None:
        for node, value, block in self.enabled:
            message = "`cudnn.benchmark = True` picks convolution algorithms by timing, which can differ between runs"
            if block in self.fast_blocks:
                # torchtune's `set_seed(debug_mode=0)`: a documented fast mode, tested as such.
                message += "; it sits next to `cudnn.deterministic = False` (a deliberate fast mode?): no fix offered"
                fix = None
            else:
                fix = false_fix(value, "cudnn.benchmark") if len(node.targets) == 1 else None
            self.report(node, message, fix)

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.call_name(node)
        if name not in TRAINERS and name not in (CUDNN_FLAGS, LIGHTNING_CLI):
            return
        arg = find_arg(node, "benchmark") if name == CUDNN_FLAGS else trainer_argument(self, node, "benchmark")
        if arg is None:
            return
        constant = literal(arg.value)
        what = {
            CUDNN_FLAGS: "cudnn.flags(benchmark=...)",
            LIGHTNING_CLI: 'LightningCLI(trainer_defaults={"benchmark": ...})',
        }.get(name, "Trainer(benchmark=...)")
        where = reported_argument(node, arg) if name != LIGHTNING_CLI else arg.value
        if constant is True:
            self.report(
                where,
                f"`{what.replace('...', 'True')}` enables cuDNN benchmarking, which can pick different algorithms between runs",
                false_fix(arg.value, "benchmark"),
            )
        elif constant is NOT_LITERAL:
            self.report(where, f"`{what}` is set from a non-literal value and may enable cuDNN benchmarking")
