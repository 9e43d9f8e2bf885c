"""What the DataLoader rules share: the seeded `generator=` fix."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from torchdet_lint.core.call_edits import with_keywords
from torchdet_lint.core.diagnostics import TIED_TO_TORCH_SEED, Applicability, FixBuilder
from torchdet_lint.core.names import has_star_args
from torchdet_lint.core.rule import Rule

GENERATOR_EXPRESSION = "{torch}.Generator().manual_seed({torch}.initial_seed())"
# The generator fix's `extra`: the project phase makes it unsafe where a spawned run leaves torch unseeded.
TIED = {TIED_TO_TORCH_SEED: True}
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
    return builder.replace(call, with_keywords(call, [("generator", value)]))
