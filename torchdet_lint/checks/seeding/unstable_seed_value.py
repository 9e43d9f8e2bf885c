"""TDL007 `unstable-seed-value`: a seed that changes between runs."""

from __future__ import annotations

from typing import Dict, FrozenSet, List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.checks.dataloader.generator_fix import runs_in_loader_worker, seeded_in_worker
from torchdet_lint.checks.seeding.seed_after_rng_use import seeding_covers
from torchdet_lint.checks.seeding.unseeded_rng_object import SEED_KEYWORDS
from torchdet_lint.core.names import NOT_LITERAL, arg_value, dotted_name, literal
from torchdet_lint.core.rule import Rule, last_names
from torchdet_lint.core.traversal import sub_nodes
from torchdet_lint.model.facts import config_helpers, draw_kind, facts
from torchdet_lint.model.summary import RNG_KINDS

_UNSTABLE_PREFIXES = ("time.", "uuid.", "secrets.")
_UNSTABLE_NAMES = frozenset(
    {
        "os.getpid",
        "os.urandom",
        "torch.seed",
        "torch.random.seed",
        "numpy.random.SeedSequence",
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.now",
    }
)


# Calls whose result is a number: hashing it is stable.
_NUMBER_CALLS = frozenset({"builtins.int", "builtins.float", "builtins.len", "builtins.round", "builtins.abs", "builtins.sum"})
# Tensor and NumPy methods that return a Python number.
_NUMBER_METHODS = frozenset({"item", "numel", "nelement", "dim", "ndimension"})
_NUMBER_TYPES = frozenset({"int", "float", "bool", "None"})
_TEXT_TYPES = frozenset({"str", "bytes"})
_OPTIONAL = frozenset({"Optional", "typing.Optional", "Union", "typing.Union"})


def _annotated(annotation: cst.BaseExpression) -> FrozenSet[str]:
    """The builtin types an annotation names: `int`, `Optional[int]`, `Union[int, None]`,
    `int | None` (empty when it names anything else)."""
    if type(annotation) is cst.Name:
        return frozenset({annotation.value}) if annotation.value in _NUMBER_TYPES | _TEXT_TYPES else frozenset()
    if type(annotation) is cst.BinaryOperation and type(annotation.operator) is cst.BitOr:
        left, right = _annotated(annotation.left), _annotated(annotation.right)
        return left | right if left and right else frozenset()
    if type(annotation) is cst.Subscript and dotted_name(annotation.value) in _OPTIONAL:
        parts = [
            _annotated(element.slice.value) if type(element.slice) is cst.Index else frozenset() for element in annotation.slice
        ]
        return frozenset().union(*parts) if parts and all(parts) else frozenset()
    return frozenset()


def _ends_path(block: cst.BaseSuite) -> bool:
    """A block whose last statement leaves it (`return`, `raise`, `continue`, `break`): what it did
    holds on no path after the statement that contains it."""
    last = block.body[-1] if block.body else None
    if type(block) is cst.IndentedBlock:
        last = last.body[-1] if type(last) is cst.SimpleStatementLine and last.body else None
    return type(last) in (cst.Return, cst.Raise, cst.Continue, cst.Break)


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

    The seed is followed through the values a name or an attribute chain
    (`seed`, `args.seed`) was given before the call in the same function
    (for `self.seed`, in the class's methods above it), every branch
    included: `if opt.seed is None: opt.seed = random.randint(...)` makes
    `random.seed(opt.seed)` unstable on that path.

    A seed drawn from a global generator (`random`, NumPy's legacy global
    RNG, torch's) counts when nothing seeded that generator before the draw
    on every path to it, in the same body: `np.random.seed(seed)` then
    `torch.manual_seed(np.random.randint(...))` makes the second seed a
    function of the first, and is silent; a seed given only in one branch
    of an `if` above (`if args.seed is not None: np.random.seed(args.seed)`),
    or in a loop that may not run, leaves the other path unseeded, and a
    branch that returns or raises leaves no path behind it. A seeding call
    whose own seed is unstable seeds nothing stable. A draw from a generator
    object of its own (`torch.randint(..., generator=g)`) is TDL005's
    question (is `g` seeded?), not this rule's.

    `hash(...)` counts only when the hashed value can hold a `str` or `bytes`
    (only those are salted per process): `hash((epoch, step))`
    over loop counters (`range`, enumerate's index), ints, arithmetic on them,
    `len(...)`/`int(...)` results, `.item()`/`.numel()` results, or
    parameters annotated `int`/`float` (also `Optional[int]`, `Union[int,
    None]`, `int | None`) is the same in every run and is silent.

    A seed that is `None` on a visible path (`default_rng(None)`,
    `RandomState(seed)` after `if ...: seed = None`, a `seed=None` default)
    leaves an RNG object unseeded: that is TDL005's finding, not this rule's.

    In a DataLoader worker's init function (named `worker_init_fn`,
    `seed_worker` or `*worker_init*`) a draw from `random` or torch, and from
    NumPy from torch 1.9, is not unstable: the worker seeded those
    generators from the loader's base seed before calling it
    (latent-diffusion derives each worker's NumPy seed from NumPy's state).

    ## Known problems
    `hash(x)` of a value whose type is not visible (a parameter without an
    annotation, an attribute) is reported as "may be a str"; hash a string
    with `zlib.crc32` or `hashlib` to get a stable seed. Whether a generator
    was seeded before a draw is read in one body only: a function that
    draws its seed after its caller seeded that generator is reported.

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
        'import random\nrandom.seed(hash("experiment"))\n',
        "import os\nimport numpy as np\nnp.random.seed(os.getpid())\n",
    )
    good = (
        "import torch\ntorch.manual_seed(42)\n",
        'import zlib\nimport random\nrandom.seed(zlib.crc32(b"experiment"))\n',
        "import time\nimport torch\nstart = time.time()\ntorch.manual_seed(0)\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        # The global generators seeded on every path to the current point, per body (a function, a
        # class body, a lambda; the module with its main block); `if` statements being walked:
        # (what held before, what each branch ended with: None for a branch that returns).
        self.seeded: List[Set[str]] = [set()]
        self.ifs: List[Tuple[FrozenSet[str], List[Optional[FrozenSet[str]]]]] = []
        self.branches: Dict[int, int] = {}  # id of a branch (block or `elif`) -> its index in `ifs`
        self.draws: Dict[int, bool] = {}  # id of a draw visited -> its generator was seeded before it

    @classmethod
    def words(cls, settings) -> Tuple[str, ...]:
        return last_names(["manual_seed", "seed", *facts().helpers, *SEED_KEYWORDS, *config_helpers(settings)])

    # -- which generators are seeded on every path here ----------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        # In a DataLoader worker's init function the loader seeded these before calling it.
        self.seeded.append(set(seeded_in_worker(self.context.torch_version)) if runs_in_loader_worker(node) else set())

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.seeded.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.seeded.append(set())

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.seeded.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.seeded.append(set())

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.seeded.pop()

    def visit_If(self, node: cst.If) -> None:
        self._branch_start(node)  # an `elif` is a branch of the `if` above it
        self._fork(node, [node.body, node.orelse.body if type(node.orelse) is cst.Else else node.orelse])

    def leave_If(self, original_node: cst.If) -> None:
        self._join(original_node.orelse is None)
        self._branch_end(original_node, False)

    def visit_For(self, node: cst.For) -> None:
        self._fork(node, [node.body])

    def leave_For(self, original_node: cst.For) -> None:
        self._join(True)  # the body may not run

    def visit_While(self, node: cst.While) -> None:
        self._fork(node, [node.body])

    def leave_While(self, original_node: cst.While) -> None:
        self._join(True)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._branch_start(node)

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self._branch_end(original_node, _ends_path(original_node))

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self._branch_start(node)  # `if seed is None: return` on one line

    def leave_SimpleStatementSuite(self, original_node: cst.SimpleStatementSuite) -> None:
        self._branch_end(original_node, _ends_path(original_node))

    def _fork(self, node: cst.CSTNode, branches: List[Optional[cst.CSTNode]]) -> None:
        self.ifs.append((frozenset(self.seeded[-1]), []))
        for branch in branches:
            if branch is not None:
                self.branches[id(branch)] = len(self.ifs) - 1

    def _join(self, falls_through: bool) -> None:
        before, ends = self.ifs.pop()
        if falls_through:
            ends.append(before)
        reached = [end for end in ends if end is not None]
        self.seeded[-1] = set(frozenset.intersection(*reached)) if reached else set(before)

    def _branch_start(self, node: cst.CSTNode) -> None:
        index = self.branches.get(id(node))
        if index is not None:
            self.seeded[-1] = set(self.ifs[index][0])

    def _branch_end(self, node: cst.CSTNode, ends_path: bool) -> None:
        index = self.branches.pop(id(node), None)
        if index is not None:
            self.ifs[index][1].append(None if ends_path else frozenset(self.seeded[-1]))

    # -- seeds ---------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.context.call_name(node)
        unstable = self._check(node, qualified)
        kind = draw_kind(qualified, node, self.context)
        if kind is not None:
            self.draws[id(node)] = kind in self.seeded[-1]
        if not unstable:  # what an unstable seed seeds changes too
            self.seeded[-1].update(seeding_covers(self.context, node, qualified))

    def _check(self, node: cst.Call, qualified: Optional[str]) -> bool:
        """Report a seeding call whose seed changes between runs; whether it did."""
        func = node.func
        seed: Optional[cst.BaseExpression] = None
        if isinstance(func, cst.Attribute) and func.attr.value in ("manual_seed", "seed"):
            seed = arg_value(node, "seed", 0) or arg_value(node, "a")
        else:
            if qualified is None:
                return False
            table = facts()
            helper = table.helpers.get(qualified)
            if helper is not None and helper.covers & frozenset(RNG_KINDS):
                if helper.seed_drawn_when_absent is not None and self._drawn_when_absent(node, helper.seed_drawn_when_absent):
                    self.report(
                        node,
                        f"`{dotted_name(func) or qualified}()` without a seed draws one from the process id, the clock and "
                        "`os.urandom`, which changes between runs: pass a fixed seed",
                    )
                    return True
                seed = arg_value(node, "seed", 0)
            elif qualified in SEED_KEYWORDS:
                seed = arg_value(node, SEED_KEYWORDS[qualified], 0)
            elif qualified in config_helpers(self.context.settings):
                seed = arg_value(node, "seed", 0)
            else:
                return False
        if seed is None:
            return False
        source = self._unstable_value(seed, 0)
        if source is not None:
            self.report(
                node, f"the seed comes from {source}, which changes between runs: use a fixed number (config, CLI argument)"
            )
        return source is not None

    def _drawn_when_absent(self, call: cst.Call, argument) -> bool:
        """The seed argument is absent or a literal `None`."""
        keyword, position = argument
        value = arg_value(call, keyword, position)
        return value is None or (isinstance(value, cst.Name) and value.value == "None")

    def _unstable_value(self, node: cst.BaseExpression, depth: int) -> Optional[str]:
        """Where an unstable seed comes from: the expression itself, or, for a name or an
        attribute chain (`args.seed`, `self.seed`), any value it was given in this function so
        far (every branch counts: `if seed is None: seed = os.getpid()` makes the seed unstable
        on that path)."""
        values = self.context.scopes.expression_values(node) if isinstance(node, (cst.Name, cst.Attribute)) else []
        if values or isinstance(node, cst.Name):
            if depth > 4:
                return None
            for value in values:
                if value is not None:
                    found = self._unstable_value(value, depth + 1)
                    if found is not None:
                        return found + f" (assigned to `{dotted_name(node)}`)" if depth == 0 else found
            return None
        if not isinstance(node, (cst.Call, cst.BinaryOperation, cst.UnaryOperation, cst.Subscript, cst.Attribute, cst.IfExp)):
            return None
        return self._unstable(node, depth)

    def _text(self, node: Optional[cst.BaseExpression], depth: int) -> Optional[str]:
        """Whether a hashed value can hold a str or bytes (their hashes change with every
        interpreter; those of ints, floats and tuples of them do not): "a str", "a value that may
        be a str", or None. Followed through tuples, arithmetic and the names of this function:
        loop counters (`range`, enumerate's index), parameters annotated as numbers and names
        bound only to numbers are numbers."""
        if node is None or depth > 4:
            return None
        value = literal(node)
        if isinstance(value, (str, bytes)):
            return "a str"
        if value is not NOT_LITERAL:
            return (
                None
                if not isinstance(value, (tuple, list, frozenset)) or not any(isinstance(v, (str, bytes)) for v in value)
                else "a str"
            )
        if isinstance(node, (cst.FormattedString, cst.SimpleString, cst.ConcatenatedString)):
            return "a str"
        if isinstance(node, (cst.Tuple, cst.List)):
            found = [self._text(element.value, depth + 1) for element in node.elements]
            return "a str" if "a str" in found else next((f for f in found if f), None)
        if isinstance(node, cst.BinaryOperation):
            found = [self._text(side, depth + 1) for side in (node.left, node.right)]
            return "a str" if "a str" in found else next((f for f in found if f), None)
        if isinstance(node, cst.UnaryOperation):
            return self._text(node.expression, depth + 1)
        if isinstance(node, cst.Call):
            name = self.context.call_name(node)
            if name in _NUMBER_CALLS:
                return None
            if name is None and type(node.func) is cst.Attribute and node.func.attr.value in _NUMBER_METHODS:
                return None
            if name in ("builtins.str", "builtins.repr", "builtins.bytes"):
                return "a str"
        if isinstance(node, cst.Name):
            scopes = self.context.scopes
            annotation = scopes.annotation(node.value)
            if annotation is not None:
                kinds = _annotated(annotation)
                if kinds and kinds <= _TEXT_TYPES | _NUMBER_TYPES:
                    return "a str" if kinds & _TEXT_TYPES else None
            if scopes.is_counter(node.value):
                return None
            values = scopes.values(node.value)
            if values and all(v is not None for v in values):
                found = [self._text(v, depth + 1) for v in values]
                return "a str" if "a str" in found else next((f for f in found if f), None)
        return "a value that may be a str"

    def _unstable(self, node: cst.CSTNode, depth: int = 0) -> Optional[str]:
        stack = [node]
        while stack:
            current = stack.pop()
            if type(current) is cst.Name and current is not node and depth < 4:
                # `local = seed + 1` with `seed = int(time.time())`: the names inside an expression too.
                found = self._unstable_value(current, depth + 1)
                if found is not None:
                    return found
                continue
            if isinstance(current, cst.Call):
                name = self.context.call_name(current)
                spelling = dotted_name(current.func) or "a call"
                if name == "builtins.hash":
                    text = self._text(arg_value(current, position=0), 0)
                    if text is not None:
                        return f"`hash()` of {text} (randomised per interpreter)"
                elif name and (name.startswith(_UNSTABLE_PREFIXES) or name in _UNSTABLE_NAMES):
                    return f"`{spelling}()`"
                elif name and draw_kind(name) is not None:
                    kind = draw_kind(name, current, self.context)
                    if kind is None:
                        continue  # from a generator object of its own (TDL005's question)
                    # A draw visited before (through a name) was seeded or not where it ran; one
                    # inside this seeding call runs now.
                    if self.draws.get(id(current), kind in self.seeded[-1]):
                        continue  # a function of the seed given earlier on every path here
                    return f"a random draw, `{spelling}()`"
            stack.extend(reversed(sub_nodes(current)))  # left to right: name the first source
        return None
