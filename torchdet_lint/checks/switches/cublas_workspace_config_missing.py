"""TDL303 `cublas-workspace-config-missing`: deterministic mode without a fixed cuBLAS workspace."""

from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from torchdet_lint.checks.switches.switch_settings import (
    CUBLAS_FIX_VERSION,
    CUBLAS_VALUES,
    CUBLAS_VARIABLE,
    USE_DETERMINISTIC,
)
from torchdet_lint.core.diagnostics import Applicability, FixBuilder
from torchdet_lint.core.names import NOT_LITERAL, arg_value, literal
from torchdet_lint.core.rule import FixAvailability, Rule, last_names
from torchdet_lint.model.facts import facts, flag_helpers_without_workspace, helper_covers


class CublasWorkspaceConfigMissing(Rule):
    """
    ## Why is this bad?
    From PyTorch 1.7 to 2.9, with deterministic mode on and CUDA 10.2 or
    newer, every cuBLAS call (`mm`, `bmm`, `@`, `nn.Linear`, attention, ...)
    raises `RuntimeError: Deterministic behavior was enabled with either
    torch.use_deterministic_algorithms(True) or at::Context::setDeterministicAlgorithms(true),
    but this operation is not deterministic because it uses CuBLAS...`
    unless the environment variable `CUBLAS_WORKSPACE_CONFIG` is `:4096:8`
    or `:16:8`. The variable is read once, at the first cuBLAS call, so it
    must be set before torch does any CUDA matrix product: in the shell or at
    the very top of the program.

    PyTorch 2.10 removed the check (PyTorch now gives each handle and stream
    its own workspace), so the rule only reports when the target torch is
    older than 2.10. The target is config `torch-version`, else the
    installed torch's version from its package metadata.

    A value set in code that is neither `:4096:8` nor `:16:8` is reported too.

    ## Fix safety
    Safe: inserts `os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")`
    at the top of the module, before `import torch` (with `import os`). A
    value already set in the environment wins, as `setdefault` intends. The
    fix costs about 32 MiB of GPU memory per stream.

    ## Known problems
    The variable set in another module, in a launcher script or in the shell
    is invisible: silence the diagnostic with `# noqa: TDL303` there. Only a
    direct `torch.use_deterministic_algorithms(...)` call is checked, and the
    helpers that enable the flag without setting the variable, as their
    source shows: MONAI's `set_determinism(..., use_deterministic_algorithms=True)`
    (`monai/utils/misc.py`, 0.6 to 1.5) and SpeechBrain's
    `seed_everything(..., deterministic=True)` (`speechbrain/utils/seed.py`,
    1.0.2 to 1.1), reported at the helper's call. The seeding helpers of
    Lightning and Transformers set the variable themselves.

    ## Options
    `torch-version`.

    ## References
    - `torch.use_deterministic_algorithms` (1.8-2.9 docstring)
    - cuBLAS reproducibility: <https://docs.nvidia.com/cuda/cublas/index.html#results-reproducibility>
    - PyTorch PR #161749 (2.10) removed the workspace requirement check
    """

    code = "TDL303"
    name = "cublas-workspace-config-missing"
    summary = "deterministic mode is enabled but `CUBLAS_WORKSPACE_CONFIG` is not set first (needed before torch 2.10)"
    trigger_words = last_names(USE_DETERMINISTIC)
    fix_availability = FixAvailability.SAFE
    example_config = {"torch-version": "2.3"}

    @classmethod
    def words(cls, settings) -> Tuple[str, ...]:
        return cls.trigger_words + last_names(flag_helpers_without_workspace())

    bad = ("import torch\ntorch.use_deterministic_algorithms(True)\n",)
    good = (
        'import os\nos.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"\nimport torch\ntorch.use_deterministic_algorithms(True)\n',
        "import torch\ntorch.use_deterministic_algorithms(False)\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.applies = context.torch_version < CUBLAS_FIX_VERSION
        self.value_set: Optional[object] = None  # literal value, NOT_LITERAL, or None when unset

    def _record(self, key: cst.BaseExpression, value: Optional[cst.BaseExpression]) -> None:
        if literal(key) == CUBLAS_VARIABLE:
            self.value_set = literal(value) if value is not None else NOT_LITERAL

    def visit_Assign(self, node: cst.Assign) -> None:
        if not self.applies:
            return
        for target in node.targets:
            subscript = target.target
            if isinstance(subscript, cst.Subscript) and self.context.qualified_name(subscript.value) == "os.environ":
                element = subscript.slice[0].slice if subscript.slice else None
                if isinstance(element, cst.Index):
                    self._record(element.value, node.value)

    def visit_Call(self, node: cst.Call) -> None:
        if not self.applies:
            return
        name = self.context.call_name(node)
        if name in ("os.environ.setdefault", "os.putenv"):
            key = arg_value(node, position=0)
            if key is not None:
                self._record(key, arg_value(node, position=1))
        elif name == "os.environ.update":
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == CUBLAS_VARIABLE:
                    self.value_set = literal(arg.value)
                elif isinstance(arg.value, cst.Dict):
                    for element in arg.value.elements:
                        if isinstance(element, cst.DictElement):
                            self._record(element.key, element.value)
        elif name in USE_DETERMINISTIC:
            mode = arg_value(node, "mode", 0) or arg_value(node, "d")
            if mode is None or literal(mode) is False or literal(mode) is None:
                return
            self._check(node)
        elif name in flag_helpers_without_workspace() and "deterministic" in helper_covers(facts().helpers[name], node):
            self._check(node)  # `set_determinism(..., use_deterministic_algorithms=True)` sets no variable

    def _check(self, node: cst.Call) -> None:
        version = self.context.version_text()
        if self.value_set is None:
            self.report(
                node,
                f"deterministic mode without `CUBLAS_WORKSPACE_CONFIG` set before it: on CUDA, torch {version} "
                f'raises at the first cuBLAS call (set it to ":4096:8" or ":16:8" before importing torch)',
                self._fix(),
            )
        elif self.value_set is not NOT_LITERAL and self.value_set not in CUBLAS_VALUES:
            self.report(
                node,
                f'`CUBLAS_WORKSPACE_CONFIG` is set to {self.value_set!r}; torch {version} needs ":4096:8" or '
                f'":16:8" in deterministic mode',
            )

    def _fix(self) -> FixBuilder:
        line = f'os.environ.setdefault("{CUBLAS_VARIABLE}", "{CUBLAS_VALUES[0]}")'
        # Blank lines around the assignment: the imports above and below it stay two
        # isort blocks (ruff's E402 allows `os.environ` changes between imports).
        text = ("\n" if self._os_imported_before_torch() else "import os\n\n") + line + "\n\n"
        return FixBuilder(f"Set `{CUBLAS_VARIABLE}` before `import torch`", Applicability.SAFE).insert_before_module(
            "torch", text
        )

    def _os_imported_before_torch(self) -> bool:
        for statement in self.context.module.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if isinstance(small, cst.Import):
                    names = [self.context.code_of(alias.name) for alias in small.names]
                    if any(n == "torch" or n.startswith("torch.") for n in names):
                        return False
                    if any(n == "os" and alias.asname is None for n, alias in zip(names, small.names)):
                        return True
                elif isinstance(small, cst.ImportFrom) and small.module is not None:
                    if self.context.code_of(small.module).split(".")[0] == "torch":
                        return False
        return False
