"""What the DataLoader rules share: the seeded `generator=` fix."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from torchdet_lint.core.call_edits import with_keywords
from torchdet_lint.core.diagnostics import Applicability, FixBuilder
from torchdet_lint.core.names import has_star_args
from torchdet_lint.core.rule import Rule

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


def generator_fix(rule: Rule, call: cst.Call, title: str) -> Optional[FixBuilder]:
    builder = FixBuilder(title, Applicability.SAFE)
    torch_name = _torch_name(rule, builder)
    if torch_name is None or has_star_args(call):
        return None
    value = cst.parse_expression(GENERATOR_EXPRESSION.format(torch=torch_name))
    return builder.replace(call, with_keywords(call, [("generator", value)]))
