"""TDL3xx: the global determinism switches (cuDNN flags, deterministic mode,
cuBLAS workspace), in every spelling: `torch.backends.cudnn.benchmark`,
`from torch.backends import cudnn`, aliases, Lightning's `Trainer(...)`.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.checks.setting_paths import SettingPaths
from torchdet_lint.core.diagnostics import Applicability, FixBuilder
from torchdet_lint.core.names import NOT_LITERAL, arg_value, dict_entry, find_arg, literal, reported_argument
from torchdet_lint.core.rule import FixAvailability, Rule, last_names
from torchdet_lint.model.facts import facts, flag_helpers_without_workspace, helper_covers

CUDNN = "torch.backends.cudnn"
BENCHMARK = CUDNN + ".benchmark"
DETERMINISTIC = CUDNN + ".deterministic"
CUDNN_FLAGS = CUDNN + ".flags"
TRAINERS = frozenset({"lightning.pytorch.Trainer"})
LIGHTNING_CLI = "lightning.pytorch.cli.LightningCLI"
USE_DETERMINISTIC = frozenset({"torch.use_deterministic_algorithms", "torch.set_deterministic"})
DEBUG_MODE = "torch.set_deterministic_debug_mode"
CUBLAS_VARIABLE = "CUBLAS_WORKSPACE_CONFIG"
CUBLAS_VALUES = (":4096:8", ":16:8")
CUBLAS_FIX_VERSION = (2, 10)


def _false_fix(value: cst.BaseExpression, what: str) -> FixBuilder:
    return FixBuilder(f"Set `{what}` to `False`", Applicability.SAFE).replace(value, cst.Name("False"))


def cudnn_assignments(rule: Rule, node: cst.Assign) -> List[Tuple[str, cst.BaseExpression]]:
    """(qualified target, value) for `cudnn.<flag> = value` targets of an assignment. Only an
    attribute target sets the flag: `benchmark = torch.backends.cudnn.benchmark` reads it into a
    name (the name's binding is the flag's value, which its qualified name would follow)."""
    found = []
    for target in node.targets:
        if type(target.target) is not cst.Attribute:
            continue
        name = rule.context.qualified_name(target.target)
        if name in (BENCHMARK, DETERMINISTIC):
            found.append((name, node.value))
    return found


def trainer_argument_of(context, call: cst.Call, keyword: str) -> Optional[cst.Arg]:
    """A Lightning Trainer setting: `Trainer(benchmark=...)`, or an entry of
    `LightningCLI(trainer_defaults={"benchmark": ...})` (a dict literal, or a name bound to one)."""
    name = context.call_name(call)
    if name in TRAINERS:
        return find_arg(call, keyword)
    if name == LIGHTNING_CLI:
        defaults = find_arg(call, "trainer_defaults")
        value = defaults.value if defaults is not None else None
        if isinstance(value, cst.Name):
            value = context.scopes.value(value.value, module_too=True)
        return dict_entry(value, keyword)
    return None


def trainer_argument(rule: Rule, call: cst.Call, keyword: str) -> Optional[cst.Arg]:
    return trainer_argument_of(rule.context, call, keyword)


def _truthy(value) -> bool:
    return value is True or value == "warn" or (isinstance(value, int) and not isinstance(value, bool) and value > 0)


class BranchTracker:
    """Which `if` branches a statement is in, for rules that pair or weigh assignments: two
    assignments in different branches of one `if` never run together, and a branch that also
    sets `cudnn.deterministic = False` is a deliberate fast mode."""

    def __init__(self) -> None:
        self._branches: Dict[int, Tuple[int, int]] = {}  # block or `elif` node -> (its `if`, branch)
        self._path: List[Tuple[int, int]] = []
        self._blocks: List[int] = [0]  # the innermost block (0: the module)

    def visit_If(self, node: cst.If) -> None:
        self._enter(node)
        self._branches[id(node.body)] = (id(node), 0)
        if type(node.orelse) is cst.Else:
            self._branches[id(node.orelse.body)] = (id(node), 1)
        elif type(node.orelse) is cst.If:
            self._branches[id(node.orelse)] = (id(node), 1)

    def leave_If(self, original_node: cst.If) -> None:
        self._leave(original_node)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._enter(node)
        self._blocks.append(id(node))

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self._leave(original_node)
        self._blocks.pop()

    def _enter(self, node: cst.CSTNode) -> None:
        branch = self._branches.get(id(node))
        if branch is not None:
            self._path.append(branch)

    def _leave(self, node: cst.CSTNode) -> None:
        if id(node) in self._branches:
            self._path.pop()

    def branch_path(self) -> FrozenSet[Tuple[int, int]]:
        return frozenset(self._path)

    def block(self) -> int:
        return self._blocks[-1]


def exclusive(one: FrozenSet[Tuple[int, int]], other: FrozenSet[Tuple[int, int]]) -> bool:
    """Whether two statements sit in different branches of one `if` (they never run together)."""
    branches = dict(one)
    return any(if_node in branches and branches[if_node] != branch for if_node, branch in other)


class CudnnBenchmarkEnabled(BranchTracker, Rule):
    """
    ## Why is this bad?
    With `torch.backends.cudnn.benchmark = True`, cuDNN times several
    convolution algorithms for every new input shape and keeps the fastest.
    Timing noise and the hardware decide which one wins, so two runs of the
    same program can use different algorithms and produce different numbers,
    even when each algorithm is deterministic on its own. PyTorch's
    reproducibility notes ask for `benchmark = False`; deterministic mode
    (`torch.use_deterministic_algorithms(True)`) does not turn it off.
    Lightning's `Trainer(benchmark=True)` sets the same flag.

    A value that is not a literal (`cudnn.benchmark = args.benchmark`) is
    reported too, as "may enable". Only an assignment to the flag counts:
    reading it into a name (`saved = torch.backends.cudnn.benchmark`, to
    restore it later) sets nothing, here and for TDL304, TDL305 and TDL406.

    ## Fix safety
    Setting the flag to `False` is safe: results keep their meaning, the
    convolution algorithm no longer varies between runs. Training can be
    slower on GPUs with fixed input shapes. Non-literal values get no fix.
    A chained assignment (`cudnn.benchmark = cudnn.deterministic = True`)
    gets no fix, since changing the value would change both flags. Nor does
    an assignment in a block that also sets `cudnn.deterministic = False`:
    that block is a fast mode on purpose (torchtune's `set_seed(...,
    debug_mode=0)` documents and tests it), and turning benchmarking off
    there would change what the project promises; it is still reported.

    ## Known problems
    Only the first process is seen: a flag set by a library at import time
    is invisible. The performance profile turns this rule off and turns
    TDL406 on, which asks for the opposite.

    ## Options
    Profiles `reproducible` and `strict`; off in `performance`.

    ## References
    - PyTorch, Reproducibility: "CUDA convolution benchmarking"
      <https://pytorch.org/docs/stable/notes/randomness.html>
    - `torch.backends.cudnn.benchmark`
      <https://pytorch.org/docs/stable/backends.html#torch.backends.cudnn.benchmark>
    """

    code = "TDL301"
    name = "cudnn-benchmark-enabled"
    summary = "`cudnn.benchmark = True` picks convolution algorithms by timing, which can differ between runs"
    trigger_words = ("benchmark",)
    profiles = frozenset({"reproducible", "strict"})
    fix_availability = FixAvailability.SAFE
    bad = (
        "import torch\ntorch.backends.cudnn.benchmark = True\n",
        "from torch.backends import cudnn\ncudnn.benchmark = True\n",
        "import torch.backends.cudnn as cb\ncb.benchmark = True\n",
        "from lightning.pytorch import Trainer\ntrainer = Trainer(max_epochs=3, benchmark=True)\n",
    )
    good = (
        "import torch\ntorch.backends.cudnn.benchmark = False\n",
        "class Config:\n    benchmark = True\n",
        "import pytorch_lightning as pl\ntrainer = pl.Trainer(benchmark=False)\n",
    )

    def __init__(self, context) -> None:
        Rule.__init__(self, context)
        BranchTracker.__init__(self)
        self.enabled: List[Tuple[cst.Assign, cst.BaseExpression, int]] = []  # (assignment, value, block)
        self.fast_blocks: set = set()  # blocks that also set `cudnn.deterministic = False`

    def visit_Assign(self, node: cst.Assign) -> None:
        for name, value in cudnn_assignments(self, node):
            constant = literal(value)
            if name == DETERMINISTIC and constant is False:
                self.fast_blocks.add(self.block())
            if name != BENCHMARK:
                continue
            if constant is True:
                self.enabled.append((node, value, self.block()))
            elif constant is NOT_LITERAL:
                self.report(
                    node, "`cudnn.benchmark` is set from a non-literal value and may enable run-to-run algorithm selection"
                )

    def leave_Module(self, original_node: cst.Module) -> None:
        for node, value, block in self.enabled:
            message = "`cudnn.benchmark = True` picks convolution algorithms by timing, which can differ between runs"
            if block in self.fast_blocks:
                # torchtune's `set_seed(debug_mode=0)`: a documented fast mode, tested as such.
                message += "; it sits next to `cudnn.deterministic = False` (a deliberate fast mode?): no fix offered"
                fix = None
            else:
                fix = _false_fix(value, "cudnn.benchmark") if len(node.targets) == 1 else None
            self.report(node, message, fix)

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.call_name(node)
        if name not in TRAINERS and name not in (CUDNN_FLAGS, LIGHTNING_CLI):
            return
        arg = find_arg(node, "benchmark") if name == CUDNN_FLAGS else trainer_argument(self, node, "benchmark")
        if arg is None:
            return
        constant = literal(arg.value)
        what = {
            CUDNN_FLAGS: "cudnn.flags(benchmark=...)",
            LIGHTNING_CLI: 'LightningCLI(trainer_defaults={"benchmark": ...})',
        }.get(name, "Trainer(benchmark=...)")
        where = reported_argument(node, arg) if name != LIGHTNING_CLI else arg.value
        if constant is True:
            self.report(
                where,
                f"`{what.replace('...', 'True')}` enables cuDNN benchmarking, which can pick different algorithms between runs",
                _false_fix(arg.value, "benchmark"),
            )
        elif constant is NOT_LITERAL:
            self.report(where, f"`{what}` is set from a non-literal value and may enable cuDNN benchmarking")


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
                    names = [self.context.module.code_for_node(alias.name) for alias in small.names]
                    if any(n == "torch" or n.startswith("torch.") for n in names):
                        return False
                    if any(n == "os" and alias.asname is None for n, alias in zip(names, small.names)):
                        return True
                elif isinstance(small, cst.ImportFrom) and small.module is not None:
                    if self.context.module.code_for_node(small.module).split(".")[0] == "torch":
                        return False
        return False


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
        if deterministic is None or benchmark is None or not _truthy(literal(deterministic.value)):
            return
        constant = literal(benchmark.value)
        where = reported_argument(node, benchmark)
        if constant is True:
            self.report(
                where,
                "`Trainer(deterministic=True, benchmark=True)`: benchmarking "
                "picks cuDNN algorithms by timing, undoing `deterministic`",
                _false_fix(benchmark.value, "benchmark"),
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
                fix = _false_fix(value, "cudnn.benchmark") if len(node.targets) == 1 else None
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
