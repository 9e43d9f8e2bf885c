"""TDL106 `unordered-file-listing`: an unsorted file listing in a dataset file."""

from __future__ import annotations

from typing import Dict, List, Set, Tuple

import libcst as cst

from torchdet_lint.diagnostics import Applicability, FixBuilder
from torchdet_lint.names import dotted_name
from torchdet_lint.rule import FixAvailability, Rule

_LISTINGS = frozenset({"os.listdir", "os.scandir", "glob.glob", "glob.iglob"})
_PATH_METHODS = frozenset({"glob", "rglob", "iterdir"})
_ORDER_FREE = frozenset(
    {"builtins.sorted", "builtins.len", "builtins.set", "builtins.frozenset", "builtins.sum", "builtins.any", "builtins.all", "builtins.max", "builtins.min", "collections.Counter"}
)
_DATASET_BASES = frozenset(
    {
        "torch.utils.data.Dataset", "torch.utils.data.IterableDataset", "torchvision.datasets.VisionDataset",
        "torchvision.datasets.DatasetFolder", "torchvision.datasets.ImageFolder",
    }
)
_DATASET_CONSTRUCTORS = frozenset(
    {
        "torch.utils.data.TensorDataset", "torch.utils.data.ConcatDataset", "torch.utils.data.Subset",
        "torch.utils.data.ChainDataset", "torch.utils.data.StackDataset",
    }
)


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
    bound to a name that is later `.sort()`ed. Order-free uses (`len(...)`,
    `set(...)`, `x in ...`) are not reported.

    ## Fix safety
    Safe: wraps the listing in `sorted(...)` (`sorted(..., key=lambda entry:
    entry.name)` for `os.scandir`, whose entries do not compare). A lazy
    iterator becomes a list, which costs memory for huge directories. No fix
    when the listing is used as a context manager or given to `next(...)`.

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
    fix_availability = FixAvailability.SAFE
    bad = (
        "import os\nfrom torch.utils.data import Dataset\n\nclass Images(Dataset):\n    def __init__(self, root):\n        self.files = os.listdir(root)\n",
        "from pathlib import Path\nimport torchvision\nfiles = list(Path('data').glob('*.png'))\nds = torchvision.datasets.ImageFolder('data')\n",
    )
    good = (
        "import os\nfrom torch.utils.data import Dataset\n\nclass Images(Dataset):\n    def __init__(self, root):\n        self.files = sorted(os.listdir(root))\n",
        "import os\nfiles = os.listdir('data')\n",
        "import glob\nfrom torch.utils.data import Dataset\nfiles = glob.glob('*.png')\nfiles.sort()\nclass D(Dataset):\n    pass\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.dataset_file = False
        self.ordered_depth = 0
        self.order_calls: List[cst.CSTNode] = []
        self.listings: List[Tuple[cst.Call, str, bool]] = []
        self.no_fix: Set[int] = set()
        self.bound: Dict[int, str] = {}
        self.sorted_names: Set[str] = set()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if not self.dataset_file:
            for base in node.bases:
                if self.context.qualified_name(base.value) in _DATASET_BASES:
                    self.dataset_file = True

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if isinstance(value, cst.Call) and dotted_name(value.func) == "list" and value.args:
            value = value.args[0].value
        if isinstance(value, cst.Call) and len(node.targets) == 1:
            name = dotted_name(node.targets[0].target)
            if name is not None:
                self.bound[id(value)] = name

    def visit_WithItem(self, node: cst.WithItem) -> None:
        self.no_fix.add(id(node.item))

    def visit_ComparisonTarget(self, node: cst.ComparisonTarget) -> None:
        if isinstance(node.operator, (cst.In, cst.NotIn)):
            self.ordered_depth += 1
            self.order_calls.append(node)

    def leave_ComparisonTarget(self, original_node: cst.ComparisonTarget) -> None:
        if self.order_calls and self.order_calls[-1] is original_node:
            self.order_calls.pop()
            self.ordered_depth -= 1

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        attribute = func.attr.value if isinstance(func, cst.Attribute) else (func.value if isinstance(func, cst.Name) else None)
        if attribute == "sort" and isinstance(func, cst.Attribute):
            name = dotted_name(func.value)
            if name is not None:
                self.sorted_names.add(name)
            return
        cheap = attribute in ("sorted", "len", "set", "frozenset", "sum", "any", "all", "max", "min", "Counter", "next")
        cheap = cheap or attribute in ("listdir", "scandir", "glob", "iglob", "rglob", "iterdir")
        if not cheap and not self.dataset_file:
            name = self.context.call_name(node)
            if name is not None and (name in _DATASET_CONSTRUCTORS or name.startswith("torchvision.datasets.")):
                self.dataset_file = True
            return
        name = self.context.call_name(node)
        if name in _ORDER_FREE:
            self.ordered_depth += 1
            self.order_calls.append(node)
            return
        if name == "builtins.next" and node.args:
            self.no_fix.add(id(node.args[0].value))
            return
        if name is not None and (name in _DATASET_CONSTRUCTORS or name.startswith("torchvision.datasets.")):
            self.dataset_file = True
        if self.ordered_depth:
            return
        if name in _LISTINGS:
            self.listings.append((node, name, name == "os.scandir"))
        elif attribute in _PATH_METHODS and isinstance(func, cst.Attribute) and (name is None or name.startswith("pathlib.")):
            self.listings.append((node, f"Path.{attribute}", False))

    def leave_Call(self, original_node: cst.Call) -> None:
        if self.order_calls and self.order_calls[-1] is original_node:
            self.order_calls.pop()
            self.ordered_depth -= 1

    def leave_Module(self, original_node: cst.Module) -> None:
        if not self.dataset_file:
            return
        for node, name, entries in self.listings:
            bound = self.bound.get(id(node))
            if bound is not None and bound in self.sorted_names:
                continue
            fix = None
            if id(node) not in self.no_fix:
                code = self.context.module.code_for_node(node)
                text = f"sorted({code}, key=lambda entry: entry.name)" if entries else f"sorted({code})"
                fix = FixBuilder("Wrap the listing in `sorted(...)`", Applicability.SAFE).replace(node, text)
            self.report(node, f"`{name}(...)` lists files in file-system order, which differs between machines: wrap it in `sorted(...)`", fix)
