"""TDL202 `op-without-deterministic-implementation`: an operation that raises under deterministic mode."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import libcst as cst

from torchdet_lint.checks.ops.op_findings import (
    FLAG_CALL,
    ReportedWhereCalled,
    quoted,
)
from torchdet_lint.core.catalog import (
    RAISES,
    Sized,
    load_catalog,
    same_value,
)
from torchdet_lint.core.diagnostics import Diagnostic
from torchdet_lint.core.operations import (
    OperationMatch,
    match_operations,
    matches_assuming,
)
from torchdet_lint.model.arguments import attribute_values, parameter_values
from torchdet_lint.model.parameters import passed_parameter

# the condition hangs on arguments that are parameters of the enclosing module-level function, or
# attributes its class's `__init__` sets from a parameter: the finding stands unless, for each of
# them, a value that selects the raising kernel can reach it from the project's callers. The value:
# a list of {"source": ("param", function, parameter) or ("attr", class, attribute), "probes":
# [(value, raises)], "other": whether a value none of the probes equals raises}, one per argument
# (each judged with the others unknown, so one argument ruling it out is enough).
DECIDED_BY_CALLERS = "decided_by_what_callers_pass"
# A call that runs only when a parameter holds some values (`elif dims == 3:` around it): the
# (function key, parameter, values) of each such test; dropped when no caller passes one of them.
RUNS_ONLY_WHEN = "runs_only_when_callers_pass"
# Condition kinds whose answer for a literal depends only on which catalog value it equals (or on
# its being None): a value is judged by the probe it equals, or by the "other" probe. A `length`
# condition is probed with a `Sized` value of each length it names.
_PROBED_KINDS = frozenset({"in", "not-in", "given", "absent", "tensor", "not-names", "length"})
_OTHER = "\x00a value no condition names"
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
                if condition.kind == "length":
                    value = Sized(value)
                if not any(same_value(value, v) for v in values):
                    values.append(value)
    return values


def _answer(decided: dict, value: Any) -> bool:
    """Whether `value`, passed by a caller, selects the raising kernel: the answer of the probe it
    equals; a tuple that equals none is judged by its length, a display of computed elements only by
    its length (unknown length: it may raise); anything else by the "other" probe."""
    for probe, raises in decided["probes"]:
        if same_value(probe, value):
            return raises
    if isinstance(value, (tuple, list)):
        value = Sized(len(value))
    if isinstance(value, Sized):
        sized = [raises for probe, raises in decided["probes"] if probe == value]
        return sized[0] if sized else True
    return decided["other"]


def _never_runs(project, diagnostic: Diagnostic) -> bool:
    """The operation sits under a test of a parameter to which no caller passes a tested value."""
    for key, name, held in diagnostic.extra.get(RUNS_ONLY_WHEN) or ():
        values = parameter_values(project, diagnostic.path, key, name)
        if values is not None and not any(same_value(value, wanted) for value in values for wanted in held):
            return True
    return False


def _callers_rule_out(project, diagnostic: Diagnostic) -> bool:
    if _never_runs(project, diagnostic):
        return True
    for decided in diagnostic.extra.get(DECIDED_BY_CALLERS) or ():
        kind, owner, name = decided["source"]
        if kind == "param":
            values = parameter_values(project, diagnostic.path, owner, name)
        else:
            values = attribute_values(project, diagnostic.path, owner, name)
        if values is not None and not any(_answer(decided, value) for value in values):
            return True
    return False


class OpWithoutDeterministicImplementation(ReportedWhereCalled):
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
    `batch["mask"]`, `batch.mask`, `masks[:, 0]`), `next(iter(loader))` (and
    MONAI's `first(loader)`), the batch Lightning hands the step methods of a
    `LightningModule` (`training_step(self, batch, batch_idx)`,
    `validation_step`, `test_step`, `predict_step`; also in a subclass of one
    in the same file),
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
    global; the device or dtype that `.to(...)`, `.cuda(...)` or a cast
    takes brings none, `.to(other)` included, which copies only other's
    device and dtype), the project's calls of the function decide: the finding is
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
    are, and so is what a `for` loop over its `.items()` or `.values()`
    yields: a loop that resizes a checkpoint's mismatched position tables
    while loading weights handles tensors).

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
    (with that parameter's default and callers) and through a loop variable
    over a literal table (`for mode in ["nearest", "area"]: resize(x, mode)`). When none of them selects
    the raising kernel the finding is dropped; one call passing
    `mode="max"` keeps it. A call a test expects to raise (the last one in a
    `with pytest.raises(...)` or `self.assertRaises(...)` block) stops at the
    error and passes nothing that counts. The values stay unknown, and the finding stands,
    when a call passes a non-literal or a `*args`/`**kwargs` splat (a
    `**dd` of a dict display with string keys passes just those keys), when
    nothing in the project calls it, when the function or class is used
    otherwise than called (handed to another call, stored in a registry, a
    `functools.partial`, named by a string), when a subclass has its own
    `__init__` or sets the attribute, or when a method sets it again.
    Each such argument is judged on its own, the others unknown: one whose
    callers rule the kernel out is enough (a padding helper's `mode` may be
    "reflect" while every `pad` it gets selects the deterministic 2-d
    kernel).

    Code that runs only for some values: an operation under a test of a
    parameter of a module-level function or of a class's `__init__` (`elif
    dims == 3: return nn.AvgPool3d(...)`, any test the narrowing above reads)
    runs only when a caller passes one of the values tested. When the
    parameter's values over the project are visible (as above: defaults,
    calls and constructions, followed through callers that pass their own
    parameter on) and none of them is one of those, the operation never
    runs and the finding is dropped (diffusion code's `avg_pool_nd(dims,
    ...)` where every model is built 2-d). A truthiness test (`if
    volumetric:`) is not read this way, nor a parameter rebound before the
    test.

    Lengths count as values: a tuple or list display of computed elements
    passes its length (`F.pad(x, pad, mode)` in a helper every call of which
    passes `(0, 0, p // 2, (p + 1) // 2)` is 2-d reflection padding,
    deterministic under the flag from torch 2.7), also repeated a literal
    number of times (`[p] * 4`), an attribute that `__init__` sets once to
    such a display and nothing else sets (`self.padding = [p] * 4`, read in
    `forward`; a subclass with its own `__init__` keeps it unknown), a
    conditional expression whose branches have the same length, and
    a name whose value at the call is visible: its last binding, made in a
    block the call is still in with no loop entered since (`pad = (...)`
    just before `mypad(x, pad)`; a binding in an `if` left before the call,
    or one a loop may replace before it comes back to the call, keeps the
    length unknown). The same holds for an argument of the operation
    itself (`pad = (p, p)` then `pad = (p, p, p, p)`: 2-d at the call).

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

    A result that no loss depends on: a backward-only kernel whose result is
    bound to a plain local name (`sampled = F.grid_sample(feats, grid)`) that
    the function only reads inside `with torch.no_grad():` (or
    `inference_mode()`, `set_grad_enabled(False)`) is not reported: what is
    computed there from it (`sampled.mean()`, `sampled[0]`, `sampled * w`, a
    call's argument, `self.assess(sampled)`) records no graph, so no backward
    ever reaches the kernel. Names bound from it by plain assignment
    (`alias = sampled`) are followed the same way, and `del` is no read. Any
    other read keeps the finding: one outside the block, a `return`, `yield`,
    a store (`self.x = sampled`, `cache.append(sampled)`, a container display
    not handed to a call), an augmented assignment, a read in a nested
    function, lambda or generator expression (it runs later), a `with` that
    turns gradients on again (`torch.enable_grad()`), and a method that may
    hand back the tensor itself (`.float()`, `.to(...)`, `.contiguous()`, an
    in-place method) whose result is then read outside. An operation that
    also raises in its forward pass (`torch.histc`) is reported as before.
    TDL201, TDL203 and TDL302 read such a result the same way.

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
    that holds parameters (`state_dict(keep_vars=True)` handed on). A
    result used only under `no_grad` is followed in its own function only:
    one written into a tensor or list (`out[i] = sampled`), returned by a
    helper or handed through `map`-like calls to code that reads it only
    under `no_grad` elsewhere keeps the finding (mmrotate's oriented
    RepPoints head samples point features in one method and weighs its loss
    by them under `no_grad` in another). The names a comprehension binds are
    not followed
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
        return (
            super().needs_project(diagnostic)
            or bool(diagnostic.extra.get(DECIDED_BY_CALLERS))
            or bool(diagnostic.extra.get(RUNS_ONLY_WHEN))
        )

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
        self.runs_only_when: dict = {}  # id of a call -> its `RUNS_ONLY_WHEN` value

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
        guards = self._guards(node)
        if guards:
            self.runs_only_when[id(node)] = guards
        if not self._awaits_its_calls(node):
            super().visit_Call(node)

    def extra_for(self, node: cst.Call, params: Tuple[Tuple[str, int], ...] = ()) -> Optional[dict]:
        extra = super().extra_for(node, params) or {}
        decided = self.decided_by_callers.get(id(node))
        if decided is not None:
            extra[DECIDED_BY_CALLERS] = decided
        guards = self.runs_only_when.get(id(node))
        if guards:
            extra[RUNS_ONLY_WHEN] = guards
        return extra or None

    def _guards(self, node: cst.Call) -> List[Tuple[str, str, Tuple[Any, ...]]]:
        """The parameter tests a raising call runs under, in a module-level function or a class's
        `__init__` (`elif dims == 3: return nn.AvgPool3d(...)`): what its callers pass decides
        whether it runs at all."""
        kinds = [kind for kind, _ in self.definitions]
        if kinds == ["def"]:
            key = self.definitions[0][1]
        elif kinds == ["class", "def"] and self.definitions[1][1] == "__init__":
            key = f"{self.definitions[0][1]}.__init__"
        else:
            return []
        narrowed = self.context.scopes.narrowed_parameters()
        if not narrowed or not any(m.behavior == RAISES for m in match_operations(self.context, node)):
            return []
        return [(key, name, held) for name, held in narrowed]

    def _raises(self, matches: List[OperationMatch]) -> bool:
        return any(m.behavior == RAISES and (self.context.strict or not m.strict_only) for m in matches)

    def _decided_by_callers(self, node: cst.Call) -> Optional[List[dict]]:
        """For a "may raise": the arguments whose values the project's callers decide, each with the
        answer for each value a catalog condition names (see `DECIDED_BY_CALLERS`)."""
        matches = [m for m in match_operations(self.context, node) if m.behavior == RAISES]
        if not matches or any(m.certain for m in matches):
            return None
        probes = _probe_values(matches)
        if probes is None:
            return None
        kinds = [kind for kind, _ in self.definitions]
        decided = []
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
            decided.append({"source": source, "probes": answers, "other": other})
        return decided or None

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
            f"{quoted(first.name)} {verb} under {FLAG_CALL} in {first.version}{through}: "
            f"no deterministic implementation ({condition}); way out: {first.remedy}, "
            f"or `warn_only=True` (which only warns and stays nondeterministic)"
        )
        others = [m for m in raising if m is not first]
        if others:
            message += "; also " + "; ".join(f"{m.op_name} ({m.condition})" for m in others)
        return message
