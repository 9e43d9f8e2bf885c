"""TDL401 `tensor-copies-numpy`: `torch.tensor(array)` copies a NumPy array."""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional

import libcst as cst

from torchdet_lint.checks.performance.call_readings import (
    PERFORMANCE,
    may_name,
    string_value,
)
from torchdet_lint.core.diagnostics import Applicability, FixBuilder
from torchdet_lint.core.names import arg_value, dotted_name, find_arg, has_star_args, literal
from torchdet_lint.core.rule import FixAvailability, Rule

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
    trigger_words = ("tensor",)  # `torch.tensor(array)`
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
        if not self.active or not may_name(node, ("tensor",)):
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
    path = string_value(arg_value(call, "file", 0))
    return path is None or not path.endswith(".npz")


def _target_names(target: cst.CSTNode) -> Iterator[str]:
    if isinstance(target, cst.Name):
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _target_names(target.value)
