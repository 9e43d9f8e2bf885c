"""TDL103 `dataloader-out-of-order`: `in_order=False`."""

from __future__ import annotations

import libcst as cst

from torchdet_lint.core.names import NOT_LITERAL, find_arg, literal, reported_argument
from torchdet_lint.core.rule import Rule
from torchdet_lint.model.facts import DATALOADER, LOADER_SUBCLASS, loader_name


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
    trigger_words = ("in_order",)  # the rule reads only that argument
    bad = ("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4, in_order=False)\n",)
    good = ("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4, in_order=True)\n",)

    def visit_Call(self, node: cst.Call) -> None:
        if loader_name(self.context, node) not in (DATALOADER, LOADER_SUBCLASS):  # a subclass of this file too
            return
        arg = find_arg(node, "in_order")
        if arg is None:
            return
        value = literal(arg.value)
        if value is False:
            self.report(
                reported_argument(node, arg),
                "`in_order=False` returns batches in the order workers finish them, which changes between runs",
            )
        elif value is NOT_LITERAL:
            self.report(
                reported_argument(node, arg), "`in_order=` is set from a non-literal value and may return batches out of order"
            )
