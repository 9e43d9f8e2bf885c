"""TDL105 `distributed-sampler-without-set-epoch`: a shuffling DistributedSampler never told its epoch."""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.names import arg_value, dotted_name, literal, opaque_keywords
from torchdet_lint.rule import Rule


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
    trigger_words = ("DistributedSampler",)
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
        if shuffle is None and opaque_keywords(node):
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
