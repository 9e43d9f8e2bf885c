"""TDL404 `data-parallel`: `nn.DataParallel` instead of DistributedDataParallel."""

from __future__ import annotations

import libcst as cst

from torchdet_lint.checks.performance.call_readings import (
    PERFORMANCE,
    may_name,
)
from torchdet_lint.core.rule import Rule, last_names

DATA_PARALLEL = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.data_parallel.DataParallel",
        "torch.nn.parallel.data_parallel",
        "torch.nn.parallel.data_parallel.data_parallel",
    }
)


class DataParallelUsed(Rule):
    """
    ## Why is this bad?
    `torch.nn.DataParallel` runs one Python process with one thread per GPU:
    every iteration it scatters the inputs, replicates the model from GPU 0
    to the others, gathers the outputs back on GPU 0 and reduces the
    gradients there. The GIL, the replication and the unbalanced GPU 0
    make it slower than `torch.nn.parallel.DistributedDataParallel` (one
    process per GPU, gradients all-reduced with NCCL while the backward pass
    runs), even on a single machine; the PyTorch documentation recommends
    DDP "instead of DataParallel to do multi-GPU training, even if there is
    only a single node". Typical gains are 1.5-3x on 4-8 GPUs.

    On a single GPU, or with no GPU, `DataParallel` does nothing useful and
    the advice has nothing to gain: remove the wrapper.

    ## Known problems
    There is no automatic fix: DDP needs a launcher (`torchrun`), a process
    group (`torch.distributed.init_process_group`), a `DistributedSampler`
    for the data and per-rank device placement, which is a change of program
    structure. `isinstance(model, nn.DataParallel)` checks are not reported.

    ## Options
    Profile `performance`, or `--select TDL404`.

    ## References
    - `torch.nn.DataParallel` (warning: "It is recommended to use DistributedDataParallel"):
      <https://pytorch.org/docs/stable/generated/torch.nn.DataParallel.html>
    - CUDA semantics, "Use nn.parallel.DistributedDataParallel instead of multiprocessing or nn.DataParallel":
      <https://pytorch.org/docs/stable/notes/cuda.html#cuda-nn-ddp-instead>
    - Getting started with DDP: <https://pytorch.org/tutorials/intermediate/ddp_tutorial.html>
    """

    code = "TDL404"
    name = "data-parallel"
    summary = "`nn.DataParallel` is slower than `DistributedDataParallel`, even on one machine"
    trigger_words = last_names(DATA_PARALLEL)
    profiles = PERFORMANCE
    bad = (
        "import torch\nmodel = torch.nn.DataParallel(model)\n",
        "from torch import nn\nnet = nn.DataParallel(net, device_ids=[0, 1])\n",
        "from torch.nn.parallel import DataParallel as DP\nnet = DP(net)\n",
    )
    good = (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nnet = DDP(net, device_ids=[rank])\n",
        "import torch\nif isinstance(model, torch.nn.DataParallel):\n    model = model.module\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not may_name(node, ("DataParallel", "data_parallel")):
            return
        if self.context.call_name(node) in DATA_PARALLEL:
            self.report(
                node,
                "`DataParallel` (one process, one thread per GPU, gathering on GPU 0) is slower than "
                "`DistributedDataParallel` (one process per GPU), even on one machine",
            )
