"""TDL105 `distributed-sampler-without-set-epoch`: a shuffling DistributedSampler never told its epoch."""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.core.diagnostics import Diagnostic
from torchdet_lint.core.names import arg_value, dotted_name, literal, opaque_keywords
from torchdet_lint.core.rule import Rule
from torchdet_lint.model.facts import is_dataloader, loader_name

_SAMPLER_KEYWORDS = frozenset({"sampler", "batch_sampler"})
# `Diagnostic.extra` key: how the sampler may be named in another file, as (names it leaves its
# function under, functions returning it alone, the same two for the loader built with it); a
# `.set_epoch(` elsewhere in the project on such a receiver silences it (`refine` decides).
SILENCED_BY_SET_EPOCH = "silenced_by_set_epoch"


class DistributedSamplerWithoutSetEpoch(Rule):
    """
    ## Why is this bad?
    `DistributedSampler` shuffles with its own generator seeded with
    `seed + epoch`. Without `sampler.set_epoch(epoch)` before each epoch, the
    epoch stays 0 and every epoch sees the data in the same order (the
    sampler's own docstring warns about it).

    Any `.set_epoch(` in the file on the sampler's name, on an attribute
    chain ending in `.sampler` (`loader.sampler.set_epoch(epoch)`), or on a
    name bound to an object built from the sampler (`batches =
    EpochBatches(sampler)` and `batches.set_epoch(epoch)`: a batch sampler that
    wraps it and passes the epoch on; a wrapper with no sampler to pass the
    epoch to would have no reason to take one), counts.
    The epoch loop often lives in another module than the loader's builder:
    a `.set_epoch(` in another file of
    the project counts for the samplers its receiver can be. That is a name
    the sampler leaves its function under (the name it is returned as, the
    name or keyword it is passed under, the attribute it is stored in:
    `self.train_sampler = ...` and `trainer.train_sampler.set_epoch(epoch)`),
    a name bound to a call of a function that returns it alone
    (`train_sampler = build_sampler(ds)`), or `<loader>.sampler` where
    `<loader>` is such a name of the DataLoader built with the sampler
    (`data_loader_train.sampler.set_epoch(epoch)` in `main.py` for the
    loader that `data/build.py` binds to `data_loader_train` and returns):
    the training loader's call does not tell the validation loader's sampler.
    A receiver that its own function does not bind from a call
    (`loader_train, loader_eval = create_loaders(args)`, then
    `loader_train.sampler.set_epoch(epoch)`) stands for the calls the same
    file binds that name to elsewhere (`loader_train = create_loader(...)` in
    `create_loaders`).

    ## Known problems
    Names are matched, not followed: another file's receiver of the same
    name counts even when it holds another object, and one of another name
    (`for loader in loaders: loader.sampler.set_epoch(epoch)`, a sampler
    passed to a parameter of another name) does not. Within one file, any
    `.sampler.set_epoch(` counts for every sampler handed to a loader. A
    `set_epoch` done by a framework (Lightning's Trainer does it for the
    loaders it manages) is not seen: use `# noqa: TDL105`.

    ## Options
    None.

    ## References
    - `torch.utils.data.distributed.DistributedSampler`: <https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler>
    """

    code = "TDL105"
    refined_by = SILENCED_BY_SET_EPOCH
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

    @classmethod
    def refine(cls, diagnostics: List[Diagnostic], project) -> List[Diagnostic]:
        return [d for d in diagnostics if not _epoch_set_elsewhere(project, d)]

    def __init__(self, context) -> None:
        super().__init__(context)
        self.bound: Dict[int, str] = {}
        self.samplers: List[Tuple[cst.Call, Optional[str]]] = []
        self.set_epoch_on: Set[str] = set()
        # How samplers leave their function: names (and ids of inline constructions) handed to a
        # loader, and those passed to another call, returned or stored in an attribute.
        self.to_loader: Set[object] = set()
        self.escaped: Set[object] = set()
        # What another file's `.set_epoch(` receiver may be called (TDL105 across files): the names a
        # sampler (or a loader) leaves under, and the functions that return it alone.
        self.escape_names: Dict[object, Set[str]] = {}
        self.returned_by: Dict[object, Set[str]] = {}
        self.loaders_of: Dict[object, List[int]] = {}  # sampler -> ids of the loader calls it is handed to
        self.handed_to: Dict[object, List[int]] = {}  # sampler -> ids of the other calls it is handed to
        self.functions: List[str] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node.name.value)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.functions.pop()

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
            for target in node.targets:
                name = dotted_name(target.target)
                if name is not None:
                    self.escape_names.setdefault(node.value.value, set()).add(name.rsplit(".", 1)[-1])

    def visit_Return(self, node: cst.Return) -> None:
        alone = not isinstance(node.value, cst.Tuple)
        values = [e.value for e in node.value.elements] if not alone else [node.value] if node.value is not None else []
        for value in values:
            key = value.value if isinstance(value, cst.Name) else id(value)
            self.escaped.add(key)
            if isinstance(value, cst.Name):
                self.escape_names.setdefault(key, set()).add(value.value)
            if alone and self.functions:
                self.returned_by.setdefault(key, set()).add(self.functions[-1])

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
                key = arg.value.value if isinstance(arg.value, cst.Name) else id(arg.value)
                handed.add(key)
                if is_dataloader(qualified):
                    self.loaders_of.setdefault(key, []).append(id(node))
                else:
                    self.handed_to.setdefault(key, []).append(id(node))
                    names = self.escape_names.setdefault(key, set())
                    if isinstance(arg.value, cst.Name):
                        names.add(arg.value.value)
                    if arg.keyword is not None:
                        names.add(arg.keyword.value)
        if qualified != "torch.utils.data.DistributedSampler":
            return
        shuffle = arg_value(node, "shuffle", 3)
        if shuffle is None and opaque_keywords(node):
            return
        if shuffle is not None and literal(shuffle) in (False, None):
            return
        self.samplers.append((node, self.bound.get(id(node))))

    def _names(self, key: object, bound: Optional[str]) -> Tuple[Set[str], Set[str]]:
        """The names a sampler or loader leaves its function under, and the functions that return
        it alone (a name bound to such a call elsewhere holds it)."""
        names = set(self.escape_names.get(key, ()))
        if bound is not None and "." in bound:
            names.add(bound.rsplit(".", 1)[-1])  # `self.train_sampler = ...`
        names.update(name.rsplit(".", 1)[-1] for name in self._wrappers(key))
        return names, set(self.returned_by.get(key, ()))

    def _wrappers(self, key: object) -> Set[str]:
        """The names bound to objects built from the sampler (`batches = EpochBatches(sampler)`):
        they received it, and a `set_epoch` on them is passed on to it (a wrapper that had no
        sampler to forward the epoch to would have no reason to take one)."""
        return {self.bound[call] for call in self.handed_to.get(key, ()) if call in self.bound}

    def leave_Module(self, original_node: cst.Module) -> None:
        through_loader = any(name == "sampler" or name.endswith(".sampler") for name in self.set_epoch_on)
        for node, name in self.samplers:
            if through_loader or (name is not None and name in self.set_epoch_on):
                continue
            if name is not None and self._wrappers(name) & self.set_epoch_on:
                continue
            subject = f"`{name}.set_epoch(epoch)`" if name else "its `set_epoch(epoch)`"
            key = name if name is not None else id(node)
            extra = None
            if key in self.escaped or key in self.to_loader or (name is not None and "." in name):
                names, functions = self._names(key, name)
                loader_names: Set[str] = set()
                loader_functions: Set[str] = set()
                for loader in self.loaders_of.get(key, ()):
                    # `<loader>.sampler`: the loader's own name, or one it leaves its function under.
                    loader_bound = self.bound.get(loader)
                    more_names, more_functions = self._names(loader_bound if loader_bound is not None else loader, loader_bound)
                    if loader_bound is not None:
                        more_names.add(loader_bound.rsplit(".", 1)[-1])
                    loader_names |= more_names
                    loader_functions |= more_functions
                extra = {
                    SILENCED_BY_SET_EPOCH: (
                        tuple(sorted(names)),
                        tuple(sorted(functions)),
                        tuple(sorted(loader_names)),
                        tuple(sorted(loader_functions)),
                    )
                }
            self.report(
                node,
                f"shuffling `DistributedSampler` and {subject} is never called: every epoch repeats the same order",
                extra=extra,
            )


def _epoch_set_elsewhere(project, diagnostic: Diagnostic) -> bool:
    """The epoch loop often lives in another module than the sampler's builder. A `.set_epoch(`
    of another file tells a sampler its epoch when its receiver can be that sampler: a name the
    sampler leaves its function under (returned, passed, stored in an attribute), a name bound to
    a call of a function that returns it alone, or `<loader>.sampler` for such a name of the
    loader built with it."""
    leaves = diagnostic.extra.get(SILENCED_BY_SET_EPOCH)
    if not leaves:
        return False
    names, functions, loader_names, loader_functions = leaves
    for display, summary in project.summaries.items():
        if display == diagnostic.path:
            continue  # the file's own calls were read by the rule, name by name
        for receiver, origin in summary.set_epoch:
            parts = receiver.split(".")
            called = origin.rsplit(".", 1)[-1] if origin else ""  # `sampler = build_sampler(...)`
            if parts[-1] in names or (len(parts) == 1 and called in functions):
                return True
            if len(parts) >= 2 and parts[-1] == "sampler":
                if parts[-2] in loader_names or (len(parts) == 2 and called in loader_functions):
                    return True
    return False
