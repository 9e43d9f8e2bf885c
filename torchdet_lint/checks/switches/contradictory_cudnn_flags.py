"""TDL304 `contradictory-cudnn-flags`: `cudnn.benchmark` on where `cudnn.deterministic` asks for fixed algorithms."""

from __future__ import annotations

from typing import Dict, Set, Tuple

import libcst as cst

from torchdet_lint.checks.setting_paths import SettingPaths
from torchdet_lint.checks.switches.switch_settings import (
    BENCHMARK,
    DETERMINISTIC,
    cudnn_assignments,
    false_fix,
    trainer_argument,
    truthy,
)
from torchdet_lint.core.names import NOT_LITERAL, literal, reported_argument
from torchdet_lint.core.rule import FixAvailability, Rule


class ContradictoryCudnnFlags(Rule):
    """
    ## Why is this bad?
    `cudnn.deterministic = True` asks cuDNN for deterministic convolution
    algorithms; `cudnn.benchmark = True` lets it choose among them by timing,
    so the chosen algorithm, and the numbers, can still change between runs.
    Setting both says "reproducible" and undoes it in the same module.
    Lightning's `Trainer(deterministic=True, benchmark=True)` is the same
    contradiction (Lightning itself warns about it).

    The two settings must hold together on one path through the code: the
    module's own code (its main block included) and each function are
    followed statement by statement, through both sides of every `if`, loops
    that run or not, `try` blocks, and the calls of the file's module-level
    functions (a `set_determinism()` defined above and called before
    `cudnn.benchmark = True` counts). A branch that sets `deterministic =
    True` after `benchmark = False`, or that returns, does not contradict a
    `benchmark = True` elsewhere: the recipe form

    ```python
    if args.deterministic:
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
    else:
        torch.backends.cudnn.benchmark = True
    ```

    is silent, also with `cudnn.benchmark = True` set before the `if` (the
    branch's `False` replaces it). A `benchmark = True` reached after a
    `deterministic = True` on some path is reported, naming that path's
    `deterministic` line (the first in the file when several paths lead
    there), even when a later line turns it off again.

    ## Fix safety
    Safe: the benchmark flag becomes `False`, keeping what `deterministic`
    asked for. Speed may drop for fixed-shape convolutions.

    ## Known problems
    The two flags are matched within one module only, and a function's body
    starts from its caller's settings only where the file calls it (a
    function nobody in the file calls starts with neither set). The tests of
    `if` statements are not read: two `if args.deterministic:` blocks are
    followed as independent choices. A non-literal benchmark value next to
    `deterministic = True` is reported as a possible contradiction, without a
    fix.

    ## Options
    None. Profile `performance` keeps this rule (it drops TDL301).

    ## References
    - PyTorch, Reproducibility: <https://pytorch.org/docs/stable/notes/randomness.html>
    - Lightning `Trainer(deterministic=..., benchmark=...)`
    """

    code = "TDL304"
    name = "contradictory-cudnn-flags"
    summary = "`cudnn.benchmark = True` next to `cudnn.deterministic = True` undoes the determinism it asks for"
    trigger_words = ("benchmark",)  # each report is about a benchmark setting
    fix_availability = FixAvailability.SAFE
    bad = (
        "import torch\ntorch.backends.cudnn.deterministic = True\ntorch.backends.cudnn.benchmark = True\n",
        "import lightning as L\ntrainer = L.Trainer(deterministic=True, benchmark=True)\n",
    )
    good = (
        "import torch\ntorch.backends.cudnn.deterministic = True\ntorch.backends.cudnn.benchmark = False\n",
        "import lightning as L\ntrainer = L.Trainer(deterministic=True)\n",
        (
            "import torch\n\nif deterministic:\n    torch.backends.cudnn.benchmark = False\n"
            "    torch.backends.cudnn.deterministic = True\nelse:\n    torch.backends.cudnn.benchmark = True\n"
        ),
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        # id of each flag assignment -> (0: deterministic, 1: benchmark; the value as written).
        self.assignments: Dict[int, Tuple[int, object]] = {}
        self.values: Dict[int, cst.BaseExpression] = {}
        self.contradictions: Dict[int, Tuple[cst.Assign, Set[cst.Assign]]] = {}  # id of a benchmark setting

    def visit_Assign(self, node: cst.Assign) -> None:
        for name, value in cudnn_assignments(self, node):
            self.assignments[id(node)] = (0 if name == DETERMINISTIC else 1, literal(value))
            if name == BENCHMARK:
                self.values[id(node)] = value

    def visit_Call(self, node: cst.Call) -> None:
        deterministic = trainer_argument(self, node, "deterministic")
        benchmark = trainer_argument(self, node, "benchmark")
        if deterministic is None or benchmark is None or not truthy(literal(deterministic.value)):
            return
        constant = literal(benchmark.value)
        where = reported_argument(node, benchmark)
        if constant is True:
            self.report(
                where,
                "`Trainer(deterministic=True, benchmark=True)`: benchmarking "
                "picks cuDNN algorithms by timing, undoing `deterministic`",
                false_fix(benchmark.value, "benchmark"),
            )
        elif constant is NOT_LITERAL:
            self.report(
                where, "`Trainer(deterministic=True, benchmark=...)` with a non-literal benchmark value may undo `deterministic`"
            )

    def _check(self, state) -> None:
        deterministic, benchmark = state
        if not isinstance(deterministic, tuple) or not isinstance(benchmark, tuple) or deterministic[0] is not True:
            return
        if benchmark[0] is True or benchmark[0] is NOT_LITERAL:
            self.contradictions.setdefault(id(benchmark[1]), (benchmark[1], set()))[1].add(deterministic[1])

    def leave_Module(self, original_node: cst.Module) -> None:
        settings = self.assignments.values()
        if not any(s == (0, True) for s in settings) or not any(s[0] == 1 and s[1] in (True, NOT_LITERAL) for s in settings):
            return
        SettingPaths(original_node, self.assignments, 2, self._check).walk()
        for node, paired in self.contradictions.values():
            line = min(self.context.node_range(d)[0] for d in paired)
            if self.assignments[id(node)][1] is True:
                value = self.values[id(node)]
                fix = false_fix(value, "cudnn.benchmark") if len(node.targets) == 1 else None
                self.report(
                    node,
                    f"`cudnn.benchmark = True` contradicts `cudnn.deterministic = True` (line {line}): "
                    "benchmarking picks algorithms by timing, which can differ between runs",
                    fix,
                )
            else:
                self.report(
                    node,
                    f"`cudnn.benchmark` set from a non-literal value may contradict `cudnn.deterministic = True` (line {line})",
                )
