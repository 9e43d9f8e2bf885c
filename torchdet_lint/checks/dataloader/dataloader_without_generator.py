"""TDL101 `dataloader-without-generator`: a shuffling DataLoader without `generator=`."""

from __future__ import annotations

from typing import Tuple

import libcst as cst

from torchdet_lint.checks.dataloader.generator_fix import KEPT_IF_REEXPORTED, TIED, SeededGeneratorRule, generator_fix
from torchdet_lint.core.names import arg_value, find_arg, opaque_keywords
from torchdet_lint.core.rule import FixAvailability, last_names
from torchdet_lint.model.facts import (
    DATALOADER,
    LOADER_SUBCLASS,
    RANDOM_SAMPLERS,
    dataloader_classes,
    is_dataloader,
    loader_name,
    loader_position,
    loader_shuffles,
    reexported_torch,
)


class DataLoaderWithoutGenerator(SeededGeneratorRule):
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

    The DataLoader subclasses of libraries are DataLoaders too
    (`rules/third_party.toml` lists them): PyG's and DGL's loaders, MONAI's
    `DataLoader` and `ThreadDataLoader` (which pass `shuffle=` and
    `generator=` on to torch's), a loader Accelerate's `prepare` wraps (the
    rule reads the loader where it is built).

    ## Fix safety
    Safe: the fix adds `generator=torch.Generator().manual_seed(torch.initial_seed())`
    (to the inline sampler when the sampler shuffles), which ties the order to
    the program's seed: the same seed gives the same order, another seed
    another order, whatever else draws from the global generator. It adds
    `import torch` when needed.

    The generator the fix builds is only as reproducible as torch's seed. In
    a function started in a new process (`mp.spawn`, a `"spawn"` pool; see
    TDL001) that never seeds torch, `torch.initial_seed()` comes from the
    operating system, once per process and run: the fix would look done and
    the order would still change with every run, and every rank would get
    another one. There the fix is unsafe (applied with `--unsafe-fixes`,
    together with TDL001's seeding), and the message says why.

    ## Known problems
    Arguments passed through `**kwargs` are not seen: such a loader is not
    reported. A DataLoader subclass defined in the same file is a DataLoader
    (read through its keywords only when it defines its own `__init__`); one
    imported from another module of the project is not recognised. torch's
    `DataLoader` or random samplers re-exported by a module of the project
    (`from pkg.data import DataLoader`, where `pkg/data.py` imports it from
    `torch.utils.data`) are torch's.

    ## Options
    None.

    ## References
    - PyTorch, Reproducibility, "DataLoader": <https://pytorch.org/docs/stable/notes/randomness.html#dataloader>
    - `torch.utils.data.DataLoader`: <https://pytorch.org/docs/stable/data.html>
    """

    code = "TDL101"
    name = "dataloader-without-generator"
    summary = "a shuffling DataLoader has no `generator=`: its order depends on every other use of the global RNG"
    fix_availability = FixAvailability.SOMETIMES
    bad = (
        "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8, shuffle=True)\n",
        "from torch.utils.data import DataLoader, RandomSampler\nloader = DataLoader(ds, sampler=RandomSampler(ds))\n",
    )
    good = (
        (
            "import torch\nfrom torch.utils.data import DataLoader\n"
            "g = torch.Generator().manual_seed(0)\nloader = DataLoader(ds, shuffle=True, generator=g)\n"
        ),
        "from torch.utils.data import DataLoader\nloader = DataLoader(ds, shuffle=False)\n",
    )

    @classmethod
    def words(cls, settings) -> Tuple[str, ...]:
        return last_names(name for name in dataloader_classes() if name != LOADER_SUBCLASS)

    def visit_Call(self, node: cst.Call) -> None:
        loader = loader_name(self.context, node)
        reexported = []
        torch_name = reexported_torch(self.context, loader, {DATALOADER})
        if torch_name is not None:
            reexported.append((loader, torch_name))  # `from pkg.data import DataLoader`
            loader = torch_name
        if not is_dataloader(loader) or opaque_keywords(node):
            return

        def resolve(call: cst.Call):
            name = self.context.call_name(call)
            sampler = reexported_torch(self.context, name, RANDOM_SAMPLERS)
            if sampler is None:
                return name
            reexported.append((name, sampler))
            return sampler

        how = loader_shuffles(node, resolve, loader)
        if how is None or find_arg(node, "generator") is not None:
            return
        extra = {**TIED, KEPT_IF_REEXPORTED: reexported} if reexported else dict(TIED)
        if how == "shuffle":
            self.report(
                node,
                "this shuffling DataLoader has no `generator=`: its order comes "
                "from the global torch RNG and changes with every other use of it",
                generator_fix(self, node, "Add `generator=torch.Generator().manual_seed(torch.initial_seed())`"),
                extra=extra,
            )
        else:
            sampler = arg_value(node, "sampler", loader_position(loader, 3))
            self.report(
                node,
                "the random sampler of this DataLoader has no `generator=`: its order comes from the global torch RNG",
                generator_fix(self, sampler, "Give the sampler `generator=torch.Generator().manual_seed(torch.initial_seed())`"),
                extra=extra,
            )
