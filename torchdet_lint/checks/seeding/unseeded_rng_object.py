"""TDL005 `unseeded-rng-object`: an RNG object created without a seed and never seeded."""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.core.call_edits import with_first_argument
from torchdet_lint.core.diagnostics import Applicability, Diagnostic, FixBuilder
from torchdet_lint.core.names import arg_value, dotted_name, literal
from torchdet_lint.core.rule import FixAvailability, Rule, last_names
from torchdet_lint.model.arguments import parameter_values
from torchdet_lint.model.parameters import none_by_default, passed_parameter

_SEEDABLE = {"torch.Generator": None, "numpy.random.default_rng": 0, "numpy.random.RandomState": 0, "random.Random": 0}
SEED_KEYWORDS = {"numpy.random.default_rng": "seed", "numpy.random.RandomState": "seed", "random.Random": "x"}
# `Diagnostic.extra` key: the first-party constructors the RNG object is handed to, as (call
# target, keyword, position); one that seeds that parameter itself silences it (`refine` decides).
SILENCED_BY_SEEDING_CONSTRUCTOR = "silenced_by_seeding_constructor"
# `Diagnostic.extra` key: (function, parameter) when the seed is a module-level function's parameter
# that defaults to None: silent when every call in the project passes a seed that is not None.
SILENCED_BY_CALLERS = "silenced_by_callers_passing_a_seed"


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

    A `None` seed, literal or through a name bound only to `None`
    (`seed = None` then `default_rng(seed)`), is no seed: TDL005, not
    TDL007. So is a seed that is `None` on some visible path, reported
    without a fix: a conditional with a `None` branch (`Random(s if fixed
    else None)`), a name given `None` in some branch of the function (`if
    seed < 0: seed = None`), or a parameter that defaults to `None` and is
    passed on (`def make(seed=None): return default_rng(seed)`) unless the
    function has callers and all of them pass a seed that is not `None`: in
    its file, or, for a module-level function, anywhere in the project (by
    keyword or position, also through a caller that passes its own
    parameter on, or a loop variable over a literal table, `for size, seed
    in [(0.2, 42), (0.8, 7)]:` or a name bound once to one, which passes each
    of its values while nothing rebinds it). One call that leaves the default, a non-literal argument
    that is not such a parameter, a splat, or the function handed on or
    stored (its callers are out of sight) keeps the finding. A call a test
    expects to raise is no run: the last statement's outermost call in a
    `with pytest.raises(...):` or `with self.assertRaises(...):` block
    (`split(groups, test_size=2.0)`, checking the arguments) stops at the
    error, so the seed it leaves out does not count; the statements before
    it, the calls that compute its arguments and a call in any other `with`
    (`warnings.catch_warnings()`) count as usual. An object handed to a first-party constructor that seeds that
    parameter itself (`.manual_seed(...)`/`.seed(...)` on the parameter in
    `__init__`, or on the attribute `__init__` stores it in, in any method of
    the class or its bases, such as a sampler's `__iter__` seeding from
    `seed + epoch`) is seeded: silent, also when the class is imported from
    another module of the project. A parameter that defaults to `None` is
    the caller's choice and is not reported.

    ## Known problems
    An object seeded in another file, or through a helper that receives it, is
    reported; silence it with `# noqa: TDL005`. The call form
    `pytest.raises(ValueError, split, groups)` hands the function on: its
    callers are then out of sight and the finding stays.

    ## Options
    `seed`.

    ## References
    - NumPy, `default_rng`: <https://numpy.org/doc/stable/reference/random/generator.html>
    - `torch.Generator`: <https://pytorch.org/docs/stable/generated/torch.Generator.html>
    """

    code = "TDL005"
    refined_by = SILENCED_BY_SEEDING_CONSTRUCTOR
    name = "unseeded-rng-object"
    summary = "an RNG object is created without a seed and never seeded"
    trigger_words = last_names(_SEEDABLE)
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

    @classmethod
    def needs_project(cls, diagnostic: Diagnostic) -> bool:
        return super().needs_project(diagnostic) or bool(diagnostic.extra.get(SILENCED_BY_CALLERS))

    @classmethod
    def refine(cls, diagnostics: List[Diagnostic], project) -> List[Diagnostic]:
        """Handed to a first-party constructor that seeds it itself, the object is seeded; a `None`
        default that no call in the project leaves in place is no `None` seed."""
        return [
            d
            for d in diagnostics
            if not any(project.seeds_argument(d.path, *handed) for handed in d.extra.get(SILENCED_BY_SEEDING_CONSTRUCTOR) or ())
            and not _every_caller_seeds(project, d)
        ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self.chained: Set[int] = set()
        self.bound: Dict[int, str] = {}
        self.seeded_names: Set[str] = set()
        self.candidates: List[Tuple[cst.Call, str, Optional[str]]] = []  # (call, constructor, when its seed is None)
        # Arguments handed to a call that may be a first-party constructor: name (or id of an inline
        # construction) -> (call target, keyword, position).
        self.handed: Dict[object, List[Tuple[str, Optional[str], Optional[int]]]] = {}
        self.none_names: Set[str] = set()
        # The seed parameter behind the last `None` default found, and each candidate's.
        self.default_parameter: Optional[Tuple[str, str]] = None
        self.decided_by_callers: Dict[int, Tuple[str, str]] = {}

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
        if qualified not in SEED_KEYWORDS:
            return False
        seed = arg_value(call, SEED_KEYWORDS[qualified], 0)
        return seed is not None and literal(seed) is not None and not self._none(seed) and self._none_on_a_path(seed) is None

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        self._hand(node)
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
        none_when = None
        if qualified != "torch.Generator":
            seed = arg_value(node, SEED_KEYWORDS[qualified], 0)
            if seed is not None and literal(seed) is not None and not self._none(seed):
                self.default_parameter = None
                none_when = self._none_on_a_path(seed)
                if none_when is None:
                    return
                if self.default_parameter is not None:
                    self.decided_by_callers[id(node)] = self.default_parameter
            if any(arg.star for arg in node.args):
                return
        self.candidates.append((node, qualified, none_when))

    def _hand(self, call: cst.Call) -> None:
        """Remember the names and inline calls handed to a call that may build a first-party
        object (a capitalised callee): the project phase asks whether its class seeds them."""
        func = call.func
        last = func.value if type(func) is cst.Name else func.attr.value if type(func) is cst.Attribute else ""
        if not last[:1].isupper() or not call.args:
            return
        target = self.context.call_name(call) or (f".{func.value}" if type(func) is cst.Name else None)
        if target is None or target.startswith("builtins."):
            return
        position = 0
        for arg in call.args:
            if arg.star:
                break
            key = arg.value.value if type(arg.value) is cst.Name else id(arg.value)
            keyword = arg.keyword.value if arg.keyword is not None else None
            self.handed.setdefault(key, []).append((target, keyword, None if keyword else position))
            if keyword is None:
                position += 1

    def _none(self, seed: cst.BaseExpression) -> bool:
        """A seed that is `None` (`seed = None` then `default_rng(seed)`): the object is unseeded."""
        if type(seed) is not cst.Name:
            return False
        values = self.context.scopes.values(seed.value)
        return bool(values) and all(type(v) is cst.Name and v.value == "None" for v in values)

    def _none_on_a_path(self, seed: cst.BaseExpression, depth: int = 0) -> Optional[str]:
        """When a seed expression that is not always None is None on some visible path: a
        conditional with a `None` branch, a name given `None` on some path of this function, or
        a parameter that defaults to None and that some caller in this file leaves out (or that
        has no caller in this file). None when no such path is seen."""
        kind = type(seed)
        if kind is cst.IfExp and depth < 4:
            for branch in (seed.body, seed.orelse):
                if literal(branch) is None:
                    return "its conditional picks `None`"
                found = self._none_on_a_path(branch, depth + 1)
                if found is not None:
                    return found
        elif kind is cst.Name and depth < 4:
            if none_by_default(self.context, seed):
                passed = passed_parameter(self.context, seed)
                if passed is not None and not passed[0].method:
                    self.default_parameter = (passed[0].name, passed[1])
                return f"`{seed.value}` keeps its default, `None`"
            for value in self.context.scopes.values(seed.value):
                if value is None:
                    continue
                if literal(value) is None:
                    return f"`{seed.value}` is `None` (line {self.context.node_range(value)[0]})"
                if type(value) is cst.IfExp:
                    found = self._none_on_a_path(value, depth + 1)
                    if found is not None:
                        return found
        return None

    def leave_Module(self, original_node: cst.Module) -> None:
        for node, qualified, none_when in self.candidates:
            if id(node) in self.chained:
                continue
            name = self.bound.get(id(node))
            if name is not None and name in self.seeded_names:
                continue
            spelling = dotted_name(node.func) or qualified
            handed = self.handed.get(name if name is not None else id(node), [])
            if none_when is None:
                message = f"`{spelling}(...)` is created without a seed and never seeded: its draws differ between runs"
            else:
                message = (
                    f"`{spelling}(...)` gets a `None` seed when {none_when}, and is never seeded: "
                    "its draws then differ between runs"
                )
            extra: Dict[str, object] = {SILENCED_BY_SEEDING_CONSTRUCTOR: handed} if handed else {}
            if id(node) in self.decided_by_callers:
                extra[SILENCED_BY_CALLERS] = self.decided_by_callers[id(node)]
            self.report(node, message, self._fix(node, qualified) if none_when is None else None, extra=extra or None)

    def _fix(self, node: cst.Call, qualified: str) -> Optional[FixBuilder]:
        final = self.context.resolver.module_final
        if self.context.imports_torch:
            builder = FixBuilder("Seed it from the program's seed, `torch.initial_seed()`", Applicability.SAFE)
            torch_name = (
                "torch" if final.get("torch") == "torch" else next((n for n, q in sorted(final.items()) if q == "torch"), None)
            )
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
            seeded = cst.Call(
                func=cst.Attribute(value=self.context.written(node), attr=cst.Name("manual_seed")),
                args=[cst.Arg(cst.parse_expression(seed))],
            )
            return builder.replace(node, seeded)
        explicit_none = next((a for a in node.args if a.keyword is None), None) or next(
            (a for a in node.args if a.keyword is not None and a.keyword.value == SEED_KEYWORDS[qualified]), None
        )
        if explicit_none is not None:
            return builder.replace(explicit_none.value, seed)
        written = self.context.written(node)
        return builder.replace(node, with_first_argument(written, cst.parse_expression(seed), self.context.module.default_indent))


def _every_caller_seeds(project, diagnostic: Diagnostic) -> bool:
    decided = diagnostic.extra.get(SILENCED_BY_CALLERS)
    if not decided:
        return False
    values = parameter_values(project, diagnostic.path, *decided)
    return values is not None and all(value is not None for value in values)
