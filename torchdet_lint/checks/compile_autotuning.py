"""TDL306: compiled code (`torch.compile`) whose Inductor autotuning picks kernels by
timing them, while Inductor's deterministic mode is off. The facts (which options and
modes autotune, from which torch version deterministic mode exists and the flag sets
it) are the data of `rules/inductor.toml`.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst

from torchdet_lint.checks.ops.op_findings import enables_deterministic_mode
from torchdet_lint.core.diagnostics import Applicability, Diagnostic, FixBuilder
from torchdet_lint.core.names import NOT_LITERAL, find_arg, literal
from torchdet_lint.core.positions import parent_map
from torchdet_lint.core.rule import FixAvailability, Rule
from torchdet_lint.core.settings import Settings
from torchdet_lint.model.collector import is_main_guard
from torchdet_lint.model.inductor import (
    AUTOTUNE,
    CONFIG_MODULE,
    DETERMINISTIC,
    InductorFacts,
    Setting,
    inductor_facts,
    version_text,
)

COMPILE = "torch.compile"
PATCH = CONFIG_MODULE + ".patch"
ENVIRON = "os.environ"
ENV_CALLS = frozenset({"os.environ.setdefault", "os.environ.update"})
DEBUG_MODE = "torch.set_deterministic_debug_mode"
FIX_LINE = "torch._inductor.config.deterministic = True"
_MAY = object()  # a setting given a non-literal value


def _truthy(value: object) -> object:
    """True for a literal True, _MAY for a non-literal, else False."""
    if value is NOT_LITERAL:
        return _MAY
    return value is True


def _dict_items(node: Optional[cst.BaseExpression]) -> Optional[List[Tuple[str, cst.BaseExpression]]]:
    """The (key, value) pairs of a dict display with literal string keys (None when it is none)."""
    if type(node) is not cst.Dict:
        return None
    items = []
    for element in node.elements:
        if type(element) is cst.DictElement:
            key = literal(element.key)
            if isinstance(key, str):
                items.append((key.replace("-", "_"), element.value))
    return items


# `Diagnostic.extra` key: cover kinds (a list) any of which, in every entry point that reaches
# the finding, silences it (Inductor's deterministic mode on there); `refine` decides.
SILENCED_BY_REACHED_COVERS = "silenced_by_reached_covers"


class _Finding:
    __slots__ = ("node", "what", "names", "may", "torch_bound", "environ", "before_torch", "scope")

    def __init__(self, node: cst.CSTNode, what: str, names: Sequence[str], may: bool, torch_bound: bool) -> None:
        self.node = node
        self.what = what  # the spelling that turns autotuning on, for the message
        self.names = tuple(names)  # the autotune options it turns on
        self.may = may
        self.torch_bound = torch_bound  # the name `torch` means torch here
        self.environ: Optional[str] = None  # for a variable set in code: how `os.environ` is spelt there
        self.before_torch = False  # that variable is set before torch is imported, on import
        self.scope: Optional[cst.CSTNode] = None  # the function or main block that holds it (None: the module)


class CompileAutotuning(Rule):
    """
    ## Why is this bad?
    Inductor's autotuning compiles several candidate kernels (Triton templates,
    ATen, block sizes and warp counts for reductions), times them on the GPU and
    keeps the fastest. Timing noise and the hardware decide the winner, so two
    runs of the same program can compile different kernels, which sum in a
    different order and give different numbers, as `cudnn.benchmark` does for
    convolutions. It is turned on by `torch.compile(mode="max-autotune")` or
    `mode="max-autotune-no-cudagraphs"`, and by the options `max_autotune`,
    `max_autotune_gemm`, `max_autotune_pointwise` and `coordinate_descent_tuning`:
    in `torch.compile(options={...})`, assigned on `torch._inductor.config`
    (every import spelling), through `torch._inductor.config.patch(...)` (call,
    context manager or decorator), or through their `TORCHINDUCTOR_*` variables
    set to `"1"` in code (`os.environ[...] = "1"`, `setdefault`, `update`).
    `model.compile(mode="max-autotune")` (the `nn.Module` method) counts too.

    Inductor's deterministic mode (`torch._inductor.config.deterministic = True`,
    or `TORCHINDUCTOR_DETERMINISTIC=1` set in code before torch is imported)
    skips the timing that changes numerics. It exists from torch 2.10, and from
    2.10 `torch.use_deterministic_algorithms(True)` turns it on as well (also
    through `Trainer(deterministic=True)` and the other helpers that call it,
    `warn_only=True` included: the flag sets the option whatever `warn_only`
    is). The rule is silent when that mode is on:
    - set by the module's own code on import (module level, outside the
      `if __name__ == "__main__":` block): on in every process that runs the
      module's functions;
    - set earlier in the function or main block that holds the report;
    - given in the same `options=` or `patch(...)`;
    - set (or, from 2.10, the flag turned on) in every entry point that
      reaches the reported code: the project's other modules count (see
      Known problems).

    The default mode is silent.

    Versions come from the target torch (config `torch-version`, else the
    installed torch's metadata): an option or mode the target does not have yet
    (`max_autotune_gemm` before 2.1, `"max-autotune-no-cudagraphs"` on 2.0,
    anything before 2.0) is not reported, and the message names the way out at
    that version.

    ## Fix safety
    Safe where the target torch has `torch._inductor.config.deterministic`
    (2.10 and newer): the fix inserts one line, `torch._inductor.config.deterministic = True`,
    before the statement that holds the report (before its decorators, for a
    decorator, and above the comment lines directly over it, which describe
    it), at that statement's indentation. It is offered only where the
    name `torch` is bound to torch there; no import is added, since
    `torch._inductor` is imported on first use (what the common
    `torch._inductor.config.x = ...` spelling relies on), and an import of
    `torch._inductor.config` at the top could read the `TORCHINDUCTOR_*`
    variables before the program sets them. For a variable set in code, the
    fix sets `TORCHINDUCTOR_DETERMINISTIC` to `"1"` right before it, through the
    same `os.environ` spelling, so that Inductor reads both together. The
    program computes the same thing; the compiled kernels no longer vary
    between runs, and they can be slower (Inductor picks fixed configurations
    instead of timing them). Before 2.10 there is no deterministic mode: no fix
    (the message says to keep autotuning off). A "may turn on" finding gets no
    fix.

    ## Known problems
    Project reach: a finding is dropped when every entry point that reaches the
    reported code turns the flag on (from 2.10; directly or through a seeding
    helper) or sets Inductor's deterministic mode; for code no entry point
    reaches, one such entry point in the project is enough (as for TDL201).
    A spawned worker is a new process: the parent's setting does not count
    there. `torch.set_deterministic_debug_mode` never counts: it does not set
    the Inductor option. Order is only partly checked: a module-level setting
    silences the whole module and an entry point's setting everything it
    reaches, although compilation (at the first call of the compiled code)
    must come after it.

    Only literal values are read: `mode=` or `options=` that are not literals
    (or names bound to literals in the same function or module), such as
    `mode=args.compile_mode`, are not reported, since the default mode is the
    common value there. An option assigned from a non-literal value
    (`inductor_config.max_autotune = args.autotune`) is reported as "may turn
    on", without a fix. A `patch(deterministic=True)` around the `torch.compile`
    call does not count: compilation happens at the first call, after the
    context has closed. `os.putenv` does not change `os.environ`, which Inductor
    reads: not reported. A variable set after `torch._inductor.config` was
    imported does nothing, but is reported all the same.

    ## Options
    `torch-version`.

    ## References
    - PyTorch, `torch.compile` modes: <https://pytorch.org/docs/stable/generated/torch.compile.html>
    - `torch.use_deterministic_algorithms` (2.10+: "the Inductor deterministic mode is also turned on")
    - PyTorch PR #163589 (Inductor deterministic mode, torch 2.10) and PR #165950
      (`use_deterministic_algorithms` turns it on, torch 2.10)
    - The per-version facts below are `rules/inductor.toml`, read in the torch
      wheels of each version; `tests/test_inductor_facts.py` checks them against
      the installed torch's sources.
    """

    code = "TDL306"
    refined_by = SILENCED_BY_REACHED_COVERS
    name = "compile-autotuning"
    summary = (
        'Inductor autotuning (`mode="max-autotune"`, `max_autotune`, ...) picks kernels by timing, '
        "which can differ between runs, without Inductor's deterministic mode"
    )
    fix_availability = FixAvailability.SAFE
    example_config = {"torch-version": "2.13"}
    bad = (
        'import torch\n\nmodel = torch.compile(torch.nn.Linear(4, 4), mode="max-autotune")\n',
        "import torch._inductor.config as inductor_config\n\ninductor_config.coordinate_descent_tuning = True\n",
        'import torch\n\n\n@torch.compile(options={"max_autotune": True})\ndef step(x):\n    return x @ x\n',
        'import os\n\nos.environ["TORCHINDUCTOR_MAX_AUTOTUNE"] = "1"\n\nimport torch\n',
    )
    good = (
        "import torch\n\nmodel = torch.compile(torch.nn.Linear(4, 4))\n",
        (
            "import torch\n\ntorch._inductor.config.deterministic = True\n"
            'model = torch.compile(torch.nn.Linear(4, 4), mode="max-autotune")\n'
        ),
        (
            "import torch\n\ntorch.use_deterministic_algorithms(True)\n"
            'model = torch.compile(torch.nn.Linear(4, 4), mode="max-autotune")\n'
        ),
        'import torch\n\nmodel = torch.compile(torch.nn.Linear(4, 4), mode="reduce-overhead")\n',
    )

    @classmethod
    def refine(cls, diagnostics: List[Diagnostic], project) -> List[Diagnostic]:
        """Dropped where every entry point that reaches the finding turns the mode on."""
        return [d for d in diagnostics if not _covered_where_reached(project, d)]

    @classmethod
    def words(cls, settings: Settings) -> Tuple[str, ...]:
        # The options (also spelt with dashes, as `options=` keys may be), their variables, the modes.
        facts = inductor_facts()
        words = set()
        for setting in facts.autotune_settings():
            words.update((setting.name, setting.name.replace("_", "-"), setting.env))
        words.update(mode.name for mode in facts.modes)
        return tuple(sorted(words))

    @classmethod
    def generated_documentation(cls) -> str:
        return facts_table(inductor_facts())

    def __init__(self, context) -> None:
        super().__init__(context)
        self.facts: InductorFacts = inductor_facts()
        self.version = context.torch_version
        self.findings: List[_Finding] = []
        # Inductor's deterministic mode is set by this module's own code at import (module level,
        # outside the main block): on in every process that runs the module's functions. A setting
        # in a function or the main block counts for what follows it there, and for the entry
        # points that run it (project phase).
        self.deterministic_here = False
        self.frames: List[List] = []  # [function or main block, deterministic mode set in it so far]
        # TORCHINDUCTOR_DETERMINISTIC=1 set so far: read with the variables set after it.
        self.deterministic_variable = False

    # -- what turns autotuning on, and what turns deterministic mode on ---------------------
    def _autotune(self, name: str) -> Optional[Setting]:
        setting = self.facts.setting(name)
        if setting is None or setting.role != AUTOTUNE or self.version < setting.since:
            return None
        return setting

    def _is_deterministic(self, name: str) -> bool:
        setting = self.facts.setting(name)
        return setting is not None and setting.role == DETERMINISTIC

    def _from_items(self, items: Sequence[Tuple[str, cst.BaseExpression]]) -> Optional[Tuple[List[str], bool]]:
        """(autotune options turned on, only "may") from option items; None when they also turn
        deterministic mode on, or turn nothing on."""
        names: List[str] = []
        for key, value in items:
            state = _truthy(literal(value))
            if self._is_deterministic(key) and state is True:
                return None
            if state is not False and self._autotune(key) is not None and key not in names:
                names.append(key)
        if not names:
            return None
        return names, not any(_truthy(literal(v)) is True for k, v in items if k in names)

    def _record(self, node: cst.CSTNode, what: str, names: Sequence[str], may: bool) -> Optional[_Finding]:
        frames = self.frames
        if frames and type(frames[-1][0]) is cst.FunctionDef and any(d.decorator is node for d in frames[-1][0].decorators):
            frames = frames[:-1]  # a decorator runs where its function is defined
        if any(frame[1] for frame in frames):
            return None  # set before, in the function (or main block) that holds it
        finding = _Finding(node, what, names, may, self.context.resolver.lookup("torch") == "torch")
        finding.scope = frames[-1][0] if frames else None
        self.findings.append(finding)
        return finding

    def _deterministic_mode_set(self) -> None:
        if self.frames:
            self.frames[-1][1] = True
        else:
            self.deterministic_here = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.frames.append([node, False])

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.frames.pop()

    def visit_If(self, node: cst.If) -> None:
        if not self.frames and is_main_guard(node):
            self.frames.append([node, False])

    def leave_If(self, original_node: cst.If) -> None:
        if self.frames and self.frames[-1][0] is original_node:
            self.frames.pop()

    def visit_Call(self, node: cst.Call) -> None:
        name = self.context.call_name(node)
        if name == COMPILE:
            self._compile(node, "torch.compile")
        elif name == PATCH:
            self._patch(node)
        elif name in ENV_CALLS:
            self._environ_call(node, name)
        elif name is not None and name != DEBUG_MODE and self.facts.flag_sets_deterministic(self.version):
            if enables_deterministic_mode(self.context, node):
                self._deterministic_mode_set()
        elif (
            name is None and type(node.func) is cst.Attribute and node.func.attr.value == "compile" and self.context.imports_torch
        ):
            # `model.compile(mode=...)`: nn.Module.compile passes its arguments to torch.compile.
            self._compile(node, ".compile")

    def _compile(self, node: cst.Call, spelling: str) -> None:
        backend = literal(_value(find_arg(node, "backend")))
        if isinstance(backend, str) and backend != "inductor":
            return  # another backend: Inductor's options do not apply
        mode_arg = find_arg(node, "mode")
        if mode_arg is not None:
            mode_name = literal(self._followed(mode_arg.value))
            mode = self.facts.mode(mode_name) if isinstance(mode_name, str) else None
            names = mode.sets_at(self.version) if mode is not None else ()
            if names:
                self._record(node, f'`{spelling}(mode="{mode_name}")`', names, False)
                return
        options_arg = find_arg(node, "options")
        if options_arg is not None:
            items = _dict_items(self._followed(options_arg.value))
            found = self._from_items(items) if items is not None else None
            if found is not None:
                names, may = found
                self._record(node, f"`{spelling}(options={{...}})`", names, may)

    def _followed(self, value: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """A name bound to a value in the same function (or the module): that value."""
        if type(value) is cst.Name:
            return self.context.scopes.value(value.value, module_too=True)
        return value

    def _patch(self, node: cst.Call) -> None:
        positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
        items: List[Tuple[str, cst.BaseExpression]] = []
        if len(positional) >= 2:
            key = literal(positional[0].value)
            if isinstance(key, str):
                items.append((key.replace("-", "_"), positional[1].value))
        elif len(positional) == 1:
            items.extend(_dict_items(self._followed(positional[0].value)) or ())
        for arg in node.args:
            if arg.keyword is not None:
                items.append((arg.keyword.value, arg.value))
            elif arg.star == "**":
                items.extend(_dict_items(self._followed(arg.value)) or ())
        found = self._from_items(items)
        if found is not None:
            names, may = found
            self._record(node, "`torch._inductor.config.patch(...)`", names, may)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            expression = target.target
            if type(expression) is cst.Attribute:
                qualified = self.context.qualified_name(expression)
                if qualified is None or not qualified.startswith(CONFIG_MODULE + "."):
                    continue
                option = qualified[len(CONFIG_MODULE) + 1 :]
                state = _truthy(literal(node.value))
                if self._is_deterministic(option) and state is True:
                    self._deterministic_mode_set()
                elif state is not False and self._autotune(option) is not None:
                    self._record(node, f"`{qualified} = {'True' if state is True else '...'}`", [option], state is _MAY)
            elif type(expression) is cst.Subscript and self.context.qualified_name(expression.value) == ENVIRON:
                element = expression.slice[0].slice if len(expression.slice) == 1 else None
                if type(element) is cst.Index:
                    self._environ(node, expression.value, literal(element.value), node.value)

    def _environ_call(self, node: cst.Call, name: str) -> None:
        receiver = node.func.value if type(node.func) is cst.Attribute else None
        if receiver is None:
            return
        if name == "os.environ.setdefault":
            positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
            if len(positional) == 2:
                self._environ(node, receiver, literal(positional[0].value), positional[1].value)
            return
        for arg in node.args:
            if arg.keyword is not None:
                self._environ(node, receiver, arg.keyword.value, arg.value)
            elif not arg.star:
                for key, value in _dict_items(arg.value) or ():
                    self._environ(node, receiver, key, value)

    def _environ(self, node: cst.CSTNode, receiver: cst.BaseExpression, variable: object, value: cst.BaseExpression) -> None:
        setting = self.facts.by_env(variable) if isinstance(variable, str) else None
        if setting is None or literal(value) != "1":
            return
        before_torch = not any(m == "torch" or m.startswith("torch.") for m in self.context.resolver.imported_modules)
        if setting.role == DETERMINISTIC:
            # Read when torch._inductor.config is first imported, so it counts only when set before
            # torch is imported, together with every variable set before that.
            self.deterministic_variable = True
            if before_torch:
                self._deterministic_mode_set()
        elif self._autotune(setting.name) is not None and not self.deterministic_variable:
            if self.findings and self.findings[-1].node is node:
                self.findings[-1].names += (setting.name,)
                return
            finding = self._record(node, f"`{setting.env}=1`", [setting.name], False)
            if finding is not None:
                finding.environ = self.context.code_of(receiver)
                finding.before_torch = before_torch and not self.frames

    # -- reports --------------------------------------------------------------------------
    def leave_Module(self, original_node: cst.Module) -> None:
        if self.deterministic_here or not self.findings:
            return
        has_mode = self.version >= self.facts.deterministic.since
        extra = {SILENCED_BY_REACHED_COVERS: list(self.facts.silencing_covers(self.version))}
        fixes = self._shared_fixes() if has_mode else {}
        for finding in self.findings:
            fix = None
            if not finding.may:
                fix = fixes.get("environ" if finding.environ is not None else id(finding.scope)) or fixes.get("all")
            self.report(finding.node, self._message(finding, has_mode), fix, extra)

    def _shared_fixes(self) -> Dict[object, FixBuilder]:
        """One line silences a scope, so its findings offer the same edit (applied once):
        `TORCHINDUCTOR_DETERMINISTIC` set right before the first variable reported (read with
        it; set on import before torch, it silences the module: "all"), and
        `torch._inductor.config.deterministic = True` before the first other finding where
        `torch` is bound, per function or main block (at module level: "all")."""
        parents = parent_map(self.context.module)
        fixes: Dict[object, FixBuilder] = {}
        variables = [f for f in self.findings if f.environ is not None and not f.may]
        anchor = _anchor(variables[0].node, parents) if variables else None
        if anchor is not None:
            variable = self.facts.deterministic.env
            fix = FixBuilder(f"Set `{variable}=1` first", Applicability.SAFE)
            fixes["environ"] = fix.insert_before(anchor, f'{variables[0].environ}["{variable}"] = "1"\n')
            if variables[0].before_torch:
                fixes["all"] = fix
        fixable = [f for f in self.findings if f.environ is None and not f.may and f.torch_bound]
        # A finding at module level: its line, on import, silences the whole module.
        for finding in sorted(fixable, key=lambda f: f.scope is not None):
            key = "all" if finding.scope is None else id(finding.scope)
            if key in fixes or "all" in fixes:
                continue
            anchor = _anchor(finding.node, parents)
            if anchor is not None:
                fixes[key] = FixBuilder("Turn on Inductor's deterministic mode first", Applicability.SAFE).insert_before(
                    anchor, FIX_LINE + "\n"
                )
        return fixes

    def _message(self, finding: _Finding, has_mode: bool) -> str:
        names = ", ".join(f"`{name}`" for name in finding.names)
        if finding.may:
            head = f"{finding.what} sets {names} from a non-literal value and may turn on Inductor autotuning"
        else:
            head = f"{finding.what} turns on Inductor autotuning ({names})"
        head += ": kernels picked by timing can differ between runs"
        if has_mode:
            ways = ["`torch._inductor.config.deterministic = True`"]
            if finding.environ is not None:
                ways.insert(0, f"`{self.facts.deterministic.env}=1` with it")
            if self.facts.flag_sets_deterministic(self.version):
                ways.append("`torch.use_deterministic_algorithms(True)`")
            ways_text = ", ".join(ways[:-1]) + " or " + ways[-1] if len(ways) > 1 else ways[0]
            return f"{head}; turn on Inductor's deterministic mode ({ways_text})"
        return (
            f"{head}; torch {self.context.version_text()} has no Inductor deterministic mode "
            f"(torch {version_text(self.facts.deterministic.since)} has): keep autotuning off for reproducible runs"
        )


def _value(arg: Optional[cst.Arg]) -> Optional[cst.BaseExpression]:
    return arg.value if arg is not None else None


_BLOCKS = (cst.Module, cst.IndentedBlock)


def _anchor(node: cst.CSTNode, parents: Dict[int, cst.CSTNode]) -> Optional[cst.CSTNode]:
    """Where the inserted line goes: the innermost statement of a block that holds `node`
    (never an `elif`, which belongs to its `if`); for a decorated definition, its first
    decorator (a definition starts, for positions, at its `def`/`class` line)."""
    current = node
    while True:
        parent = parents.get(id(current))
        if parent is None:
            return None
        if isinstance(parent, _BLOCKS) and isinstance(current, cst.BaseStatement):
            break
        current = parent
    if type(current) in (cst.FunctionDef, cst.ClassDef) and current.decorators:
        return current.decorators[0]
    return current


def facts_table(facts: InductorFacts) -> str:
    """The per-version facts of rules/inductor.toml, as the rule's documentation shows them."""
    lines = [
        "### Inductor facts by torch version (`rules/inductor.toml`)",
        "",
        "| fact | from torch | source |",
        "|---|---|---|",
    ]
    for setting in facts.settings:
        role = "deterministic mode" if setting.role == DETERMINISTIC else "autotuning"
        lines.append(
            f"| `torch._inductor.config.{setting.name}` / `{setting.env}` "
            f"({role}) | {version_text(setting.since)} | {setting.source} |"
        )
    for mode in facts.modes:
        sets = "; ".join(f"{version_text(since)}: " + ", ".join(f"`{n}`" for n in names) for since, names in mode.sets)
        lines.append(f'| `torch.compile(mode="{mode.name}")` turns on {sets} | {version_text(mode.since)} | {mode.source} |')
    lines.append(
        "| `torch.use_deterministic_algorithms(True)` turns Inductor's deterministic "
        f"mode on | {version_text(facts.flag_since)} | {facts.flag_source} |"
    )
    if facts.flag_notes:
        lines += ["", facts.flag_notes]
    return "\n".join(lines)


def _covered_where_reached(project, diagnostic: Diagnostic) -> bool:
    kinds = diagnostic.extra.get(SILENCED_BY_REACHED_COVERS)
    if not kinds:
        return False
    return project.covered_where_reached(diagnostic.path, project.analysed_line(diagnostic), kinds)
