"""TDL305 `deterministic-warn-only`: deterministic mode that only warns, and runs the nondeterministic kernel."""

from __future__ import annotations

import libcst as cst

from torchdet_lint.checks.switches.switch_settings import (
    DEBUG_MODE,
    DETERMINISTIC,
    USE_DETERMINISTIC,
    cudnn_assignments,
)
from torchdet_lint.core.names import arg_value, literal
from torchdet_lint.core.rule import Rule, last_names

# Functions that restore state after the code that needed it: a test's teardown, a context manager's exit.
_CLEANUP_FUNCTIONS = ("tearDown", "teardown", "__exit__")


class DeterministicWarnOnly(Rule):
    """
    ## Why is this bad?
    `torch.use_deterministic_algorithms(True, warn_only=True)` turns the
    error for an operation without a deterministic implementation into a
    warning, and the operation then runs nondeterministically: the program
    looks deterministic but is not. (For scaled dot-product attention's fused
    kernels, `warn_only=True` even keeps the nondeterministic backward.)
    `torch.set_deterministic_debug_mode("warn")` (or `1`) is the same.

    An explicit `use_deterministic_algorithms(False)`,
    `set_deterministic_debug_mode("default")` or
    `cudnn.deterministic = False` turns determinism off, often left over from
    a debugging session; it is reported so that the choice is deliberate.

    Only literal values are reported. Turning the flag off as cleanup is not
    reported: in a test's `tearDown`/`teardown_*` method, a context manager's
    `__exit__`, or a `finally:` block, it restores the default after code that
    ran with the flag on (a test that enables it in `setUp` and turns it off
    again in `tearDown` ran deterministically).

    ## Known problems
    `warn_only=True` is a legitimate step while migrating a code base: use
    `# noqa: TDL305` on that line, and look at the warnings it prints.

    ## Options
    None.

    ## References
    - `torch.use_deterministic_algorithms`: <https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html>
    - `torch.set_deterministic_debug_mode`
    """

    code = "TDL305"
    name = "deterministic-warn-only"
    summary = "deterministic mode only warns (`warn_only=True`) or is explicitly turned off"
    trigger_words = last_names(USE_DETERMINISTIC | {DEBUG_MODE, DETERMINISTIC})
    bad = (
        "import torch\ntorch.use_deterministic_algorithms(True, warn_only=True)\n",
        "import torch\ntorch.backends.cudnn.deterministic = False\n",
        'import torch\ntorch.set_deterministic_debug_mode("warn")\n',
    )
    good = (
        "import torch\ntorch.use_deterministic_algorithms(True)\n",
        "import torch\ntorch.use_deterministic_algorithms(True, warn_only=False)\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.cleanup_depth = 0  # inside a tearDown, an `__exit__` or a `finally:` block

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value.startswith(_CLEANUP_FUNCTIONS):
            self.cleanup_depth += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if original_node.name.value.startswith(_CLEANUP_FUNCTIONS):
            self.cleanup_depth -= 1

    def visit_Finally(self, node: cst.Finally) -> None:
        self.cleanup_depth += 1

    def leave_Finally(self, original_node: cst.Finally) -> None:
        self.cleanup_depth -= 1

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.call_name(node)
        if name in USE_DETERMINISTIC:
            mode = literal(arg_value(node, "mode", 0) or arg_value(node, "d"))
            warn_only = literal(arg_value(node, "warn_only"))
            if mode is False and self.cleanup_depth:
                return  # restoring the default after code that ran with the flag on
            if mode is True and warn_only is True:
                self.report(
                    node,
                    "`warn_only=True` only warns: operations without a "
                    "deterministic implementation still run nondeterministically",
                )
            elif mode is False:
                self.report(node, f"`{name.split('.')[-1]}(False)` explicitly turns deterministic mode off")
        elif name == DEBUG_MODE:
            mode = literal(arg_value(node, "debug_mode", 0))
            if mode in ("warn", 1):
                self.report(node, '`set_deterministic_debug_mode("warn")` only warns: nondeterministic operations still run')
            elif mode in ("default", 0):
                self.report(node, '`set_deterministic_debug_mode("default")` explicitly turns deterministic mode off')

    def visit_Assign(self, node: cst.Assign) -> None:
        for name, value in cudnn_assignments(self, node):
            if name == DETERMINISTIC and literal(value) is False:
                self.report(node, "`cudnn.deterministic = False` explicitly allows nondeterministic cuDNN algorithms")
