"""Which catalog operations a call performs (`rules/ops.toml`, `rules/third_party.toml`),
at the file's target torch version: the one matcher behind TDL201-TDL203 and
the file summaries' record of the operations an entry point reaches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import libcst as cst

from torchdet_lint.core.catalog import (
    DETERMINISTIC_ALTERNATIVE,
    HUB_MODULE,
    IGNORES_FLAG,
    NOT_LITERAL,
    OPAQUE_DEFAULT,
    RAISES,
    REQUIRED,
    THIRD_PARTY_KIND,
    TORCH_KIND,
    Calls,
    Case,
    Catalog,
    Form,
    OneOf,
    Operation,
    Pattern,
    Sized,
    Symbol,
    Truth,
    evaluate_all,
    load_catalog,
    version_text,
)
from torchdet_lint.core.names import display_length, dotted_name, find_arg, literal, opaque_keywords
from torchdet_lint.core.traversal import sub_nodes

_SEVERITY = {RAISES: 2, IGNORES_FLAG: 2, DETERMINISTIC_ALTERNATIVE: 1}
# Receivers that are almost never tensors: `self.gather(...)` is the class's own method.
_NON_TENSOR_RECEIVERS = frozenset({"self", "cls"})


@dataclass(frozen=True)
class OperationMatch:
    """One catalog operation a call performs, at the file's target torch version."""

    op_id: str
    op_name: str  # the catalog's name of the operation: "interpolate", "reflection padding"
    name: str  # the call as the user wrote it: `F.interpolate`, `nn.Upsample`, `Tensor.index_add_`
    behavior: str  # "raises" | "deterministic-alternative" | "ignores-flag"
    condition: str  # e.g. "backward on CUDA, floating point, mode='bicubic'"
    certain: bool  # False when a non-literal argument may or may not meet the condition
    case_id: str
    label: str  # the argument case, e.g. "mode='bicubic'" ("" when the op has one case)
    remedy: str
    strict_only: bool = False  # TDL202 reports it in profile strict only
    third_party: bool = False
    version: str = ""  # the version the behaviour is read at: "torch 2.13", "torchvision 0.18"
    via: str = ""  # a third-party function that behaves as this torch operation does
    module_form: bool = False  # a module's constructor: it runs (and its backward) where the module is called
    cuda_only: bool = False  # the condition needs a CUDA device: a run that never leaves the CPU cannot meet it
    through: str = ""  # how the third-party function reaches `via` ("sums through `via`" when empty)
    # A strict-only loss whose input visibly has spatial dimensions: why (`F.interpolate`), and where.
    spatial: str = ""
    spatial_node: Optional[cst.CSTNode] = field(default=None, compare=False)


@dataclass(frozen=True)
class _Entry:
    operation: Operation
    form: Form
    as_method: bool  # arguments exclude the tensor the method is called on
    as_module: bool = False  # a module's constructor: where it runs (autograd, device) is not seen here
    call_params: frozenset = frozenset()  # parameters a `calls` condition reads


def _call_params(operation: Operation, form: Form) -> frozenset:
    conditions = list(form.when) + [c for case in operation.cases for c in case.when]
    return frozenset(c.param for c in conditions if c.kind == "calls")


class _Index:
    """The catalog's call forms by qualified name and by method name, plus the
    set of last name segments used to skip most calls without resolving them."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.by_qualified: Dict[str, List[_Entry]] = {}
        self.by_method: Dict[str, List[_Entry]] = {}
        for operation in catalog.operations:
            if not operation.report:
                continue
            for form in operation.forms:
                calls = _call_params(operation, form)
                for name in form.functions:
                    # `nn.Embedding.from_pretrained(...)` builds a module: it runs elsewhere.
                    builds_module = len(name.split(".")) > 2 and name.split(".")[-2][:1].isupper()
                    self.by_qualified.setdefault(name, []).append(_Entry(operation, form, False, builds_module, calls))
                for name in form.modules:
                    self.by_qualified.setdefault(name, []).append(_Entry(operation, form, False, True, calls))
                for name in form.methods:
                    self.by_method.setdefault(name, []).append(_Entry(operation, form, True, False, calls))
                    if operation.kind == TORCH_KIND:
                        # `torch.Tensor.index_add_(x, ...)`: the method called as a function
                        self.by_qualified.setdefault("torch.Tensor." + name, []).append(
                            _Entry(operation, form, False, False, calls)
                        )
        self.segments = frozenset(name.rsplit(".", 1)[-1] for name in self.by_qualified) | frozenset(self.by_method)
        # Third-party functions a program may store and call later (`self.attn_fn = flash_attn_func`),
        # and the calls that fetch a library's module at run time (`kernels.get_kernel(...)`).
        self.storable: Dict[str, List[_Entry]] = {}
        for name, entries in self.by_qualified.items():
            kept = [entry for entry in entries if entry.operation.kind == THIRD_PARTY_KIND and not entry.as_module]
            if kept:
                self.storable[name] = kept
        self.fetchers = {
            fetcher: f"{library.name}.{HUB_MODULE}" for library in catalog.libraries for fetcher in library.module_fetchers
        }


_INDEXES: Dict[int, _Index] = {}


def _index(catalog: Catalog) -> _Index:
    index = _INDEXES.get(id(catalog))
    if index is None or index.catalog is not catalog:
        index = _INDEXES[id(catalog)] = _Index(catalog)
    return index


# -- argument values ---------------------------------------------------------------


# Argument expressions taken to hold a given value (`matches_assuming`), by id.
_ASSUMED: Dict[int, Any] = {}


def _argument_value(node: cst.BaseExpression, context) -> Any:
    """An argument's value: a literal, a `Symbol` for a qualified name, a `Sized` sequence,
    a `Pattern` for an f-string with literal ends (also through a name bound to one of these
    in this function), else NOT_LITERAL."""
    if _ASSUMED and id(node) in _ASSUMED:
        return _ASSUMED[id(node)]
    value = literal(node)
    if value is not NOT_LITERAL:
        return value
    if type(node) is cst.FormattedString:
        return _pattern(node)
    if type(node) is cst.Name or type(node) is cst.Attribute:
        narrowed = context.scopes.narrowed(node)  # `if mode == "nearest": F.interpolate(x, mode=mode)`
        if narrowed is not None:
            return narrowed[0] if len(narrowed) == 1 else OneOf(narrowed)
    if isinstance(node, cst.Name):
        values = context.scopes.values(node.value)
        # Bound once (in every branch the same), or last bound in a block the walk is still in.
        bound = values[0] if len(values) == 1 else context.scopes.reaching_value(node.value)
        if type(bound) is cst.FormattedString:
            return _pattern(bound)
        if isinstance(bound, (cst.Tuple, cst.List)) or (type(bound) is cst.IfExp and display_length(bound) is not None):
            node = bound
            value = literal(bound)
            if value is not NOT_LITERAL:
                return value
    length = display_length(node)
    if length is not None:
        return Sized(length)
    if isinstance(node, (cst.Name, cst.Attribute)):
        qualified = context.qualified_name(node)
        if qualified and not qualified.startswith("builtins."):
            return Symbol(qualified)
    return value


def _pattern(node: cst.FormattedString) -> Any:
    """`f"a{x}"`: a string starting with "a" (its literal text before the first and after the last
    replacement field); NOT_LITERAL when neither end is literal."""
    parts = node.parts
    raw = "r" in node.prefix.lower()

    def text(part: cst.BaseFormattedStringContent) -> Optional[str]:
        if type(part) is not cst.FormattedStringText:
            return None
        return part.value.replace("{{", "{").replace("}}", "}")

    prefix, suffix = [], []
    for part in parts:
        piece = text(part)
        if piece is None:
            break
        prefix.append(piece)
    for part in reversed(parts):
        piece = text(part)
        if piece is None:
            break
        suffix.append(piece)
    head, tail = "".join(prefix), "".join(reversed(suffix))
    if not raw:  # an escape sequence: keep the plain text before (after) it
        head = head.split("\\", 1)[0]
        tail = tail.rsplit("\\", 1)[-1]
    if len(prefix) == len(parts):  # no replacement field: `f"sum"`
        return head if "\\" not in "".join(prefix) or raw else NOT_LITERAL
    return Pattern(head, tail) if head or tail else NOT_LITERAL


def _called_names(node: cst.BaseExpression, context) -> Any:
    """The functions an argument visibly calls (`fn.sum("m", "h")`, calls inside a dict or
    tuple literal), else its literal value."""
    value = literal(node)
    if value is not NOT_LITERAL:
        return value
    names = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            name = context.call_name(current)
            if name:
                names.add(name)
        stack.extend(child for child in sub_nodes(current) if isinstance(child, cst.CSTNode))
    return Calls(frozenset(names))


def _receiver_from(entry: _Entry, call: cst.Call, context) -> bool:
    """Whether a method's receiver visibly comes from one of the form's `receiver-from`
    functions: called right there, or a name bound to such a call in this function."""
    receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
    if isinstance(receiver, cst.Name):
        values = context.scopes.values(receiver.value)
        receiver = values[0] if len(values) == 1 else None
    return isinstance(receiver, cst.Call) and context.call_name(receiver) in entry.form.receiver_from


def _parameter_values(entry: _Entry, call: cst.Call, context) -> Dict[str, Any]:
    """Each signature parameter's value at this call: the argument (literal,
    Symbol or NOT_LITERAL), else the form's fixed value, else the default."""
    form = entry.form
    values: Dict[str, Any] = dict(form.fixed)
    if form.params is None:
        return values
    params = form.params[1:] if entry.as_method else form.params
    # `*args` / `**kwargs` splats are taken to carry other arguments (timm passes
    # `**dd` with device and dtype to every layer); a condition hidden in one is not seen.
    position = 0
    for param in params:
        if param.name in values:
            continue
        arg = find_arg(call, keyword=param.name, position=None if param.keyword_only else position)
        if not param.keyword_only:
            position += 1
        if arg is not None:
            if param.name in entry.call_params:
                values[param.name] = _called_names(arg.value, context)
            else:
                values[param.name] = _argument_value(arg.value, context)
        elif param.default is REQUIRED:
            values[param.name] = None  # given some other way (`value=` instead of `src`)
        elif param.default is OPAQUE_DEFAULT:
            values[param.name] = NOT_LITERAL
        else:
            values[param.name] = param.default
    return values


def _fits_method(form: Form, call: cst.Call) -> bool:
    """Whether a method call can be this Tensor method: its keywords exist and its
    required arguments are there (`queue.put(item, block=False)`, `df.median()`,
    `accelerator.gather(x)` are other APIs)."""
    params = (form.params or ())[1:]
    names = {param.name for param in params}
    positional = [param for param in params if not param.keyword_only]
    star = any(arg.star == "*" for arg in call.args)
    star_kwargs = opaque_keywords(call)
    given_positional = 0
    given_keywords = set()
    for arg in call.args:
        if arg.star:
            continue
        if arg.keyword is None:
            given_positional += 1
        elif arg.keyword.value not in names:
            return False
        else:
            given_keywords.add(arg.keyword.value)
    if not star and not form.var_positional and given_positional > len(positional):
        return False
    if star or star_kwargs:
        return True
    required = [param for param in positional if param.default is REQUIRED]
    filled = sum(1 for index, param in enumerate(required) if index < given_positional or param.name in given_keywords)
    return filled == len(required)


# -- matching ----------------------------------------------------------------------


def _candidates(context, call: cst.Call, index: _Index) -> List[_Entry]:
    func = call.func
    if isinstance(func, cst.Attribute):
        last = func.attr.value
        if last not in index.segments:
            return []
    elif isinstance(func, cst.Name):
        last = func.value
        if last not in index.segments:
            # `from torch.nn.functional import interpolate as resize`
            bound = context.resolver.module_final.get(last)
            if not bound or bound.rsplit(".", 1)[-1] not in index.segments:
                return []
    else:
        return []
    qualified = context.call_name(call)
    if qualified is not None:
        return index.by_qualified.get(qualified, [])
    if not isinstance(func, cst.Attribute) or not context.imports_torch:
        return []
    receiver = func.value
    if isinstance(receiver, cst.Name) and receiver.value in _NON_TENSOR_RECEIVERS:
        return []
    entries = [entry for entry in index.by_method.get(last, ()) if _fits_method(entry.form, call)]
    # An object visibly not a tensor (`HistoryBuffer().median(20)`,
    # a NumPy array's `.put`, a parameter annotated with a non-tensor type) has its own methods.
    # A library's own methods (`unet.enable_xformers_memory_efficient_attention()`) are called on
    # its objects, never on tensors.
    if entries and context.scopes.known_non_tensor(receiver):
        return [entry for entry in entries if entry.operation.kind != TORCH_KIND]
    return entries


_PARTIAL = "functools.partial"
MAX_STORED_VALUES = 4  # bindings of one name or attribute looked at


def _stored(context, call: cst.Call, index: _Index) -> Optional[Tuple[List[_Entry], cst.Call]]:
    """A third-party function called through a name or attribute it was stored in (`self.attn_fn =
    flash_attn_func`, `attn = partial(flash_attn_func, deterministic=True)`, a branch of `f if
    ... else g`), or a function of a module fetched at run time (`fa3 = get_kernel("...")`, then
    `fa3.flash_attn_func(...)`): its entries, and the call as the function itself sees it (a
    partial's arguments first)."""
    func = call.func
    kind = type(func)
    if kind is cst.Name or (kind is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self"):
        values = context.scopes.expression_values(func)
        if kind is cst.Name and not values:
            values = context.scopes.values(func.value, module_too=True)
        for value in values[-MAX_STORED_VALUES:]:
            found = _stored_value(context, value, call, index, 0)
            if found is not None:
                return found
    if kind is cst.Attribute and func.attr.value in index.segments and index.fetchers:
        receiver = func.value
        if type(receiver) is cst.Call:
            fetched: List[Optional[cst.BaseExpression]] = [receiver]
        elif type(receiver) is cst.Name:
            fetched = context.scopes.values(receiver.value, module_too=True)  # fetched once, at import
        else:
            fetched = context.scopes.expression_values(receiver)
        for value in fetched[-MAX_STORED_VALUES:]:
            if type(value) is cst.Call:
                module = index.fetchers.get(context.call_name(value) or "")
                entries = index.storable.get(f"{module}.{func.attr.value}") if module else None
                if entries:
                    return entries, call
    return None


def _stored_value(
    context, value: Optional[cst.BaseExpression], call: cst.Call, index: _Index, depth: int
) -> Optional[Tuple[List[_Entry], cst.Call]]:
    kind = type(value)
    if kind is cst.Name or kind is cst.Attribute:
        entries = index.storable.get(context.qualified_name(value) or "")
        return (entries, call) if entries else None
    if kind is cst.IfExp and depth < 2:
        return _stored_value(context, value.body, call, index, depth + 1) or _stored_value(
            context, value.orelse, call, index, depth + 1
        )
    if kind is cst.Call and value.args and context.call_name(value) == _PARTIAL and not value.args[0].keyword:
        inner = value.args[0].value
        entries = index.storable.get(context.qualified_name(inner) or "") if type(inner) in (cst.Name, cst.Attribute) else None
        if not entries:
            return None
        bound = value.args[1:]
        # As the function is called: the partial's positional arguments, then the call's; the
        # call's keywords override the partial's.
        args = [
            *(a for a in bound if a.keyword is None and not a.star),
            *(a for a in call.args if a.keyword is None and not a.star),
            *(a for a in call.args if a.keyword is not None or a.star),
            *(a for a in bound if a.keyword is not None or a.star),
        ]
        return entries, call.with_changes(func=inner, args=args)
    return None


def _display_name(call: cst.Call, entry: _Entry, context) -> str:
    func = call.func
    if entry.as_method and isinstance(func, cst.Attribute) and entry.operation.kind == TORCH_KIND:
        return "Tensor." + func.attr.value
    spelled = dotted_name(func)
    if spelled and len(spelled) <= 48:
        return spelled
    if entry.as_method and isinstance(func, cst.Attribute):
        return "." + func.attr.value  # `pipeline.enable_xformers_memory_efficient_attention()`
    return entry.operation.name


# The parameters whose tensors receive the gradient in a backward kernel: the weight of an
# embedding (its `input` is indices), else the input (and a sampling grid).
_GRADIENT_PARAMETERS = (("weight",), ("input", "self", "grid"))


def _gradient_tensors(entry: _Entry, call: cst.Call) -> List[cst.BaseExpression]:
    """The tensors of the call that a backward kernel would differentiate: by the form's
    signature when it has one, else every tensor given (a method's receiver included)."""
    receiver = [call.func.value] if entry.as_method and isinstance(call.func, cst.Attribute) else []
    params = entry.form.params
    if params:
        names = [param.name for param in params]
        for wanted in _GRADIENT_PARAMETERS:
            chosen = [name for name in names if name in wanted]
            if chosen:
                break
        else:
            chosen = []
        found = []
        position = 0
        for param in params[1:] if entry.as_method else params:
            arg = find_arg(call, keyword=param.name, position=None if param.keyword_only else position)
            if not param.keyword_only:
                position += 1
            if param.name in chosen and arg is not None:
                found.append(arg.value)
        if entry.as_method and names and names[0] in chosen:
            found += receiver
        if found:
            return found
    return receiver + [
        arg.value for arg in call.args if arg.keyword is None and not arg.star and literal(arg.value) is NOT_LITERAL
    ]


def _first_tensor(call: cst.Call) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is None and not arg.star and literal(arg.value) is NOT_LITERAL:
            return arg.value
    return None


def _tensor_states(entry: _Entry, call: cst.Call, context) -> Tuple[bool, bool]:
    """(no gradient can flow into the operation, it runs on the CPU), from what is visible of
    its tensors: every differentiated one must be visibly without gradient; one visibly on
    the CPU puts the operation there (a call's tensors share a device)."""
    differentiated = _gradient_tensors(entry, call)
    every = ([call.func.value] if entry.as_method and isinstance(call.func, cst.Attribute) else []) + [
        arg.value for arg in call.args if arg.keyword is None and not arg.star and literal(arg.value) is NOT_LITERAL
    ]
    no_grad = bool(differentiated) and all(context.scopes.tensor_state(tensor).no_grad for tensor in differentiated)
    on_cpu = any(context.scopes.tensor_state(tensor).cpu for tensor in every[:1])
    return no_grad, on_cpu


# Tensors of ten or more dimensions do not occur in training code: a method called with a
# literal `dim` that large (`HistoryBuffer.median(20)`, a window size) is another API.
MAX_PLAUSIBLE_DIM = 10


def _implausible_dim(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and not -MAX_PLAUSIBLE_DIM < value < MAX_PLAUSIBLE_DIM


def _possible(case: Case, no_grad: bool, on_cpu: bool, integer: bool = False, version: Optional[Tuple[int, int]] = None) -> bool:
    """A backward-only case cannot happen where no gradient flows, nor a CUDA-only one on a
    tensor visibly on the CPU (an unknown device is still CUDA), nor a floating-point one on a
    tensor visibly of an integer or bool dtype (integer sums are exact in any order), also where
    the case is floating-point only from a version on and the target is that version or newer
    (`histc`: "any dtype before 2.8, floating point from 2.8")."""
    if no_grad and case.phase == "backward":
        return False
    if integer and case.dtype.startswith("floating point"):
        return False
    if integer and version is not None:
        since = _FLOATING_POINT_FROM.search(case.dtype)
        if since is not None and version >= (int(since.group(1)), int(since.group(2))):
            return False
    return not (on_cpu and case.device.startswith("CUDA"))


_FLOATING_POINT_FROM = re.compile(r"floating point from (\d+)\.(\d+)")


# Methods and torch functions whose result has an integer or bool dtype whatever their input.
_INTEGER_CASTS = frozenset({"int", "long", "short", "byte", "char", "bool"})
_INTEGER_RESULTS = frozenset({"argmax", "argmin", "argsort", "nonzero", "bincount", "randint", "randperm", "bucketize"})
_INTEGER_DTYPES = frozenset(
    "torch." + name
    for name in ("int", "long", "short", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
)
# Methods that keep their receiver's dtype.
_DTYPE_KEEPING = frozenset({"view", "reshape", "flatten", "contiguous", "clone", "detach", "squeeze", "unsqueeze", "t"})


def _integer_valued(node: Optional[cst.BaseExpression], context, depth: int = 0) -> bool:
    """A tensor expression visibly of an integer or bool dtype: a comparison (`positions == 0`),
    an integer cast (`.int()`, `.long()`, `.to(torch.int64)`), an index-valued result
    (`argmax`, `nonzero`, `randint`), a torch factory given an integer `dtype=`, what keeps
    their dtype (`.view`, indexing), a name bound to one of these in the function, and the
    indices a (values, indices) result is unpacked into (`_, top = torch.topk(x, k)`)."""
    if node is None or depth > 6:
        return False
    kind = type(node)
    if kind is cst.Comparison:
        return True
    if kind is cst.Subscript:
        return _integer_valued(node.value, context, depth + 1)
    if kind is cst.Name:
        if context.scopes.bound_as_indices(node.value):
            return True  # `_, experts = scores.topk(k)`: int64 indices
        values = context.scopes.values(node.value)
        return bool(values) and _integer_valued(values[-1], context, depth + 1)
    if kind is not cst.Call:
        return False
    func = node.func
    qualified = context.resolver.qualified_name(func)
    if qualified is not None and qualified.startswith("torch."):
        if qualified.rsplit(".", 1)[-1] in _INTEGER_RESULTS:
            return True
        # A factory told its dtype: `torch.zeros(n, dtype=torch.long)`.
        dtype = find_arg(node, "dtype", None)
        return dtype is not None and context.resolver.qualified_name(dtype.value) in _INTEGER_DTYPES
    if type(func) is not cst.Attribute or qualified is not None:
        return False
    method = func.attr.value
    if method in _INTEGER_CASTS and not node.args:
        return True
    if method in _INTEGER_RESULTS:
        return True
    if method in ("to", "type"):
        dtype = find_arg(node, "dtype", 0)
        return dtype is not None and context.resolver.qualified_name(dtype.value) in _INTEGER_DTYPES
    if method in _DTYPE_KEEPING:
        return _integer_valued(func.value, context, depth + 1)
    return False


def _match_entry(
    entry: _Entry, call: cst.Call, context, assume_no_grad: bool = False, spelled: Optional[cst.Call] = None
) -> Optional[OperationMatch]:
    operation = entry.operation
    form = entry.form
    if form.receiver_from and not (entry.as_method and _receiver_from(entry, call, context)):
        return None
    values = _parameter_values(entry, call, context)
    if entry.as_method and _implausible_dim(values.get("dim")):
        return None  # `history.median(20)`: another API's window, not a tensor dimension
    form_truth = evaluate_all(form.when, values)
    if form_truth is Truth.NO:
        return None
    no_grad = on_cpu = False
    if entry.as_module:
        # Built under `no_grad()` it is still a module: only the caller knows where it runs.
        no_grad = assume_no_grad
    else:
        no_grad, on_cpu = _tensor_states(entry, call, context)
        no_grad = no_grad or assume_no_grad or context.scopes.grad_disabled
    # The tensor the operation reads first (a method's receiver, else its first tensor argument).
    first = call.func.value if entry.as_method and isinstance(call.func, cst.Attribute) else _first_tensor(call)
    integer = _integer_valued(first, context)
    torch_version = context.torch_version
    library_versions = context.library_versions
    best: Optional[Tuple[int, int, Case, str]] = None
    maybe_labels: List[str] = []
    for case in operation.cases:
        if form.cases is not None and case.id not in form.cases:
            continue
        if not _possible(case, no_grad, on_cpu, integer, None if operation.library else torch_version):
            continue
        truth = min(form_truth, evaluate_all(case.when, values))
        if truth is Truth.NO:
            continue
        status = operation.status_at(case, torch_version, library_versions)
        if status not in _SEVERITY:
            continue
        if truth is Truth.MAYBE and case.label:
            maybe_labels.append(case.label)
        key = (_SEVERITY[status], int(truth))
        if best is None or key > best[:2]:
            best = (key[0], key[1], case, status)
    if best is None:
        return None
    severity, truth, case, status = best
    certain = truth == int(Truth.YES)
    label = case.label
    if not certain:
        # Name every case of the worst behaviour a non-literal argument could select.
        same = [
            c.label
            for c in operation.cases
            if c.label in maybe_labels and operation.status_at(c, torch_version, library_versions) == status
        ]
        label = " or ".join(dict.fromkeys(same)) or label
    condition = case.condition_text() + (f", {label}" if label else "")
    strict_only = operation.strict_only
    spatial, spatial_node = "", None
    if strict_only and not entry.as_module:
        # Input rank made visible: the NLL losses raise on inputs with spatial dimensions.
        arg = find_arg(call, "input", 0)
        found = context.scopes.spatial_source(arg.value) if arg is not None else None
        if found is not None:
            spatial, spatial_node = found
            strict_only = False
    return OperationMatch(
        op_id=operation.id,
        op_name=operation.name,
        name=_display_name(spelled or call, entry, context),
        behavior=status,
        condition=condition,
        certain=certain,
        case_id=case.id,
        label=label,
        remedy=case.remedy,
        strict_only=strict_only,
        third_party=operation.kind == THIRD_PARTY_KIND,
        version=_version_phrase(operation, context),
        via=operation.via,
        module_form=entry.as_module,
        cuda_only=case.device.startswith("CUDA"),
        through=operation.through,
        spatial=spatial,
        spatial_node=spatial_node,
    )


def _version_phrase(operation: Operation, context) -> str:
    if operation.library:
        version = context.library_versions.get(operation.library)
        return f"{operation.library} {version_text(version)}" if version else operation.library
    return f"torch {context.version_text()}"


class _Matcher:
    """Per file: remembers the last call's answer, since TDL201, TDL202, TDL203
    and the summary collector all ask about the same call in one traversal."""

    def __init__(self, catalog: Catalog) -> None:
        self.index = _index(catalog)
        self.last_call: Optional[Tuple[cst.Call, bool]] = None
        self.last_matches: List[OperationMatch] = []

    def matches(self, context, call: cst.Call, assume_no_grad: bool = False) -> List[OperationMatch]:
        if self.last_call is not None and self.last_call[0] is call and self.last_call[1] == assume_no_grad:
            return self.last_matches
        result: List[OperationMatch] = []
        seen = set()
        entries = _candidates(context, call, self.index)
        seen_as = call
        if not entries:
            stored = _stored(context, call, self.index)
            if stored is not None:
                entries, seen_as = stored
        for entry in entries:
            if entry.operation.id in seen:
                continue
            match = _match_entry(entry, seen_as, context, assume_no_grad, spelled=call)
            if match is not None:
                seen.add(entry.operation.id)
                result.append(match)
        self.last_call, self.last_matches = (call, assume_no_grad), result
        return result


def _all_matches(
    context, call: cst.Call, catalog: Optional[Catalog] = None, assume_no_grad: bool = False
) -> List[OperationMatch]:
    catalog = catalog or load_catalog()
    # Kept on the file's context (one per file), asked for every call of the file.
    matcher = context.operation_matcher
    if matcher is None or matcher.index.catalog is not catalog:
        matcher = context.operation_matcher = _Matcher(catalog)
    return matcher.matches(context, call, assume_no_grad)


def match_operations(
    context, call: cst.Call, catalog: Optional[Catalog] = None, assume_no_grad: bool = False
) -> List[OperationMatch]:
    """The catalog operations a call performs that the flag governs at the file's
    target version: behaviour "raises" (TDL202) or "deterministic-alternative"
    (TDL201), convolutions and the strict-only losses included, and third-party
    functions that reach a torch operation the flag makes deterministic.

    Works whether or not any TDL2xx rule is selected; cheap for calls that
    cannot match (a set lookup on the last name segment). `assume_no_grad`: as if
    no gradient could flow here (the caller decides later whether that holds).
    """
    return [m for m in _all_matches(context, call, catalog, assume_no_grad) if m.behavior != IGNORES_FLAG]


def matches_assuming(
    context, call: cst.Call, argument: cst.BaseExpression, value: Any, assume_no_grad: bool = False
) -> List[OperationMatch]:
    """`match_operations` as if the argument expression `argument` held `value` (a literal): what
    the call would do for each value its callers may pass."""
    matcher = context.operation_matcher
    if matcher is not None:
        matcher.last_call = None
    _ASSUMED[id(argument)] = value
    try:
        return match_operations(context, call, assume_no_grad=assume_no_grad)
    finally:
        del _ASSUMED[id(argument)]
        matcher = context.operation_matcher
        if matcher is not None:
            matcher.last_call = None


def match_third_party(
    context, call: cst.Call, catalog: Optional[Catalog] = None, assume_no_grad: bool = False
) -> List[OperationMatch]:
    """The third-party kernels that ignore the flag (TDL203) a call performs."""
    return [m for m in _all_matches(context, call, catalog, assume_no_grad) if m.behavior == IGNORES_FLAG]


def gradient_parameters(context, call: cst.Call, catalog: Optional[Catalog] = None) -> Tuple[Tuple[str, int], ...]:
    """The parameters of the enclosing function (name, position in a call; -1: keyword-only) that
    the tensors a backward kernel of this call differentiates get their gradient from, when
    nothing else gives them one: whether the kernel runs is for the function's callers to say.
    Empty when something else may bring a gradient (or none can)."""
    index = _index(catalog or load_catalog())
    entries = _candidates(context, call, index)
    seen_as = call
    if not entries:
        stored = _stored(context, call, index)
        if stored is None:
            return ()
        entries, seen_as = stored
    scopes = context.scopes
    found: frozenset = frozenset()
    for entry in entries:
        if entry.as_module:
            return ()
        for tensor in _gradient_tensors(entry, seen_as):
            names = scopes.gradient_parameters(tensor)
            if names is None:
                return ()
            found |= names
    return scopes.parameter_positions(found)


def backward_only_module(context, call: cst.Call, catalog: Optional[Catalog] = None) -> bool:
    """A module construction whose catalog conditions all need a backward pass (`nn.Embedding`):
    whether it matters depends on where the module is called, not on where it is built."""
    matches = _all_matches(context, call, catalog)
    return bool(matches) and all(m.module_form for m in matches) and not _all_matches(context, call, catalog, assume_no_grad=True)
