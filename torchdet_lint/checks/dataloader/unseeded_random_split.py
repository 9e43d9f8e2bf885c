"""TDL104 `unseeded-random-split`: a random split or sampler without `generator=`."""

from __future__ import annotations

from typing import Set

import libcst as cst

from torchdet_lint.checks.dataloader.generator_fix import KEPT_IF_REEXPORTED, TIED, SeededGeneratorRule, generator_fix
from torchdet_lint.core.names import arg_value, opaque_keywords
from torchdet_lint.core.rule import FixAvailability, last_names
from torchdet_lint.model.facts import (
    DATALOADER,
    GENERATOR_POSITION,
    LOADER_SUBCLASS,
    RANDOM_SAMPLERS,
    loader_name,
    loader_position,
    reexported_torch,
)

_NAMES = RANDOM_SAMPLERS | {"torch.utils.data.random_split", DATALOADER}


class UnseededRandomSplit(SeededGeneratorRule):
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

    The generator the fix builds is only as reproducible as torch's seed. In
    a function started in a new process (`mp.spawn`, a `"spawn"` pool; see
    TDL001) that never seeds torch, `torch.initial_seed()` comes from the
    operating system, once per process and run: the fix would look done and
    the order would still change with every run, and every rank would get
    another one. There the fix is unsafe (applied with `--unsafe-fixes`,
    together with TDL001's seeding), and the message says why. In a distributed run whose ranks seed torch differently
    (`seed + rank`), the split seeded from `torch.initial_seed()` differs per
    rank: TDL011 then takes rank 0's seed for it.

    ## Known problems
    A generator passed through `**kwargs` is not seen; such a call is not
    reported. A module of the project that imports one of these from torch
    re-exports it: `from pkg.sampler import SubsetRandomSampler`, where
    `pkg/sampler.py` does `from torch.utils.data import SubsetRandomSampler`,
    is torch's class (also through several such modules; a class the
    project defines under that name is not).

    ## Options
    None.

    ## References
    - `torch.utils.data.random_split`: <https://pytorch.org/docs/stable/data.html#torch.utils.data.random_split>
    """

    code = "TDL104"
    name = "unseeded-random-split"
    summary = "a random split or sampler without `generator=` draws from the global RNG"
    trigger_words = last_names(RANDOM_SAMPLERS | {"torch.utils.data.random_split"})
    fix_availability = FixAvailability.SOMETIMES
    bad = (
        "from torch.utils.data import random_split\ntrain, val = random_split(ds, [0.8, 0.2])\n",
        "from torch.utils.data import RandomSampler\nsampler = RandomSampler(ds)\n",
    )
    good = (
        (
            "import torch\nfrom torch.utils.data import random_split\n"
            "train, val = random_split(ds, [0.8, 0.2], generator=torch.Generator().manual_seed(0))\n"
        ),
        "from torch.utils.data import DataLoader, RandomSampler\nloader = DataLoader(ds, sampler=RandomSampler(ds))\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.inline_samplers: Set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        name = loader_name(self.context, node)  # a DataLoader subclass of this file too
        reexported = []
        torch_name = reexported_torch(self.context, name, _NAMES)
        if torch_name is not None:
            reexported.append((name, torch_name))  # `from pkg.sampler import RandomSampler`
            name = torch_name
        if name == DATALOADER or name == LOADER_SUBCLASS:
            sampler = arg_value(node, "sampler", loader_position(name, 3))
            if sampler is not None:
                self.inline_samplers.add(id(sampler))
            return
        if name not in RANDOM_SAMPLERS and name != "torch.utils.data.random_split":
            return
        if id(node) in self.inline_samplers or opaque_keywords(node):
            return
        if arg_value(node, "generator", GENERATOR_POSITION[name]) is not None:
            return
        what = name.rsplit(".", 1)[-1]
        self.report(
            node,
            f"`{what}` without `generator=` draws from the global torch RNG: the result changes with every other use of it",
            generator_fix(self, node, "Add `generator=torch.Generator().manual_seed(torch.initial_seed())`"),
            extra={**TIED, KEPT_IF_REEXPORTED: reexported} if reexported else dict(TIED),
        )
