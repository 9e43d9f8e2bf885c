"""TDL403 `dataloader-without-pin-memory`: a DataLoader feeding CUDA without pinned memory."""

from __future__ import annotations

import re
from typing import List

import libcst as cst

from torchdet_lint.checks.performance.call_readings import (
    PERFORMANCE,
    call_attr,
    device_like,
    strings_in,
)
from torchdet_lint.core.call_edits import with_keywords
from torchdet_lint.core.diagnostics import Applicability, FixBuilder
from torchdet_lint.core.names import arg_value, literal, may_have_keyword
from torchdet_lint.core.rule import FixAvailability, Rule

DATALOADER = "torch.utils.data.DataLoader"
_CUDA_QUERIES = frozenset({"torch.cuda.is_available", "torch.cuda.current_device", "torch.cuda.device_count"})


_CUDA_DEVICE_RE = re.compile(r"^cuda(?::\d+)?$")


class DataLoaderWithoutPinMemory(Rule):
    """
    ## Why is this bad?
    Copying a batch from pageable host memory to the GPU goes through a
    staging buffer: the driver first copies it into page-locked (pinned)
    memory, then transfers it. With `DataLoader(..., pin_memory=True)` the
    loader's pin-memory thread returns batches already in pinned memory, so
    the transfer is a single DMA, typically 1.5-2x faster, and
    `.to(device, non_blocking=True)` can overlap it with computation. The
    PyTorch performance tuning guide and the DataLoader documentation
    recommend it for GPU training; the default is `False`.

    Reported: a `torch.utils.data.DataLoader(...)` without `pin_memory=` in
    a file that moves data to CUDA: a `.cuda()` call, or a `.to(...)` with a
    device-like argument in a file that mentions CUDA (a `"cuda"` string or
    `torch.cuda.is_available()`).

    The advice does not apply when the batches stay on the CPU, when the
    data set already lives on the GPU (pinning CUDA tensors raises), or when
    host memory is scarce (pinned pages cannot be swapped; very large
    batches with many workers can exhaust it).

    ## Fix safety
    Safe: adds `pin_memory=True`. The batches hold the same values; on a
    machine without an accelerator PyTorch warns once and skips pinning.
    A data set of CUDA tensors (rare: the GPU-resident data set case above)
    makes pinning raise; keep `pin_memory=False` written out there.

    ## Known problems
    The evidence is per file: a loader built in `data.py` and consumed in
    `train.py` is not reported; a file that moves only the model to the GPU
    is. An explicit `pin_memory=False` is respected as a deliberate choice.

    ## Options
    Profile `performance`, or `--select TDL403`.

    ## References
    - PyTorch performance tuning guide, "Use pinned memory":
      <https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html>
    - `torch.utils.data` memory pinning: <https://pytorch.org/docs/stable/data.html#memory-pinning>
    - A guide on good usage of `non_blocking` and `pin_memory()`:
      <https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html>
    """

    code = "TDL403"
    name = "dataloader-without-pin-memory"
    summary = "a DataLoader feeds batches to CUDA without `pin_memory=True`"
    trigger_words = ("DataLoader",)
    profiles = PERFORMANCE
    fix_availability = FixAvailability.SAFE
    bad = (
        "import torch\nfrom torch.utils.data import DataLoader\n\nloader = DataLoader(ds, batch_size=32)\n"
        "for x, y in loader:\n    x = x.cuda()\n",
        "import torch\nfrom torch.utils.data import DataLoader\n\n"
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\nloader = DataLoader(ds)\n"
        "for x in loader:\n    x = x.to(device)\n",
    )
    good = (
        "import torch\nfrom torch.utils.data import DataLoader\n\nloader = DataLoader(ds, pin_memory=True)\n"
        "for x in loader:\n    x = x.cuda()\n",
        "from torch.utils.data import DataLoader\n\nloader = DataLoader(ds)\nfor x in loader:\n    print(x)\n",
        "import torch\nfrom torch.utils.data import DataLoader\n\nloader = DataLoader(ds)\n"
        "for x in loader:\n    x = x.to(torch.float16)\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.loaders: List[cst.Call] = []
        self.moves_with_cuda = False  # `.cuda()` or `.to("cuda")`: CUDA for sure
        self.moves_to_device = False  # `.to(device)`: CUDA when the file chooses CUDA
        self.mentions_cuda = False

    def visit_Call(self, node: cst.Call) -> None:
        attr = call_attr(node)
        if attr == "DataLoader" or isinstance(node.func, cst.Name):
            if self.context.call_name(node) == DATALOADER and not may_have_keyword(node, "pin_memory"):
                self.loaders.append(node)
        elif attr == "cuda":
            if isinstance(node.func, cst.Attribute) and self.context.qualified_name(node.func) != "torch.cuda":
                self.moves_with_cuda = True
        elif attr == "to":
            if isinstance(node.func, cst.Attribute):
                self._check_to(node)
        elif attr in ("is_available", "current_device", "device_count") and not self.mentions_cuda:
            self.mentions_cuda = self.context.call_name(node) in _CUDA_QUERIES

    def _check_to(self, node: cst.Call) -> None:
        device = arg_value(node, "device") or arg_value(node, position=0)
        if device is None:
            return
        if any("cuda" in value for value in strings_in(device)):
            self.moves_with_cuda = True
        elif device_like(self, device):
            self.moves_to_device = True

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        # A device string (`"cuda"`, `"cuda:0"`), not prose that mentions CUDA (a docstring).
        if not self.mentions_cuda and "cuda" in node.value and _CUDA_DEVICE_RE.match(str(literal(node))):
            self.mentions_cuda = True

    def leave_Module(self, original_node: cst.Module) -> None:
        if not (self.moves_with_cuda or (self.moves_to_device and self.mentions_cuda)):
            return
        for loader in self.loaders:
            fix = FixBuilder("Add `pin_memory=True`", Applicability.SAFE).replace(
                loader, with_keywords(self.context.written(loader), [("pin_memory", cst.Name("True"))])
            )
            self.report(
                loader,
                "this DataLoader feeds batches that the file moves to CUDA; `pin_memory=True` makes the copies faster "
                "and lets `non_blocking=True` overlap them",
                fix,
            )
