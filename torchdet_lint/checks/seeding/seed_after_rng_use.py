"""TDL004 `seed-after-rng-use`: a seed that comes after a draw from its generator."""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.checks.dataloader.generator_fix import runs_in_loader_worker, seeded_in_worker
from torchdet_lint.core.diagnostics import Diagnostic
from torchdet_lint.core.names import arg_value, dotted_name, literal
from torchdet_lint.core.rule import Rule, last_names
from torchdet_lint.core.traversal import contains, sub_nodes
from torchdet_lint.model.facts import (
    config_helpers,
    draw_kind,
    draws_when_applied,
    facts,
    helper_covers,
    is_dataloader,
    loader_name,
    loader_shuffles,
)
from torchdet_lint.model.makers import unwrap_self_returning
from torchdet_lint.model.parameters import generator_given
from torchdet_lint.model.summary import RNG_KINDS

MAX_SEED_SOURCES = 16  # expressions a seed is followed through (names, a few steps deep)

_FIRST_PARTY = "first-party"  # calls of another module's code, which may build a module
RNG_WORDS = {"torch": "torch", "random": "Python's `random`", "numpy": "NumPy's global RNG"}
MAX_DRAWS = 8  # draws remembered per generator and body, before its first seed
# `Diagnostic.extra` key: first-party calls made before the seed, as (call target, spelling, line:
# a number, or `cell N, line M` in a notebook); the finding stands only if one of them builds a
# module that draws from torch (a first-party class, or what a first-party factory returns).
# `refine` decides, and names the call in the message in place of `DRAW_PLACEHOLDER`.
KEPT_IF_FIRST_PARTY_DRAWS = "kept_if_first_party_draws"
DRAW_PLACEHOLDER = "<first-party draw>"


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
    deliberate re-seed, as in tests) is not reported, nor a draw that makes
    the seed itself (`if opt.seed is None: opt.seed = random.randint(...)`
    before `random.seed(opt.seed)`, also several names away: `seed =
    rand_seed.item()`, `torch.manual_seed(seed + rank)`): that seed changes
    between runs, which is
    TDL007's finding. Nor is a module built where no initial weights are
    drawn: in `with torch.device("meta"):`, Fabric's
    `init_module(empty_init=True)`, Accelerate's `init_empty_weights()` or
    Transformers' `no_init_weights()` (litgpt builds its model that way,
    loads the checkpoint, then seeds for sampling). Nor is a draw from a
    generator of its own (`torch.randn(3, generator=g)`, `rng.integers(...)`
    on a NumPy `Generator`): seeding the global generator does not change
    it. `generator=None` is the global generator, and so is a parameter
    defaulting to None that is passed on, unless the function has callers
    in its file and all of them pass a generator (as TDL001 decides it).

    A construction whose weights a strict `load_state_dict` of the same
    object overwrites before the seed no longer counts as an earlier draw.

    ## Known problems
    Only one body at a time is seen (a module with its main block, or one
    function): a draw in a function called before the seed is not, except
    building a model: a first-party `nn.Module` subclass built before the
    seed draws from torch as building `nn.Linear` does, whether it is
    defined in the same file, imported from another module of the project
    (the project phase checks that its construction reaches a torch draw
    and does not seed first), or returned by a first-party factory
    (`model = build_model(cfg)` whose `return` builds such a class). What
    the construction runs counts (the `__init__`s and the functions they
    call), not the module-level code of the modules imported on the way: a
    draw there ran at the import line, so building a class of that module
    (`Data()` next to a module that probes CUDA with `torch.randn` at
    import) draws nothing.

    ## Options
    `seed-functions` (their calls are seeding calls too).

    ## References
    - PyTorch, Reproducibility: <https://pytorch.org/docs/stable/notes/randomness.html>
    """

    code = "TDL004"
    refined_by = KEPT_IF_FIRST_PARTY_DRAWS
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

    @classmethod
    def refine(cls, diagnostics: List[Diagnostic], project) -> List[Diagnostic]:
        return [d for d in diagnostics if _late_build(project, d) is not None]

    @classmethod
    def relabel_lines(cls, diagnostic: Diagnostic, line_label: Callable[[int], str]) -> None:
        """The candidates' lines, as `refine` names them in the message (maybe from the cache)."""
        built = diagnostic.extra.get(KEPT_IF_FIRST_PARTY_DRAWS) if diagnostic.extra else None
        if built:
            diagnostic.extra[KEPT_IF_FIRST_PARTY_DRAWS] = [
                (target, spelling, line_label(line) if isinstance(line, int) else line) for target, spelling, line in built
            ]

    @classmethod
    def words(cls, settings) -> Tuple[str, ...]:
        return last_names([*facts().helpers, *config_helpers(settings)])

    def __init__(self, context) -> None:
        super().__init__(context)
        # One frame per body: (the first unseeded draws per kind, kinds seeded so far).
        self.frames: List[Tuple[Dict[str, List[cst.Call]], Set[str]]] = [({}, set())]
        self.module_classes: Set[str] = set()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        for base in node.bases:
            name = self.context.qualified_name(base.value)
            if (name and name.startswith("torch.nn.")) or (
                isinstance(base.value, cst.Name) and base.value.value in self.module_classes
            ):
                self.module_classes.add(node.name.value)
        self.frames.append(({}, set()))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.frames.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        # In a DataLoader worker's init function the loader has seeded the generators already.
        seeded = set(seeded_in_worker(self.context.torch_version)) if runs_in_loader_worker(node) else set()
        self.frames.append(({}, seeded))

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
            sources = self._seed_sources(node)
            late = [
                (kind, draw)
                for kind in RNG_KINDS
                if kind in covers
                for draw in [next((d for d in drawn.get(kind, ()) if not any(contains(v, d) for v in sources)), None)]
                if draw is not None
            ]
            seed_spelling = dotted_name(node.func) or "the seeding call"
            if late:
                kind, draw = late[0]
                line = self.context.node_range(draw)[0]
                spelling = dotted_name(draw.func) or "a call"
                self.report(
                    node,
                    f"`{seed_spelling}(...)` comes after `{spelling}(...)` (line {line}) already drew from "
                    f"{RNG_WORDS[kind]}: what that drew differs between runs; seed before it",
                )
            elif "torch" in covers and drawn.get(_FIRST_PARTY):
                # Another module's class or factory: whether it builds a module that draws is the
                # project's to say (the rule's "Known problems").
                built = [
                    (target, dotted_name(call.func) or target, self.context.node_range(call)[0])
                    for call, target in drawn[_FIRST_PARTY]
                ]
                self.report(
                    node,
                    f"`{seed_spelling}(...)` comes after {DRAW_PLACEHOLDER} already drew from torch (a first-party module's "
                    "initial weights): what that drew differs between runs; seed before it",
                    extra={KEPT_IF_FIRST_PARTY_DRAWS: built},
                )
            seeded.update(covers)
            for kind in covers:
                drawn.pop(kind, None)
            if "torch" in covers:
                drawn.pop(_FIRST_PARTY, None)
            return
        if self.context.scopes.skips_init and self._builds_module(node, qualified):
            return  # built on the meta device or without initial weights: nothing drawn
        if type(node.func) is cst.Attribute and node.func.attr.value == "load_state_dict" and qualified is None:
            self._forget_overwritten(node, drawn)
            return
        kind = self._draw(node, qualified)
        if kind is not None and kind not in seeded:
            draws = drawn.setdefault(kind, [])
            if len(draws) < MAX_DRAWS:
                draws.append(node)
        elif (
            kind is None
            and qualified is not None
            and "torch" not in seeded
            and qualified.split(".", 1)[0] in self.context.first_party
        ):
            built = drawn.setdefault(_FIRST_PARTY, [])
            if len(built) < MAX_DRAWS:
                built.append((node, qualified))

    def _forget_overwritten(self, node: cst.Call, drawn: Dict[str, list]) -> None:
        """`model.load_state_dict(state)` (strict) overwrites the initial weights `model` was built
        with: that construction's draws no longer reach the run's numbers."""
        strict = arg_value(node, "strict", 1)
        receiver = node.func.value
        if (strict is not None and literal(strict) is not True) or type(receiver) is not cst.Name:
            return
        built = {id(unwrap_self_returning(value)) for value in self.context.scopes.values(receiver.value) if value is not None}
        for kind in list(drawn):
            drawn[kind] = [entry for entry in drawn[kind] if id(entry[0] if isinstance(entry, tuple) else entry) not in built]

    def _seed_sources(self, call: cst.Call) -> List[cst.BaseExpression]:
        """What the seed of a seeding call is made of: its arguments, and the values given so far
        to a name or attribute chain passed as the seed (`seed = random.randint(...)`)."""
        sources: List[cst.BaseExpression] = []
        pending = [arg.value for arg in call.args]
        followed: Set[str] = set()
        # Through a few names, as TDL007 follows them: `rand_seed = torch.randint(...)`,
        # `seed = rand_seed.item()`, `torch.manual_seed(seed + rank)` is TDL007's finding alone.
        while pending and len(sources) < MAX_SEED_SOURCES:
            value = pending.pop()
            sources.append(value)
            for name in _names_in(value):
                key = dotted_name(name)
                if key is None or key in followed:
                    continue
                followed.add(key)
                pending.extend(v for v in self.context.scopes.expression_values(name) if v is not None)
        return sources

    def _builds_module(self, node: cst.Call, qualified: Optional[str]) -> bool:
        """A torch module class, a module class of this file, or a first-party class or factory."""
        if qualified is None:
            return isinstance(node.func, cst.Name) and node.func.value in self.module_classes
        return qualified in facts().torch_modules or qualified.split(".", 1)[0] in self.context.first_party

    def _draw(self, node: cst.Call, qualified: Optional[str]) -> Optional[str]:
        kind = draw_kind(qualified, node, self.context)
        if kind is not None:
            return None if draws_when_applied(qualified) else kind  # a `Rand*` transform draws when applied
        loader = loader_name(self.context, node) if qualified is None else qualified
        if is_dataloader(loader) and loader_shuffles(node, self.context.call_name, loader):
            return None  # the order is drawn when iterating, not here
        if qualified is None and isinstance(node.func, cst.Name) and node.func.value in self.module_classes:
            return "torch"
        if (
            qualified is None
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in facts().torch_methods
            and self.context.imports_torch
            and not generator_given(self.context, node)
        ):
            return "torch"
        return None


def _names_in(value: cst.BaseExpression) -> List[cst.BaseExpression]:
    """The names and attribute chains a seed expression reads (`seed + rank`: both; an
    attribute chain `args.seed` as a whole)."""
    found: List[cst.BaseExpression] = []
    stack: List[cst.CSTNode] = [value]
    while stack:
        node = stack.pop()
        if type(node) is cst.Name or (type(node) is cst.Attribute and dotted_name(node) is not None):
            found.append(node)
        elif type(node) is cst.Call:
            stack.extend(arg.value for arg in node.args)
            if type(node.func) is cst.Attribute:
                stack.append(node.func.value)  # `rand_seed.item()` reads `rand_seed`
        elif type(node) is cst.Attribute:
            stack.append(node.value)  # `f().x`: not the attribute's own name
        else:
            stack.extend(sub_nodes(node))  # through subscripts and their slices (`state[1][i]`)
    return found


def _late_build(project, diagnostic: Diagnostic) -> Optional[Diagnostic]:
    """A seed after building a first-party module that draws from torch, named in the message;
    dropped when none of the calls before it does."""
    candidates = diagnostic.extra.get(KEPT_IF_FIRST_PARTY_DRAWS)
    if not candidates:
        return diagnostic
    for target, spelling, line in candidates:
        if project.builds_drawing_module(diagnostic.path, target):
            where = line if isinstance(line, str) else f"line {line}"  # a notebook's cell line, placed already
            diagnostic.message = diagnostic.message.replace(DRAW_PLACEHOLDER, f"`{spelling}(...)` ({where})")
            return diagnostic
    return None
