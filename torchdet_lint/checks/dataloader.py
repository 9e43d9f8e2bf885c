"""TDL1xx data loading: shuffling without a generator, worker seeding (a
project rule that follows the dataset to its class, in any module), batch
order, random splits and samplers, `set_epoch`, and unordered file listings.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.names import NOT_LITERAL, arg_value, dotted_name, find_arg, literal
from torchdet_lint.project import Project, merge_edits
from torchdet_lint.rule import Applicability, Diagnostic, Edit, Fix, FixAvailability, FixBuilder, ProjectRule, Rule
from torchdet_lint.summary import (
    _GENERATOR_POSITION,
    DATALOADER,
    RANDOM_SAMPLERS,
    FileSummary,
    LoaderSite,
    RngAttribute,
    facts,
    loader_shuffles,
)

GENERATOR_EXPRESSION = "{torch}.Generator().manual_seed({torch}.initial_seed())"
WORKER_RESEEDS_NUMPY = (1, 9)  # torch 1.9 made workers seed NumPy's global RNG


def _torch_name(rule: Rule, builder: FixBuilder) -> Optional[str]:
    """The local name of `torch` for a fix, adding `import torch` when there is none."""
    final = rule.context.resolver.module_final
    if final.get("torch") == "torch":
        return "torch"
    alias = next((name for name, qualified in sorted(final.items()) if qualified == "torch"), None)
    if alias is not None:
        return alias
    if "torch" in final:
        return None  # `torch` names something else in this module
    builder.add_import("torch")
    return "torch"


def _generator_fix(rule: Rule, call: cst.Call, title: str) -> Optional[FixBuilder]:
    from torchdet_lint.checks.performance import with_keywords

    builder = FixBuilder(title, Applicability.SAFE)
    torch_name = _torch_name(rule, builder)
    if torch_name is None or any(arg.star for arg in call.args):
        return None
    value = cst.parse_expression(GENERATOR_EXPRESSION.format(torch=torch_name))
    return builder.replace(call, with_keywords(call, [("generator", value)]))


class DataLoaderWithoutGenerator(Rule):
    """
    ## Why is this bad?
    A shuffling `DataLoader` without `generator=` draws its order (and the
    base seed of its workers) from the global torch generator. The order then
    depends on everything else that used that generator before: adding a
    dropout layer, an augmentation or an evaluation pass changes the order of
    the training data, and without any seed it changes on every run.

    The loader shuffles when `shuffle=` is anything but a literal `False` or
    `None`, or when `sampler=` is a `RandomSampler`, `SubsetRandomSampler` or
    `WeightedRandomSampler` built inline without `generator=` (a sampler built
    elsewhere is TDL104's).

    ## Fix safety
    Safe: the fix adds `generator=torch.Generator().manual_seed(torch.initial_seed())`
    (to the inline sampler when the sampler shuffles), which ties the order to
    the program's seed: the same seed gives the same order, another seed
    another order, whatever else draws from the global generator. It adds
    `import torch` when needed.

    ## Known problems
    Arguments passed through `**kwargs` are not seen: such a loader is not
    reported.

    ## Options
    None.

    ## References
    - PyTorch, Reproducibility, "DataLoader": <https://pytorch.org/docs/stable/notes/randomness.html#dataloader>
    - `torch.utils.data.DataLoader`: <https://pytorch.org/docs/stable/data.html>
    """

    code = "TDL101"
    name = "dataloader-without-generator"
    summary = "a shuffling DataLoader has no `generator=`: its order depends on every other use of the global RNG"
    fix_availability = FixAvailability.SAFE
    bad = (
        "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8, shuffle=True)\n",
        "from torch.utils.data import DataLoader, RandomSampler\nloader = DataLoader(ds, sampler=RandomSampler(ds))\n",
    )
    good = (
        "import torch\nfrom torch.utils.data import DataLoader\ng = torch.Generator().manual_seed(0)\nloader = DataLoader(ds, shuffle=True, generator=g)\n",
        "from torch.utils.data import DataLoader\nloader = DataLoader(ds, shuffle=False)\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.call_name(node) != DATALOADER or any(arg.star == "**" for arg in node.args):
            return
        how = loader_shuffles(node, self.context.call_name)
        if how is None or find_arg(node, "generator") is not None:
            return
        if how == "shuffle":
            self.report(
                node,
                "this shuffling DataLoader has no `generator=`: its order comes from the global torch RNG and changes with every other use of it",
                _generator_fix(self, node, "Add `generator=torch.Generator().manual_seed(torch.initial_seed())`"),
            )
        else:
            sampler = arg_value(node, "sampler", 3)
            self.report(
                node,
                "the random sampler of this DataLoader has no `generator=`: its order comes from the global torch RNG",
                _generator_fix(self, sampler, "Give the sampler `generator=torch.Generator().manual_seed(torch.initial_seed())`"),
            )


class DataLoaderOutOfOrder(Rule):
    """
    ## Why is this bad?
    `DataLoader(in_order=False)` (torch 2.6+) hands out batches as workers
    finish them, so the batch order depends on timing: two runs see the
    batches in different orders. A non-literal value may be `False` and is
    reported too.

    ## Known problems
    None known.

    ## Options
    None.

    ## References
    - `torch.utils.data.DataLoader` (`in_order`): <https://pytorch.org/docs/stable/data.html>
    """

    code = "TDL103"
    name = "dataloader-out-of-order"
    summary = "`in_order=False` returns batches in the order workers finish them"
    bad = ("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4, in_order=False)\n",)
    good = ("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4, in_order=True)\n",)

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.call_name(node) != DATALOADER:
            return
        arg = find_arg(node, "in_order")
        if arg is None:
            return
        value = literal(arg.value)
        if value is False:
            self.report(arg, "`in_order=False` returns batches in the order workers finish them, which changes between runs")
        elif value is NOT_LITERAL:
            self.report(arg, "`in_order=` is set from a non-literal value and may return batches out of order")


class UnseededRandomSplit(Rule):
    """
    ## Why is this bad?
    `random_split`, `RandomSampler`, `SubsetRandomSampler` and
    `WeightedRandomSampler` without `generator=` draw from the global torch
    generator: the split or the order changes with every other use of it
    (and on every run without a seed). A train/validation split that moves
    between runs also leaks validation data into training across runs.

    A sampler written inline in `DataLoader(sampler=...)` is TDL101's.

    ## Fix safety
    Safe: adds `generator=torch.Generator().manual_seed(torch.initial_seed())`
    (and `import torch` when needed), tying the split to the program's seed.

    ## Known problems
    A generator passed through `**kwargs` is not seen; such a call is not
    reported.

    ## Options
    None.

    ## References
    - `torch.utils.data.random_split`: <https://pytorch.org/docs/stable/data.html#torch.utils.data.random_split>
    """

    code = "TDL104"
    name = "unseeded-random-split"
    summary = "a random split or sampler without `generator=` draws from the global RNG"
    fix_availability = FixAvailability.SAFE
    bad = (
        "from torch.utils.data import random_split\ntrain, val = random_split(ds, [0.8, 0.2])\n",
        "from torch.utils.data import RandomSampler\nsampler = RandomSampler(ds)\n",
    )
    good = (
        "import torch\nfrom torch.utils.data import random_split\ntrain, val = random_split(ds, [0.8, 0.2], generator=torch.Generator().manual_seed(0))\n",
        "from torch.utils.data import DataLoader, RandomSampler\nloader = DataLoader(ds, sampler=RandomSampler(ds))\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.inline_samplers: Set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.call_name(node)
        if name == DATALOADER:
            sampler = arg_value(node, "sampler", 3)
            if sampler is not None:
                self.inline_samplers.add(id(sampler))
            return
        if name not in RANDOM_SAMPLERS and name != "torch.utils.data.random_split":
            return
        if id(node) in self.inline_samplers or any(arg.star == "**" for arg in node.args):
            return
        if arg_value(node, "generator", _GENERATOR_POSITION[name]) is not None:
            return
        what = name.rsplit(".", 1)[-1]
        self.report(
            node,
            f"`{what}` without `generator=` draws from the global torch RNG: the result changes with every other use of it",
            _generator_fix(self, node, "Add `generator=torch.Generator().manual_seed(torch.initial_seed())`"),
        )


class DistributedSamplerWithoutSetEpoch(Rule):
    """
    ## Why is this bad?
    `DistributedSampler` shuffles with its own generator seeded with
    `seed + epoch`. Without `sampler.set_epoch(epoch)` before each epoch, the
    epoch stays 0 and every epoch sees the data in the same order (the
    sampler's own docstring warns about it).

    Any `.set_epoch(` in the file on the sampler's name, or on an attribute
    chain ending in `.sampler` (`loader.sampler.set_epoch(epoch)`), counts.

    ## Known problems
    A `set_epoch` call in another file, or done by a framework (Lightning's
    Trainer does it for the loaders it manages), is not seen: use
    `# noqa: TDL105`.

    ## Options
    None.

    ## References
    - `torch.utils.data.distributed.DistributedSampler`: <https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler>
    """

    code = "TDL105"
    name = "distributed-sampler-without-set-epoch"
    summary = "a shuffling `DistributedSampler` whose `set_epoch` is never called repeats one order every epoch"
    bad = ("from torch.utils.data.distributed import DistributedSampler\nsampler = DistributedSampler(ds)\nfor epoch in range(3):\n    train(sampler)\n",)
    good = (
        "from torch.utils.data.distributed import DistributedSampler\nsampler = DistributedSampler(ds)\nfor epoch in range(3):\n    sampler.set_epoch(epoch)\n",
        "from torch.utils.data.distributed import DistributedSampler\nsampler = DistributedSampler(ds, shuffle=False)\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.bound: Dict[int, str] = {}
        self.samplers: List[Tuple[cst.Call, Optional[str]]] = []
        self.set_epoch_on: Set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.Call):
            for target in node.targets:
                name = dotted_name(target.target)
                if name is not None:
                    self.bound[id(node.value)] = name

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "set_epoch":
            receiver = dotted_name(func.value)
            if receiver is not None:
                self.set_epoch_on.add(receiver)
            return
        if self.context.call_name(node) != "torch.utils.data.DistributedSampler":
            return
        shuffle = arg_value(node, "shuffle", 3)
        if shuffle is None and any(arg.star == "**" for arg in node.args):
            return
        if shuffle is not None and literal(shuffle) in (False, None):
            return
        self.samplers.append((node, self.bound.get(id(node))))

    def leave_Module(self, original_node: cst.Module) -> None:
        through_loader = any(name == "sampler" or name.endswith(".sampler") for name in self.set_epoch_on)
        for node, name in self.samplers:
            if through_loader or (name is not None and name in self.set_epoch_on):
                continue
            subject = f"`{name}.set_epoch(epoch)`" if name else "its `set_epoch(epoch)`"
            self.report(
                node,
                f"shuffling `DistributedSampler` and {subject} is never called: every epoch repeats the same order",
            )


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


# -- TDL102: a project rule, the dataset may live in another module ------------------------------------


class DataLoaderWithoutWorkerInit(ProjectRule):
    """
    ## Why is this bad?
    Each DataLoader worker starts as a copy of the main process. PyTorch
    reseeds torch, `random` and (since 1.9) NumPy's global RNG in every worker,
    but not the RNG objects a dataset holds: a `np.random.default_rng(...)`,
    `np.random.RandomState(...)`, `random.Random(...)` or `torch.Generator`
    created in `__init__`, in the class body or at module level is copied
    unchanged into every worker, so all workers draw the same "random"
    augmentations, and again every epoch.

    The rule follows the loader's dataset (through names bound in the same
    function, `Subset`, `random_split` and `ConcatDataset`) to its
    first-party class, in any module of the project, with its first-party
    base classes. RNG objects made in `__getitem__`, `__iter__` or a
    `worker_init_fn` are fine, and any `worker_init_fn=` silences the rule.
    With a target torch older than 1.9, every loader with workers is
    reported (the workers share NumPy's global RNG state); in profile
    `strict`, every loader with workers and no `worker_init_fn=` is
    reported, as the PyTorch notes recommend.

    ## Fix safety
    Safe: adds `worker_init_fn=seed_worker` and defines `seed_worker` once per
    module (reusing an existing one), as in the PyTorch reproducibility notes,
    seeding each worker's `random` and NumPy from `torch.initial_seed()`; it
    also re-creates, from the worker's seed, the RNG objects the analysis
    found on the dataset (through `torch.utils.data.get_worker_info().dataset`),
    since those are what made the rule fire. No fix when an RNG object cannot
    be re-created (a third-party RNG, one held by another module).

    ## Known problems
    A dataset returned by a function, or held in an attribute, cannot be
    followed: the loader is not reported (profile `strict`: reported).
    Arguments passed through `**kwargs` are not seen.

    ## Options
    `torch-version`, `profile`.

    ## References
    - PyTorch, Reproducibility, "DataLoader": <https://pytorch.org/docs/stable/notes/randomness.html#dataloader>
    - `torch.utils.data`, "Randomness in multi-process data loading": <https://pytorch.org/docs/stable/data.html#data-loading-randomness>
    """

    code = "TDL102"
    name = "dataloader-without-worker-init"
    summary = "a DataLoader with workers and no `worker_init_fn=` over a dataset whose RNG objects every worker copies"
    fix_availability = FixAvailability.SAFE
    bad = (
        "import numpy as np\nimport torch\nfrom torch.utils.data import DataLoader, Dataset\n\n"
        "class Noisy(Dataset):\n    def __init__(self):\n        self.rng = np.random.default_rng(0)\n\n"
        "    def __getitem__(self, i):\n        return self.rng.random()\n\n"
        "loader = DataLoader(Noisy(), num_workers=2)\n",
    )
    good = (
        "import numpy as np\nimport torch\nfrom torch.utils.data import DataLoader, Dataset\n\n"
        "class Noisy(Dataset):\n    def __getitem__(self, i):\n        return np.random.rand()\n\n"
        "loader = DataLoader(Noisy(), num_workers=2)\n",
        "import numpy as np\nfrom torch.utils.data import DataLoader, Dataset\n\n"
        "class Noisy(Dataset):\n    def __init__(self):\n        self.rng = np.random.default_rng(0)\n\n"
        "loader = DataLoader(Noisy(), num_workers=0)\n",
    )

    def check(self, project: Project) -> Iterable[Diagnostic]:
        old_torch = project.options.torch_version < WORKER_RESEEDS_NUMPY
        strict = project.settings.profile == "strict"
        for display, summary in sorted(project.summaries.items()):
            for loader in summary.loaders:
                rngs = self._rngs(project, display, loader)
                if rngs:
                    owner, rng, dataset_class = rngs[0]
                    dataset = f"`{dataset_class}`"
                    what = f"`self.{rng.attribute}`" if not rng.module_level else f"the module-level `{rng.attribute}`"
                    message = (
                        f"DataLoader with workers and no `worker_init_fn=`: {dataset} uses {what}, a "
                        f"`{rng.constructor.rsplit('.', 1)[-1]}` made outside the workers ({owner}:{rng.line}), "
                        "which every worker copies: the workers draw the same numbers"
                    )
                elif old_torch:
                    message = (
                        f"DataLoader with workers and no `worker_init_fn=`: before torch 1.9 (target "
                        f"{'%d.%d' % project.options.torch_version}) workers do not reseed NumPy's global RNG, so they "
                        "repeat the same NumPy draws"
                    )
                elif strict:
                    message = "DataLoader with workers and no `worker_init_fn=`: the PyTorch notes seed every worker's `random` and NumPy explicitly"
                else:
                    continue
                yield Diagnostic(
                    path=display,
                    line=loader.line,
                    column=loader.column,
                    end_line=loader.end_line,
                    end_column=loader.end_column,
                    code=self.code,
                    name=self.name,
                    message=message,
                    fix=self._fix(project, display, summary, loader, rngs),
                    start_offset=loader.start_offset,
                    end_offset=loader.end_offset,
                )

    def _rngs(self, project: Project, display: str, loader: LoaderSite) -> List[Tuple[str, RngAttribute, str]]:
        """(file, RNG object, dataset class) for each RNG the loader's dataset classes hold."""
        if loader.dataset is None:
            return []
        rngs: List[Tuple[str, RngAttribute, str]] = []
        seen: Set[str] = set()
        for target in loader.dataset.targets:
            found = project.class_node(display, target)
            if found is None:
                continue
            for file, name in project.base_classes(found[0], found[1], set()):
                for rng in project.summaries[file].classes[name].rng_attributes:
                    if rng.attribute not in seen:
                        seen.add(rng.attribute)
                        rngs.append((file, rng, found[1]))
        return rngs

    # -- the fix ------------------------------------------------------------------------------------------
    def _fix(self, project: Project, display: str, summary: FileSummary, loader: LoaderSite, rngs) -> Optional[Fix]:
        if loader.keyword_offset is None or summary.anchors is None:
            return None
        edits: List[Edit] = []
        names: Dict[str, str] = {}

        def module(name: str) -> Optional[str]:
            if name in names:
                return names[name]
            bound = next((n for n, q in sorted(summary.exports.items()) if q == name and n in ("torch", "np", "numpy", "random")), None)
            bound = bound or next((n for n, q in sorted(summary.exports.items()) if q == name), None)
            if bound is None:
                planned = summary.rng_import_edits.get(name)
                if planned is None or name in summary.exports:
                    return None
                edits.append(Edit(planned[0], planned[0], planned[1].replace("\r\n", "\n")))
                bound = name
            names[name] = bound
            return bound

        worker = summary.worker_functions.get(loader.worker_function or "")
        kinds = {facts().rng_objects[r.constructor].kind for _, r, _ in rngs if r.constructor in facts().rng_objects}
        # Imports in isort's order (stdlib first): edits at one offset keep the order they are made in.
        random = module("random") if worker is None or "random" in kinds else "random"
        uses_numpy = "numpy" in kinds or (worker is None and any(q == "numpy" for q in summary.exports.values()))
        numpy = module("numpy") if uses_numpy else None
        torch = module("torch")
        if torch is None or random is None or (uses_numpy and numpy is None):
            return None
        recreate = self._recreate(display, rngs, {"torch": torch, "numpy": numpy or "numpy", "random": random})
        if recreate is None:
            return None
        name = worker.name if worker is not None else "seed_worker"
        edits.append(Edit(loader.keyword_offset, loader.keyword_offset, f", worker_init_fn={name}"))
        if worker is not None:
            missing = [rng.attribute for _, rng, _ in rngs if f"{'' if rng.module_level else '.'}{rng.attribute} =" not in worker.text]
            if recreate and missing:
                body = [f"worker_seed = {torch}.initial_seed() % 2**32", *recreate]
                edits.append(Edit(worker.end_offset, worker.end_offset, "".join(worker.indent + line + "\n" for line in body)))
        else:
            lines = ["def seed_worker(worker_id):", f"    worker_seed = {torch}.initial_seed() % 2**32"]
            if numpy is not None:
                lines.append(f"    {numpy}.random.seed(worker_seed)")
            lines.append(f"    {random}.seed(worker_seed)")
            lines.extend("    " + line for line in recreate)
            offset = summary.anchors.after_imports
            text = project.sources.get(display)
            following = getattr(text, "text", "")[offset : offset + 2] if text is not None else ""
            prefix = "\n" if summary.anchors.after_imports_eof else ""
            suffix = "" if following.startswith(("\n", "\r")) or not following else "\n\n"
            edits.append(Edit(offset, offset, prefix + "\n\n" + "\n".join(lines) + "\n" + suffix))
        return Fix("Seed each worker with `worker_init_fn=seed_worker`", Applicability.SAFE, merge_edits(edits))

    def _recreate(self, display: str, rngs, names: Dict[str, str]) -> Optional[List[str]]:
        """Lines (indented for a function body) re-creating the dataset's RNG objects from `worker_seed`."""
        if not rngs:
            return []
        table = facts().rng_objects
        attribute_lines: List[str] = []
        global_lines: List[str] = []
        for index, (file, rng, _) in enumerate(rngs):
            spec = table.get(rng.constructor)
            if spec is None or not spec.seeded or not spec.type:
                return None
            seed = "worker_seed" if index == 0 else f"(worker_seed + {index}) % 2**32"
            seeded = spec.seeded.format(seed=seed, **names)
            kind = spec.type.format(**names)
            if rng.module_level:
                if file != display:
                    return None  # the RNG lives in another module's globals
                global_lines += [f"global {rng.attribute}", f"{rng.attribute} = {seeded}"]
            else:
                attribute_lines += [
                    f"if isinstance(getattr(dataset, \"{rng.attribute}\", None), {kind}):",
                    f"    dataset.{rng.attribute} = {seeded}",
                ]
        lines = list(global_lines)
        if attribute_lines:
            torch = names["torch"]
            # Walk through the wrappers (Subset, random_split, ConcatDataset) to the datasets
            # holding the RNGs: one `seed_worker` may serve loaders of several shapes.
            lines += [
                f"datasets = [{torch}.utils.data.get_worker_info().dataset]",
                "while datasets:",
                "    dataset = datasets.pop()",
                f"    if isinstance(dataset, {torch}.utils.data.Subset):",
                "        datasets.append(dataset.dataset)",
                f"    elif isinstance(dataset, {torch}.utils.data.ConcatDataset):",
                "        datasets.extend(dataset.datasets)",
            ]
            lines += ["    " + line for line in attribute_lines]
        return lines
