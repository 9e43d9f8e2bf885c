"""TDL106 `unordered-file-listing`: an unsorted file listing in a dataset file."""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.core.call_edits import wrapped_in
from torchdet_lint.core.diagnostics import Applicability, FixBuilder
from torchdet_lint.core.names import dotted_name
from torchdet_lint.core.rule import FixAvailability, Rule, last_names

_LISTINGS = frozenset({"os.listdir", "os.scandir", "glob.glob", "glob.iglob"})
_PATH_METHODS = frozenset({"glob", "rglob", "iterdir"})
_ORDER_FREE = frozenset(
    {
        "builtins.sorted",
        "builtins.len",
        "builtins.set",
        "builtins.frozenset",
        "builtins.sum",
        "builtins.any",
        "builtins.all",
        "builtins.max",
        "builtins.min",
        "collections.Counter",
    }
)
_DATASET_BASES = frozenset(
    {
        "torch.utils.data.Dataset",
        "torch.utils.data.IterableDataset",
        "torchvision.datasets.VisionDataset",
        "torchvision.datasets.DatasetFolder",
        "torchvision.datasets.ImageFolder",
    }
)
_DATASET_CONSTRUCTORS = frozenset(
    {
        "torch.utils.data.TensorDataset",
        "torch.utils.data.ConcatDataset",
        "torch.utils.data.Subset",
        "torch.utils.data.ChainDataset",
        "torch.utils.data.StackDataset",
    }
)


# Calls that re-package a listing in the same order: what encloses them decides its use.
_REPACKAGING = frozenset({"builtins.list", "builtins.tuple", "builtins.filter", "builtins.map"})
_THROUGH = "through"


class UnorderedFileListing(Rule):
    """
    ## Why is this bad?
    `os.listdir`, `os.scandir`, `glob.glob` / `iglob` and `Path.glob` /
    `rglob` / `iterdir` return files in the order the file system stores
    them, which differs between machines, file systems and copies of the same
    data. A dataset indexed by that order gives sample `i` a different file on
    another machine, so splits, subsets and seeded shuffles select different
    data.

    Reported in files that define a `Dataset` / `IterableDataset` subclass or
    build a `torch.utils.data` / `torchvision.datasets` dataset, for listings
    not passed through `sorted(...)` (generator expressions included) and not
    bound to a name that is later `.sort()`ed. The listing is followed through
    names rebound in the same function (a comprehension or `filter(...)` over
    it, `list(...)`, a list it is added to with `+=` or `.extend(...)`, as
    yolov5 gathers `f += glob.glob(...)`): it counts as sorted when what it flows into reaches
    `sorted(...)` / `.sort()`, and as order-free when it only reaches `len`,
    `set` (a set comprehension too: `{f.stem for f in root.iterdir()}`), `in`,
    `any`, `all`, `max`, `min` or `sum`; those are not reported.

    ## Fix safety
    Safe: wraps the listing in `sorted(...)` (`sorted(..., key=lambda entry:
    entry.name)` for `os.scandir`, whose entries do not compare). A lazy
    iterator becomes a list, which costs memory for huge directories. No fix
    when the listing is used as a context manager or given to `next(...)`.

    Order-free uses include `max(...)`/`min(...)` of the listing after
    `list(...)`, `map(...)`, `filter(...)` or a comprehension (the newest
    checkpoint's step), and testing it for emptiness (`max(steps) if steps
    else 0`).

    ## Known problems
    A listing sorted later by a function that receives it is reported, and so
    is one whose order cannot matter but is not visibly order-free (a loop
    that extracts every archive, or fills a set): sort it anyway, or use
    `# noqa: TDL106`.

    ## Options
    None.

    ## References
    - Python, `os.listdir` ("in arbitrary order"): <https://docs.python.org/3/library/os.html#os.listdir>
    - Python, `glob`: <https://docs.python.org/3/library/glob.html>
    """

    code = "TDL106"
    name = "unordered-file-listing"
    summary = "a file listing in a dataset file is not sorted: its order depends on the file system"
    trigger_words = last_names(_LISTINGS | _PATH_METHODS)
    fix_availability = FixAvailability.SAFE
    bad = (
        (
            "import os\nfrom torch.utils.data import Dataset\n\nclass Images(Dataset):\n"
            "    def __init__(self, root):\n        self.files = os.listdir(root)\n"
        ),
        (
            "from pathlib import Path\nimport torchvision\nfiles = list(Path('data').glob('*.png'))\n"
            "ds = torchvision.datasets.ImageFolder('data')\n"
        ),
    )
    good = (
        (
            "import os\nfrom torch.utils.data import Dataset\n\nclass Images(Dataset):\n"
            "    def __init__(self, root):\n        self.files = sorted(os.listdir(root))\n"
        ),
        "import os\nfiles = os.listdir('data')\n",
        (
            "import glob\nfrom torch.utils.data import Dataset\nfiles = glob.glob('*.png')\n"
            "files.sort()\nclass D(Dataset):\n    pass\n"
        ),
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.dataset_file = False
        self.enclosing: List[str] = []  # per enclosing call or `in` test: "sorted", "order-free" or "other"
        self.listings: List[Tuple[cst.Call, str, bool]] = []
        self.wrapped: Set[int] = set()  # listings passed straight to `sorted(...)` or an order-free use
        self.uses: Dict[int, Set[str]] = {}  # listing -> how the names it flows into are used
        self.no_fix: Set[int] = set()
        self.attribute_listings: Dict[str, List[int]] = {}  # `self.files = os.listdir(...)`: sorted later?
        self.sorted_names: Set[str] = set()
        self.flows: List[Dict[str, int]] = [{}]  # per function: name -> the listing it holds
        self.deriving: Set[int] = set()  # Name nodes read to derive another listing name (not a use)
        self.tests: Set[int] = set()  # the tests of `if` statements and expressions
        # A listing added to a name that already holds one (`f += glob(a)`; `f += glob(b)`): it is
        # used wherever the first one is.
        self.joined: Dict[int, int] = {}

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if not self.dataset_file:
            for base in node.bases:
                if self.context.qualified_name(base.value) in _DATASET_BASES:
                    self.dataset_file = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.flows.append({})

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.flows.pop()

    # -- names a listing flows into ---------------------------------------------------------
    def _source(self, value: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """What a value is a re-packaging of: `list(x)`, `tuple(x)`, `filter(f, x)`, or a
        comprehension over `x` (the listing keeps its order through them)."""
        while isinstance(value, cst.Call) and dotted_name(value.func) in ("list", "tuple", "filter", "map") and value.args:
            value = value.args[-1].value
        if isinstance(value, (cst.ListComp, cst.GeneratorExp)):
            return value.for_in.iter
        return value

    def visit_Assign(self, node: cst.Assign) -> None:
        source = self._source(node.value)
        if isinstance(source, cst.Name) and source.value in self.flows[-1]:
            self.deriving.add(id(source))

    def leave_Assign(self, original_node: cst.Assign) -> None:
        if len(original_node.targets) != 1:
            return
        target = original_node.targets[0].target
        source = self._source(original_node.value)
        listing = None
        if isinstance(source, cst.Call) and id(source) in self.uses:
            listing = id(source)
        elif isinstance(source, cst.Name) and id(source) in self.deriving:
            listing = self.flows[-1].get(source.value)
        if listing is None:
            if isinstance(target, cst.Name):
                self.flows[-1].pop(target.value, None)  # rebound to something else
            return
        if isinstance(target, cst.Name):
            self.flows[-1][target.value] = listing
            self.uses[listing].discard("other")  # being bound is not a use; the name's uses decide
        else:
            name = dotted_name(target)
            if name is not None:
                self.attribute_listings.setdefault(name, []).append(listing)

    def _add_to(self, name: str, listing: int) -> None:
        """`name += listing` / `name.extend(listing)`: the listing flows into the name."""
        held = self.flows[-1].get(name)
        if held is None:
            self.flows[-1][name] = listing
        elif held != listing:
            self.joined[listing] = held
        self.uses[listing].discard("other")  # being added is not a use; the name's uses decide

    def _added_listing(self, value: cst.BaseExpression) -> Optional[int]:
        source = self._source(value)
        if isinstance(source, cst.Call) and id(source) in self.uses:
            return id(source)
        if isinstance(source, cst.Name) and id(source) in self.deriving:
            return self.flows[-1].get(source.value)
        return None

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        source = self._source(node.value)
        if isinstance(node.operator, cst.AddAssign) and isinstance(source, cst.Name) and source.value in self.flows[-1]:
            self.deriving.add(id(source))

    def leave_AugAssign(self, original_node: cst.AugAssign) -> None:
        if not isinstance(original_node.operator, cst.AddAssign) or not isinstance(original_node.target, cst.Name):
            return
        listing = self._added_listing(original_node.value)
        if listing is not None:
            self._add_to(original_node.target.value, listing)

    def visit_Name(self, node: cst.Name) -> None:
        listing = self.flows[-1].get(node.value)
        if listing is None or id(node) in self.deriving:
            return
        # `max(steps) if steps else 0`: testing whether the listing is empty needs no order.
        self.uses[listing].add("order-free" if id(node) in self.tests else self._use())

    def visit_If(self, node: cst.If) -> None:
        self.tests.add(id(node.test))

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.tests.add(id(node.test))

    def _use(self) -> str:
        if "sorted" in self.enclosing:
            return "sorted"
        # `len(list(x))`: re-packaging keeps the order, so the use is what encloses it.
        return next((kind for kind in reversed(self.enclosing) if kind != _THROUGH), "other")

    def visit_WithItem(self, node: cst.WithItem) -> None:
        self.no_fix.add(id(node.item))

    def visit_SetComp(self, node: cst.SetComp) -> None:
        # `{f.stem for f in root.iterdir()}` builds a set, as `set(...)` does: no order survives.
        self.enclosing.append("order-free")

    def leave_SetComp(self, original_node: cst.SetComp) -> None:
        self.enclosing.pop()

    def visit_ComparisonTarget(self, node: cst.ComparisonTarget) -> None:
        self.enclosing.append("order-free" if isinstance(node.operator, (cst.In, cst.NotIn)) else "other")

    def leave_ComparisonTarget(self, original_node: cst.ComparisonTarget) -> None:
        self.enclosing.pop()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        attribute = func.attr.value if isinstance(func, cst.Attribute) else (func.value if isinstance(func, cst.Name) else None)
        kind = "other"
        if attribute == "sort" and isinstance(func, cst.Attribute):
            name = dotted_name(func.value)
            if name is not None:
                self.sorted_names.add(name)
                listing = self.flows[-1].get(name)
                if listing is not None:
                    self.uses[listing].add("sorted")
            self.enclosing.append("other")
            return
        cheap = attribute in (
            "sorted",
            "len",
            "set",
            "frozenset",
            "sum",
            "any",
            "all",
            "max",
            "min",
            "Counter",
            "next",
            "list",
            "tuple",
            "filter",
            "map",
        )
        cheap = cheap or attribute in ("listdir", "scandir", "glob", "iglob", "rglob", "iterdir")
        if not cheap:
            if not self.dataset_file:
                name = self.context.call_name(node)
                if name is not None and (name in _DATASET_CONSTRUCTORS or name.startswith("torchvision.datasets.")):
                    self.dataset_file = True
            self.enclosing.append(kind)
            return
        name = self.context.call_name(node)
        if name == "builtins.sorted":
            kind = "sorted"
        elif name in _REPACKAGING:
            kind = _THROUGH
        elif name in _ORDER_FREE:
            kind = "order-free"
        elif name == "builtins.next" and node.args:
            self.no_fix.add(id(node.args[0].value))
        if name is not None and (name in _DATASET_CONSTRUCTORS or name.startswith("torchvision.datasets.")):
            self.dataset_file = True
        listing = None
        if name in _LISTINGS:
            listing = (node, name, name == "os.scandir")
        elif attribute in _PATH_METHODS and isinstance(func, cst.Attribute) and (name is None or name.startswith("pathlib.")):
            listing = (node, f"Path.{attribute}", False)
        if listing is not None:
            self.listings.append(listing)
            self.uses[id(node)] = {self._use()}
        self.enclosing.append(kind)

    def leave_Call(self, original_node: cst.Call) -> None:
        self.enclosing.pop()
        func = original_node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "extend"
            and isinstance(func.value, cst.Name)
            and len(original_node.args) == 1
        ):
            listing = self._added_listing(original_node.args[0].value)
            if listing is not None:
                self._add_to(func.value.value, listing)

    def leave_Module(self, original_node: cst.Module) -> None:
        if not self.dataset_file:
            return
        for name, listings in self.attribute_listings.items():
            if name in self.sorted_names:
                for listing in listings:
                    self.uses[listing].add("sorted")
        for listing, held in self.joined.items():
            self.uses[listing] |= self.uses[held]
        for node, name, entries in self.listings:
            uses = self.uses[id(node)]
            # Sorted somewhere it flows, or only ever used where order cannot matter.
            if "sorted" in uses or (uses and uses <= {"order-free"}):
                continue
            fix = None
            if id(node) not in self.no_fix:
                keywords = [("key", cst.parse_expression("lambda entry: entry.name"))] if entries else []
                fix = FixBuilder("Wrap the listing in `sorted(...)`", Applicability.SAFE).replace(
                    node, wrapped_in("sorted", self.context.written(node), keywords)
                )
            self.report(
                node,
                f"`{name}(...)` lists files in file-system order, which differs between machines: wrap it in `sorted(...)`",
                fix,
            )
