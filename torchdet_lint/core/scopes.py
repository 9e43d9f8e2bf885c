"""What the code around a node says, read in the one shared traversal: the values
bound to names in the enclosing function (and module), the `self.<attr>`
bindings of the enclosing class, parameter annotations, and whether gradients
are off here (`torch.no_grad()`, `inference_mode`, `set_grad_enabled(False)`,
a decorated function). Local dataflow only: one pass, no fixed point.

It also records, for `**name` arguments whose dictionary is visible (a dict
literal or `dict(key=...)` bound in the same function or module), the keywords
they carry, so that `names.find_arg` sees them (RULES.md, "Keyword dictionaries").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.core.names import NameResolver, dotted_name, find_arg, literal, remember_keyword_dict

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
_LEGACY_CPU_CONSTRUCTORS = frozenset(f"torch.{kind}Tensor" for kind in _LEGACY_KINDS)
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
    no_grad_parts: Set[Tuple[str, int]] = field(default_factory=set)  # (name, binding) of tuple parts computed without grad


_EMPTY_INIT_CONTEXTS = frozenset(
    {
        "accelerate.init_empty_weights",
        "accelerate.big_modeling.init_empty_weights",
        "transformers.modeling_utils.no_init_weights",
    }
)
# Values that are computed, not an alias of an existing tensor (`model(x)`, `a * b`).
_COMPUTED = frozenset({cst.Call, cst.BinaryOperation, cst.UnaryOperation})


@dataclass(frozen=True)
class TensorState:
    """What is known of a tensor expression: it carries no gradient, it lives on the CPU."""

    no_grad: bool = False
    cpu: bool = False


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
        answer = bool(calls) and all(off or self.only_called_without_grad(caller) for off, caller in calls)
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
                return TensorState(self.tensor_state(node, 1).no_grad, True)
        kind = type(node)
        if kind is cst.Name:
            values = self.values(node.value)
            if before is not None and node.value in before:
                values = values[: before[node.value]]
            if values and values[-1] is None and (node.value, len(values) - 1) in self._function.no_grad_parts:
                return TensorState(True, False)
            if not values or values[-1] is None:
                return TensorState()
            # The value's own mentions of the name are its earlier bindings (`x = x.float()`).
            state = self.tensor_state(values[-1], depth + 1, {**(before or {}), node.value: len(values) - 1})
            if id(values[-1]) in self.computed_without_grad and not state.no_grad:
                return TensorState(True, state.cpu)
            return state
        if kind is cst.Subscript:
            return self.tensor_state(node.value, depth + 1, before)
        if kind is not cst.Call:
            return TensorState()
        qualified = self.resolver.qualified_name(node.func)
        if qualified == "torch.from_numpy" or qualified in _LEGACY_CPU_CONSTRUCTORS:
            return TensorState(True, True)
        if qualified in _LEGACY_CUDA_CONSTRUCTORS:
            return TensorState(True, False)
        if qualified in _LOADERS:
            keyword, position, default_cpu = _LOADERS[qualified]
            location = find_arg(node, keyword, position)
            return TensorState(False, default_cpu if location is None else _cpu_location(location.value, self.resolver))
        if qualified in _FACTORIES:
            keywords = {arg.keyword.value: arg.value for arg in node.args if arg.keyword is not None}
            if "device" in keywords:
                on_cpu = literal(keywords["device"]) in ("cpu", None)
            else:
                on_cpu = not qualified.endswith("_like")
            no_grad = literal(keywords.get("requires_grad")) in (False, None) if "requires_grad" in keywords else True
            return TensorState(no_grad, on_cpu)
        if isinstance(node.func, cst.Attribute) and qualified is None:
            method = node.func.attr.value
            inner = self.tensor_state(node.func.value, depth + 1, before)
            if method == "numpy":
                return TensorState(True, True)
            if method == "detach":
                return TensorState(True, inner.cpu)
            if method == "cpu":
                return TensorState(inner.no_grad, True)
            if method in ("cuda", "to"):
                return TensorState(inner.no_grad, method == "to" and _moves_to_cpu(node))
            if method in _NEUTRAL_METHODS:
                return inner
            if method in _DICT_READS:
                return TensorState(False, inner.cpu)  # a tensor of a state dict read from the CPU
        return TensorState()

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
        self.frames[-1].names.setdefault(name, []).append(value)
        if type(value) in _COMPUTED and self.grad_disabled:
            # `with torch.no_grad(): feats = model(x)`: a result computed there carries no graph,
            # also where it is used after the block. (A name bound to a parameter there, `w =
            # model.weight`, is the parameter itself: not marked.)
            self.computed_without_grad.add(id(value))

    def _bind_target(self, target: cst.BaseExpression, value: Optional[cst.BaseExpression]) -> None:
        if isinstance(target, cst.Name):
            self._bind(target.value, value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind_target(element.value, None)
                if type(element.value) is cst.Name and type(value) in _COMPUTED and self.grad_disabled:
                    # `cls_tokens, patch_tokens = model.tokens(x)` under `no_grad()`: computed there.
                    frame = self.frames[-1]
                    frame.no_grad_parts.add((element.value.value, len(frame.names[element.value.value]) - 1))
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value, None)
        elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
            index = self._function.class_index
            if index is not None:
                self.classes[index].setdefault(target.attr.value, []).append(value)
        elif isinstance(target, cst.Attribute):
            dotted = dotted_name(target)
            if dotted is not None:
                self._bind(dotted, value)  # `args.seed = ...`, under its dotted name (never a plain name)

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
        if len(self.frames) == 1:
            self.local_classes.add(node.name.value)
        self._bind(node.name.value, None)
        self.frames.append(_Frame("class"))
        self.classes.append({})

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.frames.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bind(node.name.value, None)
        owner = self.frames[-1]
        frame = _Frame("function", class_index=len(self.classes) - 1 if owner.kind == "class" else None)
        frame.grad_off = any(self._grad_effect(decorator.decorator) is False for decorator in node.decorators)
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            frame.names[param.name.value] = [None]
            if param.annotation is not None:
                frame.annotations[param.name.value] = param.annotation.annotation
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                frame.names[star.name.value] = [None]
        self._callee_nodes.update(
            id(name)
            for name in (node.name, *(param.name for param in (*params.posonly_params, *params.params, *params.kwonly_params)))
        )
        if owner.kind == "class" and len(self.frames) == 2:
            self.identities.append(("self", node.name.value))
        elif len(self.frames) == 1:
            self.identities.append((None, node.name.value))
        else:
            self.identities.append(None)
        self.frames.append(frame)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.frames.pop()
        self.identities.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        frame = _Frame("function", class_index=self._function.class_index, grad_off=self._function.grad_off)
        for param in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
            frame.names[param.name.value] = [None]
        self.frames.append(frame)

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.frames.pop()

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

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target, None)
        counter = _counter_target(node.target, node.iter, self.resolver)
        if counter is not None:
            self._function.counters.add(counter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind_target(node.target, None)

    def visit_AsName(self, node: cst.AsName) -> None:
        if isinstance(node.name, (cst.Name, cst.Tuple, cst.List)):
            # `with ctx.Pool(4) as pool:` binds the pool (RULES.md, "Process boundaries").
            self._bind_target(node.name, self._with_values.pop(id(node), None))

    def visit_If(self, node: cst.If) -> None:
        on_cpu_if_true, on_cpu_if_false = cpu_guard(node.test)
        if on_cpu_if_true:
            self._guarded_blocks[id(node.body)] = on_cpu_if_true
        if on_cpu_if_false and isinstance(node.orelse, cst.Else):
            self._guarded_blocks[id(node.orelse.body)] = on_cpu_if_false

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if self._guarded_blocks:
            names = self._guarded_blocks.pop(id(node), None)
            if names:
                self.cpu_blocks.append((id(node), names))

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        if self.cpu_blocks and self.cpu_blocks[-1][0] == id(original_node):
            self.cpu_blocks.pop()

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

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._callee_nodes:
            self.escapes.add((None, node.value))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._callee_nodes.add(id(node.attr))  # an attribute's name is no use of a function of that name
        if type(node.value) is cst.Name and node.value.value == "self" and id(node) not in self._callee_nodes:
            self.escapes.add(("self", node.attr.value))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func  # exact type tests: this runs for every call and name (see names.dotted_name)
        if type(func) is cst.Name:
            self.callers.setdefault((None, func.value), []).append((self.grad_disabled, self.function_identity))
            self._callee_nodes.add(id(func))
        elif type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self":
            self.callers.setdefault(("self", func.attr.value), []).append((self.grad_disabled, self.function_identity))
            self._callee_nodes.add(id(func))
        # Before the rules visit this call (the tracker comes first in the walk).
        for arg in node.args:
            if arg.star == "**" and type(arg.value) is cst.Name:
                pairs = self.keyword_dict(arg.value.value)
                if pairs is not None:
                    remember_keyword_dict(arg, pairs)


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
