"""TDL4xx: the performance profile, the advice of the PyTorch tuning guides
(create on the device, share NumPy memory, pin host memory, DDP, `torch.amp`,
`no_grad` for inference, `cudnn.benchmark` for fixed shapes), with fixes.
TDL406 is a project rule over the entry points' reach.
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst

from torchdet_lint.names import NOT_LITERAL, arg_value, dotted_name, find_arg, has_star_args, literal, may_have_keyword
from torchdet_lint.rule import Applicability, Edit, Fix, FixAvailability, FixBuilder, ProjectRule, Rule

PERFORMANCE = frozenset({"performance"})

# -- shared helpers ------------------------------------------------------------------

_NO_SPACE = cst.SimpleWhitespace("")
_ONE_SPACE = cst.SimpleWhitespace(" ")


def _keyword_arg(keyword: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(
        value=value,
        keyword=cst.Name(keyword),
        equal=cst.AssignEqual(whitespace_before=_NO_SPACE, whitespace_after=_NO_SPACE),
    )


def _line_break(whitespace: cst.ParenthesizedWhitespace) -> cst.ParenthesizedWhitespace:
    """A line break with the same indentation, without the comment or blank lines it may carry."""
    return cst.ParenthesizedWhitespace(indent=whitespace.indent, last_line=whitespace.last_line)


def _separator(call: cst.Call) -> cst.Comma:
    """The comma (with the whitespace after it) that separates arguments in this call's layout."""
    for arg in call.args[:-1]:
        if isinstance(arg.comma, cst.Comma):
            if isinstance(arg.comma.whitespace_after, cst.ParenthesizedWhitespace):
                return arg.comma.with_changes(whitespace_after=_line_break(arg.comma.whitespace_after))
            return arg.comma
    if isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        return cst.Comma(whitespace_after=_line_break(call.whitespace_before_args))  # one argument per line
    return cst.Comma(whitespace_after=_ONE_SPACE)


def with_keywords(call: cst.Call, keywords: Sequence[Tuple[str, cst.BaseExpression]]) -> cst.Call:
    """`call` with keyword arguments appended, keeping its layout (one per line, trailing
    comma) and leaving comments on the lines they annotate."""
    new = [_keyword_arg(keyword, value) for keyword, value in keywords]
    args = list(call.args)
    if not args:
        return call.with_changes(args=new)
    separator = _separator(call)
    last = args[-1]
    closing = last.comma  # a real Comma when the call has a trailing comma
    if (
        isinstance(closing, cst.Comma)
        and isinstance(closing.whitespace_after, cst.ParenthesizedWhitespace)
        and isinstance(separator.whitespace_after, cst.ParenthesizedWhitespace)
    ):
        # `x,  # comment` + newline + `)`: the comment stays after x, the new last argument closes the call
        args[-1] = last.with_changes(
            comma=closing.with_changes(
                whitespace_after=closing.whitespace_after.with_changes(
                    indent=separator.whitespace_after.indent, last_line=separator.whitespace_after.last_line
                )
            )
        )
        closing = cst.Comma(whitespace_after=_line_break(closing.whitespace_after))
    elif isinstance(last.whitespace_after_arg, cst.ParenthesizedWhitespace):
        # `x  # comment` + newline + `)` without a trailing comma: the line break moves after the new argument
        new[-1] = new[-1].with_changes(whitespace_after_arg=last.whitespace_after_arg)
        args[-1] = last.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace(""))
    else:
        args[-1] = last.with_changes(comma=separator)
    for index in range(len(new) - 1):
        new[index] = new[index].with_changes(comma=separator)
    new[-1] = new[-1].with_changes(comma=closing)
    return call.with_changes(args=args + new)


def with_first_argument(call: cst.Call, value: cst.BaseExpression) -> cst.Call:
    """`call` with a positional argument inserted first."""
    if not call.args:
        return call.with_changes(args=[cst.Arg(value=value)])
    return call.with_changes(args=[cst.Arg(value=value, comma=_separator(call)), *call.args])


def _string_value(node: Optional[cst.CSTNode]) -> Optional[str]:
    value = literal(node)
    return value if isinstance(value, str) else None


def _strings_in(node: cst.CSTNode) -> Iterator[str]:
    """The literal strings inside an expression (device choices such as `"cuda" if ok else "cpu"`)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.SimpleString, cst.ConcatenatedString)):
            value = _string_value(current)
            if value is not None:
                yield value
            continue
        stack.extend(current.children)


def _last_name(node: cst.CSTNode) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return ""


def _is_device_name(node: cst.CSTNode) -> bool:
    name = _last_name(node).lower()
    return "device" in name or name in ("dev", "gpu")


def device_like(rule: Rule, node: cst.BaseExpression) -> bool:
    """A `.to(...)` argument that names an accelerator: a device string other than
    "cpu", `torch.device(...)`, an int index, or a variable named like a device.
    A dtype (`torch.float16`) or another tensor is not."""
    value = literal(node)
    if isinstance(value, str):
        return not value.startswith("cpu")
    if isinstance(value, int) and not isinstance(value, bool):
        return True
    if value is not NOT_LITERAL:
        return False
    if isinstance(node, cst.Call):
        if rule.context.call_name(node) != "torch.device":
            return False
        return _string_value(arg_value(node, "type", 0)) not in ("cpu",)
    if isinstance(node, cst.IfExp):
        return device_like(rule, node.body) or device_like(rule, node.orelse)
    return isinstance(node, (cst.Name, cst.Attribute)) and _is_device_name(node)


def torch_module_name(rule: Rule) -> Optional[str]:
    """The module-level name bound to the `torch` module (`torch`, or `T` after `import torch as T`)."""
    final = rule.context.resolver.module_final
    if final.get("torch") == "torch":
        return "torch"
    for name, qualified in final.items():
        if qualified == "torch":
            return name
    return None if "torch" in final else ""  # "": free, an `import torch` can be added


def _may_name(call: cst.Call, names) -> bool:
    """Cheap pre-check before resolving: an attribute call must spell one of `names`
    (`torch.nn.DataParallel(...)`); a plain name may be an alias (`DP(...)`)."""
    func = call.func
    return isinstance(func, cst.Name) or (isinstance(func, cst.Attribute) and func.attr.value in names)


def _call_attr(node: cst.Call) -> str:
    """The method or function name of a call (`cuda` in `x.cuda()`), cheap, unresolved."""
    func = node.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return ""


# -- TDL401 ----------------------------------------------------------------------------

NUMPY_ARRAY_FUNCTIONS = frozenset(
    "numpy." + name
    for name in (
        "array asarray ascontiguousarray asfortranarray copy zeros ones empty full zeros_like ones_like "
        "empty_like full_like arange linspace logspace geomspace eye identity loadtxt genfromtxt fromfile "
        "stack concatenate vstack hstack dstack column_stack expand_dims reshape transpose tile repeat "
        "diag tril triu outer cumsum cumprod sort argsort"
    ).split()
)
# Legacy global-RNG and Generator methods: name -> position of `size` (None: always an array;
# -1: an array as soon as any positional argument is given, as `rand(3, 4)`).
_RANDOM_SIZE_POSITION: Dict[str, Optional[int]] = {
    "rand": -1,
    "randn": -1,
    "random": 0,
    "random_sample": 0,
    "ranf": 0,
    "sample": 0,
    "standard_normal": 0,
    "uniform": 2,
    "normal": 2,
    "randint": 2,
    "integers": 2,
    "choice": 1,
    "binomial": 2,
    "poisson": 1,
    "exponential": 1,
    "beta": 2,
    "gamma": 2,
    "lognormal": 2,
    "laplace": 2,
    "permutation": None,
    "multivariate_normal": None,
    "dirichlet": None,
}
_RNG_CONSTRUCTORS = frozenset({"numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator"})
# Array methods that return an array (never a view with negative strides).
_ARRAY_METHODS = frozenset(
    {"astype", "reshape", "copy", "transpose", "flatten", "ravel", "squeeze", "swapaxes", "clip", "cumsum", "repeat"}
)
_NDARRAY_TYPES = frozenset({"numpy.ndarray", "numpy.typing.NDArray"})
# torch.tensor(...) keywords that torch.as_tensor also takes.
_AS_TENSOR_KEYWORDS = frozenset({"data", "dtype", "device"})

NUMPY, UNKNOWN, RNG = "numpy", None, "rng"


class _Scope:
    __slots__ = ("kind", "values", "depth")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.values: Dict[str, Optional[str]] = {}  # name -> NUMPY, RNG or UNKNOWN
        self.depth = 0  # nesting of branches and loops inside this scope


class TensorCopiesNumpy(Rule):
    """
    ## Why is this bad?
    `torch.tensor(data)` always copies `data`. When `data` is already a NumPy
    array, `torch.as_tensor(array)` (or `torch.from_numpy(array)`) builds the
    tensor on the same memory without a copy: the conversion becomes O(1)
    instead of O(n) and the peak memory does not double. For large arrays
    (a loaded data set, a big batch assembled in NumPy) the copy is the
    bulk of the conversion time; for arrays of a few kilobytes the
    difference is negligible.

    The rule only reports when the argument is visibly a NumPy array: a name
    bound, in the same function (or at module level), from a NumPy call that
    returns an array (`np.array`, `np.zeros`, `np.load`, `np.stack`,
    `np.random.rand(3)`, `np.random.normal(size=...)`, a `default_rng()`
    generator's methods with a size, `a.astype(...)` of such an array, ...),
    a parameter annotated `np.ndarray` / `npt.NDArray[...]`, or such a call
    written inline. Lists, tensors and unknown values are never reported.
    Nor is a call with `dtype=` or a `device=` other than `"cpu"`: a dtype
    conversion or a copy to the GPU copies in `as_tensor` too, so there is
    nothing to gain.

    ## Fix safety
    Unsafe: `torch.as_tensor(a)` shares memory with `a` (for a CPU target
    of the same dtype), so writing to the array afterwards changes the
    tensor and the other way round, where the copy kept them apart. It also
    raises for arrays with negative strides (`a[::-1]`, `np.flip`) and warns
    for read-only arrays (`np.frombuffer`, `mmap_mode="r"`). Calls with
    `requires_grad=` or `pin_memory=` (which `as_tensor` does not take) are
    reported without a fix. Before the fix, `torch.tensor(a)` already
    raises for arrays that are not numeric (`dtype=object`), as after it.

    ## Known problems
    The analysis is local: an array stored on `self` in `__init__` and used
    in another method, or returned by a helper function, is not seen. A name
    that is a NumPy array on one branch and something else on another is
    not reported. Subscripts (`a[i]`) are not followed, since they can be
    scalars or negative-stride views.

    ## Options
    Profile `performance`, or `--select TDL401`.

    ## References
    - `torch.as_tensor`: <https://pytorch.org/docs/stable/generated/torch.as_tensor.html>
    - `torch.tensor` ("always copies data"): <https://pytorch.org/docs/stable/generated/torch.tensor.html>
    - `torch.from_numpy`: <https://pytorch.org/docs/stable/generated/torch.from_numpy.html>
    """

    code = "TDL401"
    name = "tensor-copies-numpy"
    summary = "`torch.tensor(array)` copies a NumPy array; `torch.as_tensor(array)` shares its memory"
    profiles = PERFORMANCE
    fix_availability = FixAvailability.UNSAFE
    bad = (
        "import numpy as np\nimport torch\n\nx = np.load('x.npy')\nt = torch.tensor(x)\n",
        "import numpy as np\nimport torch\n\ndef f(a: np.ndarray):\n    return torch.tensor(a)\n",
        "import numpy as np\nimport torch\n\nt = torch.tensor(np.zeros((3, 4)))\n",
    )
    good = (
        "import torch\nt = torch.tensor([1.0, 2.0])\n",
        "import numpy as np\nimport torch\n\nx = np.load('x.npy')\nx = x.tolist()\nt = torch.tensor(x)\n",
        "import numpy as np\nimport torch\n\ndef f(x):\n    return torch.tensor(x)\n",
        "import numpy as np\nimport torch\n\nt = torch.tensor(np.random.randint(10))\n",
        "import numpy as np\nimport torch\n\nt = torch.tensor(np.zeros(3), device='cuda')\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.active = "numpy" in context.text
        self.scopes: List[_Scope] = [_Scope("module")]

    # -- what is a NumPy array ---------------------------------------------------
    def _lookup(self, name: str) -> Optional[str]:
        innermost = self.scopes[-1]
        for scope in reversed(self.scopes):
            if scope.kind == "class" and scope is not innermost:
                continue
            if name in scope.values:
                return scope.values[name]
        return UNKNOWN

    def _kind(self, node: Optional[cst.CSTNode]) -> Optional[str]:
        """NUMPY when the expression is visibly a NumPy array, RNG for a NumPy generator, else UNKNOWN."""
        if isinstance(node, cst.Attribute) and node.attr.value == "T":
            return NUMPY if self._kind(node.value) == NUMPY else UNKNOWN
        if isinstance(node, (cst.Name, cst.Attribute)):
            key = dotted_name(node)
            if key is not None and (isinstance(node, cst.Name) or key.startswith("self.")):
                return self._lookup(key)
            return UNKNOWN
        if isinstance(node, cst.BinaryOperation):
            left, right = self._kind(node.left), self._kind(node.right)
            sides = ((left, node.left), (right, node.right))
            if NUMPY in (left, right) and all(kind == NUMPY or _is_number(side) for kind, side in sides):
                return NUMPY
            return UNKNOWN
        if not isinstance(node, cst.Call) or has_star_args(node):
            return UNKNOWN
        func = node.func
        if isinstance(func, cst.Attribute):
            receiver = self._kind(func.value)
            method = func.attr.value
            if receiver == NUMPY and method in _ARRAY_METHODS:
                return NUMPY
            if receiver == RNG:
                return NUMPY if _returns_array(node, method) else UNKNOWN
        name = self.context.call_name(node)
        if name is None or not name.startswith("numpy."):
            return UNKNOWN
        if name in _RNG_CONSTRUCTORS:
            return RNG
        if name in NUMPY_ARRAY_FUNCTIONS:
            return NUMPY
        if name == "numpy.load":
            # a memory map is read-only (as_tensor warns), an .npz gives an archive
            return NUMPY if find_arg(node, "mmap_mode") is None and _npy_file(node) else UNKNOWN
        if name.startswith("numpy.random.") and name.count(".") == 2:
            return NUMPY if _returns_array(node, name.rsplit(".", 1)[1]) else UNKNOWN
        return UNKNOWN

    def _annotation_kind(self, annotation: Optional[cst.Annotation]) -> Optional[str]:
        if annotation is None:
            return UNKNOWN
        node = annotation.annotation
        if isinstance(node, cst.Subscript):
            node = node.value
        return NUMPY if self.context.qualified_name(node) in _NDARRAY_TYPES else UNKNOWN

    # -- bindings ----------------------------------------------------------------
    def _bind(self, target: cst.CSTNode, kind: Optional[str]) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value, UNKNOWN)
            return
        if isinstance(target, cst.StarredElement):
            self._bind(target.value, UNKNOWN)
            return
        key = dotted_name(target) if isinstance(target, (cst.Name, cst.Attribute)) else None
        if key is None or (isinstance(target, cst.Attribute) and not key.startswith("self.")):
            return
        scope = self.scopes[-1]
        if scope.depth == 0 or key not in scope.values or scope.values[key] == kind:
            scope.values[key] = kind
        else:
            # bound on a branch or in a loop: the value from before may survive it
            scope.values[key] = UNKNOWN

    def leave_Assign(self, original_node: cst.Assign) -> None:
        if self.active:
            kind = self._kind(original_node.value)
            for target in original_node.targets:
                self._bind(target.target, kind)

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        if self.active:
            kind = self._annotation_kind(original_node.annotation) or (
                self._kind(original_node.value) if original_node.value is not None else UNKNOWN
            )
            self._bind(original_node.target, kind)

    def leave_AugAssign(self, original_node: cst.AugAssign) -> None:
        if self.active and not _is_number(original_node.value) and self._kind(original_node.value) != NUMPY:
            self._bind(original_node.target, UNKNOWN)  # `a += 1` keeps an array an array

    def leave_NamedExpr(self, original_node: cst.NamedExpr) -> None:
        if self.active:
            self._bind(original_node.target, self._kind(original_node.value))

    def visit_For(self, node: cst.For) -> None:
        if self.active:
            self._bind(node.target, UNKNOWN)
            self.scopes[-1].depth += 1

    def leave_For(self, original_node: cst.For) -> None:
        if self.active:
            self.scopes[-1].depth -= 1

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if self.active and node.asname is not None:
            self._bind(node.asname.name, UNKNOWN)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if self.active and node.name is not None:
            self._bind(node.name.name, UNKNOWN)

    def visit_Del(self, node: cst.Del) -> None:
        if self.active:
            self._bind(node.target, UNKNOWN)

    def visit_If(self, node: cst.If) -> None:
        self._enter_branch()

    def leave_If(self, original_node: cst.If) -> None:
        self._leave_branch()

    def visit_While(self, node: cst.While) -> None:
        self._enter_branch()

    def leave_While(self, original_node: cst.While) -> None:
        self._leave_branch()

    def visit_Try(self, node: cst.Try) -> None:
        self._enter_branch()

    def leave_Try(self, original_node: cst.Try) -> None:
        self._leave_branch()

    def visit_Match(self, node) -> None:
        self._enter_branch()

    def leave_Match(self, original_node) -> None:
        self._leave_branch()

    def _enter_branch(self) -> None:
        if self.active:
            self.scopes[-1].depth += 1

    def _leave_branch(self) -> None:
        if self.active:
            self.scopes[-1].depth -= 1

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not self.active:
            return
        self._bind(node.name, UNKNOWN)
        scope = _Scope("function")
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            scope.values[param.name.value] = self._annotation_kind(param.annotation)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope.values[star.name.value] = UNKNOWN
        self.scopes.append(scope)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if self.active:
            self.scopes.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        if self.active:
            scope = _Scope("function")
            for param in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
                scope.values[param.name.value] = UNKNOWN
            self.scopes.append(scope)

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        if self.active:
            self.scopes.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self.active:
            self._bind(node.name, UNKNOWN)
            self.scopes.append(_Scope("class"))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        if self.active:
            self.scopes.pop()

    # comprehension variables live in their own scope, bound before the element is visited
    def _enter_comprehension(self, node) -> None:
        if self.active:
            scope = _Scope("comprehension")
            for_in = node.for_in
            while for_in is not None:
                scope.values.update((name, UNKNOWN) for name in _target_names(for_in.target))
                for_in = for_in.inner_for_in
            self.scopes.append(scope)

    def _leave_comprehension(self) -> None:
        if self.active:
            self.scopes.pop()

    def visit_ListComp(self, node: cst.ListComp) -> None:
        self._enter_comprehension(node)

    def leave_ListComp(self, original_node: cst.ListComp) -> None:
        self._leave_comprehension()

    def visit_SetComp(self, node: cst.SetComp) -> None:
        self._enter_comprehension(node)

    def leave_SetComp(self, original_node: cst.SetComp) -> None:
        self._leave_comprehension()

    def visit_DictComp(self, node: cst.DictComp) -> None:
        self._enter_comprehension(node)

    def leave_DictComp(self, original_node: cst.DictComp) -> None:
        self._leave_comprehension()

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self._enter_comprehension(node)

    def leave_GeneratorExp(self, original_node: cst.GeneratorExp) -> None:
        self._leave_comprehension()

    def visit_Import(self, node: cst.Import) -> None:
        if self.active:
            for alias in node.names:
                bound = alias.asname.name if alias.asname is not None else alias.name
                while isinstance(bound, cst.Attribute):
                    bound = bound.value
                self._bind(bound, UNKNOWN)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if self.active and not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                self._bind(alias.asname.name if alias.asname is not None else alias.name, UNKNOWN)

    # -- the finding -------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        if not self.active or not _may_name(node, ("tensor",)):
            return
        if self.context.call_name(node) != "torch.tensor":
            return
        data = arg_value(node, "data", 0)
        if data is None or self._kind(data) != NUMPY:
            return
        device = arg_value(node, "device")
        if arg_value(node, "dtype") is not None or (device is not None and literal(device) != "cpu"):
            return  # a dtype change or a device copy copies in `as_tensor` too: nothing to gain
        shown = dotted_name(data) or "array"
        self.report(
            node,
            f"`torch.tensor({shown})` copies a NumPy array; `torch.as_tensor({shown})` shares its memory without a copy",
            self._fix(node),
        )

    def _fix(self, node: cst.Call) -> Optional[FixBuilder]:
        if any(arg.star or (arg.keyword is not None and arg.keyword.value not in _AS_TENSOR_KEYWORDS) for arg in node.args):
            return None  # requires_grad= / pin_memory= / **kwargs: as_tensor does not take them
        builder = FixBuilder("Use `torch.as_tensor` (shares memory with the array)", Applicability.UNSAFE)
        func = node.func
        if isinstance(func, cst.Attribute):
            return builder.replace(func.attr, cst.Name("as_tensor"))
        if self.context.resolver.module_final.get("as_tensor", "torch.as_tensor") != "torch.as_tensor":
            return None  # the name `as_tensor` means something else here
        return builder.replace(func, cst.Name("as_tensor")).add_import("torch", "as_tensor")


def _is_number(node: cst.CSTNode) -> bool:
    value = literal(node)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _returns_array(call: cst.Call, method: str) -> bool:
    if method not in _RANDOM_SIZE_POSITION:
        return False
    position = _RANDOM_SIZE_POSITION[method]
    if position is None:
        return True
    if position == -1:
        return any(arg.keyword is None for arg in call.args)
    size = arg_value(call, "size", position)
    return size is not None and literal(size) is not None


def _npy_file(call: cst.Call) -> bool:
    path = _string_value(arg_value(call, "file", 0))
    return path is None or not path.endswith(".npz")


def _target_names(target: cst.CSTNode) -> Iterator[str]:
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _target_names(target.value)


# -- TDL402 ----------------------------------------------------------------------------

# Factories whose values do not depend on the device they are made on.
EXACT_FACTORIES = frozenset({"zeros", "ones", "empty", "full", "eye", "arange"})
# Random factories draw from the CPU generator on the CPU and from the CUDA one on the GPU.
RANDOM_FACTORIES = frozenset({"rand", "randn", "randint", "randperm"})
FACTORIES = EXACT_FACTORIES | RANDOM_FACTORIES
# Factories whose value is exact in any dtype, so a `dtype` moved from `.to` does not round twice.
_DTYPE_SAFE_FACTORIES = frozenset({"zeros", "ones", "empty", "eye"})
# `.to(...)` keywords that only matter for an existing tensor, dropped by the fix.
_COPY_KEYWORDS = frozenset({"non_blocking", "copy"})


class CreateThenMove(Rule):
    """
    ## Why is this bad?
    `torch.zeros(n).cuda()` or `torch.randn(b, c).to(device)` first builds
    the tensor in host memory, fills it there, then copies it to the device
    and drops the host copy: one host allocation, one host-side fill and one
    host-to-device transfer that `torch.zeros(n, device="cuda")` avoids. The
    PyTorch performance tuning guide lists "create tensors directly on the
    target device" for this reason. Inside a training step the copy is a
    synchronising transfer per call; for a large tensor it costs about its
    size divided by the PCIe bandwidth (≈ 1 ms for 10 MB), against
    microseconds for an on-device fill.

    Reported: `torch.zeros`, `ones`, `empty`, `full`, `eye`, `arange`,
    `rand`, `randn`, `randint`, `randperm` followed directly by `.cuda()` or
    by `.to(...)` with a device-like argument: a device string other than
    `"cpu"`, `torch.device(...)`, an index, or a variable named like a device
    (`device`, `self.device`, `dev`). A dtype-only `.to(torch.float16)` is
    not reported, and neither is a factory that already has `device=`, `out=`
    or, for the random factories, a `generator=` (a CPU generator is a
    deliberate reason to draw on the CPU: it cannot draw on the GPU).

    ## Fix safety
    The fix moves the device into the factory: `torch.zeros(n, device="cuda")`
    (`.cuda()` becomes `device="cuda"`, `.cuda(1)` `device="cuda:1"`,
    `.to(device)` `device=device`; a dtype given to `.to` becomes `dtype=`).
    It is safe for `zeros`, `ones`, `empty`, `full`, `eye` and `arange`
    with an integer step: the values are the same on every device.

    It is unsafe for the random factories: on the device they draw from the
    CUDA generator instead of the CPU one, so the numbers change (they stay
    reproducible under a seed, but differ from the ones the program drew
    before, and seeding only the CPU generator no longer covers them). It is
    unsafe for `arange` with a non-integer step too, since the host and the
    device kernels round `start + i * step` differently in the last bit.
    And it is unsafe with `requires_grad=`: `torch.zeros(n, requires_grad=True).cuda()`
    is a non-leaf copy of a CPU leaf (a classic bug: its `.grad` stays
    `None`), while with `device=` the tensor itself becomes the leaf.
    A dtype is only moved into `zeros`, `ones`, `empty` and `eye` (elsewhere
    creating in one dtype and converting rounds twice); `.cuda(device)` with
    a non-literal device and `.to(...)` with other arguments get no fix.

    ## Known problems
    Only a direct chain is seen: `t = torch.zeros(n); t = t.cuda()` is not.
    A device variable that holds `"cpu"` at run time makes the finding
    moot (the fix is still correct). If the device is set globally with
    `torch.set_default_device`, the factory already creates on it.

    ## Options
    Profile `performance`, or `--select TDL402`.

    ## References
    - PyTorch performance tuning guide, "Create tensors directly on the target device":
      <https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html>
    - Tensor creation with `device=`: <https://pytorch.org/docs/stable/tensor_attributes.html#torch-device>
    """

    code = "TDL402"
    name = "create-then-move"
    summary = "a tensor is created on the CPU and then copied to the device; create it there with `device=`"
    profiles = PERFORMANCE
    fix_availability = FixAvailability.SOMETIMES
    bad = (
        "import torch\nx = torch.zeros(8, 3).cuda()\n",
        "import torch\n\ndef f(device):\n    return torch.ones(4).to(device)\n",
        "import torch\nnoise = torch.randn(2, 3).to('cuda:0', non_blocking=True)\n",
    )
    good = (
        "import torch\nx = torch.zeros(8, 3, device='cuda')\n",
        "import torch\nx = torch.zeros(8).to(torch.float16)\n",
        "import torch\ng = torch.Generator().manual_seed(0)\nx = torch.randn(3, generator=g).cuda()\n",
        "import torch\nx = torch.zeros(3).to(other)\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("cuda", "to"):
            return
        factory = func.value
        if not isinstance(factory, cst.Call) or not _may_name(factory, FACTORIES):
            return
        name = self.context.call_name(factory)
        if name is None or not name.startswith("torch.") or name.count(".") != 1:
            return
        short = name[len("torch.") :]
        if short not in FACTORIES or has_star_args(factory):
            return
        if any(find_arg(factory, keyword) is not None for keyword in ("device", "out")):
            return
        if short in RANDOM_FACTORIES and find_arg(factory, "generator") is not None:
            return
        if func.attr.value == "cuda":
            moved = self._cuda_target(node)
        else:
            moved = self._to_target(node)
        if moved is None:
            return
        device, dtype, fixable = moved
        where = "`.cuda()`" if func.attr.value == "cuda" else "`.to(...)`"
        self.report(
            node,
            f"`torch.{short}(...)` is created on the CPU and copied by {where}; create it on the device with `device=`",
            self._fix(node, factory, short, device, dtype) if fixable else None,
        )

    def _cuda_target(self, call: cst.Call):
        """(device expression, dtype, fixable) for `.cuda(...)`, None when it is not a move."""
        if has_star_args(call):
            return None, None, False
        device = arg_value(call, "device", 0)
        others = [a for a in call.args if a.value is not device and not (a.keyword and a.keyword.value in _COPY_KEYWORDS)]
        if device is None:
            return cst.SimpleString('"cuda"'), None, not others
        index = literal(device)
        if isinstance(index, int) and not isinstance(index, bool):
            return cst.SimpleString(f'"cuda:{index}"'), None, not others
        return device, None, False  # `.cuda(d)` with d None means the current device, `device=None` the CPU

    def _to_target(self, call: cst.Call):
        if has_star_args(call):
            return None
        device = arg_value(call, "device")
        first = arg_value(call, position=0)
        dtype = arg_value(call, "dtype")
        if device is None and first is not None and device_like(self, first):
            device = first
            if dtype is None:
                dtype = arg_value(call, position=1)
        if device is None or not device_like(self, device):
            return None
        known = {id(device), id(dtype)}
        fixable = all(
            id(arg.value) in known or (arg.keyword is not None and arg.keyword.value in _COPY_KEYWORDS) for arg in call.args
        )
        return device, dtype, fixable

    def _fix(self, call: cst.Call, factory: cst.Call, short: str, device, dtype) -> Optional[FixBuilder]:
        keywords = [("device", device)]
        if dtype is not None:
            if short not in _DTYPE_SAFE_FACTORIES or find_arg(factory, "dtype") is not None:
                return None
            keywords.append(("dtype", dtype))
        if find_arg(factory, "pin_memory") is not None:
            return None  # pinned memory exists only on the host
        exact = short in EXACT_FACTORIES and (short != "arange" or _integer_step(factory))
        # `zeros(n, requires_grad=True).cuda()` is a non-leaf copy of a CPU leaf; with `device=`
        # the tensor itself becomes the leaf that collects `.grad`
        leaf_changes = find_arg(factory, "requires_grad") is not None
        builder = FixBuilder(
            "Create the tensor on the device with `device=`",
            Applicability.SAFE if exact and not leaf_changes else Applicability.UNSAFE,
        )
        return builder.replace(call, with_keywords(factory, keywords))


def _integer_step(arange: cst.Call) -> bool:
    """`torch.arange(end)`, `arange(start, end)` or an integer literal step."""
    positional = [arg for arg in arange.args if arg.keyword is None]
    step = arg_value(arange, "step") or (positional[2].value if len(positional) > 2 else None)
    if step is None:
        return all(not isinstance(literal(arg.value), float) for arg in positional)
    value = literal(step)
    return isinstance(value, int) and not isinstance(value, bool) and all(
        not isinstance(literal(arg.value), float) for arg in positional
    )


# -- TDL403 ----------------------------------------------------------------------------

DATALOADER = "torch.utils.data.DataLoader"
_CUDA_QUERIES = frozenset({"torch.cuda.is_available", "torch.cuda.current_device", "torch.cuda.device_count"})


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
        attr = _call_attr(node)
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
        if any("cuda" in value for value in _strings_in(device)):
            self.moves_with_cuda = True
        elif device_like(self, device):
            self.moves_to_device = True

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if not self.mentions_cuda and "cuda" in node.value:
            self.mentions_cuda = True

    def leave_Module(self, original_node: cst.Module) -> None:
        if not (self.moves_with_cuda or (self.moves_to_device and self.mentions_cuda)):
            return
        for loader in self.loaders:
            fix = FixBuilder("Add `pin_memory=True`", Applicability.SAFE).replace(
                loader, with_keywords(loader, [("pin_memory", cst.Name("True"))])
            )
            self.report(
                loader,
                "this DataLoader feeds batches that the file moves to CUDA; `pin_memory=True` makes the copies faster "
                "and lets `non_blocking=True` overlap them",
                fix,
            )


# -- TDL404 ----------------------------------------------------------------------------

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
        if not _may_name(node, ("DataParallel", "data_parallel")):
            return
        if self.context.call_name(node) in DATA_PARALLEL:
            self.report(
                node,
                "`DataParallel` (one process, one thread per GPU, gathering on GPU 0) is slower than "
                "`DistributedDataParallel` (one process per GPU), even on one machine",
            )


# -- TDL405 ----------------------------------------------------------------------------

# Deprecated name -> (replacement attribute of torch.amp, target version from which it is deprecated,
# the keywords the old positional arguments map to when the new signature orders them differently).
CUDA_AMP: Dict[str, Tuple[str, Tuple[int, int], Optional[Tuple[str, ...]]]] = {
    "torch.cuda.amp.autocast": ("autocast", (2, 4), ("enabled", "dtype", "cache_enabled")),
    "torch.cuda.amp.autocast_mode.autocast": ("autocast", (2, 4), ("enabled", "dtype", "cache_enabled")),
    # torch.amp.GradScaler(device, init_scale, ...): the old positions follow the device
    "torch.cuda.amp.GradScaler": ("GradScaler", (2, 3), None),
    "torch.cuda.amp.grad_scaler.GradScaler": ("GradScaler", (2, 3), None),
}


_VERSION_GUARD_RE = re.compile(r"(?i)version|greater|_less|_ge_|_lt_|hasattr|torch\.amp|is_torch")


class DeprecatedCudaAmp(Rule):
    """
    ## Why is this bad?
    `torch.cuda.amp.autocast(...)` and `torch.cuda.amp.GradScaler(...)` are
    the old, CUDA-only spellings of mixed precision. PyTorch deprecated them
    (GradScaler in 2.3, autocast in 2.4: each call emits a `FutureWarning`)
    in favour of the device-generic `torch.amp.autocast("cuda", ...)` and
    `torch.amp.GradScaler("cuda", ...)`, and will remove them. The speed-up
    of mixed precision itself (often 1.5-3x on tensor-core GPUs) is what is
    at stake: code on a removed API loses it, or stops running.

    The rule reports only when the target torch (config `torch-version`, else
    the installed torch) is at least the version that deprecated the call;
    before that the old spelling is the right one.

    ## Fix safety
    Safe: the old classes are thin subclasses that pass `"cuda"` and the
    same arguments to the new ones. Positional arguments of `autocast`
    (`enabled`, `dtype`, `cache_enabled`) become keywords, since the new
    signature orders them differently; `GradScaler`'s keep their positions
    after `"cuda"`. A file that reaches the names only through
    `from torch.cuda.amp import autocast` gets `import torch`; the old import
    is left in place (remove it once unused). One difference: without
    `dtype=`, the new `autocast` uses `torch.get_autocast_dtype("cuda")`
    (float16 unless `torch.set_autocast_dtype` changed it), where the old
    one always passed float16.

    ## Known problems
    A call that is visibly a fallback for older torch is not reported: one
    inside an `except` clause, or in a branch chosen by a version or feature
    test (`... if TORCH_GREATER_EQUAL_2_4 else torch.cuda.amp.GradScaler()`,
    `if hasattr(torch, "amp"):`). `torch.cuda.amp.custom_fwd`/`custom_bwd`
    and `torch.cpu.amp.autocast` (deprecated too) are not reported. Calls
    with `*args`/`**kwargs` are reported without a fix.

    ## Options
    `torch-version`. Profile `performance`, or `--select TDL405`.

    ## References
    - Automatic mixed precision package, `torch.amp`: <https://pytorch.org/docs/stable/amp.html>
    - PyTorch performance tuning guide, "Use mixed precision and AMP":
      <https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html>
    """

    code = "TDL405"
    name = "deprecated-cuda-amp"
    summary = "`torch.cuda.amp.autocast`/`GradScaler` are deprecated; use `torch.amp.autocast(\"cuda\")`/`GradScaler(\"cuda\")`"
    profiles = PERFORMANCE
    fix_availability = FixAvailability.SAFE
    example_config = {"torch-version": "2.4"}
    bad = (
        "import torch\nscaler = torch.cuda.amp.GradScaler()\nwith torch.cuda.amp.autocast():\n    pass\n",
        "from torch.cuda.amp import autocast\n\nwith autocast(dtype=torch.bfloat16):\n    pass\n",
    )
    good = (
        "import torch\nscaler = torch.amp.GradScaler('cuda')\nwith torch.amp.autocast('cuda'):\n    pass\n",
        "import torch\nwith torch.autocast(device_type='cuda'):\n    pass\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.compatibility_depth = 0  # inside an `except` or a version-guarded branch
        # Rendering every `if` test is costly; a file that never names these APIs needs none of it.
        self.relevant = "autocast" in context.text or "GradScaler" in context.text
        self.guards: list = []

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self.compatibility_depth += 1

    def leave_ExceptHandler(self, original_node: cst.ExceptHandler) -> None:
        self.compatibility_depth -= 1

    def visit_If(self, node: cst.If) -> None:
        self._enter(node.test)

    def leave_If(self, original_node: cst.If) -> None:
        self.compatibility_depth -= self.guards.pop()

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._enter(node.test)

    def leave_IfExp(self, original_node: cst.IfExp) -> None:
        self.compatibility_depth -= self.guards.pop()

    def _enter(self, test: cst.BaseExpression) -> None:
        guard = self._version_guard(test) if self.relevant else 0
        self.guards.append(guard)
        self.compatibility_depth += guard

    def _version_guard(self, test: cst.BaseExpression) -> int:
        """1 when a condition selects code by torch version or feature (`TORCH_GE_2_4`, `hasattr(torch, "amp")`)."""
        return int(bool(_VERSION_GUARD_RE.search(self.context.module.code_for_node(test))))

    def visit_Call(self, node: cst.Call) -> None:
        if not _may_name(node, ("autocast", "GradScaler")):
            return
        name = self.context.call_name(node)
        entry = CUDA_AMP.get(name or "")
        if entry is None or self.compatibility_depth:
            return  # a fallback for older torch (`except AttributeError:`, `if TORCH_GE_2_4 ... else`)
        new_name, deprecated_in, positional_keywords = entry
        if self.context.torch_version < deprecated_in:
            return
        self.report(
            node,
            f"`torch.cuda.amp.{new_name}(...)` is deprecated since torch {deprecated_in[0]}.{deprecated_in[1]}; "
            f"use `torch.amp.{new_name}(\"cuda\", ...)`",
            self._fix(node, new_name, positional_keywords),
        )

    def _fix(self, node: cst.Call, new_name: str, positional_keywords) -> Optional[FixBuilder]:
        if has_star_args(node):
            return None
        torch_name = torch_module_name(self)
        if torch_name is None:
            return None  # `torch` is bound to something else in this file
        builder = FixBuilder(f"Use `torch.amp.{new_name}(\"cuda\", ...)`", Applicability.SAFE)
        if not torch_name:
            torch_name = "torch"
            builder.add_import("torch")
        args = list(node.args)
        if positional_keywords is not None:
            positional = [arg for arg in args if arg.keyword is None]
            if len(positional) > len(positional_keywords):
                return None
            for index, arg in enumerate(positional):
                args[args.index(arg)] = arg.with_changes(
                    keyword=cst.Name(positional_keywords[index]),
                    equal=cst.AssignEqual(whitespace_before=_NO_SPACE, whitespace_after=_NO_SPACE),
                )
        new_call = node.with_changes(func=cst.parse_expression(f"{torch_name}.amp.{new_name}"), args=args)
        return builder.replace(node, with_first_argument(new_call, cst.SimpleString('"cuda"')))


# -- TDL407 ----------------------------------------------------------------------------

GRAD_DISABLING = frozenset(
    {
        "torch.no_grad",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
        "torch.inference_mode",
        "torch.autograd.inference_mode",
        "torch.autograd.grad_mode.inference_mode",
        "torch.set_grad_enabled",
        "torch.autograd.set_grad_enabled",
        "torch.autograd.grad_mode.set_grad_enabled",
    }
)
# Calls that show a function needs gradients in eval mode (adversarial inputs, saliency maps,
# fine-tuning with frozen batch norm): the model call there is not pure inference.
_GRADIENT_METHODS = frozenset({"backward", "step", "requires_grad_", "enable_grad", "grad", "vjp", "jacobian", "hessian"})
# Methods that return the module itself, so `model.to(device).eval()` puts `model` in eval mode.
_SELF_RETURNING = frozenset({"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "eval", "train", "requires_grad_"})


class _Frame:
    """One function body (or the module body) for TDL407."""

    __slots__ = ("name", "in_eval", "no_grad", "needs_grad", "candidates")

    def __init__(self, name: Optional[str], no_grad: int) -> None:
        self.name = name
        self.in_eval: Set[str] = set()  # receivers put in eval mode so far (`model`, `self.net`)
        self.no_grad = no_grad  # > 0 inside a no_grad / inference_mode region
        self.needs_grad = False
        self.candidates: List[Tuple[cst.Call, str]] = []


class InferenceWithoutNoGrad(Rule):
    """
    ## Why is this bad?
    `model.eval()` switches dropout and batch norm to inference behaviour but
    does not turn off autograd: a forward pass in eval mode still records
    the graph and keeps every intermediate activation alive for a backward
    pass that never comes. Under `torch.no_grad()` (or the faster
    `torch.inference_mode()`) the same forward runs without that
    bookkeeping: activation memory drops to roughly one layer's worth
    (allowing larger inference batches), and the forward is typically
    5-30% faster, most for small, overhead-bound layers.

    Reported: in one function (or at module level), a call `X.eval()` (or
    `X.train(False)`) followed by a call of the same `X(...)` outside a
    `with torch.no_grad():` / `torch.inference_mode()` /
    `torch.set_grad_enabled(False)` block and outside a function decorated
    with `@torch.no_grad()` / `@torch.inference_mode()`.

    The advice does not apply when gradients are wanted in eval mode:
    adversarial examples, saliency maps, fine-tuning with frozen batch norm,
    test-time optimisation. A function that calls `.backward()`, an
    optimizer `.step()`, `torch.autograd.grad`, `torch.enable_grad`, or
    touches `requires_grad` is therefore not reported.

    ## Known problems
    A function whose every call site in the same file is inside a no-grad
    region is not reported; callers in other files are not seen, so a
    helper only ever called under `no_grad` from another module is
    reported (decorate it with `@torch.no_grad()`, which is also clearer).
    `X.train()` or rebinding `X` ends eval mode for the analysis. A
    module-level `torch.set_grad_enabled(False)` silences the whole file.
    There is no fix: which lines form the inference part is a judgement
    call; wrap them in `with torch.inference_mode():` (or `torch.no_grad()`
    if the outputs are later used in autograd).

    ## Options
    Profile `performance`, or `--select TDL407`.

    ## References
    - PyTorch performance tuning guide, "Disable gradient calculation for validation or inference":
      <https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html>
    - Autograd mechanics, "Locally disabling gradient computation" and "Evaluation Mode":
      <https://pytorch.org/docs/stable/notes/autograd.html#locally-disable-grad-doc>
    - `torch.inference_mode`: <https://pytorch.org/docs/stable/generated/torch.autograd.grad_mode.inference_mode.html>
    """

    code = "TDL407"
    name = "inference-without-no-grad"
    summary = "a model in eval mode is called outside `torch.no_grad()` / `torch.inference_mode()`"
    profiles = PERFORMANCE
    bad = (
        "import torch\n\ndef evaluate(model, x):\n    model.eval()\n    return model(x)\n",
        "import torch\n\ndef predict(self, batch):\n    self.net.to('cuda').eval()\n    out = self.net(batch)\n    return out\n",
    )
    good = (
        "import torch\n\ndef evaluate(model, x):\n    model.eval()\n    with torch.no_grad():\n        return model(x)\n",
        "import torch\n\n@torch.inference_mode()\ndef evaluate(model, x):\n    model.eval()\n    return model(x)\n",
        "import torch\n\ndef attack(model, x):\n    model.eval()\n    x.requires_grad_()\n"
        "    model(x).sum().backward()\n    return x.grad\n",
        "import torch\n\ndef run(model, x):\n    model.eval()\n    model.train()\n    return model(x)\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.active = context.imports_torch
        self.frames: List[_Frame] = [_Frame(None, 0)]
        self.no_grad_withs: Set[int] = set()
        self.finished: List[_Frame] = []
        # simple name of every call -> was each call site inside a no-grad region?
        self.call_sites: Dict[str, List[bool]] = {}
        self.globally_disabled = False

    # -- grad mode -----------------------------------------------------------------
    def _disables_grad(self, node: cst.CSTNode) -> bool:
        """The expression turns gradients off (or may: a non-literal `set_grad_enabled(flag)`)."""
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.Call):
                name = self.context.call_name(current)
                if name in GRAD_DISABLING:
                    if "inference_mode" in name:
                        return literal(arg_value(current, "mode", 0)) is not False
                    if "set_grad_enabled" in name:
                        return literal(arg_value(current, "mode", 0)) is not True
                    return True
            elif isinstance(current, (cst.Name, cst.Attribute)):
                if self.context.qualified_name(current) in GRAD_DISABLING:
                    return True
                if isinstance(current, cst.Name):
                    continue
            stack.extend(current.children)
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not self.active:
            return
        decorated = any(self._disables_grad(decorator.decorator) for decorator in node.decorators)
        parent = self.frames[-1]
        # a nested function defined inside a no-grad region usually runs there too
        no_grad = 1 if decorated or (parent.name is not None and parent.no_grad) else 0
        self.frames.append(_Frame(node.name.value, no_grad))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if self.active:
            self.finished.append(self.frames.pop())

    def visit_With(self, node: cst.With) -> None:
        if self.active and any(self._disables_grad(item.item) for item in node.items):
            self.no_grad_withs.add(id(node))
            self.frames[-1].no_grad += 1

    def leave_With(self, original_node: cst.With) -> None:
        if id(original_node) in self.no_grad_withs:
            self.frames[-1].no_grad -= 1

    def visit_Expr(self, node: cst.Expr) -> None:
        # a bare `torch.set_grad_enabled(False)` statement turns gradients off from here on
        # (`torch.no_grad()` or `inference_mode()` alone only build a context manager)
        if self.active and isinstance(node.value, cst.Call) and _call_attr(node.value) == "set_grad_enabled":
            if self._disables_grad(node.value):
                frame = self.frames[-1]
                frame.no_grad += 1
                if frame.name is None:
                    self.globally_disabled = True

    # -- eval mode and model calls --------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        if not self.active:
            return
        frame = self.frames[-1]
        func = node.func
        attr = _call_attr(node)
        self.call_sites.setdefault(attr, []).append(frame.no_grad > 0)
        if isinstance(func, cst.Attribute):
            if attr in _GRADIENT_METHODS or attr == "requires_grad":
                frame.needs_grad = True
                return
            if attr == "eval" and not node.args:
                receiver = _module_receiver(func.value)
                if receiver is not None:
                    frame.in_eval.add(receiver)
                return
            if attr == "train":
                receiver = _module_receiver(func.value)
                mode = literal(arg_value(node, "mode", 0))
                if receiver is not None:
                    if mode is False:
                        frame.in_eval.add(receiver)
                    else:
                        frame.in_eval.discard(receiver)
                return
        if frame.in_eval and not frame.no_grad:
            callee = dotted_name(func)
            if callee is not None and callee in frame.in_eval:
                frame.candidates.append((node, callee))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self.active and node.attr.value in ("requires_grad", "grad"):
            self.frames[-1].needs_grad = True

    def visit_Arg(self, node: cst.Arg) -> None:
        if self.active and node.keyword is not None and node.keyword.value == "requires_grad":
            self.frames[-1].needs_grad = True

    def leave_Assign(self, original_node: cst.Assign) -> None:
        if not self.active:
            return
        frame = self.frames[-1]
        value = original_node.value
        evaluates = isinstance(value, cst.Call) and _call_attr(value) == "eval" and not value.args
        for target in original_node.targets:
            key = dotted_name(target.target)
            if key is None:
                continue
            if evaluates:
                frame.in_eval.add(key)  # `net = model.eval()`
            else:
                frame.in_eval.discard(key)  # a new object, in training mode by default

    def leave_Module(self, original_node: cst.Module) -> None:
        if not self.active or self.globally_disabled:
            return
        self.finished.append(self.frames[0])
        for frame in self.finished:
            if frame.needs_grad or not frame.candidates:
                continue
            if frame.name is not None:
                sites = self.call_sites.get(frame.name, [])
                if sites and all(sites):
                    continue  # every caller in this file already disables gradients
            for call, callee in frame.candidates:
                self.report(
                    call,
                    f"`{callee}` is in eval mode but called with autograd on; wrap inference in "
                    "`with torch.inference_mode():` (or `torch.no_grad()`) to skip recording the graph",
                )


def _module_receiver(node: cst.BaseExpression) -> Optional[str]:
    """`model` for `model`, `model.to(device)`, `model.cuda().half()`: the module a chain returns."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _SELF_RETURNING:
        node = node.func.value
    return dotted_name(node)


# -- TDL406 ----------------------------------------------------------------------------

BENCHMARK_LINE = "torch.backends.cudnn.benchmark = True"


class CudnnBenchmarkOffForSpeed(ProjectRule):
    """
    ## Why is this bad?
    For every new input shape, `torch.backends.cudnn.benchmark = True` lets
    cuDNN time the convolution algorithms it has and keep the fastest for
    that shape. The default (`False`) uses a heuristic choice, which is often
    not the fastest: with fixed input shapes (image classification at a
    fixed resolution, a fixed batch size) benchmarking typically speeds up
    convolution-heavy training and inference by 10-30%, sometimes more for
    unusual layer shapes, after a few slow first iterations. The PyTorch
    performance tuning guide recommends it.

    Reported, once per entry point (at the `if __name__ == "__main__":` line,
    else line 1): an entry point that reaches both convolutions
    (`nn.Conv1d/2d/3d`, the transposed and lazy forms, `F.conv*d`,
    `torch.conv*d`, torchvision model builders) and CUDA work (`.cuda()`,
    `.to("cuda")`, `device="cuda"`, `torch.device("cuda")`, `torch.cuda.*`),
    in its own code or in the first-party code it calls, and never chooses
    the flag: no `cudnn.benchmark = ...` assignment (any value: an explicit
    `False` is a deliberate choice) and no `Trainer(benchmark=...)` or
    `cudnn.flags(benchmark=...)`.

    The advice does not apply when input shapes vary (variable image sizes,
    detection with multi-scale inputs, variable sequence lengths): each new
    shape is benchmarked again, which can make the program slower overall
    and uses extra memory for the trials. It also works against
    reproducibility: benchmarking picks algorithms by timing, so two runs
    can differ (TDL301 asks for the opposite, which is why this rule is only
    in profile `performance` and TDL301 is not; selecting both prints a
    warning).

    ## Fix safety
    Safe: inserts `torch.backends.cudnn.benchmark = True` at the top of the
    main block (for a script, right after its imports), with `import torch`
    when the file lacks it. Results keep their meaning; the convolution
    algorithm, and therefore the last bits of the results, may differ from
    run to run.

    ## Known problems
    Whether input shapes are fixed cannot be seen statically: silence the
    rule (`# noqa: TDL406` on the reported line) for programs with varying
    shapes, or write `torch.backends.cudnn.benchmark = False` to record the
    choice. Convolutions inside third-party models other than torchvision's
    (`timm.create_model(...)`) are not seen.

    ## Options
    `entry-points` (which files are entry points). Profile `performance`, or
    `--select TDL406`.

    ## References
    - PyTorch performance tuning guide, "Enable cuDNN auto-tuner":
      <https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html>
    - `torch.backends.cudnn.benchmark`:
      <https://pytorch.org/docs/stable/backends.html#torch.backends.cudnn.benchmark>
    - PyTorch, Reproducibility, "CUDA convolution benchmarking":
      <https://pytorch.org/docs/stable/notes/randomness.html>
    """

    code = "TDL406"
    name = "cudnn-benchmark-off-for-speed"
    summary = "an entry point runs CUDA convolutions without `cudnn.benchmark = True`"
    profiles = PERFORMANCE
    fix_availability = FixAvailability.SAFE
    bad = (
        "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
        "    model = nn.Conv2d(3, 8, 3).cuda()\n    print(model(torch.randn(1, 3, 32, 32).cuda()))\n",
    )
    good = (
        "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n    torch.backends.cudnn.benchmark = True\n"
        "    model = nn.Conv2d(3, 8, 3).cuda()\n    print(model(torch.randn(1, 3, 32, 32).cuda()))\n",
        "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
        "    model = nn.Conv2d(3, 8, 3)\n    print(model(torch.randn(1, 3, 32, 32)))\n",
        "import torch\n\nif __name__ == '__main__':\n    print(torch.nn.Linear(3, 8).cuda()(torch.randn(1, 3).cuda()))\n",
    )

    def check(self, project) -> Iterable:
        for entry in project.entry_points:
            reach = project.entry_reach(entry)
            convolution = reach.covers.get("convolution")
            if convolution is None or not reach.cuda or "cudnn-benchmark" in reach.covers:
                continue
            cuda = reach.cuda[0]
            yield project.entry_diagnostic(
                entry,
                self.code,
                self.name,
                f"this entry point runs convolutions ({convolution.site.text} at {_where(entry, convolution)}) on CUDA "
                f"({cuda.site.text} at {_where(entry, cuda)}) and never sets `cudnn.benchmark = True`; "
                "with fixed input shapes, cuDNN autotuning picks faster algorithms",
                self._fix(project, entry),
            )

    def _fix(self, project, entry) -> Optional[Fix]:
        from torchdet_lint.project import import_edit, merge_edits

        anchors = entry.summary.anchors
        if anchors is None or entry.summary.is_notebook:
            return None
        bindings = entry.summary.module_bindings
        torch_name = next((name for name, (module, _) in sorted(bindings.items()) if module == "torch"), None)
        edits = []
        if torch_name is None:
            if "torch" in bindings:
                return None  # `torch` names something else in this file
            torch_name = "torch"
            edits.append(import_edit(anchors, "import torch", "torch", project.options.first_party))
        line = f"{torch_name}.backends.cudnn.benchmark = True"
        if anchors.main_top is not None:
            edits.append(Edit(anchors.main_top, anchors.main_top, anchors.main_indent + line + "\n"))
        else:
            prefix = "\n\n" if anchors.after_imports_eof else "\n"  # a blank line after the imports
            edits.append(Edit(anchors.after_imports, anchors.after_imports, prefix + line + "\n"))
        return Fix("Set `torch.backends.cudnn.benchmark = True`", Applicability.SAFE, merge_edits(edits))


def _where(entry, located) -> str:
    return f"line {located.site.line}" if located.path == entry.path else located.where()
