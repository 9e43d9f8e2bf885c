"""TDL2xx: operations whose determinism depends on `torch.use_deterministic_algorithms`.

The matcher (`torchdet_lint.operations`) finds the catalog operations a call
performs; the three rules only phrase and filter its answers.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import libcst as cst

from torchdet_lint.catalog import (
    DETERMINISTIC_ALTERNATIVE,
    IGNORES_FLAG,
    NOT_LITERAL,
    RAISES,
    version_text,
)
from torchdet_lint.diagnostics import SILENCED_BY_FLAG
from torchdet_lint.names import find_arg, literal
from torchdet_lint.checks.switches import LIGHTNING_CLI, trainer_argument_of
from torchdet_lint.operations import OperationMatch, match_operations, match_third_party
from torchdet_lint.rule import Rule

_FLAG_CALL = "`torch.use_deterministic_algorithms(True)`"

# -- does this file enable the flag? ---------------------------------------------------

_ENABLING_SEGMENTS = frozenset(
    {
        "use_deterministic_algorithms", "set_deterministic", "set_deterministic_debug_mode", "Trainer", "LightningCLI", "set_seed",
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
    """Whether a call turns `torch.use_deterministic_algorithms` on (RULES.md
    "Enabling the flag"): a literal True or a non-literal mode, `warn_only`
    included; `set_deterministic_debug_mode("warn"|"error"|1|2)`;
    `Trainer(deterministic=True)`; `transformers.set_seed(..., deterministic=True)`;
    `enable_full_determinism`; `accelerate.utils.set_seed(..., deterministic=True)`."""
    func = call.func
    last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    if last not in _ENABLING_SEGMENTS:
        if not isinstance(func, cst.Name) or not (context.resolver.module_final.get(func.value) or "").endswith(tuple(_ENABLING_SEGMENTS)):
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


class _AutogradAware(Rule):
    """Decides at the end of the file the findings that hang on whether a gradient can flow
    in the enclosing function: one this file only calls where no gradient flows (a pipeline's
    helper called from its `@torch.no_grad()` `__call__`) is taken to run without one."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self.undecided: List[Tuple[cst.CSTNode, Tuple[Optional[str], str], Optional[str], Optional[str]]] = []

    def message_for(self, node: cst.Call, assume_no_grad: bool) -> Optional[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def consider(self, node: cst.Call) -> Optional[str]:
        """The message for the call now, or None: nothing to report, or decided at the end."""
        message = self.message_for(node, False)
        identity = self.context.scopes.function_identity
        if message is None or identity is None or self.context.scopes.grad_disabled:
            return message
        without_grad = self.message_for(node, True)
        if without_grad == message:
            return message
        self.undecided.append((node, identity, message, without_grad))
        return None

    def decided(self) -> List[Tuple[cst.CSTNode, str]]:
        scopes = self.context.scopes
        found = []
        for node, identity, message, without_grad in self.undecided:
            chosen = without_grad if scopes.only_called_without_grad(identity) else message
            if chosen is not None:
                found.append((node, chosen))
        self.undecided = []
        return found


class _FlagAware(_AutogradAware):
    """Buffers diagnostics that an enabled flag anywhere in the file silences."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self.assume_enabled = bool(context.settings.assume_deterministic_mode)
        self.enabled = False
        self.pending: List[Tuple[cst.CSTNode, str]] = []

    def note_flag(self, call: cst.Call) -> None:
        if not self.enabled and enables_deterministic_mode(self.context, call):
            self.enabled = True

    def leave_Module(self, original_node: cst.Module) -> None:
        self.pending.extend(self.decided())
        if not (self.enabled or self.assume_enabled):
            # An entry point elsewhere may enable the flag: the project phase decides.
            for node, message in self.pending:
                self.report(node, message, extra={SILENCED_BY_FLAG: True})
        self.pending = []


def _quoted(name: str) -> str:
    return f"`{name}`"


def _deterministic_message(match: OperationMatch, version: str) -> str:
    may = "" if match.certain else " (if the argument selects it)"
    return (
        f"{_quoted(match.name)} is nondeterministic ({match.condition}){may}; torch {version} has a deterministic "
        f"implementation that {_FLAG_CALL} selects, and nothing in this file enables it"
    )


class NondeterministicOp(_FlagAware):
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
      `return_indices=True` (2.13), `nn.Embedding` backward (2.11), ...;
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
    gradient (convolutions on the CPU, integer `cumsum`, inference-only code
    are reported too). Tensor methods (`x.index_add_(...)`) are matched by
    name, only in files that import torch, only when the arguments fit the
    Tensor method (`df.median()` and `queue.put(item, block=False)` do not),
    and never on `self`/`cls`; `x.put(...)` without the underscore is left
    out because caches and queues use that name. Another API with a Tensor
    method's name and argument shape is still taken for it (a process
    group's `group.scatter(outputs, inputs, opts)`): use `# noqa: TDL201`. Subscripts with tensor
    indices (`x[idx] = v`, the backward of `x[idx]` on the CPU) and sparse
    `bmm` cannot be recognised and are not reported. The flag must be on
    when the forward runs for the decomposed operations (interpolate,
    replication padding, `max_pool3d`), which a whole-file check cannot
    verify.

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
    summary = "an operation that is nondeterministic unless `torch.use_deterministic_algorithms(True)` is on, and nothing enables it"
    profiles = frozenset({"strict"})
    bad = (
        "import torch\n\ndef spread(out, index, src):\n    return out.index_add_(0, index, src)\n",
        "import torch.nn as nn\n\nconv = nn.Conv2d(3, 16, 3)\n",
        "import torch.nn.functional as F\n\ndef up(x):\n    return F.interpolate(x, scale_factor=2, mode=\"bilinear\")\n",
    )
    good = (
        "import torch\ntorch.use_deterministic_algorithms(True)\n\ndef spread(out, index, src):\n    return out.index_add_(0, index, src)\n",
        "import torch.nn.functional as F\n\ndef up(x):\n    return F.interpolate(x, scale_factor=2)\n",
        "import pandas as pd\n\ndef spread(out, index, src):\n    return out.index_add_(0, index, src)\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        self.note_flag(node)
        if self.assume_enabled or self.enabled:
            return
        message = self.consider(node)
        if message is not None:
            self.pending.append((node, message))

    def message_for(self, node: cst.Call, assume_no_grad: bool) -> Optional[str]:
        matches = [m for m in match_operations(self.context, node, assume_no_grad=assume_no_grad) if not m.third_party]
        if not matches or any(m.behavior == RAISES for m in matches):
            return None
        return _deterministic_message(matches[0], self.context.version_text())


class OpWithoutDeterministicImplementation(_AutogradAware):
    """
    ## Why is this bad?
    The operation has no deterministic implementation at the target torch
    version: under `torch.use_deterministic_algorithms(True)` PyTorch raises
    `RuntimeError: ... does not have a deterministic implementation`, and
    without the flag it silently gives run-to-run different results. Either
    way the program cannot be both deterministic and running. The message
    names the condition (CUDA, forward or backward pass, dtype, the argument
    that selects the kernel), the target version and a way out: another
    mode or argument, an upgrade, running it on the CPU, or
    `use_deterministic_algorithms(True, warn_only=True)`, which only warns
    and leaves the operation nondeterministic (TDL305).

    The catalog (`rules/ops.toml`) has two classes of operations: those
    PyTorch makes deterministic under the flag (TDL201) and those that raise
    (this rule). Which class an operation is in depends on the version: the
    catalog follows PyTorch's code where its docstring lags (bilinear
    interpolation is deterministic under the flag from 2.1, trilinear from
    2.9, float `cumsum` from 2.6, 2-d reflection padding from 2.7,
    `kthvalue` is always deterministic from 2.10), and where the code lags
    the docstring (`nn.MaxPool3d` without `return_indices=True` still takes
    the raising CUDA backward in 2.13). The target version is config
    `torch-version`, else the installed torch's package metadata, else the
    newest version in the catalog.

    Argument conditions are read from literals: `mode="nearest"` (the
    default of `F.interpolate`), `bincount` without `weights`, `median`
    without `dim`, `scatter_reduce(reduce="amax")`, `EmbeddingBag(mode="mean")`,
    `F.pad` with `mode="constant"` and `AdaptiveAvgPool2d(1)` (computed as a
    mean) are not reported; a non-literal argument that could select the
    raising kernel is reported ("may"). `F.pad(mode="reflect")` maps a
    literal pad of length 2, 4, 6 to the 1-d, 2-d, 3-d kernel, otherwise the
    worst case at that version; convolutions with
    `padding_mode="reflect"` pad the same way.

    ## Known problems
    Static analysis does not know the device, dtype, rank or whether a
    backward pass runs: the device is assumed to be CUDA (the worst case: a
    `put_(..., accumulate=True)` raises there), and backward-only kernels
    are reported in inference code too. Tensor methods are matched by name
    in files that import torch, when their arguments fit the Tensor method.

    The cross-entropy and NLL losses (`nn.CrossEntropyLoss`, `nn.NLLLoss`,
    `F.cross_entropy`, `F.nll_loss`) raise on CUDA only for inputs of 3 or
    more dimensions (segmentation-style losses), which cannot be seen; to
    keep every classification loss from being reported, they are reported
    in profile `strict` only (and never with a literal `reduction="none"`).
    They still count as catalog operations for TDL302. cuBLAS matrix
    products are never reported here: before torch 2.10 they need
    `CUBLAS_WORKSPACE_CONFIG`, which TDL303 covers. Quantized `resize_`
    raises too, but quantized tensors are not visible statically.

    ## Options
    `torch-version`; `profile = "strict"` adds the losses.

    ## References
    - `torch.use_deterministic_algorithms`: <https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html>
    - PyTorch, Reproducibility: <https://pytorch.org/docs/stable/notes/randomness.html>
    - The catalog: `rules/ops.toml` (sources per entry)
    """

    code = "TDL202"
    name = "op-without-deterministic-implementation"
    summary = "an operation with no deterministic implementation: it raises under `torch.use_deterministic_algorithms(True)`"
    bad = (
        "import torch.nn.functional as F\n\ndef up(x):\n    return F.interpolate(x, scale_factor=2, mode=\"bicubic\")\n",
        "import torch.nn as nn\n\npool = nn.AdaptiveAvgPool2d(7)\n",
        "import torch\n\ndef hist(x):\n    return torch.histc(x, bins=10)\n",
    )
    good = (
        "import torch.nn.functional as F\n\ndef up(x):\n    return F.interpolate(x, scale_factor=2)\n",
        "import torch.nn as nn\n\npool = nn.AdaptiveAvgPool2d((1, 1))\n",
        "import torch\n\ndef count(x):\n    return torch.bincount(x)\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        message = self.consider(node)
        if message is not None:
            self.report(node, message)

    def leave_Module(self, original_node: cst.Module) -> None:
        for node, message in self.decided():
            self.report(node, message)

    def message_for(self, node: cst.Call, assume_no_grad: bool) -> Optional[str]:
        raising = [
            m
            for m in match_operations(self.context, node, assume_no_grad=assume_no_grad)
            if m.behavior == RAISES and not m.third_party and (self.context.strict or not m.strict_only)
        ]
        if not raising:
            return None
        first = max(raising, key=lambda m: m.certain)
        verb = "raises" if first.certain else "may raise"
        message = (
            f"{_quoted(first.name)} {verb} under {_FLAG_CALL} in torch {self.context.version_text()}: "
            f"no deterministic implementation ({first.condition}); way out: {first.remedy}, "
            f"or `warn_only=True` (which only warns and stays nondeterministic)"
        )
        others = [m for m in raising if m is not first]
        if others:
            message += "; also " + "; ".join(f"{m.op_name} ({m.condition})" for m in others)
        return message


class NondeterministicThirdPartyKernel(_FlagAware):
    """
    ## Why is this bad?
    Some libraries run their own CUDA kernels with atomic additions, whose
    order varies from run to run, so floating-point sums differ in the last
    bits and the differences grow through training. Two kinds are reported:

    - kernels that ignore `torch.use_deterministic_algorithms`:
      `torch_scatter.segment_coo` (and `segment_sum_coo`/`segment_mean_coo`)
      and `scatter_mul`, and `flash_attn` functions called without
      `deterministic=True` (their backward accumulates with atomics);
      these are always reported, the flag cannot help;
    - library functions that sum through torch's own `Tensor.scatter_add_`:
      `torch_scatter.scatter` (sum and mean, and `scatter_sum`,
      `scatter_mean`, `scatter_std`, `scatter_softmax`, ...), PyG's
      `torch_geometric.utils.scatter` (sum and mean), `global_add_pool` and
      `global_mean_pool` with a batch vector. They are nondeterministic on
      CUDA unless the flag is on (from torch 1.13, where `scatter_add_`
      became deterministic under it; before, the flag makes them raise);
      they are reported only while nothing in the file enables the flag
      (the same enabling calls as TDL201; `assume-deterministic-mode`
      silences them) and count as catalog operations for TDL302.

    Reductions that do not depend on order (`reduce="min"`/`"max"`) and
    `torch_scatter.segment_csr`, which its documentation calls fully
    deterministic, are not reported.

    ## Known problems
    The device is unknown: CPU runs are reported too. PyG message-passing
    layers aggregate with the same scatter (`MessagePassing(aggr="add")`,
    `GCNConv`, ...) but are not matched: only the functions above are.
    A `deterministic` argument passed to `flash_attn` by position is not
    seen. The library versions are not checked (the facts hold for
    torch_scatter 1.x-2.1, PyG 2.x, flash_attn 2.x and 3.x).

    ## Options
    `assume-deterministic-mode` silences the flag-honouring kind.

    ## References
    - torch_scatter: <https://pytorch-scatter.readthedocs.io/> ("implemented via atomic operations on the GPU and is therefore non-deterministic")
    - PyG `torch_geometric.utils.scatter`
    - flash-attention `flash_attn_func(..., deterministic=False)`
    - The catalog: `rules/third_party.toml`
    """

    code = "TDL203"
    name = "nondeterministic-third-party-kernel"
    summary = "a third-party CUDA kernel whose atomic accumulation makes results vary between runs"
    bad = (
        "from torch_scatter import segment_coo\n\ndef pool(x, index):\n    return segment_coo(x, index, reduce=\"sum\")\n",
        "from flash_attn import flash_attn_func\n\ndef attend(q, k, v):\n    return flash_attn_func(q, k, v, causal=True)\n",
        "from torch_geometric.nn import global_mean_pool\n\ndef readout(x, batch):\n    return global_mean_pool(x, batch)\n",
    )
    good = (
        "from torch_scatter import segment_csr\n\ndef pool(x, ptr):\n    return segment_csr(x, ptr, reduce=\"sum\")\n",
        "from flash_attn import flash_attn_func\n\ndef attend(q, k, v):\n    return flash_attn_func(q, k, v, causal=True, deterministic=True)\n",
        "import torch\nfrom torch_geometric.nn import global_mean_pool\n\ntorch.use_deterministic_algorithms(True)\n\ndef readout(x, batch):\n    return global_mean_pool(x, batch)\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        self.note_flag(node)
        for match in match_third_party(self.context, node):
            if match.behavior == IGNORES_FLAG:
                self.report(
                    node,
                    f"{_quoted(match.name)} {'runs' if match.certain else 'may run'} a nondeterministic CUDA kernel ({match.condition}) that "
                    f"{_FLAG_CALL} does not cover; way out: {match.remedy}",
                )
            elif match.behavior == DETERMINISTIC_ALTERNATIVE:
                self.pending.append(
                    (
                        node,
                        f"{_quoted(match.name)} sums with atomic adds through `{match.via}` ({match.condition}): "
                        f"nondeterministic unless {_FLAG_CALL} is on, and nothing in this file enables it",
                    )
                )
            else:
                since = version_text(match.honoured_since or (0, 0))
                self.report(
                    node,
                    f"{_quoted(match.name)} sums with atomic adds through `{match.via}` ({match.condition}): "
                    f"nondeterministic, and torch {self.context.version_text()} raises under {_FLAG_CALL} "
                    f"(deterministic under the flag from torch {since})",
                )
            break
