"""TDL0xx seeding: entry points that reach unseeded global generators (project
rules, followed through the module graph), and, per file, late seeds,
unseeded RNG objects, `PYTHONHASHSEED` set too late and unstable seed values.
"""

from __future__ import annotations

from typing import ClassVar, Dict, Iterable, List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.names import NOT_LITERAL, arg_value, dotted_name, literal
from torchdet_lint.project import EntryPoint, Project, Reach, import_edit, merge_edits
from torchdet_lint.rule import Applicability, Diagnostic, Edit, Fix, FixAvailability, FixBuilder, ProjectRule, Rule
from torchdet_lint.summary import (
    DATALOADER,
    MODULE_KEY,
    RNG_KINDS,
    FileSummary,
    config_helpers,
    draw_kind,
    facts,
    helper_covers,
    loader_shuffles,
)

RNG_WORDS = {"torch": "torch", "random": "Python's `random`", "numpy": "NumPy's global RNG"}
SEED_CALLS = {"torch": "torch.manual_seed(seed)", "random": "random.seed(seed)", "numpy": "np.random.seed(seed)"}


# -- where and what the TDL001-TDL003 / TDL302 fixes insert ---------------------------------------


def local_module_name(summary: FileSummary, module: str, before_line: int) -> Optional[str]:
    """A module-level name bound to `module` by an import above `before_line` and never rebound."""
    candidates = [
        name
        for name, (bound, line) in summary.module_bindings.items()
        if bound == module and line < before_line and summary.exports.get(name) == module
    ]
    if not candidates:
        return None
    preferred = {"torch": "torch", "random": "random", "numpy": "np"}.get(module)
    return preferred if preferred in candidates else sorted(candidates)[0]


class Insertion:
    """Lines to insert at an entry point's start, with the imports they need."""

    def __init__(self, project: Project, entry: EntryPoint, avoid_module_level: Iterable[str]) -> None:
        self.project = project
        self.summary = entry.summary
        self.entry = entry
        anchors = self.summary.anchors
        self.anchors = anchors
        self.valid = anchors is not None
        if not self.valid:
            return
        module_reach = project.reach((entry.path, MODULE_KEY)) if MODULE_KEY in self.summary.functions else Reach()
        # The main block's top is too late when module-level code already drew (or did the work).
        late = any(module_reach.draws.get(kind) for kind in avoid_module_level if kind in RNG_KINDS) or (
            "cuda" in avoid_module_level and (module_reach.cuda or module_reach.ops)
        )
        if anchors.main_top is not None and not late:
            self.offset, self.indent, self.line, self.at_main = anchors.main_top, anchors.main_indent, anchors.main_top_line, True
        else:
            self.offset, self.indent, self.line, self.at_main = anchors.after_imports, "", anchors.after_imports_line, False
        self.edits: List[Edit] = []
        self.first_party = project.options.first_party

    def module(self, module: str) -> Optional[str]:
        """The name to use for a module, adding `import module` when needed."""
        name = local_module_name(self.summary, module, self.line)
        if name is not None:
            return name
        alias = "np" if module == "numpy" and "np" not in self.summary.exports else None
        name = alias or module
        if name in self.summary.exports and self.summary.exports[name] != module:
            return None  # the name means something else here
        line = f"import {module}" + (f" as {alias}" if alias else "")
        self.edits.append(import_edit(self.anchors, line, module, self.first_party))
        return name

    def fix(self, title: str, lines: List[str]) -> Fix:
        prefix = "\n" if not self.at_main and self.anchors.after_imports_eof and not any(e.start == self.offset for e in self.edits) else ""
        text = prefix + "".join(self.indent + line + "\n" for line in lines)
        return Fix(title, Applicability.UNSAFE, merge_edits([*self.edits, Edit(self.offset, self.offset, text)]))


def seeding_fix(project: Project, entry: EntryPoint, needed: List[str]) -> Optional[Fix]:
    insertion = Insertion(project, entry, needed)
    if not insertion.valid or not needed:
        return None
    seed = project.settings.seed
    helper = _helper_call(project, entry, insertion, needed, seed)
    if helper is not None:
        return helper
    lines = []
    for kind in needed:
        name = insertion.module(kind)
        if name is None:
            return None
        lines.append({"torch": f"{name}.manual_seed({seed})", "random": f"{name}.seed({seed})", "numpy": f"{name}.random.seed({seed})"}[kind])
    return insertion.fix(f"Seed {_join([RNG_WORDS[k] for k in needed])} at the start of the entry point", lines)


def _helper_call(project: Project, entry: EntryPoint, insertion: Insertion, needed: List[str], seed: int) -> Optional[Fix]:
    """Call an existing first-party seeding helper that covers the RNGs, when there is one."""
    candidates = []
    for (display, name), reach in project.seeding_helpers():
        covered = {kind for kind in RNG_KINDS if kind in reach.covers}
        if not set(needed) <= covered:
            continue
        required, first, has_seed = project.summaries[display].signatures.get(name, (9, "", False))
        if required > 1 or (required == 1 and "seed" not in first.lower() and "seed" not in name.lower()):
            continue
        rank = ("deterministic" in reach.covers, display != entry.path, len(covered), display, name)
        candidates.append((rank, display, name, required, has_seed))
    for _, display, name, required, has_seed in sorted(candidates):
        arguments = f"({seed})" if required == 1 else (f"(seed={seed})" if has_seed else "()")
        if display == entry.path:
            if not insertion.at_main:
                continue  # after the imports, the helper is not defined yet
            return insertion.fix(f"Call `{name}{arguments}` at the start of the main block", [f"{name}{arguments}"])
        module = project.index.import_name(display, entry.path)
        if module is None:
            continue
        bound = entry.summary.exports.get(name)
        if bound is None:
            insertion.edits.append(import_edit(insertion.anchors, f"from {module} import {name}", module, insertion.first_party | {module.split(".")[0]}))
        elif project.resolve(entry.path, "." + name) != [(display, name)] and bound != f"{module}.{name}":
            continue
        return insertion.fix(f"Call the project's seeding helper `{name}{arguments}` at the start of the entry point", [f"{name}{arguments}"])
    return None


def _join(words: List[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _sites(project: Project, reach_sites) -> str:
    return ", ".join(f"{s.site.text} at {project.where(s)}" for s in reach_sites[:3])


# -- TDL001-TDL003 -----------------------------------------------------------------------------------


class _UnseededGlobalRng(ProjectRule):
    kind: ClassVar[str] = ""

    def check(self, project: Project) -> Iterable[Diagnostic]:
        for entry in project.entry_points:
            reach = project.entry_reach(entry)
            draws = reach.draws.get(self.kind)
            if not draws or self.kind in reach.covers:
                continue
            needed = [kind for kind in RNG_KINDS if reach.draws.get(kind) and kind not in reach.covers]
            message = self.message(project, reach, draws)
            yield project.entry_diagnostic(entry, self.code, self.name, message, seeding_fix(project, entry, needed))

    def message(self, project: Project, reach: Reach, draws) -> str:  # pragma: no cover - each rule says it its way
        raise NotImplementedError


_FIX_SAFETY = """
    ## Fix safety
    Unsafe: it inserts, at the top of the main block (for a script right after
    its imports, for a notebook at the top of the first code cell), the
    seeding calls for exactly the global generators the entry point reaches
    and never seeds (`torch.manual_seed`, `random.seed`, `np.random.seed`),
    with the seed of config `seed` (default 0) and the imports they need; the
    three rules share that one fix. When the project already has a
    first-party seeding helper that covers those generators (and takes at most
    a seed argument), the fix calls it instead. It is unsafe because it
    changes what the program computes: every run now gives the same numbers,
    which a sweep over random restarts may not want.
"""


def _shared_fix_safety(rule_class):
    """The three rules share one fix: its safety section is written once."""
    rule_class.__doc__ = rule_class.__doc__.replace("    {fix_safety}", _FIX_SAFETY.strip("\n"))
    return rule_class


@_shared_fix_safety
class UnseededTorch(_UnseededGlobalRng):
    """
    ## Why is this bad?
    Without `torch.manual_seed(...)`, the weights of every `nn.Module` the
    program builds, its `torch.rand*` / `randperm` / `normal` / `bernoulli` /
    `multinomial` samples, its dropout masks and the order of a shuffling
    `DataLoader` change on every run, so results cannot be reproduced or
    compared.

    The rule follows the program from its entry points (files with an
    `if __name__ == "__main__":` block, `__main__.py`, notebooks, config
    `entry-points`, and scripts that run their loop at module level and that
    no first-party module imports) through the functions they call, in the
    same file and in first-party modules, and through `__init__` of the
    first-party classes they build. A seed anywhere on those paths counts,
    including one in a helper module two calls away, or from a known helper:
    Lightning's `seed_everything`, `transformers.set_seed`,
    `accelerate.utils.set_seed`, `mmengine`'s `set_random_seed`,
    `detectron2`'s `seed_all_rng`, and config `seed-functions`.
    `torch.cuda.manual_seed[_all]` alone is not enough: model initialisation
    and CPU sampling use the CPU generator; the message says so.

    Reported on the `if __name__` line of the entry point (line 1, column 1
    for the other entry points). Library modules are never reported.

    {fix_safety}

    ## Known problems
    Functions reached only through framework callbacks (Lightning hooks, a
    method called on an object whose class cannot be seen) are not followed,
    and a seed given only on the command line of a launcher is invisible.
    A function handed to another call is followed only when that call runs
    it (`fire.Fire(main)`, `typer.run`, `mp.spawn(worker, ...)`,
    `Process(target=...)`, `executor.submit(fn)`, `functools.partial`, ...);
    for a file listed in config `entry-points`, each of its module-level
    functions counts as a start. A seed in a branch
    (`if args.seed is not None:`) counts as a seed.

    ## Options
    `seed` (the value the fix uses), `seed-functions`, `entry-points`.

    ## References
    - PyTorch, Reproducibility: <https://pytorch.org/docs/stable/notes/randomness.html>
    - `torch.manual_seed`: <https://pytorch.org/docs/stable/generated/torch.manual_seed.html>
    """

    code = "TDL001"
    name = "unseeded-torch"
    summary = "an entry point reaches torch randomness and never seeds torch"
    fix_availability = FixAvailability.UNSAFE
    kind = "torch"
    bad = (
        "import torch\nfrom torch import nn\n\nif __name__ == \"__main__\":\n    model = nn.Linear(4, 2)\n",
        "import torch\n\nfor step in range(3):\n    print(torch.randn(2))\n",
        "import torch\n\nif __name__ == \"__main__\":\n    torch.cuda.manual_seed_all(0)\n    x = torch.rand(3)\n",
    )
    good = (
        "import torch\nfrom torch import nn\n\nif __name__ == \"__main__\":\n    torch.manual_seed(0)\n    model = nn.Linear(4, 2)\n",
        "import torch\nfrom torch import nn\n\n\ndef build():\n    return nn.Linear(4, 2)\n",
        "import lightning as L\nfrom torch import nn\n\nif __name__ == \"__main__\":\n    L.seed_everything(1)\n    model = nn.Linear(4, 2)\n",
    )

    def message(self, project: Project, reach: Reach, draws) -> str:
        text = f"reaches torch randomness ({_sites(project, draws)}) and never seeds torch: call `torch.manual_seed(seed)` first"
        cuda_only = reach.covers.get("cuda")
        if cuda_only is not None:
            text += (
                f"; {cuda_only.site.text} at {project.where(cuda_only)} seeds only the CUDA generators, while model "
                "initialisation and CPU sampling draw from the CPU generator"
            )
        return text


@_shared_fix_safety
class UnseededPythonRandom(_UnseededGlobalRng):
    """
    ## Why is this bad?
    Functions of Python's `random` module (`random.random`, `shuffle`,
    `choice`, `randint`, `sample`, ...) draw from one global generator seeded
    from the operating system at start-up: without `random.seed(...)` the
    program's choices differ on every run. `torch.manual_seed` does not seed
    it. The rule follows the program from its entry points as TDL001 does;
    `random.seed` or a helper that calls it (Lightning's `seed_everything`,
    `transformers.set_seed`, ...) anywhere on the way counts.

    {fix_safety}

    ## Known problems
    As TDL001: callbacks of frameworks are not followed. `random.Random(...)`
    objects are TDL005's.

    ## Options
    `seed`, `seed-functions`, `entry-points`.

    ## References
    - Python, `random`: <https://docs.python.org/3/library/random.html>
    - PyTorch, Reproducibility: <https://pytorch.org/docs/stable/notes/randomness.html>
    """

    code = "TDL002"
    name = "unseeded-python-random"
    summary = "an entry point reaches Python's `random` module and never calls `random.seed`"
    fix_availability = FixAvailability.UNSAFE
    kind = "random"
    bad = ("import random\n\nif __name__ == \"__main__\":\n    print(random.random())\n",)
    good = (
        "import random\n\nif __name__ == \"__main__\":\n    random.seed(0)\n    print(random.random())\n",
        "import random\n\n\ndef pick(items):\n    return random.choice(items)\n",
    )

    def message(self, project: Project, reach: Reach, draws) -> str:
        return f"reaches Python's `random` ({_sites(project, draws)}) and never seeds it: call `random.seed(seed)` first"


@_shared_fix_safety
class UnseededNumpyRandom(_UnseededGlobalRng):
    """
    ## Why is this bad?
    The legacy NumPy functions (`np.random.rand`, `randn`, `randint`,
    `shuffle`, `permutation`, `choice`, `uniform`, `normal`, ...) draw from
    NumPy's global generator, which neither `torch.manual_seed` nor
    `random.seed` seeds: without `np.random.seed(...)`, augmentations and
    splits made with them differ on every run. The rule follows the program
    from its entry points as TDL001 does.

    {fix_safety}

    ## Known problems
    As TDL001. `np.random.default_rng()` objects are TDL005's; NumPy draws in
    DataLoader workers are seeded by PyTorch from 1.9 on (TDL102 covers the
    rest).

    ## Options
    `seed`, `seed-functions`, `entry-points`.

    ## References
    - NumPy, legacy random generation: <https://numpy.org/doc/stable/reference/random/legacy.html>
    - PyTorch, Reproducibility: <https://pytorch.org/docs/stable/notes/randomness.html>
    """

    code = "TDL003"
    name = "unseeded-numpy-random"
    summary = "an entry point reaches NumPy's global RNG and never calls `np.random.seed`"
    fix_availability = FixAvailability.UNSAFE
    kind = "numpy"
    bad = ("import numpy as np\n\nif __name__ == \"__main__\":\n    print(np.random.rand(3))\n",)
    good = (
        "import numpy as np\n\nif __name__ == \"__main__\":\n    np.random.seed(0)\n    print(np.random.rand(3))\n",
        "import numpy as np\n\nif __name__ == \"__main__\":\n    rng = np.random.default_rng(0)\n    print(rng.random(3))\n",
    )

    def message(self, project: Project, reach: Reach, draws) -> str:
        return f"reaches NumPy's global RNG ({_sites(project, draws)}) and never seeds it: call `np.random.seed(seed)` first"


# -- per-file seeding rules --------------------------------------------------------------------------


def seeding_covers(context, call: cst.Call, qualified: Optional[str]) -> frozenset:
    """The global generators a call seeds (table helpers, config `seed-functions`)."""
    if qualified is None:
        return frozenset()
    table = facts()
    helper = table.helpers.get(qualified)
    if helper is not None:
        return helper_covers(helper, call) & frozenset(RNG_KINDS)
    return config_helpers(context.settings).get(qualified, frozenset()) & frozenset(RNG_KINDS)


class SeedAfterRngUse(Rule):
    """
    ## Why is this bad?
    A seed fixes what is drawn after it. When, in the same body, the program
    already built a model (random initial weights), sampled with
    `torch.randn`, shuffled with `random.shuffle` or drew from
    `np.random`, before seeding that generator, what was drawn first is
    different on every run: typically the model's initial weights, which the
    seed was meant to fix.

    A seed that comes after a draw which an earlier seed already covered (a
    deliberate re-seed, as in tests) is not reported.

    ## Known problems
    Only one body at a time is seen (a module with its main block, or one
    function): a draw in a function called before the seed is not. A first-party
    model class built before the seed is seen when it is defined in the same
    file.

    ## Options
    `seed-functions` (their calls are seeding calls too).

    ## References
    - PyTorch, Reproducibility: <https://pytorch.org/docs/stable/notes/randomness.html>
    """

    code = "TDL004"
    name = "seed-after-rng-use"
    summary = "a seeding call comes after the program already drew from that generator"
    bad = (
        "import torch\nfrom torch import nn\n\nmodel = nn.Linear(4, 2)\ntorch.manual_seed(0)\n",
        "import random\n\ndef main():\n    random.shuffle(items)\n    random.seed(0)\n",
    )
    good = (
        "import torch\nfrom torch import nn\n\ntorch.manual_seed(0)\nmodel = nn.Linear(4, 2)\n",
        "import torch\n\ntorch.manual_seed(0)\na = torch.randn(2)\ntorch.manual_seed(0)\nb = torch.randn(2)\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        # One frame per body: (first unseeded draw per kind, kinds seeded so far).
        self.frames: List[Tuple[Dict[str, cst.Call], Set[str]]] = [({}, set())]
        self.module_classes: Set[str] = set()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        for base in node.bases:
            name = self.context.qualified_name(base.value)
            if (name and name.startswith("torch.nn.")) or (isinstance(base.value, cst.Name) and base.value.value in self.module_classes):
                self.module_classes.add(node.name.value)
        self.frames.append(({}, set()))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.frames.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.frames.append(({}, set()))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.frames.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.frames.append(({}, set()))

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.frames.pop()

    def visit_Call(self, node: cst.Call) -> None:
        drawn, seeded = self.frames[-1]
        qualified = self.context.call_name(node)
        covers = seeding_covers(self.context, node, qualified)
        if covers:
            late = [(kind, drawn[kind]) for kind in RNG_KINDS if kind in covers and kind in drawn]
            if late:
                kind, draw = late[0]
                line = self.context.node_range(draw)[0]
                spelling = dotted_name(draw.func) or "a call"
                seed_spelling = dotted_name(node.func) or "the seeding call"
                self.report(
                    node,
                    f"`{seed_spelling}(...)` comes after `{spelling}(...)` (line {line}) already drew from "
                    f"{RNG_WORDS[kind]}: what that drew differs between runs; seed before it",
                )
            seeded.update(covers)
            for kind in covers:
                drawn.pop(kind, None)
            return
        kind = self._draw(node, qualified)
        if kind is not None and kind not in seeded:
            drawn.setdefault(kind, node)

    def _draw(self, node: cst.Call, qualified: Optional[str]) -> Optional[str]:
        kind = draw_kind(qualified, node)
        if kind is not None:
            return kind
        if qualified == DATALOADER and loader_shuffles(node, self.context.call_name):
            return None  # the order is drawn when iterating, not here
        if qualified is None and isinstance(node.func, cst.Name) and node.func.value in self.module_classes:
            return "torch"
        if qualified is None and isinstance(node.func, cst.Attribute) and node.func.attr.value in facts().torch_methods and self.context.imports_torch:
            return "torch"
        return None


_SEEDABLE = {"torch.Generator": None, "numpy.random.default_rng": 0, "numpy.random.RandomState": 0, "random.Random": 0}
_SEED_KEYWORDS = {"numpy.random.default_rng": "seed", "numpy.random.RandomState": "seed", "random.Random": "x"}


class UnseededRngObject(Rule):
    """
    ## Why is this bad?
    `torch.Generator()`, `np.random.default_rng()`, `np.random.RandomState()`
    and `random.Random()` created without a seed start from fresh entropy on
    every run, and seeding the global generators does not reach them: what
    they draw (a DataLoader order, an augmentation, a split) differs between
    runs. An object seeded afterwards (`g.manual_seed(...)`, `rs.seed(...)`,
    also on an attribute such as `self.g`) is fine.

    ## Fix safety
    The fix seeds the object from the program's seed: `torch.initial_seed()`
    (`% 2**32` for `RandomState`), so that seeding torch once fixes it too,
    and a different seed still gives different draws. That is safe in a file
    that imports torch. Elsewhere the fix uses config `seed` (default 0) and is
    unsafe: it freezes draws that were meant to vary.

    ## Known problems
    An object seeded in another file, or through a helper that receives it, is
    reported; silence it with `# noqa: TDL005`.

    ## Options
    `seed`.

    ## References
    - NumPy, `default_rng`: <https://numpy.org/doc/stable/reference/random/generator.html>
    - `torch.Generator`: <https://pytorch.org/docs/stable/generated/torch.Generator.html>
    """

    code = "TDL005"
    name = "unseeded-rng-object"
    summary = "an RNG object is created without a seed and never seeded"
    fix_availability = FixAvailability.SOMETIMES
    bad = (
        "import numpy as np\nrng = np.random.default_rng()\n",
        "import torch\ng = torch.Generator()\n",
        "import random\nr = random.Random()\n",
    )
    good = (
        "import numpy as np\nrng = np.random.default_rng(42)\n",
        "import torch\ng = torch.Generator()\ng.manual_seed(0)\n",
        "import torch\ng = torch.Generator().manual_seed(0)\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self.chained: Set[int] = set()
        self.bound: Dict[int, str] = {}
        self.seeded_names: Set[str] = set()
        self.candidates: List[Tuple[cst.Call, str]] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.Call):
            seeded = self._seeded_construction(node.value)
            for target in node.targets:
                name = dotted_name(target.target)
                if name is not None:
                    self.bound[id(node.value)] = name
                    if seeded:
                        self.seeded_names.add(name)  # re-created with a seed later: seeded

    def _seeded_construction(self, call: cst.Call) -> bool:
        qualified = self.context.call_name(call)
        if qualified not in _SEED_KEYWORDS:
            return False
        seed = arg_value(call, _SEED_KEYWORDS[qualified], 0)
        return seed is not None and literal(seed) is not None

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("manual_seed", "seed"):
            if isinstance(func.value, cst.Call):
                self.chained.add(id(func.value))
            else:
                name = dotted_name(func.value)
                if name is not None:
                    self.seeded_names.add(name)
            return
        if isinstance(func, cst.Name) or isinstance(func, cst.Attribute):
            last = func.value if isinstance(func, cst.Name) else func.attr.value
            if last not in ("Generator", "default_rng", "RandomState", "Random"):
                return
        qualified = self.context.call_name(node)
        if qualified not in _SEEDABLE or id(node) in self.chained:
            return
        if qualified != "torch.Generator":
            seed = arg_value(node, _SEED_KEYWORDS[qualified], 0)
            if seed is not None and literal(seed) is not None:
                return
            if any(arg.star for arg in node.args):
                return
        self.candidates.append((node, qualified))

    def leave_Module(self, original_node: cst.Module) -> None:
        for node, qualified in self.candidates:
            if id(node) in self.chained:
                continue
            name = self.bound.get(id(node))
            if name is not None and name in self.seeded_names:
                continue
            spelling = dotted_name(node.func) or qualified
            self.report(node, f"`{spelling}(...)` is created without a seed and never seeded: its draws differ between runs", self._fix(node, qualified))

    def _fix(self, node: cst.Call, qualified: str) -> Optional[FixBuilder]:
        final = self.context.resolver.module_final
        if self.context.imports_torch:
            builder = FixBuilder("Seed it from the program's seed, `torch.initial_seed()`", Applicability.SAFE)
            torch_name = "torch" if final.get("torch") == "torch" else next((n for n, q in sorted(final.items()) if q == "torch"), None)
            if torch_name is None:
                if "torch" in final:
                    return None  # `torch` names something else here
                builder.add_import("torch")
                torch_name = "torch"
            seed = f"{torch_name}.initial_seed()" + (" % 2**32" if qualified == "numpy.random.RandomState" else "")
        else:
            seed = str(self.context.settings.seed)
            builder = FixBuilder(f"Seed it with config `seed` ({seed})", Applicability.UNSAFE)
        if qualified == "torch.Generator":
            return builder.replace(node, f"{self.context.module.code_for_node(node)}.manual_seed({seed})")
        explicit_none = next((a for a in node.args if a.keyword is None), None) or next(
            (a for a in node.args if a.keyword is not None and a.keyword.value == _SEED_KEYWORDS[qualified]), None
        )
        if explicit_none is not None:
            return builder.replace(explicit_none.value, seed)
        return builder.replace(node, _with_first(node, seed, self.context.module))


def _with_first(call: cst.Call, seed: str, module: cst.Module) -> str:
    value = cst.parse_expression(seed)
    if not call.args:
        return module.code_for_node(call.with_changes(args=[cst.Arg(value=value)]))
    return module.code_for_node(
        call.with_changes(args=[cst.Arg(value=value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), *call.args])
    )


class IneffectivePythonHashSeed(Rule):
    """
    ## Why is this bad?
    Python reads `PYTHONHASHSEED` once, when the interpreter starts. Setting
    `os.environ["PYTHONHASHSEED"]` inside the program (a common line in
    seeding helpers) does not change the hash seed of the running
    interpreter: `hash()` of strings, and the iteration order of sets of
    strings, still change from run to run. It only affects child processes
    started later with a fresh interpreter.

    Reported for `os.environ["PYTHONHASHSEED"] = ...`,
    `os.environ.setdefault(...)`, `os.environ.update(...)` and `os.putenv(...)`.

    ## Known problems
    Setting it on purpose for subprocesses (`subprocess`, `spawn` workers) is
    legitimate: use `# noqa: TDL006` there.

    ## Options
    None.

    ## References
    - Python, `PYTHONHASHSEED`: <https://docs.python.org/3/using/cmdline.html#envvar-PYTHONHASHSEED>
    """

    code = "TDL006"
    name = "ineffective-pythonhashseed"
    summary = "`PYTHONHASHSEED` set inside the program does not change the running interpreter"
    bad = (
        "import os\nos.environ[\"PYTHONHASHSEED\"] = str(0)\n",
        "import os\nos.environ.setdefault(\"PYTHONHASHSEED\", \"0\")\n",
    )
    good = (
        "import os\nseed = os.environ.get(\"PYTHONHASHSEED\")\n",
        "import os\nos.environ[\"CUBLAS_WORKSPACE_CONFIG\"] = \":4096:8\"\n",
    )

    MESSAGE = (
        "`PYTHONHASHSEED` set inside the program does not change this interpreter's hash seed (read at start-up); "
        "set it in the shell or launcher"
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            subscript = target.target
            if isinstance(subscript, cst.Subscript) and len(subscript.slice) == 1:
                element = subscript.slice[0].slice
                if isinstance(element, cst.Index) and literal(element.value) == "PYTHONHASHSEED":
                    if self.context.qualified_name(subscript.value) == "os.environ":
                        self.report(node, self.MESSAGE)
                        return

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("setdefault", "update", "putenv", "__setitem__"):
            return
        name = self.context.call_name(node)
        if name in ("os.environ.setdefault", "os.putenv", "os.environ.__setitem__"):
            if literal(arg_value(node, position=0)) == "PYTHONHASHSEED":
                self.report(node, self.MESSAGE)
        elif name == "os.environ.update":
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "PYTHONHASHSEED":
                    self.report(node, self.MESSAGE)
                    return
                if isinstance(arg.value, cst.Dict) and any(
                    isinstance(e, cst.DictElement) and literal(e.key) == "PYTHONHASHSEED" for e in arg.value.elements
                ):
                    self.report(node, self.MESSAGE)
                    return


_UNSTABLE_PREFIXES = ("time.", "uuid.", "secrets.")
_UNSTABLE_NAMES = frozenset(
    {
        "os.getpid", "os.urandom", "torch.seed", "torch.random.seed", "numpy.random.SeedSequence",
        "datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today", "datetime.now",
    }
)


class UnstableSeedValue(Rule):
    """
    ## Why is this bad?
    A seed is only worth something when it is the same on every run. A seed
    computed from `hash(...)` of a string (randomised per interpreter unless
    `PYTHONHASHSEED` is set before start-up), the clock (`time.time()`,
    `datetime.now()`), the process id, `uuid`, `os.urandom`, `secrets` or
    another random draw (`random.randint`, `np.random.randint`, `torch.seed()`)
    changes on every run, so the program is seeded but not reproducible.

    Seeding calls are the helpers of TDL001-TDL003 (`torch.manual_seed`,
    `random.seed`, `np.random.seed`, `seed_everything`, `set_seed`, config
    `seed-functions`), `.manual_seed(...)` / `.seed(...)` on an object and the
    seed of an RNG constructor (`default_rng`, `RandomState`, `random.Random`).

    ## Known problems
    `hash(x)` of a name is reported as "may be a str"; hashing a number is
    stable (hash a string with `zlib.crc32` or `hashlib` to get a stable seed).

    ## Options
    None.

    ## References
    - Python, `PYTHONHASHSEED` and `hash()`: <https://docs.python.org/3/reference/datamodel.html#object.__hash__>
    """

    code = "TDL007"
    name = "unstable-seed-value"
    summary = "the seed value changes between runs (`hash` of a str, the clock, the pid, random draws)"
    bad = (
        "import time\nimport torch\ntorch.manual_seed(int(time.time()))\n",
        "import random\nrandom.seed(hash(\"experiment\"))\n",
        "import os\nimport numpy as np\nnp.random.seed(os.getpid())\n",
    )
    good = (
        "import torch\ntorch.manual_seed(42)\n",
        "import zlib\nimport random\nrandom.seed(zlib.crc32(b\"experiment\"))\n",
        "import time\nimport torch\nstart = time.time()\ntorch.manual_seed(0)\n",
    )

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        seed: Optional[cst.BaseExpression] = None
        if isinstance(func, cst.Attribute) and func.attr.value in ("manual_seed", "seed"):
            seed = arg_value(node, "seed", 0) or arg_value(node, "a")
        else:
            qualified = self.context.call_name(node)
            if qualified is None:
                return
            table = facts()
            if qualified in table.helpers and table.helpers[qualified].covers & frozenset(RNG_KINDS):
                seed = arg_value(node, "seed", 0)
            elif qualified in _SEED_KEYWORDS:
                seed = arg_value(node, _SEED_KEYWORDS[qualified], 0)
            elif qualified in config_helpers(self.context.settings):
                seed = arg_value(node, "seed", 0)
            else:
                return
        if seed is None or not isinstance(seed, (cst.Call, cst.BinaryOperation, cst.UnaryOperation, cst.Subscript, cst.Attribute, cst.IfExp)):
            return
        source = self._unstable(seed)
        if source is not None:
            self.report(node, f"the seed comes from {source}, which changes between runs: use a fixed number (config, CLI argument)")

    def _unstable(self, node: cst.CSTNode) -> Optional[str]:
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.Call):
                name = self.context.call_name(current)
                spelling = dotted_name(current.func) or "a call"
                if name == "builtins.hash":
                    argument = arg_value(current, position=0)
                    value = literal(argument)
                    if isinstance(value, str):
                        return "`hash()` of a str (randomised per interpreter)"
                    if value is NOT_LITERAL and not isinstance(argument, (cst.Integer, cst.Float)):
                        return "`hash()` of a value that may be a str (randomised per interpreter)"
                elif name and (name.startswith(_UNSTABLE_PREFIXES) or name in _UNSTABLE_NAMES):
                    return f"`{spelling}()`"
                elif name and draw_kind(name) is not None:
                    return f"a random draw, `{spelling}()`"
            stack.extend(current.children)
        return None
