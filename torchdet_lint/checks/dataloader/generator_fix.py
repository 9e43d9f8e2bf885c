"""What the DataLoader rules share: the seeded `generator=` fix, and how the project
settles the findings that offer it (TDL101, TDL104)."""

from __future__ import annotations

from typing import List, Optional

import libcst as cst

from torchdet_lint.core.call_edits import with_keywords
from torchdet_lint.core.diagnostics import Applicability, Diagnostic, Fix, FixBuilder
from torchdet_lint.core.names import has_star_args
from torchdet_lint.core.rule import Rule

GENERATOR_EXPRESSION = "{torch}.Generator().manual_seed({torch}.initial_seed())"
# `Diagnostic.extra` key: the fix seeds a generator from `torch.initial_seed()`, so it is only as
# reproducible as the torch seed; where a spawned run that reaches it never seeds torch (TDL001
# there), `refine` makes the fix unsafe (it would look fixed and still vary).
TIED_TO_TORCH_SEED = "fix_tied_to_the_torch_seed"
TIED = {TIED_TO_TORCH_SEED: True}
# `Diagnostic.extra` key: pairs (first-party name, torch name) the finding read a first-party name
# as, where that module may re-export torch's object under the same name (`from
# torch.utils.data import SubsetRandomSampler` in `pkg/sampler.py`); the finding stands only if
# every pair is such a re-export (`refine` decides).
KEPT_IF_REEXPORTED = "kept_if_reexported"
WORKER_RESEEDS_NUMPY = (1, 9)  # torch 1.9 made workers seed NumPy's global RNG


def runs_in_loader_worker(node: cst.FunctionDef) -> bool:
    """A function named as a DataLoader's worker init function is (`worker_init_fn`, `seed_worker`,
    `_worker_init`): it runs in a worker whose generators the loader already seeded."""
    name = node.name.value
    return name == "seed_worker" or "worker_init" in name


def seeded_in_worker(torch_version) -> frozenset:
    """The global RNGs a DataLoader worker seeds from the loader's base seed before its init
    function runs: `random` and torch always, NumPy's from torch 1.9. A draw from them there is
    the same in every run seeded the same way."""
    return frozenset({"random", "torch", "numpy"} if tuple(torch_version) >= WORKER_RESEEDS_NUMPY else {"random", "torch"})


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


def generator_fix(rule: Rule, call: cst.Call, title: str) -> Optional[FixBuilder]:
    builder = FixBuilder(title, Applicability.SAFE)
    torch_name = _torch_name(rule, builder)
    if torch_name is None or has_star_args(call):
        return None
    value = cst.parse_expression(GENERATOR_EXPRESSION.format(torch=torch_name))
    return builder.replace(call, with_keywords(rule.context.written(call), [("generator", value)]))


class SeededGeneratorRule(Rule):
    """A rule whose findings may read a first-party re-export as torch's name and whose fix
    seeds a generator from the torch seed: the project settles both."""

    @classmethod
    def needs_project(cls, diagnostic: Diagnostic) -> bool:
        extra = diagnostic.extra
        return bool(extra.get(KEPT_IF_REEXPORTED)) or bool(extra.get(TIED_TO_TORCH_SEED) and diagnostic.fix is not None)

    @classmethod
    def refine(cls, diagnostics: List[Diagnostic], project) -> List[Diagnostic]:
        """A first-party name read as torch's stands for it only where the project's module
        re-exports torch's object under that name; a fix tied to the torch seed is unsafe in a
        spawned run that never seeds torch."""
        kept = [
            d
            for d in diagnostics
            if all(project.external_name(d.path, name) == torch for name, torch in d.extra.get(KEPT_IF_REEXPORTED) or ())
        ]
        if any(d.extra.get(TIED_TO_TORCH_SEED) and d.fix is not None for d in kept):
            unseeded = [
                (entry, project.reached_nodes(entry))
                for entry in project.runs
                if entry.spawn is not None and "torch" not in project.entry_reach(entry).covers
            ]
            for diagnostic in kept if unseeded else ():
                _untie_from_unseeded_torch(project, diagnostic, unseeded)
        return kept


def _untie_from_unseeded_torch(project, diagnostic: Diagnostic, unseeded: list) -> None:
    """`torch.Generator().manual_seed(torch.initial_seed())` in a function that runs in a new
    process which never seeds torch (TDL001 there; `unseeded`: those runs and what they reach)
    is seeded by the operating system, once per process and run: the fix would look done and
    still vary, so it needs the seed first (unsafe)."""
    if not diagnostic.extra.get(TIED_TO_TORCH_SEED) or diagnostic.fix is None:
        return
    node = project.node_at(diagnostic.path, project.analysed_line(diagnostic))
    for entry, nodes in unseeded:
        if node not in nodes:
            continue
        diagnostic.fix = Fix(
            f"{diagnostic.fix.title} (unsafe here: `{entry.spawn.function}` never seeds torch)",
            Applicability.UNSAFE,
            diagnostic.fix.edits,
        )
        diagnostic.message += (
            f"; `{entry.spawn.function}`, started by `{entry.spawn.launcher}(...)` at {entry.path}:{entry.line}, never "
            "seeds torch, so a generator seeded from `torch.initial_seed()` still differs on every run until it does (TDL001)"
        )
        return
