"""What the code around a node says, read in the one shared traversal: the values
bound to names in the enclosing function (and module), the `self.<attr>`
bindings of the enclosing class, parameter annotations, and whether gradients
are off here (`torch.no_grad()`, `inference_mode`, `set_grad_enabled(False)`,
a decorated function). Local dataflow only: one pass, no fixed point.

It also records, for `**name` arguments whose dictionary is visible (a dict
literal or `dict(key=...)` bound in the same function or module), the keywords
they carry, so that `names.find_arg` sees them (a keyword passed through `**kwargs` is passed).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.core import registrations
from torchdet_lint.core.names import NOT_LITERAL, NameResolver, dotted_name, find_arg, literal, remember_keyword_dict

NO_GRAD_CONTEXTS = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.grad_mode.inference_mode",
        "torch.autograd.inference_mode",
    }
)
GRAD_SWITCHES = frozenset(
    {"torch.set_grad_enabled", "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.set_grad_enabled"}
)
GRAD_ON_CONTEXTS = frozenset({"torch.enable_grad", "torch.autograd.enable_grad", "torch.autograd.grad_mode.enable_grad"})
# Builtins whose result is never a tensor.
_NON_TENSOR_BUILTINS = frozenset(
    "builtins." + name
    for name in (
        "list",
        "dict",
        "set",
        "frozenset",
        "tuple",
        "str",
        "int",
        "float",
        "bool",
        "bytes",
        "range",
        "enumerate",
        "zip",
        "open",
        "len",
    )
)
_TENSOR_WORDS = ("Tensor", "torch", "Any", "Parameter", "Module")
# Methods whose result keeps the receiver's device and autograd state (for `x = x.float()` chains).
# Factories: a new tensor that needs no gradient unless `requires_grad=True`; on the CPU unless
# `device=` says otherwise (the `_like` ones take their input's device).
_FACTORIES = frozenset(
    "torch." + name
    for name in (
        "arange zeros ones empty full eye linspace logspace rand randn randint randperm tensor as_tensor "
        "zeros_like ones_like empty_like full_like rand_like randn_like randint_like"
    ).split()
)
# The legacy type constructors (`torch.FloatTensor(h, w, 3)`): CPU tensors without gradient, as
# `torch.tensor(...)` without `device=` (they refuse any other device); `torch.cuda.FloatTensor`
# and its kin build CUDA tensors, without gradient too.
_LEGACY_KINDS = ("Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Byte", "Char", "Bool")
# `torch.Tensor(data)` is the same constructor for the default (float) type.
_LEGACY_CPU_CONSTRUCTORS = frozenset(f"torch.{kind}Tensor" for kind in _LEGACY_KINDS) | {"torch.Tensor"}
_LEGACY_CUDA_CONSTRUCTORS = frozenset(f"torch.cuda.{kind}Tensor" for kind in _LEGACY_KINDS)
_NEUTRAL_METHODS = frozenset(
    {
        "float",
        "double",
        "half",
        "bfloat16",
        "long",
        "int",
        "bool",
        "contiguous",
        "clone",
        "view",
        "reshape",
        "squeeze",
        "unsqueeze",
        "permute",
        "transpose",
        "flatten",
        "unflatten",
        "movedim",
        "moveaxis",
        "expand",
        "repeat",
        "narrow",
        "view_as",
        "reshape_as",
        "expand_as",
        "chunk",
        "split",
        "type",
    }
)
# Readers of saved tensors -> (the device argument: keyword, position; whether its default is the
# CPU). `torch.load` keeps the saved device unless `map_location` says otherwise; safetensors'
# `load_file` loads on the CPU unless `device=` says otherwise.
_LOADERS = {
    "torch.load": ("map_location", 1, False),
    "torch.hub.load_state_dict_from_url": ("map_location", 2, False),
    "torch.utils.model_zoo.load_url": ("map_location", 2, False),
    "safetensors.torch.load_file": ("device", 1, True),
}
# Reading a dict's item by method (`checkpoint.get("model")`): the item is where the dict's tensors are.
_DICT_READS = frozenset({"get", "pop"})
# Values without a gradient (TDL202 docs, "Autograd phase"):
# the torch namespaces whose functions compute tensors from tensors; their result carries no
# gradient when none of their inputs does.
_TENSOR_NAMESPACES = frozenset({"torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special"})
_NOT_TENSOR_FUNCTIONS = frozenset({"torch.load", "torch.compile", "torch.save"})
# Keywords that never carry a tensor (sizes, modes, dtypes): not inputs a gradient flows from.
_NON_TENSOR_KEYWORDS = frozenset(
    "size scale_factor mode align_corners recompute_scale_factor antialias dim dims keepdim dtype device "
    "non_blocking memory_format copy padding_mode reduction ignore_index label_smoothing num_classes "
    "kernel_size stride padding dilation ceil_mode count_include_pad return_indices p eps start_dim end_dim".split()
)
_GRAD_METHODS = frozenset({"requires_grad_"})
# A state dict holds detached tensors: `model.state_dict()` (unless `keep_vars=True`), and a parameter
# named or annotated as a state dict or checkpoint (`checkpoint_filter_fn(state_dict, model)`).
_STATE_DICT_METHODS = frozenset({"state_dict"})
_STATE_DICT_NAMES = ("state_dict", "checkpoint", "ckpt")
# Iterating a dict of tensors without gradient yields them (`for k, v in state_dict.items()`).
_DICT_ITERATION = frozenset({"items", "values"})
_MOVING_METHODS = frozenset({"to", "cuda", "pin_memory"})
# What is read off a tensor without being one: a shape is no input a gradient flows from.
_SHAPE_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "device", "is_cuda", "requires_grad"})
_SHAPE_METHODS = frozenset({"size", "dim", "numel", "item", "tolist", "get_device", "element_size"})
_NUMBER_BUILTINS = frozenset({"builtins.len", "builtins.int", "builtins.float", "builtins.round", "builtins.bool"})
_OPERATORS = (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.BooleanOperation)
# Wrappers that iterate what they are handed: `for batch in tqdm(loader)`.
_ITERATION_WRAPPERS = frozenset(
    {
        "builtins.iter",
        "tqdm.tqdm",
        "tqdm.auto.tqdm",
        "tqdm.notebook.tqdm",
        "tqdm.std.tqdm",
        "tqdm.rich.tqdm",
        "rich.progress.track",
        "itertools.islice",
        "itertools.cycle",
    }
)
# What returns the first item of an iterable: of a loader, a batch. MONAI's `first(iterable,
# default=None)` (monai/utils/misc.py, 0.3 to 1.5) returns the first item its loop sees.
_FIRST_ITEM = frozenset({"builtins.next", "monai.utils.first", "monai.utils.misc.first"})

# Backward formulas: the methods of a `torch.autograd.Function` subclass that autograd runs
# without recording (its `forward` included), and the identity kind of nested functions.
_AUTOGRAD_FUNCTIONS = frozenset(
    {
        "torch.autograd.Function",
        "torch.autograd.function.Function",
        "torch.autograd.function.InplaceFunction",
        "torch.autograd.function.FunctionCtx",
    }
)
_FORMULA_METHODS = frozenset({"forward", "backward", "setup_context", "jvp", "vjp", "vmap"})
_LOCAL = "<local>"
# Last name segments of the calls that may register a function (`register_*` are all looked at).
_REGISTRATION_SEGMENTS = frozenset({"custom_op", "triton_op", "impl", "impl_abstract", "fallback"})
_NARROWING_TESTS = (cst.Comparison, cst.UnaryOperation, cst.BooleanOperation)
# Where a tensor visibly gets spatial dimensions (the input rank of the NLL losses): upsampling
# (functions, and modules called), a torchvision segmentation model's `"out"`/`"aux"` output.
SPATIAL_FUNCTIONS = frozenset(
    "torch.nn.functional." + name for name in ("interpolate", "upsample", "upsample_bilinear", "upsample_nearest")
)
SPATIAL_MODULES = frozenset({"torch.nn.Upsample", "torch.nn.UpsamplingBilinear2d", "torch.nn.UpsamplingNearest2d"})
SEGMENTATION_MODELS = "torchvision.models.segmentation."
_SEGMENTATION_OUTPUTS = frozenset({"out", "aux"})
# Methods that keep a tensor's rank (a reshape or `view` may flatten it: not followed).
_RANK_KEEPING = frozenset(
    {
        "float",
        "double",
        "half",
        "bfloat16",
        "contiguous",
        "to",
        "cuda",
        "cpu",
        "type",
        "clone",
        "detach",
        "log_softmax",
        "softmax",
    }
)
_RANK_KEEPING_FUNCTIONS = frozenset(
    {"torch.nn.functional.log_softmax", "torch.nn.functional.softmax", "torch.log_softmax", "torch.softmax"}
)
_SELF_RETURNING = frozenset({"to", "cuda", "cpu", "eval", "train", "float", "half", "double", "requires_grad_"})
_MAY_BE_LOADERS = (cst.Call, cst.Name, cst.Attribute)
_NOT_LOADERS = (
    cst.List,
    cst.Tuple,
    cst.Dict,
    cst.Set,
    cst.ListComp,
    cst.DictComp,
    cst.SetComp,
    cst.GeneratorExp,
    cst.SimpleString,
    cst.Integer,
)
MAX_DEPTH = 6
# A tensor is followed through this many names, calls and subscripts (a checkpoint's item, reshaped
# and permuted over a few statements, is a dozen steps from its `torch.load`); only for the
# arguments of the calls the catalog matches.
MAX_TENSOR_DEPTH = 16


@dataclass
class _Frame:
    kind: str  # "module", "class", "function"
    names: Dict[str, List[Optional[cst.BaseExpression]]] = field(default_factory=dict)  # every value so far; None: unknown
    annotations: Dict[str, cst.BaseExpression] = field(default_factory=dict)
    grad_off: bool = False
    class_index: Optional[int] = None  # a method: the index of its class in `ScopeTracker.classes`
    counters: Set[str] = field(default_factory=set)  # loop targets that count: `for i in range(...)`, enumerate's index
    # (name, binding) -> what is known of a value bound without an expression of its own: a part of
    # an unpacked tuple, what a loop over a DataLoader yields.
    part_states: Dict[Tuple[str, int], "TensorState"] = field(default_factory=dict)
    # (name, binding) bound to the indices of a (values, indices) result: `_, top = x.topk(k)`.
    index_parts: Set[Tuple[str, int]] = field(default_factory=set)
    serial: int = 0  # tells the frames of a walk apart
    autograd_function: bool = False  # a class: a `torch.autograd.Function` subclass
    lightning_module: bool = False  # a class: a `LightningModule` subclass (its step methods get batches)
    local_defs: Dict[str, Tuple[Optional[str], str]] = field(default_factory=dict)  # nested functions -> identity
    # A name bound by `for x in xs` (a loop or a comprehension) -> every `xs` it iterated over.
    iterated: Dict[str, List[cst.BaseExpression]] = field(default_factory=dict)
    # A function's parameters -> their position in a call (`self` not counted; -1: keyword-only).
    params: Dict[str, int] = field(default_factory=dict)
    # A loop variable over a literal table -> (its number of bindings then, the values it takes).
    loop_tables: Dict[str, Tuple[int, List[cst.BaseExpression]]] = field(default_factory=dict)
    # A name -> (the block its last binding was made in, its number of bindings then).
    bound_in: Dict[str, Tuple[int, int]] = field(default_factory=dict)


# Lightning's loop hands each step method the batch its loader yields (lightning/pytorch/loops:
# `training_step(batch, batch_idx)`, the evaluation and prediction loops alike).
_LIGHTNING_MODULE = "lightning.pytorch.LightningModule"
_LIGHTNING_STEPS = frozenset({"training_step", "validation_step", "test_step", "predict_step"})

_EMPTY_INIT_CONTEXTS = frozenset(
    {
        "accelerate.init_empty_weights",
        "accelerate.big_modeling.init_empty_weights",
        "transformers.modeling_utils.no_init_weights",
    }
)
# Calls whose result is a (values, indices) pair; the second ones only when given a dimension.
_PAIR_RESULTS = frozenset({"topk", "sort", "kthvalue", "mode", "cummax", "cummin"})
_PAIR_RESULTS_WITH_DIM = frozenset({"max", "min", "median", "nanmedian"})
# Values that are computed, not an alias of an existing tensor (`model(x)`, `a * b`).
_COMPUTED = frozenset({cst.Call, cst.BinaryOperation, cst.UnaryOperation})


@dataclass(frozen=True)
class TensorState:
    """What is known of a tensor expression: it carries no gradient, it lives on the CPU; `plain`:
    it is a tensor or a batch of tensors read from data (never a module), so what is read from it
    or computed from it alone (items, attributes, method results) carries no gradient either."""

    no_grad: bool = False
    cpu: bool = False
    plain: bool = False


_NO_GRAD_DATA = TensorState(True, False, True)


class ScopeTracker(cst.BatchableCSTVisitor):
    """Runs right after the name resolver in the shared walk; rules and the summary
    collector ask it about the node they are visiting (bindings seen so far)."""

    def __init__(self, resolver: NameResolver) -> None:
        super().__init__()
        self.resolver = resolver
        self.frames: List[_Frame] = [_Frame("module")]
        self.classes: List[Dict[str, List[Optional[cst.BaseExpression]]]] = []  # self.<attr> values per class
        self.with_grad: List[Optional[bool]] = []  # per `with` statement: False (grad off), True (on), None
        self.without_init: List[bool] = []  # per `with` statement: modules built in it draw no weights
        self.local_classes: Set[str] = set()
        # Who calls this file's functions: ("self", method) or (None, function) -> grad off at each call;
        # a function also used otherwise (passed, stored) may run anywhere.
        # Each call site: whether no gradient flows there, and the function it is in.
        self.callers: Dict[Tuple[Optional[str], str], List[Tuple[bool, Optional[Tuple[Optional[str], str]]]]] = {}
        self._without_grad: Dict[Tuple[Optional[str], str], bool] = {}
        self.escapes: Set[Tuple[Optional[str], str]] = set()
        self._callee_nodes: Set[int] = set()
        self.identities: List[Optional[Tuple[Optional[str], str]]] = []  # per enclosing def
        # Device guards: (id of a block, the tensors known to be on the CPU in it), innermost last;
        # blocks of `if` statements seen but not yet entered wait in `_guarded_blocks`.
        self.cpu_blocks: List[Tuple[int, FrozenSet[str]]] = []
        self._guarded_blocks: Dict[int, FrozenSet[str]] = {}
        self._with_values: Dict[int, cst.Call] = {}  # `with <call> as name`: the call, until `name` is bound
        # Calls bound to a name or `self.<attr>` (`emb = nn.Embedding(...)`): id -> how the file calls the object.
        self.bound_calls: Dict[int, Tuple[Optional[str], str]] = {}
        self.computed_without_grad: Set[int] = set()  # ids of values bound where no gradient flows
        self.loader_classes: Set[str] = set()  # this file's DataLoader subclasses
        self.function_classes: Set[str] = set()  # this file's `torch.autograd.Function` subclasses
        self.lightning_classes: Set[str] = set()  # this file's `LightningModule` subclasses
        self._serial = 0
        self._left_function: Tuple[Optional[cst.FunctionDef], Optional[_Frame]] = (None, None)
        self._local_def_names: Dict[str, int] = {}  # names of the nested functions of the frames on the stack
        # Functions registered as backward formulas, kernels or backward hooks: they run without
        # a backward of their own (complete at the end of the walk); lambdas handed to such APIs.
        self.formulas: Set[Tuple[Optional[str], str]] = set()
        self._formula_lambdas: Set[int] = set()
        # Narrowing `if` tests: blocks seen but not yet entered, then the entered ones (innermost last).
        self._narrowing_blocks: Dict[int, Dict[str, Tuple[Any, ...]]] = {}
        self.narrowed_blocks: List[Tuple[int, _Frame, Dict[str, Tuple[Any, ...]], Dict[str, int]]] = []
        # Loss modules whose input rank their calls decide: the keys their calls are recorded under,
        # and the first call with visibly spatial input per key.
        self._watched_keys: Set[Tuple[Any, ...]] = set()
        self._watched_modules: Dict[int, Tuple[Any, ...]] = {}
        self.spatial_calls: Dict[Tuple[Any, ...], Tuple[cst.Call, str, cst.CSTNode]] = {}
        # The blocks the walk is in, outermost first (0: the module): (id, whether it is a loop's
        # body); the bodies of the loops seen but not yet entered.
        self._blocks: List[Tuple[int, bool]] = [(0, False)]
        self._loop_bodies: Set[int] = set()
        self._bound_clauses: Set[int] = set()  # comprehension clauses bound ahead of their element

    # -- queries ------------------------------------------------------------------------------
    @property
    def _function(self) -> _Frame:
        for frame in reversed(self.frames):
            if frame.kind != "class":
                return frame
        return self.frames[0]

    def values(self, name: str, module_too: bool = False) -> List[Optional[cst.BaseExpression]]:
        """Every value bound to `name` so far in the enclosing function (or the module when
        the code is at module level; with `module_too`, the module's when the function has none)."""
        frame = self._function
        found = frame.names.get(name)
        if found is None and module_too and frame is not self.frames[0]:
            found = self.frames[0].names.get(name)
        return list(found or ())

    def reaching_value(self, name: str) -> Optional[cst.BaseExpression]:
        """The value every path to here gives `name` in the enclosing function: its last binding,
        when that was made in a block the walk is still in (`pad = (0, 0, p, p)` just before
        `mypad(x, pad)`, not one in an `if` left since) and no loop entered after it may rebind
        the name before coming back. None otherwise, or when that binding is not followed."""
        frame = self._function
        values = frame.names.get(name)
        where = frame.bound_in.get(name)
        if not values or values[-1] is None or where is None or where[1] != len(values):
            return None
        for block, loop_body in reversed(self._blocks):
            if block == where[0]:
                return values[-1]
            if loop_body:
                return None
        return None

    def value(self, name: str, module_too: bool = False) -> Optional[cst.BaseExpression]:
        """The value last bound to `name` (None: unknown, or bound in a way not followed)."""
        found = self.values(name, module_too)
        return found[-1] if found else None

    def is_counter(self, name: str) -> bool:
        """A name bound only as a loop counter (`for step in range(n)`, `for i, x in enumerate(xs)`):
        an int."""
        return name in self._function.counters and all(value is None for value in self.values(name))

    def annotation(self, name: str) -> Optional[cst.BaseExpression]:
        return self._function.annotations.get(name)

    def expression_values(self, node: cst.BaseExpression) -> List[Optional[cst.BaseExpression]]:
        """The values a name (`seed`), `self.<attr>` or another attribute chain (`args.seed`)
        was given so far; empty when none is visible."""
        if isinstance(node, cst.Name):
            return self.values(node.value)
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
            return self.attribute_values(node.attr.value)
        dotted = dotted_name(node) if isinstance(node, cst.Attribute) else None
        return self.values(dotted) if dotted is not None else []

    def attribute_values(self, attribute: str) -> List[Optional[cst.BaseExpression]]:
        """The values `self.<attribute>` was given so far in the methods of the enclosing class."""
        index = self._function.class_index
        if index is None:
            return []
        return list(self.classes[index].get(attribute, ()))

    @property
    def function_identity(self) -> Optional[Tuple[Optional[str], str]]:
        """How this file calls the enclosing function: ("self", name) for a method, (None, name)
        for a module-level function; None elsewhere (nested functions, module code)."""
        return self.identities[-1] if self.identities else None

    def only_called_without_grad(self, identity: Optional[Tuple[Optional[str], str]]) -> bool:
        """A function this file calls only where no gradient flows (a pipeline's helpers called
        from its `@torch.no_grad()` `__call__`, directly or through other such helpers), and
        uses in no other way: complete at the end of the walk."""
        if identity is None or identity in self.escapes:
            return False
        if identity in self._without_grad:
            return self._without_grad[identity]
        self._without_grad[identity] = False  # a cycle of calls proves nothing
        calls = self.callers.get(identity)
        # A registered backward formula runs in the backward pass, where nothing records a gradient.
        called = bool(calls) or identity in self.formulas
        answer = called and all(off or self.only_called_without_grad(caller) for off, caller in calls or ())
        self._without_grad[identity] = answer
        return answer

    @property
    def grad_disabled(self) -> bool:
        """Whether no gradient can flow here: a no-grad `with` block or function, or grad switched off."""
        for state in reversed(self.with_grad):
            if state is not None:
                return not state
        return self._function.grad_off

    def known_non_tensor(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """An expression that visibly is not a tensor: a NumPy value, an instance of a non-torch
        class, a container or literal, or a parameter annotated with a non-tensor type."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(
            node,
            (
                cst.List,
                cst.Dict,
                cst.Set,
                cst.Tuple,
                cst.SimpleString,
                cst.ConcatenatedString,
                cst.FormattedString,
                cst.Integer,
                cst.Float,
            ),
        ):
            return True
        if isinstance(node, cst.Call):
            return self._non_tensor_producer(node)
        if isinstance(node, cst.Name):
            annotation = self.annotation(node.value)
            if annotation is not None and self._non_tensor_annotation(annotation):
                return True
            values = self.values(node.value)
            return bool(values) and all(v is not None and self.known_non_tensor(v, depth + 1) for v in values)
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
            values = self.attribute_values(node.attr.value)
            return bool(values) and all(v is not None and self.known_non_tensor(v, depth + 1) for v in values)
        return False

    def tensor_state(
        self, node: Optional[cst.BaseExpression], depth: int = 0, before: Optional[Dict[str, int]] = None
    ) -> TensorState:
        """What a tensor expression visibly is: `torch.from_numpy(...)`, `.numpy()`-derived,
        `torch.FloatTensor(...)` and the other legacy CPU type constructors, and
        `torch.tensor(...)` / `torch.as_tensor(...)` without `device=` or `requires_grad=True` are
        CPU tensors without gradient; `.detach()` drops the gradient, `.cpu()` moves to the CPU,
        `.cuda()` / `.to(...)` move away from it. What `torch.load(..., map_location="cpu")` reads
        (and the items of the dicts it returns) is on the CPU; indexing and the shape and dtype
        methods (`.float()`, `.view`, `.permute`, ...) keep a tensor's device. Names are followed
        through the function's bindings (`x = x.float()` reads the `x` bound before it).
        In the branch of a device test (`if not x.is_cuda:`), `x` is on the CPU."""
        if node is None or depth > MAX_TENSOR_DEPTH:
            return TensorState()
        if self.cpu_blocks and depth == 0 and type(node) in (cst.Name, cst.Attribute):
            name = dotted_name(node)
            if name is not None and any(name in names for _, names in self.cpu_blocks):
                return replace(self.tensor_state(node, 1), cpu=True)
        kind = type(node)
        if kind is cst.Name:
            values = self.values(node.value)
            if before is not None and node.value in before:
                values = values[: before[node.value]]
            if values and values[-1] is None:
                part = self._function.part_states.get((node.value, len(values) - 1))
                if part is not None:
                    return part
            if not values or values[-1] is None:
                return TensorState()
            # The value's own mentions of the name are its earlier bindings (`x = x.float()`).
            state = self.tensor_state(values[-1], depth + 1, {**(before or {}), node.value: len(values) - 1})
            if id(values[-1]) in self.computed_without_grad and not state.no_grad:
                return TensorState(True, state.cpu)
            return state
        if kind is cst.Subscript:
            return self.tensor_state(node.value, depth + 1, before)
        if kind is cst.Attribute:
            # `batch.mask`: an attribute of a batch read from data is data too.
            inner = self.tensor_state(node.value, depth + 1, before)
            return inner if inner.plain and inner.no_grad else TensorState()
        if kind in _OPERATORS:
            operands = _operands(node)
            if all(self._brings_no_grad(operand, depth + 1, before) for operand in operands):
                return _NO_GRAD_DATA
            return TensorState()
        if kind is not cst.Call:
            return TensorState()
        qualified = self.resolver.qualified_name(node.func)
        if qualified == "torch.from_numpy" or qualified in _LEGACY_CPU_CONSTRUCTORS:
            return TensorState(True, True, True)
        if qualified in _LEGACY_CUDA_CONSTRUCTORS:
            return TensorState(True, False, True)
        if qualified in _LOADERS:
            keyword, position, default_cpu = _LOADERS[qualified]
            location = find_arg(node, keyword, position)
            # What is read from a file carries no gradient; `torch.load` may return a pickled module,
            # whose attributes are parameters: not `plain`.
            on_cpu = default_cpu if location is None else _cpu_location(location.value, self.resolver)
            return TensorState(True, on_cpu, qualified != "torch.load")
        if qualified in _FACTORIES:
            keywords = {arg.keyword.value: arg.value for arg in node.args if arg.keyword is not None}
            if "device" in keywords:
                on_cpu = literal(keywords["device"]) in ("cpu", None)
            else:
                on_cpu = not qualified.endswith("_like")
            no_grad = literal(keywords.get("requires_grad")) in (False, None) if "requires_grad" in keywords else True
            return TensorState(no_grad, on_cpu, no_grad)
        if qualified in _FIRST_ITEM:
            # `next(iter(loader))`, MONAI's `first(loader)`: a batch.
            iterator = node.args[0].value if node.args else None
            return _NO_GRAD_DATA if iterator is not None and self.is_loader(iterator) else TensorState()
        if qualified is not None:
            if _torch_function(qualified) and self._inputs_bring_no_grad(node, depth, before):
                return _NO_GRAD_DATA
            return TensorState()
        if isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            inner = self.tensor_state(node.func.value, depth + 1, before)
            if method == "numpy":
                return TensorState(True, True, True)
            if method in _STATE_DICT_METHODS:
                keep = find_arg(node, "keep_vars")
                if keep is None or literal(keep.value) is False:
                    return _NO_GRAD_DATA
            if method == "detach":
                return TensorState(True, inner.cpu, True)
            if method == "cpu":
                return replace(inner, cpu=True)
            if method in ("cuda", "to"):
                return replace(inner, cpu=method == "to" and _moves_to_cpu(node))
            if method in _NEUTRAL_METHODS:
                return inner
            if method in _DICT_READS:
                return TensorState(inner.no_grad, inner.cpu, inner.plain)  # an item, as `d[key]`
            if inner.plain and inner.no_grad and method not in _GRAD_METHODS and self._inputs_bring_no_grad(node, depth, before):
                return replace(inner, cpu=inner.cpu and method not in _MOVING_METHODS)
        return TensorState()

    def gradient_parameters(
        self, node: Optional[cst.BaseExpression], depth: int = 0, before: Optional[Dict[str, int]] = None
    ) -> Optional[FrozenSet[str]]:
        """The parameters of the enclosing function that a tensor expression can get a gradient from,
        when nothing else can give it one (`posemb.permute(0, 3, 1, 2)`, `torch.cat([a, b])` of
        parameters, a plain function of them): the callers decide. None when a module, `self`, a
        global or a call of an unknown object may bring one."""
        if node is None or depth > MAX_TENSOR_DEPTH:
            return None
        if self.tensor_state(node, depth, before).no_grad:
            return frozenset()
        kind = type(node)
        if kind is cst.Name:
            name = node.value
            values = self.values(name)
            if before is not None and name in before:
                values = values[: before[name]]
            if not values:
                return None
            if values[-1] is None:
                return frozenset({name}) if len(values) == 1 and name in self._function.params else None
            return self.gradient_parameters(values[-1], depth + 1, {**(before or {}), name: len(values) - 1})
        if literal(node) is not NOT_LITERAL or _shape_like(node, self.resolver):
            return frozenset()
        if kind is cst.Subscript:
            return self.gradient_parameters(node.value, depth + 1, before)
        if kind is cst.Attribute:
            if type(node.value) is cst.Name and node.value.value in ("self", "cls"):
                return None
            return self.gradient_parameters(node.value, depth + 1, before)
        if kind in _OPERATORS:
            return self._union_parameters(_operands(node), depth, before)
        if kind is cst.Tuple or kind is cst.List:
            if any(type(e) is not cst.Element for e in node.elements):
                return None
            return self._union_parameters([e.value for e in node.elements], depth, before)
        if kind is not cst.Call:
            return None
        func = node.func
        inputs = [
            arg.value
            for arg in node.args
            if not (arg.keyword is not None and arg.keyword.value in _NON_TENSOR_KEYWORDS) and not arg.star
        ]
        if any(arg.star for arg in node.args) or any(
            arg.keyword is not None and arg.keyword.value == "requires_grad" for arg in node.args
        ):
            return None
        if type(func) is cst.Attribute:
            if func.attr.value in _GRAD_METHODS:
                return None
            qualified = self.resolver.qualified_name(func)
            if qualified is None:  # a method of what the expression computes
                if func.attr.value in _NEUTRAL_METHODS or func.attr.value in _MOVING_METHODS or func.attr.value == "cpu":
                    # Sizes and dimensions (`.view(1, heads, h, w)`), devices and dtypes (`.to(device)`;
                    # `.to(other)` takes only other's device and dtype): no gradient comes from them.
                    inputs = []
                return self._union_parameters([func.value, *inputs], depth, before)
        elif type(func) is cst.Name:
            qualified = self.resolver.qualified_name(func)
            if qualified is None and not self._own_function(func.value):
                return None
        else:
            return None
        last = (qualified or dotted_name(func) or "").rsplit(".", 1)[-1]
        if not last.lstrip("_")[:1].islower() or (qualified or "").startswith("builtins."):
            return None  # a class (a module, `nn.Parameter`) or a builtin
        # A function of them: torch's, a library's, or this file's (which may read a global module:
        # not seen).
        return self._union_parameters(inputs, depth, before)

    def _union_parameters(
        self, nodes: List[cst.BaseExpression], depth: int, before: Optional[Dict[str, int]]
    ) -> Optional[FrozenSet[str]]:
        found: FrozenSet[str] = frozenset()
        for node in nodes:
            more = self.gradient_parameters(node, depth + 1, before)
            if more is None:
                return None
            found |= more
        return found

    def _own_function(self, name: str) -> bool:
        """A function this file defines (module level or nested in an enclosing function), not a
        parameter or a local value."""
        if name in self._local_def_names:
            return True
        function = self._function
        if name in function.names:
            return False
        values = self.frames[0].names.get(name)
        return values is not None and all(value is None for value in values) and name not in self.local_classes

    def parameter_positions(self, names: FrozenSet[str]) -> Tuple[Tuple[str, int], ...]:
        """Parameters of the enclosing function with their position in a call (-1: keyword-only)."""
        params = self._function.params
        return tuple(sorted((name, params[name]) for name in names if name in params))

    def _inputs_bring_no_grad(self, call: cst.Call, depth: int, before: Optional[Dict[str, int]]) -> bool:
        """Every argument that may be a tensor brings no gradient, and none asks for one."""
        for arg in call.args:
            if arg.keyword is not None:
                keyword = arg.keyword.value
                if keyword == "requires_grad" and literal(arg.value) is not False:
                    return False
                if keyword in _NON_TENSOR_KEYWORDS:
                    continue
            if not self._brings_no_grad(arg.value, depth + 1, before):
                return False
        return True

    def _brings_no_grad(self, node: cst.BaseExpression, depth: int, before: Optional[Dict[str, int]]) -> bool:
        """An input that brings no gradient into a computation: a literal, a shape or an int, a
        sequence of such inputs, or a tensor without gradient."""
        kind = type(node)
        if kind is cst.Tuple or kind is cst.List:
            return all(type(e) is cst.Element and self._brings_no_grad(e.value, depth + 1, before) for e in node.elements)
        if literal(node) is not NOT_LITERAL or _shape_like(node, self.resolver):
            return True
        if kind is cst.Name and (self.is_counter(node.value) or self._int_annotation(node.value)):
            return True
        if kind is cst.Attribute and (self.resolver.qualified_name(node) or "").startswith("torch."):
            return True  # `torch.float16`, `torch.channels_last`: a constant of torch's
        return self.tensor_state(node, depth + 1, before).no_grad

    def _int_annotation(self, name: str) -> bool:
        annotation = self.annotation(name)
        return type(annotation) is cst.Name and annotation.value in ("int", "float", "bool", "str")

    def is_loader(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether iterating `node` yields batches read from data: a DataLoader call (any class
        or factory whose name ends in "loader": `DataLoader`, `InfiniteDataLoader`,
        `build_dataloader(cfg)`, a subclass of such a class defined in this file), an iterator or
        progress bar over one (`iter(loader)`, `tqdm(loader)`), a name or `self.<attr>` bound to
        one, or a name (a parameter, an attribute) named like a loader (`loader`,
        `train_loader`, `val_dataloader`) or annotated with a loader class, unless it is visibly
        bound to something else (a list or dict display, a comprehension)."""
        if depth > MAX_DEPTH:
            return False
        kind = type(node)
        if kind is cst.Call:
            func = node.func
            qualified = self.resolver.qualified_name(func)
            if qualified in _ITERATION_WRAPPERS:
                return bool(node.args) and node.args[0].keyword is None and self.is_loader(node.args[0].value, depth + 1)
            name = qualified or dotted_name(func) or ""
            last = name.rsplit(".", 1)[-1]
            return last.lower().endswith("loader") or last in self.loader_classes
        if kind is cst.Name:
            name = node.value
            values = self.values(name, module_too=True)
            annotation = self.annotation(name)
        elif kind is cst.Attribute:
            name = node.attr.value
            own = type(node.value) is cst.Name and node.value.value == "self"
            values = self.attribute_values(name) if own else []
            annotation = None
        else:
            return False
        if any(v is not None and type(v) in _MAY_BE_LOADERS and self.is_loader(v, depth + 1) for v in values[-4:]):
            return True
        if annotation is not None and "Loader" in cst.Module([]).code_for_node(annotation):
            return True
        return name.lower().endswith("loader") and not any(type(v) in _NOT_LOADERS for v in values)

    def _loader_targets(
        self, target: cst.BaseExpression, iterable: cst.BaseExpression, depth: int = 0
    ) -> List[cst.BaseExpression]:
        """The parts of a `for` target that receive batches read from data: the whole target of a
        loop over a loader, the second part of `enumerate(loader)`, the parts of `zip(...)` that
        come from loaders."""
        if depth > MAX_DEPTH:
            return []
        if type(iterable) is cst.Call:
            qualified = self.resolver.qualified_name(iterable.func)
            args = [arg.value for arg in iterable.args if arg.keyword is None and not arg.star]
            parts = target.elements if type(target) in (cst.Tuple, cst.List) else None
            if qualified == "builtins.enumerate":
                if args and parts is not None and len(parts) == 2:
                    return self._loader_targets(parts[1].value, args[0], depth + 1)
                return []
            if qualified == "builtins.zip":
                if parts is None or len(parts) != len(args):
                    return []
                return [found for part, arg in zip(parts, args) for found in self._loader_targets(part.value, arg, depth + 1)]
        return [target] if self.is_loader(iterable) else []

    def _mark_parts(self, target: cst.BaseExpression, state: TensorState) -> None:
        """Record `state` for the names `target` just bound (without an expression of their own)."""
        kind = type(target)
        if kind is cst.Name:
            frame = self.frames[-1]
            bindings = frame.names.get(target.value)
            if bindings:
                frame.part_states[(target.value, len(bindings) - 1)] = state
        elif kind is cst.Tuple or kind is cst.List:
            for element in target.elements:
                self._mark_parts(element.value, state)
        elif kind is cst.StarredElement:
            self._mark_parts(target.value, state)

    def keyword_dict(self, name: str) -> Optional[List[Tuple[str, cst.BaseExpression]]]:
        """The (keyword, value) pairs of a dict bound to `name` in this function or the module,
        when it is a dict literal with string keys or `dict(key=...)`; None when not visible."""
        values = self.values(name, module_too=True)
        if len(values) != 1 or values[0] is None:
            return None  # rebound or unknown: its keys are not known for sure
        value = values[0]
        if isinstance(value, cst.Dict):
            pairs = []
            for element in value.elements:
                if not isinstance(element, cst.DictElement) or not isinstance(literal(element.key), str):
                    return None
                pairs.append((literal(element.key), element.value))
            return pairs
        if isinstance(value, cst.Call) and self.resolver.qualified_name(value.func) == "builtins.dict":
            if any(arg.keyword is None for arg in value.args):
                return None
            return [(arg.keyword.value, arg.value) for arg in value.args]
        return None

    # -- backward formulas and registrations --------------------------------------------------
    def _registers_formula(self, decorator: cst.BaseExpression) -> bool:
        """A decorator that makes the function a custom op's body, kernel or backward formula
        (`@torch.library.custom_op(...)`, `@torch.library.register_fake(...)`,
        `@torch.library.impl(..., "cuda")`, `@op.register_kernel("cpu")`)."""
        call = decorator if type(decorator) is cst.Call else None
        func = call.func if call is not None else decorator
        if type(func) not in (cst.Name, cst.Attribute):
            return False
        qualified = self.resolver.qualified_name(func)
        if qualified in registrations.LIBRARY_KERNELS:
            return True
        if qualified == registrations.LIBRARY_IMPL:
            return call is not None and registrations.below_autograd_key(_literal_strings(call)) is True
        return qualified is None and type(func) is cst.Attribute and func.attr.value in registrations.CUSTOM_OP_METHODS

    def library_receiver(self, node: cst.BaseExpression) -> Optional[cst.Call]:
        """The `torch.library.Library(...)` call a name or `self.<attr>` is bound to."""
        for value in self.expression_values(node)[-2:]:
            if type(value) is cst.Call and self.resolver.qualified_name(value.func) == registrations.LIBRARY_CLASS:
                return value
        return None

    def _formula_arguments(self, call: cst.Call) -> List[cst.BaseExpression]:
        """The functions a call registers to run below autograd (a backward formula, a kernel, a
        backward hook), else nothing."""
        func = call.func
        qualified = self.resolver.qualified_name(func) if type(func) in (cst.Name, cst.Attribute) else None
        if qualified is not None:
            registers = (
                qualified in registrations.LIBRARY_KERNELS
                or qualified in registrations.BACKWARD_HOOK_FUNCTIONS
                or (qualified == registrations.LIBRARY_IMPL and registrations.below_autograd_key(_literal_strings(call)) is True)
            )
        elif type(func) is cst.Attribute:
            method = func.attr.value
            if method in registrations.CUSTOM_OP_METHODS:
                registers = True
            elif method in registrations.BACKWARD_HOOK_METHODS:
                registers = not self.known_non_tensor(func.value)  # a trainer's `register_hook(...)` is another API
            elif method in registrations.LIBRARY_METHODS:
                library = self.library_receiver(func.value)
                below = registrations.below_autograd_key(_literal_strings(call))
                if below is None and library is not None:
                    below = registrations.below_autograd_key(_literal_strings(library))
                registers = library is not None and below is True
            else:
                registers = False
        else:
            registers = False
        return [arg.value for arg in call.args] if registers else []

    def _formulas_registered(self, call: cst.Call) -> None:
        for value in self._formula_arguments(call):
            kind = type(value)
            if kind is cst.Name:
                self.formulas.add(self._name_identity(value.value))
                self._callee_nodes.add(id(value))  # registered: no other use of the function
            elif kind is cst.Attribute and type(value.value) is cst.Name and value.value.value == "self":
                self.formulas.add(("self", value.attr.value))
                self._callee_nodes.add(id(value))
            elif kind is cst.Lambda:
                self._formula_lambdas.add(id(value))

    # -- input rank: the NLL losses ---------------------------------------------------------------
    def spatial_source(
        self, node: Optional[cst.BaseExpression], depth: int = 0, before: Optional[Dict[str, int]] = None
    ) -> Optional[Tuple[str, cst.CSTNode]]:
        """Why a tensor visibly has spatial dimensions, and where: the result of `F.interpolate`
        (`F.upsample*`, an `nn.Upsample` module called), or the `"out"`/`"aux"` output of a
        torchvision segmentation model, directly or through a name bound in this function and
        the methods that keep the rank (`.float()`, `.contiguous()`, `.to(...)`)."""
        if node is None or depth > MAX_DEPTH:
            return None
        kind = type(node)
        if kind is cst.Name:
            values = self.values(node.value)
            if before is not None and node.value in before:
                values = values[: before[node.value]]
            if not values or values[-1] is None:
                return None
            return self.spatial_source(values[-1], depth + 1, {**(before or {}), node.value: len(values) - 1})
        if kind is cst.Subscript:
            element = node.slice[0].slice if len(node.slice) == 1 else None
            output = literal(element.value) if type(element) is cst.Index else None
            if output in _SEGMENTATION_OUTPUTS and type(node.value) is cst.Call:
                model = self._segmentation_model(node.value.func, depth + 1)
                if model is not None:
                    return f'the "{output}" output of `{model}`', node
            return None
        if kind is not cst.Call:
            return None
        func = node.func
        qualified = self.resolver.qualified_name(func)
        if qualified in SPATIAL_FUNCTIONS:
            return f"`{dotted_name(func) or qualified}`", node
        if qualified in _RANK_KEEPING_FUNCTIONS:
            arg = find_arg(node, "input", 0)
            return self.spatial_source(arg.value, depth + 1, before) if arg is not None else None
        if qualified is None and type(func) is cst.Attribute:
            if func.attr.value in _RANK_KEEPING:
                return self.spatial_source(func.value, depth + 1, before)
            if not (type(func.value) is cst.Name and func.value.value == "self"):
                return None
        if qualified is None and type(func) in (cst.Name, cst.Attribute):
            for value in self.expression_values(func)[-2:]:
                built = _unwrap_self_returning(value)
                if type(built) is cst.Call and self.resolver.qualified_name(built.func) in SPATIAL_MODULES:
                    return f"`{dotted_name(func)}` (`{dotted_name(built.func)}`)", node
        return None

    def _segmentation_model(self, func: cst.BaseExpression, depth: int) -> Optional[str]:
        """The torchvision segmentation constructor a called model comes from (`model(x)["out"]`
        for `model = deeplabv3_resnet50(...)`, also as `self.model`)."""
        if type(func) is cst.Call:
            candidates: List[Optional[cst.BaseExpression]] = [func]
        else:
            candidates = self.expression_values(func)[-2:]
        for value in candidates:
            built = _unwrap_self_returning(value)
            if type(built) is cst.Call:
                qualified = self.resolver.qualified_name(built.func) or ""
                if qualified.startswith(SEGMENTATION_MODELS):
                    return dotted_name(built.func) or qualified
        return None

    def _spatial_argument(self, call: cst.Call) -> Optional[Tuple[str, cst.CSTNode]]:
        arg = find_arg(call, "input", 0)
        return self.spatial_source(arg.value) if arg is not None else None

    def _call_key(self, func: cst.BaseExpression) -> Optional[Tuple[Any, ...]]:
        """The key a called name (this function's, else the module's) or `self.<attr>` is watched under."""
        if type(func) is cst.Name:
            if self.values(func.value):
                return ("name", self._function.serial, func.value)
            return ("name", 0, func.value) if func.value in self.frames[0].names else None
        if type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self":
            return ("self", self._function.class_index, func.attr.value)
        return None

    def watch_module(self, call: cst.Call) -> bool:
        """Record the calls of the module `call` builds (bound to a name or `self.<attr>`) whose
        input is visibly spatial, from here on; False when it is not bound so."""
        if id(call) in self._watched_modules:
            return True
        identity = self.bound_calls.get(id(call))
        if identity is None:
            return ("call", id(call)) in self.spatial_calls
        if identity[0] == "self":
            index = self._function.class_index
            if index is None:
                return False
            key: Tuple[Any, ...] = ("self", index, identity[1])
        else:
            key = ("name", self._function.serial, identity[1])
        self._watched_modules[id(call)] = key
        self._watched_keys.add(key)
        return True

    def spatial_use(self, call: cst.Call) -> Optional[Tuple[cst.Call, str, cst.CSTNode]]:
        """A call of the module `call` builds whose input is visibly spatial: (that call, why, where);
        complete at the end of the walk."""
        found = self.spatial_calls.get(("call", id(call)))
        if found is not None:
            return found
        key = self._watched_modules.get(id(call))
        return self.spatial_calls.get(key) if key is not None else None

    # -- helpers ------------------------------------------------------------------------------
    def _non_tensor_producer(self, call: cst.Call) -> bool:
        qualified = self.resolver.qualified_name(call.func)
        if qualified is None:
            name = dotted_name(call.func)
            return name is not None and "." not in name and name in self.local_classes
        if qualified.startswith("torch.") or qualified == "torch":
            return False
        if qualified.startswith(("numpy.", "collections.")) or qualified in _NON_TENSOR_BUILTINS:
            return True
        last = qualified.rsplit(".", 1)[-1]
        return not qualified.startswith("builtins.") and last[:1].isupper()

    def _non_tensor_annotation(self, annotation: cst.BaseExpression) -> bool:
        code = cst.Module([]).code_for_node(annotation)
        if any(word in code for word in _TENSOR_WORDS):
            return False
        if isinstance(annotation, (cst.Name, cst.Attribute)):
            qualified = self.resolver.qualified_name(annotation) or dotted_name(annotation) or ""
            last = qualified.rsplit(".", 1)[-1]
            return (
                qualified.startswith(("numpy.", "builtins."))
                or last[:1].isupper()
                or last in ("int", "str", "float", "bool", "list", "dict")
            )
        return isinstance(annotation, cst.Subscript)  # List[...], Dict[...], Optional[SomeClass]: not a tensor

    def _bind(self, name: str, value: Optional[cst.BaseExpression]) -> None:
        frame = self.frames[-1]
        values = frame.names.setdefault(name, [])
        values.append(value)
        frame.bound_in[name] = (self._blocks[-1][0], len(values))
        if type(value) in _COMPUTED and self.grad_disabled:
            # `with torch.no_grad(): feats = model(x)`: a result computed there carries no graph,
            # also where it is used after the block. (A name bound to a parameter there, `w =
            # model.weight`, is the parameter itself: not marked.)
            self.computed_without_grad.add(id(value))

    def _bind_target(
        self, target: cst.BaseExpression, value: Optional[cst.BaseExpression], part: Optional[TensorState] = None
    ) -> None:
        """Bind `target` to `value`; `part`: what is known of the value a name receives as a part
        of an unpacked one."""
        if isinstance(target, cst.Name):
            self._bind(target.value, value)
            if part is not None:
                self._mark_parts(target, part)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = target.elements
            if (
                part is None
                and type(value) in (cst.Tuple, cst.List)
                and len(value.elements) == len(elements)
                and not any(type(e) is cst.StarredElement for e in (*elements, *value.elements))
            ):
                # `images, masks = batch["image"].cuda(), batch["mask"].cuda()`: part by part.
                for element, part_value in zip(elements, value.elements):
                    self._bind_target(element.value, None, self._unpacked_state(part_value.value, whole=True))
                return
            if part is None and value is not None:
                part = self._unpacked_state(value)
            for element in elements:
                self._bind_target(element.value, None, part)
            if len(elements) == 2 and type(elements[1].value) is cst.Name and self._values_and_indices(value):
                name = elements[1].value.value
                self.frames[-1].index_parts.add((name, len(self.frames[-1].names[name]) - 1))
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value, None, part)
        elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
            index = self._function.class_index
            if index is not None:
                self.classes[index].setdefault(target.attr.value, []).append(value)
        elif isinstance(target, cst.Attribute):
            dotted = dotted_name(target)
            if dotted is not None:
                self._bind(dotted, value)  # `args.seed = ...`, under its dotted name (never a plain name)

    def _values_and_indices(self, value: Optional[cst.BaseExpression]) -> bool:
        """A call that returns a (values, indices) pair: `topk`, `sort`, `kthvalue`, `mode`,
        `cummax`, `cummin` always, and `max`, `min`, `median`, `nanmedian` given a dimension
        (`torch.max(a, b)` is elementwise), as torch functions or as methods of an unknown value."""
        if type(value) is not cst.Call:
            return False
        func = value.func
        qualified = self.resolver.qualified_name(func)
        if qualified is not None:
            if not qualified.startswith("torch.") or qualified.count(".") != 1:
                return False
            name, dim_at = qualified[len("torch.") :], 1
        elif type(func) is cst.Attribute:
            name, dim_at = func.attr.value, 0
        else:
            return False
        if name in _PAIR_RESULTS:
            return True
        if name not in _PAIR_RESULTS_WITH_DIM:
            return False
        return any(arg.keyword is not None and arg.keyword.value == "dim" for arg in value.args) or (
            len(value.args) > dim_at
            and value.args[dim_at].keyword is None
            and type(literal(value.args[dim_at].value)) is int  # `x.max(-1)`, not `torch.max(a, b)`
        )

    def bound_as_indices(self, name: str) -> bool:
        """`name`'s last binding is the indices of a (values, indices) result: an int64 tensor."""
        frame = self._function
        values = frame.names.get(name)
        return bool(values) and values[-1] is None and (name, len(values) - 1) in frame.index_parts

    def _unpacked_state(self, value: cst.BaseExpression, whole: bool = False) -> Optional[TensorState]:
        """What the parts of an unpacked value are (`whole`: what the value itself is): computed
        where no gradient flows (`cls_tokens, patch_tokens = model.tokens(x)` under `no_grad()`),
        or parts of a value without gradient (`images, masks = batch` for a batch read from data)."""
        kind = type(value)
        if kind in _COMPUTED and self.grad_disabled:
            return TensorState(True, False)
        if whole or kind is cst.Name or kind is cst.Subscript or kind is cst.Attribute or kind is cst.Call:
            state = self.tensor_state(value)
            if state.no_grad:
                return state
        return None

    def grad_effect(self, item: cst.BaseExpression) -> Optional[bool]:
        """What a `with` item does to gradients: False off, True on, None neither or unknown."""
        return self._grad_effect(item) if isinstance(item, (cst.Call, cst.Name, cst.Attribute)) else None

    def _grad_effect(self, call: cst.BaseExpression) -> Optional[bool]:
        """False when a `with` item or decorator turns gradients off, True when on, None otherwise."""
        func = call.func if isinstance(call, cst.Call) else call
        qualified = self.resolver.qualified_name(func)
        if qualified in NO_GRAD_CONTEXTS:
            if isinstance(call, cst.Call) and call.args and qualified.endswith("inference_mode"):
                return False if literal(call.args[0].value) is not False else None
            return False
        if qualified in GRAD_ON_CONTEXTS:
            return True
        if qualified in GRAD_SWITCHES and isinstance(call, cst.Call) and call.args:
            value = literal(call.args[0].value)
            return None if not isinstance(value, bool) else value
        return None

    # -- the walk -----------------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        name = node.name.value
        if len(self.frames) == 1:
            self.local_classes.add(name)
        self._bind(name, None)
        frame = self._new_frame("class")
        for base in node.bases:
            if base.keyword is not None:
                continue
            qualified = self.resolver.qualified_name(base.value) or dotted_name(base.value) or ""
            last = qualified.rsplit(".", 1)[-1]
            if qualified in _AUTOGRAD_FUNCTIONS or last in self.function_classes:
                frame.autograd_function = True
            if last.endswith("Loader") or last in self.loader_classes:
                self.loader_classes.add(name)
            if qualified == _LIGHTNING_MODULE or last in self.lightning_classes:
                frame.lightning_module = True
        if frame.autograd_function:
            self.function_classes.add(name)
        if frame.lightning_module:
            self.lightning_classes.add(name)
        self.frames.append(frame)
        self.classes.append({})

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.frames.pop()

    def _new_frame(self, kind: str, **values: Any) -> _Frame:
        self._serial += 1
        return _Frame(kind, serial=self._serial, **values)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bind(node.name.value, None)
        owner = self.frames[-1]
        frame = self._new_frame("function", class_index=len(self.classes) - 1 if owner.kind == "class" else None)
        # A backward formula, a custom op's body or kernel runs without a backward of its own:
        # only its forward conditions count, as where no gradient flows.
        frame.grad_off = any(
            self._grad_effect(decorator.decorator) is False or self._registers_formula(decorator.decorator)
            for decorator in node.decorators
        ) or (owner.autograd_function and node.name.value in _FORMULA_METHODS)
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            frame.names[param.name.value] = [None]
            if param.annotation is not None:
                frame.annotations[param.name.value] = param.annotation.annotation
            if _state_dict_parameter(param):
                frame.part_states[(param.name.value, 0)] = _NO_GRAD_DATA
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                frame.names[star.name.value] = [None]
        positional = [*params.posonly_params, *params.params]
        if owner.lightning_module and node.name.value in _LIGHTNING_STEPS and len(positional) > 1:
            # Lightning calls `training_step(batch, batch_idx)` with what the loader yields: data.
            frame.part_states[(positional[1].name.value, 0)] = _NO_GRAD_DATA
        static = any(dotted_name(d.decorator) in ("staticmethod",) for d in node.decorators)
        if owner.kind == "class" and not static:
            positional = positional[1:]  # `self`/`cls`: the call's receiver
        frame.params = {param.name.value: index for index, param in enumerate(positional)}
        frame.params.update((param.name.value, -1) for param in params.kwonly_params)
        self._callee_nodes.update(
            id(name)
            for name in (node.name, *(param.name for param in (*params.posonly_params, *params.params, *params.kwonly_params)))
        )
        if owner.kind == "class" and len(self.frames) == 2:
            self.identities.append(("self", node.name.value))
        elif len(self.frames) == 1:
            self.identities.append((None, node.name.value))
        elif owner.kind == "function":
            # A nested function (a hook, a closure): known by its enclosing function's frame.
            identity = (_LOCAL, f"{owner.serial}.{node.name.value}")
            owner.local_defs[node.name.value] = identity
            self._local_def_names[node.name.value] = self._local_def_names.get(node.name.value, 0) + 1
            self.identities.append(identity)
        else:
            self.identities.append(None)
        self.frames.append(frame)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._left_function = (original_node, self.frames[-1])
        self._pop_function()
        self.identities.pop()

    def rebound_parameters(self, node: cst.FunctionDef) -> Set[str]:
        """The parameters `node`'s body binds again (`mode = mode or "mean"`, a loop or `with`
        target, a nested definition), asked by a visitor leaving `node` after this tracker: its
        frame holds every binding, and no second walk of the body is needed."""
        left, frame = self._left_function
        if left is not node:
            raise LookupError("rebound_parameters is asked while leaving the function, after the scope tracker")
        params = node.params
        names = (param.name.value for param in (*params.posonly_params, *params.params, *params.kwonly_params))
        return {name for name in names if len(frame.names.get(name, ())) > 1}

    def _pop_function(self) -> None:
        frame = self.frames.pop()
        for name in frame.local_defs:
            count = self._local_def_names[name] - 1
            if count:
                self._local_def_names[name] = count
            else:
                del self._local_def_names[name]

    def visit_Lambda(self, node: cst.Lambda) -> None:
        grad_off = self._function.grad_off or id(node) in self._formula_lambdas
        frame = self._new_frame("function", class_index=self._function.class_index, grad_off=grad_off)
        for param in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
            frame.names[param.name.value] = [None]
        self.frames.append(frame)

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self._pop_function()

    def visit_Assign(self, node: cst.Assign) -> None:
        # `emb = nn.Embedding(...)`, `self.emb = ...`: the binding is no use of the object; calls of
        # it are recorded as for functions (`only_called_without_grad`).
        if len(node.targets) == 1 and type(node.value) is cst.Call:
            target = node.targets[0].target
            if type(target) is cst.Name:
                identity: Tuple[Optional[str], str] = (None, target.value)
            elif type(target) is cst.Attribute and type(target.value) is cst.Name and target.value.value == "self":
                identity = ("self", target.attr.value)
            else:
                return
            self._callee_nodes.add(id(target))
            self.bound_calls[id(node.value)] = identity

    def leave_Assign(self, original_node: cst.Assign) -> None:
        for target in original_node.targets:
            self._bind_target(target.target, original_node.value)

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        target = original_node.target
        if isinstance(target, cst.Name):
            self._function.annotations[target.value] = original_node.annotation.annotation
        if original_node.value is not None:
            self._bind_target(target, original_node.value)

    def leave_AugAssign(self, original_node: cst.AugAssign) -> None:
        self._bind_target(original_node.target, None)

    def leave_NamedExpr(self, original_node: cst.NamedExpr) -> None:
        self._bind_target(original_node.target, original_node.value)

    def visit_While(self, node: cst.While) -> None:
        self._loop_bodies.add(id(node.body))

    def visit_For(self, node: cst.For) -> None:
        self._loop_bodies.add(id(node.body))
        self._bind_target(node.target, None)
        self._iterated(node.target, node.iter)
        self._loop_table(node.target, node.iter)
        counter = _counter_target(node.target, node.iter, self.resolver)
        if counter is not None:
            self._function.counters.add(counter)
        for part in self._loader_targets(node.target, node.iter):
            self._mark_parts(part, _NO_GRAD_DATA)
        self._dict_iteration(node.target, node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        if id(node) not in self._bound_clauses:
            self._bind_target(node.target, None)

    def _dict_iteration(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """`for k, v in state_dict.items()`: the items of a dict of tensors without gradient have none,
        and the items of a checkpoint dict `torch.load` read are tensors read from the file (on the
        CPU when it was loaded there). `torch.load`'s own result is not `plain` because it may be a
        pickled module; a loop over a dict's items that resizes them handles tensors."""
        if type(iterable) is cst.Call and type(iterable.func) is cst.Attribute and not iterable.args:
            if iterable.func.attr.value in _DICT_ITERATION:
                state = self.tensor_state(iterable.func.value)
                if state.no_grad:
                    self._mark_parts(target, replace(state, plain=True))

    def _comprehension(self, node: cst.BaseComp) -> None:
        # The element (`dist.sample()` in `[dist.sample() for dist in probs]`) is visited before
        # its `for` clauses: what their names iterate over, and that they are bound (so the
        # element never reads a binding made before the comprehension), are recorded first.
        clause: Optional[cst.CompFor] = node.for_in
        while clause is not None:
            self._iterated(clause.target, clause.iter)
            self._bind_target(clause.target, None)
            self._bound_clauses.add(id(clause))
            clause = clause.inner_for_in

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def _iterated(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        if type(target) is cst.Name:
            self._function.iterated.setdefault(target.value, []).append(iterable)

    def _loop_table(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """`for size, seed in [(0.2, 42), (0.8, 7)]:` (or over a name bound once to such a table):
        the expressions each loop variable takes, by column."""
        if type(iterable) is cst.Name:
            bound = self.values(iterable.value)
            iterable = bound[0] if len(bound) == 1 and bound[0] is not None else iterable
        if type(iterable) not in (cst.List, cst.Tuple) or not iterable.elements:
            return
        rows = [element.value for element in iterable.elements if type(element) is cst.Element]
        if len(rows) != len(iterable.elements):
            return
        if type(target) is cst.Name:
            columns = {target.value: rows}
        elif type(target) in (cst.Tuple, cst.List) and all(
            type(e) is cst.Element and type(e.value) is cst.Name for e in target.elements
        ):
            width = len(target.elements)
            if not all(type(row) in (cst.Tuple, cst.List) and len(row.elements) == width for row in rows):
                return
            if any(type(item) is not cst.Element for row in rows for item in row.elements):
                return
            columns = {e.value.value: [row.elements[i].value for row in rows] for i, e in enumerate(target.elements)}
        else:
            return
        frame = self._function
        for name, column in columns.items():
            frame.loop_tables[name] = (len(frame.names.get(name, ())), column)

    def loop_values(self, name: str) -> Optional[List[cst.BaseExpression]]:
        """What a loop variable over a literal table can be (see `_loop_table`), while the loop's
        binding is its last one in the enclosing function; None otherwise."""
        frame = self._function
        found = frame.loop_tables.get(name)
        if found is None or found[0] != len(frame.names.get(name, ())):
            return None
        return found[1]

    def iterated(self, name: str) -> List[cst.BaseExpression]:
        """What a name bound by `for name in ...` in the enclosing function iterated over."""
        return list(self._function.iterated.get(name, ()))

    def visit_AsName(self, node: cst.AsName) -> None:
        if isinstance(node.name, (cst.Name, cst.Tuple, cst.List)):
            # `with ctx.Pool(4) as pool:` binds the pool, whose calls start processes.
            self._bind_target(node.name, self._with_values.pop(id(node), None))

    def visit_If(self, node: cst.If) -> None:
        on_cpu_if_true, on_cpu_if_false = cpu_guard(node.test)
        if on_cpu_if_true:
            self._guarded_blocks[id(node.body)] = on_cpu_if_true
        if on_cpu_if_false and isinstance(node.orelse, cst.Else):
            self._guarded_blocks[id(node.orelse.body)] = on_cpu_if_false
        if type(node.test) in _NARROWING_TESTS:
            if_true, if_false = narrowing(node.test)
            if if_true:
                self._narrowing_blocks[id(node.body)] = if_true
            if if_false and type(node.orelse) is cst.Else:
                self._narrowing_blocks[id(node.orelse.body)] = if_false

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        loop_body = bool(self._loop_bodies) and id(node) in self._loop_bodies
        if loop_body:
            self._loop_bodies.discard(id(node))
        self._blocks.append((id(node), loop_body))
        if self._guarded_blocks:
            names = self._guarded_blocks.pop(id(node), None)
            if names:
                self.cpu_blocks.append((id(node), names))
        if self._narrowing_blocks:
            narrowed = self._narrowing_blocks.pop(id(node), None)
            if narrowed:
                counts = {name: self._binding_count(name) for name in narrowed}
                self.narrowed_blocks.append((id(node), self._function, narrowed, counts))

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self._blocks.pop()
        if self.cpu_blocks and self.cpu_blocks[-1][0] == id(original_node):
            self.cpu_blocks.pop()
        if self.narrowed_blocks and self.narrowed_blocks[-1][0] == id(original_node):
            self.narrowed_blocks.pop()

    def _binding_count(self, name: str) -> int:
        head, _, rest = name.partition(".")
        if head == "self" and rest and "." not in rest:
            return len(self.attribute_values(rest))
        return len(self.values(name))

    def narrowed(self, node: cst.BaseExpression) -> Optional[Tuple[Any, ...]]:
        """The values a name (or `self.<attr>`, an attribute chain) can hold here, from the `if`
        tests around: `mode` in the body of `if mode == "nearest":` (or `mode in ("nearest",
        "area")`, the `else` of `if mode != "nearest":`) holds that value, unless it was
        rebound in the block."""
        if not self.narrowed_blocks:
            return None
        name = dotted_name(node)
        if name is None:
            return None
        function = self._function
        for _, frame, narrowed, counts in reversed(self.narrowed_blocks):
            if frame is function and name in narrowed:
                return narrowed[name] if self._binding_count(name) == counts[name] else None
        return None

    def narrowed_parameters(self) -> List[Tuple[str, Tuple[Any, ...]]]:
        """The enclosing function's parameters that the `if` tests around narrow, each with the
        values it holds here (`dims` in the body of `elif dims == 3:`), when the parameter's own
        binding is its only one so far: what it holds is what the caller passed."""
        found: List[Tuple[str, Tuple[Any, ...]]] = []
        function = self._function
        for _, frame, narrowed, counts in self.narrowed_blocks:
            if frame is function:
                for name, held in narrowed.items():
                    if name in function.params and counts[name] == 1 and self._binding_count(name) == 1:
                        found.append((name, held))
        return found

    # A one-line body (`if not x.is_cuda: return f(x)`) is guarded the same way.
    visit_SimpleStatementSuite = visit_IndentedBlock
    leave_SimpleStatementSuite = leave_IndentedBlock

    def visit_With(self, node: cst.With) -> None:
        effects = [
            self._grad_effect(item.item) for item in node.items if isinstance(item.item, (cst.Call, cst.Name, cst.Attribute))
        ]
        known = [effect for effect in effects if effect is not None]
        self.with_grad.append(known[-1] if known else None)
        self.without_init.append(any(type(item.item) is cst.Call and self._skips_init(item.item) for item in node.items))
        for item in node.items:
            if item.asname is not None and type(item.item) is cst.Call:
                self._with_values[id(item.asname)] = item.item

    def leave_With(self, original_node: cst.With) -> None:
        self.with_grad.pop()
        self.without_init.pop()

    def _skips_init(self, call: cst.Call) -> bool:
        """`torch.device("meta")`, Fabric's `init_module(empty_init=True)`, Accelerate's
        `init_empty_weights()`, Transformers' `no_init_weights()`: modules built there get no
        initial weights drawn (they are loaded afterwards)."""
        qualified = self.resolver.qualified_name(call.func)
        if qualified == "torch.device":
            return bool(call.args) and literal(call.args[0].value) == "meta"
        if qualified in _EMPTY_INIT_CONTEXTS:
            return True
        if type(call.func) is cst.Attribute and call.func.attr.value == "init_module":
            empty = find_arg(call, "empty_init")
            return empty is not None and literal(empty.value) is True
        return False

    @property
    def skips_init(self) -> bool:
        """Whether modules built here draw no initial weights (see `_skips_init`)."""
        return any(self.without_init)

    def visit_Expr(self, node: cst.Expr) -> None:
        # `torch.set_grad_enabled(False)` as a statement: off for the rest of the function.
        if isinstance(node.value, cst.Call):
            effect = self._grad_effect(node.value)
            if effect is not None and self.resolver.qualified_name(node.value.func) in GRAD_SWITCHES:
                self._function.grad_off = not effect

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        # Importing a function is no use of it.
        names = [node.name, node.asname.name if node.asname is not None else None]
        self._callee_nodes.update(id(name) for name in names if type(name) is cst.Name)

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._callee_nodes:
            self.escapes.add(self._name_identity(node.value))

    def _name_identity(self, name: str) -> Tuple[Optional[str], str]:
        """How a name calls a function of this file: one of the enclosing functions' nested
        functions, else the module's."""
        if name in self._local_def_names:
            for frame in reversed(self.frames):
                found = frame.local_defs.get(name)
                if found is not None:
                    return found
        return (None, name)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._callee_nodes.add(id(node.attr))  # an attribute's name is no use of a function of that name
        if type(node.value) is cst.Name and node.value.value == "self" and id(node) not in self._callee_nodes:
            self.escapes.add(("self", node.attr.value))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func  # exact type tests: this runs for every call and name (see names.dotted_name)
        kind = type(func)
        if kind is cst.Name:
            self.callers.setdefault(self._name_identity(func.value), []).append((self.grad_disabled, self.function_identity))
            self._callee_nodes.add(id(func))
        elif kind is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self":
            self.callers.setdefault(("self", func.attr.value), []).append((self.grad_disabled, self.function_identity))
            self._callee_nodes.add(id(func))
        if kind is cst.Attribute:
            last = func.attr.value
        elif kind is cst.Name:
            last = self.resolver.module_final.get(func.value) or func.value
            last = last.rsplit(".", 1)[-1]
        else:
            last = None
        if last is not None and (last in _REGISTRATION_SEGMENTS or last.startswith("register_")):
            self._formulas_registered(node)
        if self._watched_keys and kind in (cst.Name, cst.Attribute):
            key = self._call_key(func)
            if key in self._watched_keys and key not in self.spatial_calls:
                found = self._spatial_argument(node)
                if found is not None:
                    self.spatial_calls[key] = (node, *found)
        elif kind is cst.Call and (dotted_name(func.func) or "").endswith("Loss"):
            found = self._spatial_argument(node)  # `nn.CrossEntropyLoss()(F.interpolate(...), y)`
            if found is not None:
                self.spatial_calls[("call", id(func))] = (node, *found)
        # Before the rules visit this call (the tracker comes first in the walk).
        for arg in node.args:
            if arg.star == "**" and type(arg.value) is cst.Name:
                pairs = self.keyword_dict(arg.value.value)
                if pairs is not None:
                    remember_keyword_dict(arg, pairs)


def _state_dict_parameter(param: cst.Param) -> bool:
    """A parameter named (`state_dict`, `pretrained_state_dict`, `checkpoint`, `ckpt`, `sd`) or annotated
    (`sd: StateDict`) as a state dict or checkpoint: a dict of detached tensors."""
    name = param.name.value.lower()
    words = name.split("_")
    if "state_dict" in name or "statedict" in name or name == "sd" or any(word in _STATE_DICT_NAMES for word in words):
        return True
    if param.annotation is None:
        return False
    annotation = (dotted_name(param.annotation.annotation) or "").rsplit(".", 1)[-1].lower().replace("_", "")
    return "statedict" in annotation


def cpu_guard(test: cst.BaseExpression) -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """The tensors an `if` test puts on the CPU: (in its body, in its `else`). Device tests:
    `x.is_cuda`, `x.is_cpu`, `x.device.type == "cpu"` (or `"cuda"`, `!=`), negated with `not`,
    and joined with `and` (both hold in the body)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        body, orelse = cpu_guard(test.expression)
        return orelse, body
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return cpu_guard(test.left)[0] | cpu_guard(test.right)[0], frozenset()
    if isinstance(test, cst.Attribute) and test.attr.value in ("is_cuda", "is_cpu"):
        name = dotted_name(test.value)
        if name is None:
            return frozenset(), frozenset()
        return (frozenset({name}), frozenset()) if test.attr.value == "is_cpu" else (frozenset(), frozenset({name}))
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        left, target = test.left, test.comparisons[0]
        device = literal(target.comparator)
        is_type = (
            isinstance(left, cst.Attribute)
            and left.attr.value == "type"
            and isinstance(left.value, cst.Attribute)
            and left.value.attr.value == "device"
        )
        if is_type and device in ("cpu", "cuda") and isinstance(target.operator, (cst.Equal, cst.NotEqual)):
            name = dotted_name(left.value.value)
            if name is None:
                return frozenset(), frozenset()
            cpu_when_equal = device == "cpu"
            if isinstance(target.operator, cst.NotEqual):
                cpu_when_equal = not cpu_when_equal
            return (frozenset({name}), frozenset()) if cpu_when_equal else (frozenset(), frozenset({name}))
    return frozenset(), frozenset()


def _counter_target(target: cst.BaseExpression, iterable: cst.BaseExpression, resolver: NameResolver) -> Optional[str]:
    """The name a `for` loop binds to an int: the target of `range(...)`, enumerate's index."""
    if not isinstance(iterable, cst.Call):
        return None
    name = resolver.qualified_name(iterable.func)
    if name == "builtins.range" and isinstance(target, cst.Name):
        return target.value
    if (
        name == "builtins.enumerate"
        and isinstance(target, cst.Tuple)
        and target.elements
        and isinstance(target.elements[0].value, cst.Name)
    ):
        return target.elements[0].value.value
    return None


def _cpu_location(value: cst.BaseExpression, resolver: NameResolver) -> bool:
    """A `map_location` that puts every tensor on the CPU: `"cpu"`, `torch.device("cpu")`, a
    function that returns its storage argument (`lambda storage, loc: storage`), a dict mapping
    every device to the CPU."""
    text = literal(value)
    if isinstance(text, str):
        return text.startswith("cpu")
    if isinstance(value, cst.Call) and resolver.qualified_name(value.func) == "torch.device":
        return (
            bool(value.args) and isinstance(literal(value.args[0].value), str) and literal(value.args[0].value).startswith("cpu")
        )
    if isinstance(value, cst.Lambda):
        params = value.params.params
        return bool(params) and isinstance(value.body, cst.Name) and value.body.value == params[0].name.value
    if isinstance(value, cst.Dict) and value.elements:
        return all(
            isinstance(e, cst.DictElement) and isinstance(literal(e.value), str) and literal(e.value).startswith("cpu")
            for e in value.elements
        )
    return False


def _moves_to_cpu(call: cst.Call) -> bool:
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value == "device":
            value = literal(arg.value)
            if isinstance(value, str):
                return value.startswith("cpu")
            if arg.keyword is None:
                return False
    return False


def _operands(node: cst.BaseExpression) -> List[cst.BaseExpression]:
    kind = type(node)
    if kind is cst.UnaryOperation:
        return [node.expression]
    if kind is cst.Comparison:
        return [node.left, *(target.comparator for target in node.comparisons)]
    return [node.left, node.right]


def _shape_like(node: cst.BaseExpression, resolver: NameResolver) -> bool:
    """A shape, a size or a number read off a tensor (`x.shape[-2:]`, `x.size(0)`, `len(x)`)."""
    kind = type(node)
    if kind is cst.Subscript:
        return _shape_like(node.value, resolver)
    if kind is cst.Attribute:
        return node.attr.value in _SHAPE_ATTRIBUTES
    if kind is cst.Call:
        func = node.func
        if type(func) is cst.Attribute and func.attr.value in _SHAPE_METHODS:
            return True
        return type(func) is cst.Name and resolver.qualified_name(func) in _NUMBER_BUILTINS
    return False


def _torch_function(qualified: str) -> bool:
    """A torch function that computes tensors from tensors (`torch.cat`, `F.interpolate`)."""
    namespace, _, last = qualified.rpartition(".")
    return namespace in _TENSOR_NAMESPACES and last[:1].islower() and qualified not in _NOT_TENSOR_FUNCTIONS


def _literal_strings(call: cst.Call) -> List[Any]:
    """The literal strings among a call's arguments (and in literal tuples or lists of them)."""
    found: List[Any] = []
    for arg in call.args:
        value = literal(arg.value)
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, (tuple, list)):
            found.extend(item for item in value if isinstance(item, str))
    return found


def _unwrap_self_returning(node: Optional[cst.BaseExpression]) -> Optional[cst.BaseExpression]:
    """`deeplabv3_resnet50(...).to(device).eval()` -> the constructor call."""
    for _ in range(MAX_DEPTH):
        if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in _SELF_RETURNING:
            node = node.func.value
        else:
            break
    return node


def narrowing(test: cst.BaseExpression) -> Tuple[Dict[str, Tuple[Any, ...]], Dict[str, Tuple[Any, ...]]]:
    """The values an `if` test pins names to: (in its body, in its `else`). `mode == "nearest"`,
    `mode in ("nearest", "area")` (and `!=`, `not in` for the `else`), negated with `not`,
    joined with `and` (both hold in the body) or `or` on one name (either value)."""
    kind = type(test)
    if kind is cst.UnaryOperation and type(test.operator) is cst.Not:
        body, orelse = narrowing(test.expression)
        return orelse, body
    if kind is cst.BooleanOperation:
        left, right = narrowing(test.left)[0], narrowing(test.right)[0]
        if type(test.operator) is cst.And:
            merged = dict(left)
            for name, values in right.items():
                merged[name] = tuple(v for v in merged[name] if v in values) if name in merged else values
            return merged, {}
        if len(left) == 1 and left.keys() == right.keys():
            name = next(iter(left))
            return {name: tuple(dict.fromkeys(left[name] + right[name]))}, {}
        return {}, {}
    if kind is not cst.Comparison or len(test.comparisons) != 1:
        return {}, {}
    target = test.comparisons[0]
    operator = type(target.operator)
    left, right = test.left, target.comparator
    if operator in (cst.Equal, cst.NotEqual) and dotted_name(left) is None:
        left, right = right, left  # `"nearest" == mode`
    name = dotted_name(left)
    if name is None:
        return {}, {}
    value = literal(right)
    if operator in (cst.Equal, cst.NotEqual):
        if value is NOT_LITERAL or isinstance(value, (tuple, list, dict)):
            return {}, {}
        values: Tuple[Any, ...] = (value,)
    elif operator in (cst.In, cst.NotIn):
        if not isinstance(value, (tuple, list)) or not value or any(isinstance(v, (tuple, list, dict)) for v in value):
            return {}, {}
        values = tuple(value)
    else:
        return {}, {}
    return ({name: values}, {}) if operator in (cst.Equal, cst.In) else ({}, {name: values})
