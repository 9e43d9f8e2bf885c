"""TDL2xx: operations whose determinism depends on `torch.use_deterministic_algorithms`.

The matcher (`torchdet_lint.core.operations`) finds the catalog operations a call
performs; the three rules only phrase and filter its answers.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import libcst as cst

from torchdet_lint.checks.switches.switch_settings import LIGHTNING_CLI, trainer_argument_of
from torchdet_lint.core.catalog import (
    DETERMINISTIC,
    DETERMINISTIC_ALTERNATIVE,
    IGNORES_FLAG,
    NOT_LITERAL,
    RAISES,
    THIRD_PARTY_KIND,
    Catalog,
    Operation,
    load_catalog,
    same_value,
    version_text,
)
from torchdet_lint.core.diagnostics import Diagnostic
from torchdet_lint.core.names import find_arg, literal
from torchdet_lint.core.operations import (
    OperationMatch,
    backward_only_module,
    gradient_parameters,
    match_operations,
    match_third_party,
    matches_assuming,
)
from torchdet_lint.core.rule import Rule
from torchdet_lint.model.arguments import attribute_values, parameter_values
from torchdet_lint.model.parameters import passed_parameter

_FLAG_CALL = "`torch.use_deterministic_algorithms(True)`"

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
# the condition hangs on one argument that is a parameter of the enclosing module-level function, or
# an attribute its class's `__init__` sets from a parameter: the finding stands unless a value that
# selects the raising kernel can reach it from the project's callers. The value: {"source":
# ("param", function, parameter) or ("attr", class, attribute), "probes": [(value, raises)],
# "other": whether a value none of the probes equals raises}.
DECIDED_BY_CALLERS = "decided_by_what_callers_pass"
# Condition kinds whose answer for a literal depends only on which catalog value it equals (or on
# its being None): a value is judged by the probe it equals, or by the "other" probe.
_PROBED_KINDS = frozenset({"in", "not-in", "given", "absent", "tensor", "not-names"})
_OTHER = "\x00a value no condition names"
# the tensors a backward-only condition differentiates get their gradient only from these parameters
# of the enclosing function ([name, position]): the finding stands unless every call of the function
# in the project passes them values without gradient (or runs where none flows).
KEPT_IF_PASSED_A_GRADIENT = "kept_if_a_caller_passes_a_gradient"


class _AutogradAware(Rule):
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


_CONDITIONS: dict = {}


def _probe_values(matches: List[OperationMatch]) -> Optional[List[Any]]:
    """The literal values the conditions of the matched operations name, and None: each stands
    for every literal equal to it, `_OTHER` for the rest. None when a condition also looks at
    something else than equality (a length, the functions called)."""
    if not _CONDITIONS:
        for operation in load_catalog().operations:
            _CONDITIONS[operation.id] = [c for case in operation.cases for c in case.when] + [
                c for form in operation.forms for c in form.when
            ]
    values: List[Any] = [None]
    for match in matches:
        for condition in _CONDITIONS.get(match.op_id, ()):
            if condition.kind not in _PROBED_KINDS:
                return None
            for value in condition.values:
                if not any(same_value(value, v) for v in values):
                    values.append(value)
    return values


def _callers_rule_out(project, diagnostic: Diagnostic) -> bool:
    decided = diagnostic.extra.get(DECIDED_BY_CALLERS)
    if not decided:
        return False
    kind, owner, name = decided["source"]
    if kind == "param":
        values = parameter_values(project, diagnostic.path, owner, name)
    else:
        values = attribute_values(project, diagnostic.path, owner, name)
    if values is None:
        return False
    for value in values:
        answer = next((raises for probe, raises in decided["probes"] if same_value(probe, value)), None)
        if answer is None:
            answer = decided["other"]
        if answer:
            return False
    return True


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


class _ReportedWhereCalled(_AutogradAware):
    """Reports each call the flag cannot help, once its gradient question is decided."""

    def visit_Call(self, node: cst.Call) -> None:
        message = self.consider(node)
        if message is not None:
            self.report(node, message, extra=self.extra_for(node))

    def leave_Module(self, original_node: cst.Module) -> None:
        for node, message, params in self.decided():
            self.report(node, message, extra=self.extra_for(node, params))


class _FlagAware(_AutogradAware):
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


_STATUS_CODES = {IGNORES_FLAG: "TDL203", RAISES: "TDL202", DETERMINISTIC_ALTERNATIVE: "TDL201", DETERMINISTIC: "silent"}


def _behaviour(operation: Operation) -> str:
    """`<= 0.15: TDL203; >= 0.16: TDL202`, or how a follower of a torch operation behaves."""
    versions = operation.cases[0].versions
    steps = []
    for index, (since, status) in enumerate(versions):
        code = _STATUS_CODES.get(status, "silent")
        if index + 1 < len(versions):
            until = versions[index + 1][0]
            bound = f"< {version_text(until)}" if index == 0 else f"{version_text(since)} to < {version_text(until)}"
        else:
            bound = f">= {version_text(since)}" if index else "all versions"
        steps.append(f"{bound}: {code}")
    if operation.follows:
        return f"as `{operation.via}` at the target torch (" + "; ".join(steps) + ")"
    return f"{operation.library}: " + "; ".join(steps)


def _condition_text(conditions) -> str:
    """` (reduce="mul"/"min")`: the argument conditions of a form, for the table."""
    parts = []
    for condition in conditions:
        values = "/".join(repr(v).replace("'", '"') if not isinstance(v, bool) else str(v) for v in condition.values)
        if condition.kind == "in":
            parts.append(f"{condition.param}={values}")
        elif condition.kind == "not-in":
            parts.append(f"{condition.param} not {values}")
        elif condition.kind == "given":
            parts.append(f"with {condition.param}")
        elif condition.kind == "calls":
            parts.append(f"{condition.param}=" + "/".join(v.rsplit(".", 1)[-1] + "(...)" for v in condition.values[:1]))
    return f" ({', '.join(parts)})" if parts else ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def third_party_table(catalog: Catalog) -> str:
    """The libraries and versions the catalog covers, one row per entry (`rules/third_party.toml`)."""
    lines = [
        "## Libraries covered",
        "",
        "Generated from `rules/third_party.toml`; the library version is config `library-versions`, "
        "else the installed package's metadata, else the newest version checked (below).",
        "",
        "| API | behaviour by version | way out | source |",
        "|---|---|---|---|",
    ]
    for operation in catalog.operations:
        if operation.kind != THIRD_PARTY_KIND or not operation.report:
            continue
        names = []
        for form in operation.forms:
            condition = _condition_text(form.when + operation.cases[0].when)
            for name in (*form.functions, *form.modules, *(f".{m}()" for m in form.methods)):
                short = name if name.startswith(".") else ".".join(name.split(".")[:1] + name.split(".")[-1:])
                short += condition
                if short not in names:
                    names.append(short)
        api = ", ".join(f"`{n}`" for n in names[:12]) + (", ..." if len(names) > 12 else "")
        lines.append(
            f"| {api} | {_cell(_behaviour(operation))} | {_cell(operation.cases[0].remedy)} | {_cell(operation.source)} |"
        )
    checked = ", ".join(
        f"{library.name} {version_text(library.checked_through)}" for library in catalog.libraries if library.checked_through
    )
    lines += ["", f"Newest versions checked: {checked}."]
    return "\n".join(lines)


def _quoted(name: str) -> str:
    return f"`{name}`"


def _deterministic_message(match: OperationMatch) -> str:
    may = "" if match.certain else " (if the argument selects it)"
    if match.via:
        selects = f"it sums through `{match.via}`, which {match.version} makes deterministic under {_FLAG_CALL}"
    else:
        selects = f"{match.version} has a deterministic implementation that {_FLAG_CALL} selects"
    return f"{_quoted(match.name)} is nondeterministic ({match.condition}){may}; {selects}, and nothing in this file enables it"


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
    `nonzero`, `randint`), a torch factory given an integer `dtype=`, what
    keeps their dtype (`.view`, indexing) and a name bound to one of these.
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


class OpWithoutDeterministicImplementation(_ReportedWhereCalled):
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
    raising kernel is reported ("may"). An f-string counts by its literal
    ends: `scatter_reduce_(..., reduce=f"a{reduce[-3:]}")` can only be a value
    starting with `a` (`amax`, `amin`), which rules out `prod` (PyG's
    `scatter`); `f"p{x}"` may still be `prod`. `F.pad(mode="reflect")` maps a
    literal pad of length 2, 4, 6 to the 1-d, 2-d, 3-d kernel, otherwise the
    worst case at that version; convolutions with
    `padding_mode="reflect"` pad the same way.

    Autograd phase: a
    backward-only kernel is not reported where no gradient can flow: inside
    `torch.no_grad()`, `inference_mode()`, `set_grad_enabled(False)`, in a
    function decorated with them or only ever called from such code, and
    on a tensor visibly without gradient (`torch.from_numpy(...)`,
    `.detach()`, `torch.tensor(...)` without `requires_grad=True`, the legacy
    CPU type constructors `torch.FloatTensor(h, w, 3)`, `torch.LongTensor`,
    `DoubleTensor`, `HalfTensor`, `BFloat16Tensor`, `IntTensor`,
    `ShortTensor`, `ByteTensor`, `CharTensor`, `BoolTensor`, which build CPU
    tensors; `torch.cuda.FloatTensor` and its kin build CUDA tensors without
    gradient; a result computed inside a `no_grad` block and used after it:
    `with torch.no_grad(): feats = model(x)` — a name bound there to a
    parameter, `w = model.weight`, is the parameter and still counts); a tensor
    visibly on the CPU rules out CUDA-only kernels, and so does a device
    test around the call: in `if not x.is_cuda:` (or the `else` of
    `if x.is_cuda:`, `if x.is_cpu:`, `if x.device.type == "cpu":`), `x` is
    on the CPU. A method whose receiver is visibly not a tensor (bound from
    a non-torch class or a NumPy call, or annotated with another type) is
    not matched.

    Values without a gradient: what a loop over a DataLoader yields
    (`for images, masks in loader:`, `enumerate(loader)`, `tqdm(loader)`, and
    the items, attributes, slices and unpacked parts of a batch:
    `batch["mask"]`, `batch.mask`, `masks[:, 0]`), `next(iter(loader))`,
    what `torch.load` (`torch.hub.load_state_dict_from_url`, safetensors'
    `load_file`) reads, `torch.from_numpy(...)`, `.detach()`, results
    computed under `no_grad`/`inference_mode`, a state dict's tensors (what
    `model.state_dict()` returns, unless `keep_vars=True`: detached copies;
    a parameter named as a state dict or checkpoint, `state_dict`,
    `pretrained_state_dict`, `checkpoint`, `ckpt`, `sd`, or annotated with a
    `StateDict` type, as in a `checkpoint_filter_fn(state_dict, model)`; their
    items, `.get(...)` and what a `for` loop over their `.items()` or
    `.values()` yields), the `.to(...)`, `.cuda()`,
    `.float()` and other casts of these, and the results of torch functions
    and operators whose tensor inputs are all such values (`torch.cat([m,
    m])`, `mask * 2`: no module call, no parameter, no `requires_grad=True`).
    A backward-only kernel on them never runs: the segmentation recipe that
    resizes the masks of its batch with `F.interpolate(mask, mode="bilinear")`
    is not reported; resizing the model's output is. A loader is a name or
    `self.<attr>` bound to a DataLoader call (or any call whose name ends in
    "loader": a subclass, `build_dataloader(cfg)`), an iterator or progress
    bar over one, or a name named like one (`loader`, `train_loader`,
    `val_dataloader`, a parameter too) or annotated with a loader class,
    unless it is visibly bound to something else (a list, a comprehension):
    code that iterates a loader-named object reads data, and training code
    hands loaders to its train functions as parameters. `torch.Tensor(data)`
    is the legacy constructor of the default type: a CPU tensor without
    gradient.

    Values passed in by callers: when the tensors a backward-only kernel
    differentiates get a gradient only from the enclosing function's
    parameters (`posemb` in `F.interpolate(posemb.permute(0, 3, 1, 2), ...)`;
    through indexing, attributes, methods, operators, and torch, library or
    this file's plain functions of them: no module call, no `self`, no
    global), the project's calls of the function decide: the finding is
    silent when every call passes those parameters values without gradient
    (the values above; a parameter left to its default counts as one),
    runs where no gradient flows, or passes a parameter of its own caller
    that is decided the same way in turn (a checkpoint filter handing a
    state dict's items to `resize_pos_embed(posemb, ...)`, a nested helper
    only called on `torch.zeros(...)` basis vectors). A function with no
    call in the project, one handed on by name (a callback, `map(f, xs)`),
    or one called with `*args`/`**kwargs` that may hold the parameter keeps
    the finding: code the project does not show may call it with a
    gradient. TDL302 counts such an operation as evidence the same way. A
    pickled module
    that `torch.load` returns has parameters: an attribute of a
    `torch.load` result is not taken to be without gradient (its items
    are).

    Narrowing by tests: inside `if mode == "nearest":` (also `mode in
    ("nearest", "area")`, `elif`, `"nearest" == mode`, an `and` of tests, an
    `or` of tests on one name, and the `else` of `!=` or `not in`), the name
    or attribute holds those values, so `F.interpolate(x, mode=mode)` there is
    judged with them; outside the branch, or once the name is rebound in it,
    the argument is unknown as before. A function defined in the branch runs
    later and is not narrowed.

    Values decided by every caller: when the argument that could select the
    raising kernel is a parameter of a module-level function
    (`def resize(x, mode="nearest"): F.interpolate(x, mode=mode)`), or an
    attribute that the class's `__init__` sets once from a parameter and
    nothing else sets (`self.mode = mode`, then `F.embedding_bag(...,
    mode=self.mode)` in `forward`), its values are the parameter's default
    plus what every call or construction in the project passes, by keyword or
    position, followed through a caller that passes its own parameter on
    (with that parameter's default and callers). When none of them selects
    the raising kernel the finding is dropped; one call passing
    `mode="max"` keeps it. The values stay unknown, and the finding stands,
    when a call passes a non-literal or a `*args`/`**kwargs` splat (a
    `**dd` of a dict display with string keys passes just those keys), when
    nothing in the project calls it, when the function or class is used
    otherwise than called (handed to another call, stored in a registry, a
    `functools.partial`, named by a string), when a subclass has its own
    `__init__` or sets the attribute, or when a method sets it again.

    Inside a backward formula an operation runs without a backward of its
    own, so only its forward conditions count (a `torch.gather` there is no
    `gather` backward; a `torch.histc` there still raises): the `forward`,
    `backward`, `setup_context`, `jvp` and `vjp` methods of a
    `torch.autograd.Function` subclass (autograd records nothing in its
    `forward` either), the body of a `@torch.library.custom_op` and the
    functions registered with `torch.library` below autograd
    (`register_autograd`, `register_fake`, `register_kernel`, `impl` and
    `Library.impl` with a dispatch key other than
    `CompositeImplicitAutograd`, whose decomposition autograd records; also
    as decorators and as methods of the custom op), and tensor and module
    backward hooks (`register_hook`, `register_full_backward_hook`,
    `register_backward_hook`, `register_full_backward_pre_hook`,
    `register_post_accumulate_grad_hook`), named functions, nested ones and
    lambdas. The same holds for this file's functions called only from
    there. Forward hooks run in the forward pass and count as usual.

    A module (`nn.Embedding`, whose catalog condition is its backward) built
    inside `torch.no_grad()` is still a module: what counts is where it is
    called. One bound to a name or `self.<attr>` that the file only calls
    where no gradient flows (a `no_grad` block, a `@torch.no_grad()` method)
    and uses in no other way (handed on, its `.parameters()` or `.weight`
    read) is not reported; the same name used otherwise anywhere in the file
    counts as a use, and TDL302 counts such a module the same way.

    A backward-only condition also needs a run that trains: the finding
    stands where some entry point that reaches the call trains (calls
    `.backward(...)`, `torch.autograd.grad`, or a library loop that trains,
    such as Lightning's `Trainer.fit` or the Transformers `Trainer.train`), or
    where no entry point reaches it (library code, judged as if it were
    trained). A bicubic `interpolate` reached only by an evaluation script is
    not reported; the same holds for TDL201 and for the third-party kernels
    of TDL203 whose nondeterminism is in their backward pass.

    A condition on a CUDA device needs a run that may use one. An unknown
    device is still taken for CUDA, but a run that reaches no CUDA work and
    never moves anything to a device that is not visibly the CPU (no
    `.cuda()`, no `.to(device)`, no `device=`/`device_map=`/`map_location=`
    other than `"cpu"`, no DDP, Accelerate, Lightning or Transformers trainer,
    nothing it cannot follow) computes on the CPU, PyTorch's default device:
    a CUDA-only finding reached only by such runs is not reported.

    CPU tensors: what
    `torch.load(..., map_location="cpu")` reads (also with
    `torch.device("cpu")`, `lambda storage, loc: storage` or a dict mapping
    every device to `"cpu"`; `torch.hub.load_state_dict_from_url` alike;
    safetensors' `load_file` without `device=`) is on the CPU, and so are
    the items of the dicts and state dicts read from it (`ckpt["model"]`,
    `.get(...)`). Indexing, `.float()`, `.double()`, `.half()`, `.view`,
    `.reshape`, `.permute`, `.unsqueeze`, `.contiguous`, `.clone` and
    `.detach` keep a tensor's device, also when the name is rebound
    (`x = x.reshape(...)`): resizing a checkpoint's position embedding with
    bicubic `F.interpolate` while loading weights is not reported. A
    checkpoint handed to another function as a parameter is not followed
    there (MAE's `interpolate_pos_embed(model, checkpoint_model)`).

    ## Known problems
    Static analysis does not know the device, dtype, rank or whether a
    backward pass runs beyond what is visible in the function: an unknown
    device is assumed to be CUDA (the worst case: a
    `put_(..., accumulate=True)` raises there), and backward-only kernels
    in inference code are reported unless the code shows it; a
    floating-point-only case on a tensor visibly of an integer or bool dtype
    is not (TDL201's docs list what shows it). Tensor methods are matched by name
    in files that import torch, when their arguments fit the Tensor method.
    A batch handed to another function (`loss_fn(batch)`), a loader named
    otherwise (`train_dl`), and a helper of a backward formula defined in
    another file are not followed: they count as carrying a gradient. An
    iterable named like a loader that yields tensors with a gradient would
    be taken for data, and so would a parameter named like a state dict
    that holds parameters (`state_dict(keep_vars=True)` handed on). The
    names a comprehension binds are not followed
    (`{k: F.interpolate(v) for k, v in sd.items()}` is reported). A plain
    function of the parameters that reads a module from a global is taken
    to bring no gradient of its own. A helper whose callers are all in the
    project is judged by them, although users of a library may call it
    otherwise; a helper called only from functions that nothing calls (a
    library's unused public wrappers) is judged as called with a gradient.

    The cross-entropy and NLL losses (`nn.CrossEntropyLoss`, `nn.NLLLoss`,
    `F.cross_entropy`, `F.nll_loss`) raise on CUDA only for inputs of 3 or
    more dimensions (segmentation-style losses), which mostly cannot be
    seen; to keep every classification loss from being reported, they are
    reported in profile `strict` only (and never with a literal
    `reduction="none"`), unless the input visibly has spatial dimensions:
    it comes from `F.interpolate`/`F.upsample*` or a called `nn.Upsample`
    module, or is the `"out"`/`"aux"` output of a torchvision segmentation
    model (`torchvision.models.segmentation.*`), directly or through a name
    bound in the same function, casts (`.float()`, `.to(...)`) and
    `log_softmax`/`softmax` (a `reshape`/`view` may flatten it and is not
    followed). Then they are reported in every profile, the message naming
    the spatial input and its line. A loss module is reported at its
    constructor when one of its calls has such input: a name called in the
    function that builds it (or, built at module level, in any function),
    `self.<attr>` called in any method of the class, or the module called
    where it is built; a call before the construction in the file is not
    seen. Library segmentation losses that call the cross-entropy on their
    spatial input are reported in every profile (MONAI's `DiceCELoss` and
    `NACLLoss`; see TDL203's table). All of them still count as catalog
    operations for TDL302, whose fix is withheld where one of them is
    reported in the profile in force. cuBLAS matrix
    products are never reported here: before torch 2.10 they need
    `CUBLAS_WORKSPACE_CONFIG`, which TDL303 covers. Quantized `resize_`
    raises too: it is reported where the tensor visibly comes from
    `torch.quantize_per_tensor`/`quantize_per_channel` in the same function,
    since other quantized tensors are not visible statically. The
    out-of-place `x.put(...)` is matched only with `accumulate` written
    (`cache.put(key, value)` looks the same).

    Third-party kernels that raise under the flag at the library's target
    version (torchvision 0.16+ RoI pooling and deformable convolution, see
    TDL203's table) are reported here, with the library version: also
    xformers' memory-efficient attention up to 0.0.21 (its cutlass backward
    calls `alertNotDeterministic`; in 0.0.16 to 0.0.18 its forward does too,
    which the contract's backward-only reading leaves out), at the call or at
    the diffusers switch that selects it, and torchvision's RAFT models, whose
    correlation lookup is `F.grid_sample`.

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
        'import torch.nn.functional as F\n\ndef up(x):\n    return F.interpolate(x, scale_factor=2, mode="bicubic")\n',
        "import torch.nn as nn\n\npool = nn.AdaptiveAvgPool2d(7)\n",
        "import torch\n\ndef hist(x):\n    return torch.histc(x, bins=10)\n",
    )
    good = (
        "import torch.nn.functional as F\n\ndef up(x):\n    return F.interpolate(x, scale_factor=2)\n",
        "import torch.nn as nn\n\npool = nn.AdaptiveAvgPool2d((1, 1))\n",
        "import torch\n\ndef count(x):\n    return torch.bincount(x)\n",
    )

    @classmethod
    def needs_project(cls, diagnostic: Diagnostic) -> bool:
        return super().needs_project(diagnostic) or bool(diagnostic.extra.get(DECIDED_BY_CALLERS))

    @classmethod
    def refine(cls, diagnostics: List[Diagnostic], project) -> List[Diagnostic]:
        """A "may raise" whose argument is decided by the project's callers stands only where one of
        the values they can pass selects the raising kernel."""
        kept = [d for d in diagnostics if not _callers_rule_out(project, d)]
        return super().refine(kept, project)

    def __init__(self, context) -> None:
        super().__init__(context)
        self.losses: List[cst.Call] = []
        # The enclosing class and `def`s, outermost first: which summary function a call is in.
        self.definitions: List[Tuple[str, str]] = []
        self.decided_by_callers: dict = {}  # id of a call -> its `DECIDED_BY_CALLERS` value

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.definitions.append(("class", node.name.value))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.definitions.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.definitions.append(("def", node.name.value))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.definitions.pop()

    def visit_Call(self, node: cst.Call) -> None:
        # Judged while the walk is at the call (its scope's names), even when reported at the end.
        decided = self._decided_by_callers(node)
        if decided is not None:
            self.decided_by_callers[id(node)] = decided
        if not self._awaits_its_calls(node):
            super().visit_Call(node)

    def extra_for(self, node: cst.Call, params: Tuple[Tuple[str, int], ...] = ()) -> Optional[dict]:
        extra = super().extra_for(node, params) or {}
        decided = self.decided_by_callers.get(id(node))
        if decided is not None:
            extra[DECIDED_BY_CALLERS] = decided
        return extra or None

    def _raises(self, matches: List[OperationMatch]) -> bool:
        return any(m.behavior == RAISES and (self.context.strict or not m.strict_only) for m in matches)

    def _decided_by_callers(self, node: cst.Call) -> Optional[dict]:
        """For a "may raise": the one argument whose values the project's callers decide, with the
        answer for each value a catalog condition names (see `DECIDED_BY_CALLERS`)."""
        matches = [m for m in match_operations(self.context, node) if m.behavior == RAISES]
        if not matches or any(m.certain for m in matches):
            return None
        probes = _probe_values(matches)
        if probes is None:
            return None
        kinds = [kind for kind, _ in self.definitions]
        for arg in node.args:
            if arg.star:
                return None
            source = self._source(arg.value, kinds)
            if source is None:
                continue
            answers = [(value, self._raises(matches_assuming(self.context, node, arg.value, value))) for value in probes]
            other = self._raises(matches_assuming(self.context, node, arg.value, _OTHER))
            if all(raises for _, raises in answers) and other:
                continue  # this argument cannot rule it out
            return {"source": source, "probes": answers, "other": other}
        return None

    def _source(self, value: cst.BaseExpression, kinds: List[str]) -> Optional[Tuple[str, str, str]]:
        if type(value) is cst.Name and kinds == ["def"]:
            passed = passed_parameter(self.context, value)
            if passed is not None and not passed[0].method and passed[0].name == self.definitions[0][1]:
                return ("param", passed[0].name, passed[1])
        elif (
            type(value) is cst.Attribute
            and type(value.value) is cst.Name
            and value.value.value == "self"
            and kinds == ["class", "def"]
        ):
            return ("attr", self.definitions[0][1], value.attr.value)
        return None

    def _awaits_its_calls(self, node: cst.Call) -> bool:
        """A loss module reported in profile strict only (`nn.CrossEntropyLoss()` bound to a
        name or `self.<attr>`): one of its calls with visibly spatial input makes it a finding in
        every profile, decided at the end of the file."""
        raising = [m for m in match_operations(self.context, node) if m.behavior == RAISES]
        if not raising or not all(m.strict_only and m.module_form for m in raising):
            return False
        if not self.context.scopes.watch_module(node):
            return False
        self.losses.append(node)
        return True

    def leave_Module(self, original_node: cst.Module) -> None:
        for node in self.losses:
            message = self.message_for(node, False, self.context.scopes.spatial_use(node))
            if message is not None:
                self.report(node, message)
        self.losses = []
        super().leave_Module(original_node)

    def message_for(self, node: cst.Call, assume_no_grad: bool, spatial_use: Optional[Tuple[Any, ...]] = None) -> Optional[str]:
        raising = [
            m
            for m in match_operations(self.context, node, assume_no_grad=assume_no_grad)
            if m.behavior == RAISES and (self.context.strict or not m.strict_only or spatial_use is not None)
        ]
        if not raising:
            return None
        first = max(raising, key=lambda m: m.certain)
        verb = "raises" if first.certain else "may raise"
        through = f" (it {first.through})" if first.via and first.through else f" (through `{first.via}`)" if first.via else ""
        condition = first.condition
        line = self.context.node_range
        if first.spatial:
            condition += f"; its input has spatial dimensions: {first.spatial} at line {line(first.spatial_node)[0]}"
        elif spatial_use is not None and first.strict_only:
            use, why, where = spatial_use
            condition += f"; called at line {line(use)[0]} on input with spatial dimensions: {why} at line {line(where)[0]}"
        message = (
            f"{_quoted(first.name)} {verb} under {_FLAG_CALL} in {first.version}{through}: "
            f"no deterministic implementation ({condition}); way out: {first.remedy}, "
            f"or `warn_only=True` (which only warns and stays nondeterministic)"
        )
        others = [m for m in raising if m is not first]
        if others:
            message += "; also " + "; ".join(f"{m.op_name} ({m.condition})" for m in others)
        return message


class NondeterministicThirdPartyKernel(_ReportedWhereCalled):
    """
    ## Why is this bad?
    Much of a real project's nondeterminism comes from libraries: a
    detector's RoI pooling, a GNN's scatter, an LLM's flash attention. Some
    run their own CUDA kernels with atomic additions, whose order varies from
    run to run, and never look at `torch.use_deterministic_algorithms`: the
    floating-point sums differ in the last bits, the differences grow through
    training, and the flag cannot help. This rule reports those kernels
    (mmcv's and detectron2's RoI and deformable ops, `torch_scatter`'s
    `segment_coo` and `scatter_mul`/`min`/`max`, `flash_attn` without
    `deterministic=True`, DGL's sum message passing, torchvision's RoI ops up
    to 0.15). A flash-attn function is reported wherever it is called:
    directly, through a name, an attribute or a `functools.partial` it was
    stored in (`self.attn_fn = flash_attn_func`; a `deterministic=True` bound
    by the partial or passed at the call counts), as FlashAttention 3
    (`flash_attn_interface`, `flash_attn_3`), or on a kernel module fetched
    from the Hugging Face Hub at run time (`fa3 = kernels.get_kernel(...)`,
    then `fa3.flash_attn_func(...)`): none of them reads torch's flag.

    The other third-party entries are reported by the rules of the torch
    operations they behave like, at the library's target version:
    torchvision 0.16 and newer raise under the flag in the RoI pooling and
    deformable convolution backwards (TDL202) and switch `roi_align` to a
    deterministic path (TDL201); `torch_scatter` and PyG sums and means are
    wrappers over `Tensor.scatter_add_` (TDL201 from torch 1.13, TDL202
    before); MONAI's `DiceCELoss` and `NACLLoss` call `nn.CrossEntropyLoss`
    on their spatial (BNH[WD]) input, which raises under the flag (TDL202 in
    every profile). The table below lists every library, API and version.

    The library version is config `library-versions` (a table such as
    `{torchvision = "0.15"}`), else the installed package's metadata (the
    package is never imported), else the newest version checked. Messages
    name it. `torch_scatter.segment_csr`, `nms`/`batched_nms` and
    `flash_attn` calls with a literal `deterministic=True` are deterministic
    and never reported.

    ## Known problems
    The device is unknown: CPU runs are reported too. A `MessagePassing`
    subclass's own `super().__init__(aggr="add")` is not matched (the
    built-in layers are). A `deterministic` argument passed to `flash_attn`
    by position is not seen, nor FlashAttention chosen by a library setting
    (Transformers' `attn_implementation="flash_attention_2"`). xformers'
    `op=` argument (and diffusers' `attention_op=`), which can force the
    flash backward, is not read. DGL's `apply_edges` reduces nothing and is not
    listed; `update_all` is matched by method name with a visible
    `dgl.function.sum(...)` reducer. mmdetection and detectron2 mostly build
    these layers from config dicts (`dict(type="RoIAlign", ...)`), which
    static analysis cannot follow: only direct constructions are seen.

    ## Options
    `library-versions`; `torch-version` (for the entries that follow a torch
    operation).

    ## References
    - torch_scatter: <https://pytorch-scatter.readthedocs.io/> ("implemented via atomic operations on the GPU
      and is therefore non-deterministic")
    - torchvision `roi_align` deterministic path: `torchvision/ops/roi_align.py` (0.16+)
    - flash-attention `flash_attn_func(..., deterministic=False)`
    - The catalog: `rules/third_party.toml` (a `source` per entry)
    """

    @classmethod
    def prefilter_words(cls) -> Tuple[str, ...]:
        """Every library of the catalog: a file that only imports `mmcv.ops` can hold a finding,
        and a new library needs no code."""
        return tuple(library.name for library in load_catalog().libraries)

    @classmethod
    def generated_documentation(cls) -> str:
        return third_party_table(load_catalog())

    code = "TDL203"
    name = "nondeterministic-third-party-kernel"
    summary = "a third-party CUDA kernel whose atomic accumulation makes results vary between runs"
    bad = (
        'from torch_scatter import segment_coo\n\ndef pool(x, index):\n    return segment_coo(x, index, reduce="sum")\n',
        "from flash_attn import flash_attn_func\n\ndef attend(q, k, v):\n    return flash_attn_func(q, k, v, causal=True)\n",
        "from mmcv.ops import RoIAlign\n\nroi_layer = RoIAlign(7, spatial_scale=0.25)\n",
    )
    good = (
        'from torch_scatter import segment_csr\n\ndef pool(x, ptr):\n    return segment_csr(x, ptr, reduce="sum")\n',
        (
            "from flash_attn import flash_attn_func\n\ndef attend(q, k, v):\n"
            "    return flash_attn_func(q, k, v, causal=True, deterministic=True)\n"
        ),
        "from torchvision.ops import nms\n\ndef keep(boxes, scores):\n    return nms(boxes, scores, 0.5)\n",
        "from mmcv.ops import RoIAlign\n\nroi_layer = RoIAlign(7, spatial_scale=0.25, use_torchvision=True)\n",
    )

    def message_for(self, node: cst.Call, assume_no_grad: bool) -> Optional[str]:
        for match in match_third_party(self.context, node, assume_no_grad=assume_no_grad):
            return (
                f"{_quoted(match.name)} {'runs' if match.certain else 'may run'} a nondeterministic CUDA kernel "
                f"({match.condition}) that {_FLAG_CALL} does not cover in {match.version}; way out: {match.remedy}"
            )
        return None
