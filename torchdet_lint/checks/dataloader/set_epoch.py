"""TDL105 `distributed-sampler-without-set-epoch`: a shuffling DistributedSampler never told its epoch."""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.core.diagnostics import SILENCED_BY_SET_EPOCH
from torchdet_lint.core.names import arg_value, dotted_name, literal, opaque_keywords
from torchdet_lint.core.rule import Rule
from torchdet_lint.model.facts import is_dataloader, loader_name

_SAMPLER_KEYWORDS = frozenset({"sampler", "batch_sampler"})


class DistributedSamplerWithoutSetEpoch(Rule):
    """
    ## Why is this bad?
    `DistributedSampler` shuffles with its own generator seeded with
    `seed + epoch`. Without `sampler.set_epoch(epoch)` before each epoch, the
    epoch stays 0 and every epoch sees the data in the same order (the
    sampler's own docstring warns about it).

    Any `.set_epoch(` in the file on the sampler's name, or on an attribute
    chain ending in `.sampler` (`loader.sampler.set_epoch(epoch)`), counts.
    The epoch loop often lives in another module than the loader's builder
    (RULES.md, "Catalog and evidence"): a sampler handed to a DataLoader
    (`sampler=` or `batch_sampler=`) is also told its epoch by a
    `.set_epoch(` on an attribute chain ending in `.sampler` anywhere in the
    project (`data_loader_train.sampler.set_epoch(epoch)` in `main.py` for a
    loader built in `data/build.py`), and a sampler that leaves its function
    otherwise (returned, passed to a call, stored in an attribute) by any
    `.set_epoch(` in another file of the project, since the name that
    received it is not followed.

    ## Known problems
    Across files, which loader's `.sampler` is told its epoch is not
    followed: one such call silences every sampler handed to a loader in the
    project. A `set_epoch` done by a framework (Lightning's Trainer does it
    for the loaders it manages) is not seen: use `# noqa: TDL105`.

    ## Options
    None.

    ## References
    - `torch.utils.data.distributed.DistributedSampler`: <https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler>
    """

    code = "TDL105"
    name = "distributed-sampler-without-set-epoch"
    summary = "a shuffling `DistributedSampler` whose `set_epoch` is never called repeats one order every epoch"
    trigger_words = ("DistributedSampler",)
    bad = (
        (
            "from torch.utils.data.distributed import DistributedSampler\n"
            "sampler = DistributedSampler(ds)\nfor epoch in range(3):\n    train(sampler)\n"
        ),
    )
    good = (
        (
            "from torch.utils.data.distributed import DistributedSampler\n"
            "sampler = DistributedSampler(ds)\nfor epoch in range(3):\n    sampler.set_epoch(epoch)\n"
        ),
        "from torch.utils.data.distributed import DistributedSampler\nsampler = DistributedSampler(ds, shuffle=False)\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.bound: Dict[int, str] = {}
        self.samplers: List[Tuple[cst.Call, Optional[str]]] = []
        self.set_epoch_on: Set[str] = set()
        # How samplers leave their function: names (and ids of inline constructions) handed to a
        # loader, and those passed to another call, returned or stored in an attribute.
        self.to_loader: Set[object] = set()
        self.escaped: Set[object] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        # `sampler = DistributedSampler(ds) if distributed else None` binds the sampler too.
        values = [node.value.body, node.value.orelse] if isinstance(node.value, cst.IfExp) else [node.value]
        for value in values:
            if isinstance(value, cst.Call):
                for target in node.targets:
                    name = dotted_name(target.target)
                    if name is not None:
                        self.bound[id(value)] = name
        if isinstance(node.value, cst.Name) and any(not isinstance(t.target, cst.Name) for t in node.targets):
            self.escaped.add(node.value.value)  # `self.sampler = sampler`

    def visit_Return(self, node: cst.Return) -> None:
        values = node.value.elements if isinstance(node.value, cst.Tuple) else [node.value] if node.value is not None else []
        for value in values:
            value = getattr(value, "value", value)
            self.escaped.add(value.value if isinstance(value, cst.Name) else id(value))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "set_epoch":
            receiver = dotted_name(func.value)
            if receiver is not None:
                self.set_epoch_on.add(receiver)
            return
        qualified = loader_name(self.context, node)
        handed = self.to_loader if is_dataloader(qualified) else self.escaped
        for arg in node.args:
            if not is_dataloader(qualified) or (arg.keyword is not None and arg.keyword.value in _SAMPLER_KEYWORDS):
                handed.add(arg.value.value if isinstance(arg.value, cst.Name) else id(arg.value))
        if qualified != "torch.utils.data.DistributedSampler":
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
            key = name if name is not None else id(node)
            leaves = "escapes" if key in self.escaped else "loader" if key in self.to_loader else None
            self.report(
                node,
                f"shuffling `DistributedSampler` and {subject} is never called: every epoch repeats the same order",
                extra={SILENCED_BY_SET_EPOCH: leaves} if leaves else None,
            )
