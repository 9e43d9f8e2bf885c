"""TDL007 `unstable-seed-value`: a seed that changes between runs."""

from __future__ import annotations

from typing import List, Optional, Tuple

import libcst as cst

from torchdet_lint.checks.dataloader.common import runs_in_loader_worker, seeded_in_worker
from torchdet_lint.checks.seeding.rng_object import SEED_KEYWORDS
from torchdet_lint.core.names import NOT_LITERAL, arg_value, dotted_name, literal
from torchdet_lint.core.rule import Rule, last_names
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

    `hash(...)` counts only when the hashed value can hold a `str` or `bytes`
    (RULES.md, "More decisions from the second sample"): `hash((epoch, step))`
    over loop counters (`range`, enumerate's index), ints, arithmetic on them,
    `len(...)`/`int(...)` results or parameters annotated `int`/`float` is
    the same in every run and is silent.

    In a DataLoader worker's init function (named `worker_init_fn`,
    `seed_worker` or `*worker_init*`) a draw from `random` or torch, and from
    NumPy from torch 1.9, is not unstable: the worker seeded those
    generators from the loader's base seed before calling it
    (latent-diffusion derives each worker's NumPy seed from NumPy's state).

    ## Known problems
    `hash(x)` of a value whose type is not visible (a parameter without an
    annotation, an attribute) is reported as "may be a str"; hash a string
    with `zlib.crc32` or `hashlib` to get a stable seed.

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
        self.worker_functions: List[bool] = []  # per enclosing def: a DataLoader worker's init function

    @classmethod
    def words(cls, settings) -> Tuple[str, ...]:
        return last_names(["manual_seed", "seed", *facts().helpers, *SEED_KEYWORDS, *config_helpers(settings)])

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.worker_functions.append(runs_in_loader_worker(node))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.worker_functions.pop()

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
            helper = table.helpers.get(qualified)
            if helper is not None and helper.covers & frozenset(RNG_KINDS):
                if helper.seed_drawn_when_absent is not None and self._drawn_when_absent(node, helper.seed_drawn_when_absent):
                    self.report(
                        node,
                        f"`{dotted_name(func) or qualified}()` without a seed draws one from the process id, the clock and "
                        "`os.urandom`, which changes between runs: pass a fixed seed",
                    )
                    return
                seed = arg_value(node, "seed", 0)
            elif qualified in SEED_KEYWORDS:
                seed = arg_value(node, SEED_KEYWORDS[qualified], 0)
            elif qualified in config_helpers(self.context.settings):
                seed = arg_value(node, "seed", 0)
            else:
                return
        if seed is None:
            return
        source = self._unstable_value(seed, 0)
        if source is not None:
            self.report(
                node, f"the seed comes from {source}, which changes between runs: use a fixed number (config, CLI argument)"
            )

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
            if name in ("builtins.str", "builtins.repr", "builtins.bytes"):
                return "a str"
        if isinstance(node, cst.Name):
            scopes = self.context.scopes
            annotation = scopes.annotation(node.value)
            if (
                annotation is not None
                and isinstance(annotation, cst.Name)
                and annotation.value in ("int", "float", "bool", "str", "bytes")
            ):
                return "a str" if annotation.value in ("str", "bytes") else None
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
                    if (
                        self.worker_functions
                        and self.worker_functions[-1]
                        and draw_kind(name) in seeded_in_worker(self.context.torch_version)
                    ):
                        continue  # in a loader worker's init function the loader seeded that generator
                    return f"a random draw, `{spelling}()`"
            stack.extend(reversed(current.children))  # left to right: name the first source
        return None
