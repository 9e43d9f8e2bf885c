"""TDL201 `nondeterministic-op`: an operation deterministic mode would make deterministic, run without it."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from torchdet_lint.checks.ops.op_findings import (
    FLAG_CALL,
    FlagAware,
    quoted,
)
from torchdet_lint.core.catalog import (
    RAISES,
)
from torchdet_lint.core.operations import (
    OperationMatch,
    match_operations,
)


def _deterministic_message(match: OperationMatch) -> str:
    may = "" if match.certain else " (if the argument selects it)"
    if match.via:
        selects = f"it sums through `{match.via}`, which {match.version} makes deterministic under {FLAG_CALL}"
    else:
        selects = f"{match.version} has a deterministic implementation that {FLAG_CALL} selects"
    return f"{quoted(match.name)} is nondeterministic ({match.condition}){may}; {selects}, and nothing in this file enables it"


class NondeterministicOp(FlagAware):
    """
    ## Why is this bad?
    The operation has a nondeterministic implementation that PyTorch uses by
    default (atomic additions in a CUDA kernel, cuDNN algorithms chosen
    without regard to determinism, ...), so two runs on the same data can
    give different numbers, and the difference grows through training.
    `torch.use_deterministic_algorithms(True)` makes PyTorch use a
    deterministic implementation instead, at some cost in speed.

    The TDL2xx rules split the operations of the catalog (`rules/ops.toml`,
    generated from PyTorch's documentation and code for torch 1.7 to 2.14)
    into two classes:

    - those PyTorch makes deterministic under the flag (this rule, TDL201):
      convolutions, `index_add_`, `scatter_add_`, `scatter_reduce` with sum or
      mean, `gather`/`take_along_dim` and `index_select` backward,
      `repeat_interleave`, `index_copy`, `index_put` and `put_` on the CPU,
      replication padding, bilinear interpolation (from 2.1), trilinear (2.9),
      float `cumsum` (2.6), 2-d reflection padding (2.7), `MaxPool3d` with
      `return_indices=True` (2.13), `nn.Embedding` backward (2.11), the fused
      CUDA backward of `F.scaled_dot_product_attention` and of the Transformer
      layers that call it (2.1 for the memory-efficient kernel, 2.4 for the
      flash kernel that 16-bit inputs take), ...;
    - those with no deterministic implementation, which raise under the flag
      (TDL202).

    The class of an operation depends on the target torch version (config
    `torch-version`, else the installed torch's package metadata, else the
    newest version in the catalog): `index_add_` raised before 1.9 and is
    deterministic under the flag since. Most of these operations are
    nondeterministic only on CUDA, some only in the backward pass; the
    message says which.

    This rule only reports when nothing enables the flag: a call of
    `torch.use_deterministic_algorithms` with `True` or a non-literal value
    (`warn_only=True` included), `torch.set_deterministic_debug_mode` with
    `"warn"`/`"error"`/`1`/`2`, Lightning's `Trainer(deterministic=True)`,
    `transformers.set_seed(..., deterministic=True)`,
    `transformers.enable_full_determinism()` or
    `accelerate.utils.set_seed(..., deterministic=True)`. One such call
    anywhere in the file silences the rule for the whole file; in a project
    run, one entry point that enables the flag (directly or through a
    first-party helper) silences it project-wide, as the rule contract says:
    the flag is process-wide, and the entry points that never enable it are
    TDL302's to report. With no entry point in the project, nothing enables
    the flag and the rule reports.

    ## Known problems
    Static analysis sees calls, not tensors: the device, the dtype, the
    input rank and whether a backward pass runs are unknown, so an operation
    is reported as if it ran on CUDA with floating-point input and a
    gradient (convolutions on the CPU, inference-only code are reported
    too). A floating-point-only case is not reported on a tensor visibly of
    an integer or bool dtype, whose sums are exact in any order: a
    comparison (`torch.cumsum((positions == 0).int(), 0)`), an integer cast
    (`.int()`, `.long()`, `.to(torch.int64)`), an index result (`argmax`,
    `nonzero`, `randint`), the indices a (values, indices) result is
    unpacked into (`_, top = scores.topk(k)`; `max`/`min`/`median` only when
    given a dimension, since `torch.max(a, b)` is elementwise), a torch
    factory given an integer `dtype=`, what keeps their dtype (`.view`,
    indexing) and a name bound to one of these. A case that is
    floating-point only from a version on (`histc`: any dtype before 2.8,
    floating point from 2.8) is skipped on such a tensor from that version.
    An integer tensor the code does not show (`positions` itself) is taken
    for floating point. Tensor methods (`x.index_add_(...)`) are matched by
    name, only in files that import torch, only when the arguments fit the
    Tensor method (`df.median()` and `queue.put(item, block=False)` do not),
    and never on `self`/`cls`; `x.put(...)` without the underscore is left
    out unless its `accumulate` argument is written, because caches and
    queues use that name. Third-party functions the flag makes deterministic
    are reported too (torchvision 0.16+ `roi_align` and its detectron2/mmcv
    wrappers, `torch_scatter`/PyG sums over `Tensor.scatter_add_`: see
    TDL203's table; xformers' memory-efficient attention from 0.0.22, whose
    backward takes one split of the keys under the flag), with the library
    version. Another API with a Tensor
    method's name and argument shape is still taken for it (a process
    group's `group.scatter(outputs, inputs, opts)`): use `# noqa: TDL201`. Subscripts with tensor
    indices (`x[idx] = v`, the backward of `x[idx]` on the CPU) and sparse
    `bmm` cannot be recognised and are not reported. The flag must be on
    when the forward runs for the decomposed operations (interpolate,
    replication padding, `max_pool3d`), which a whole-file check cannot
    verify. What TDL202's docs say of values without a gradient, narrowing
    by `if` tests and backward formulas holds here too (the same matcher):
    a `torch.gather` inside a registered backward formula is not reported.

    Decisions: `torch.empty`, `resize_` and friends (deterministic
    alternative only in torch 2.1, then filled through
    `torch.utils.deterministic.fill_uninitialized_memory`) are catalog facts
    that are never reported, since nearly every such tensor is written
    before it is read. An operation that may also raise (TDL202) is left to
    TDL202.

    ## Options
    Off by default; on in profile `strict` or with `--select TDL201`.
    `assume-deterministic-mode = true` silences it (the flag is enabled
    somewhere the analysis cannot see, such as a launcher). `torch-version`
    selects the behaviour.

    ## References
    - `torch.use_deterministic_algorithms`: <https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html>
    - PyTorch, Reproducibility: <https://pytorch.org/docs/stable/notes/randomness.html>
    - The catalog: `rules/ops.toml` (sources per entry)
    """

    code = "TDL201"
    name = "nondeterministic-op"
    summary = (
        "an operation that is nondeterministic unless `torch.use_deterministic_algorithms(True)` is on, and nothing enables it"
    )
    profiles = frozenset({"strict"})
    bad = (
        "import torch\n\ndef spread(out, index, src):\n    return out.index_add_(0, index, src)\n",
        "import torch.nn as nn\n\nconv = nn.Conv2d(3, 16, 3)\n",
        'import torch.nn.functional as F\n\ndef up(x):\n    return F.interpolate(x, scale_factor=2, mode="bilinear")\n',
    )
    good = (
        (
            "import torch\ntorch.use_deterministic_algorithms(True)\n\ndef spread(out, index, src):\n"
            "    return out.index_add_(0, index, src)\n"
        ),
        "import torch.nn.functional as F\n\ndef up(x):\n    return F.interpolate(x, scale_factor=2)\n",
        "import pandas as pd\n\ndef spread(out, index, src):\n    return out.index_add_(0, index, src)\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        self.note_flag(node)
        if self.assume_enabled or self.enabled:
            return
        message = self.consider(node)
        if message is not None:
            self.pending.append((node, message, ()))

    def message_for(self, node: cst.Call, assume_no_grad: bool) -> Optional[str]:
        matches = match_operations(self.context, node, assume_no_grad=assume_no_grad)
        if not matches or any(m.behavior == RAISES for m in matches):
            return None
        return _deterministic_message(matches[0])
