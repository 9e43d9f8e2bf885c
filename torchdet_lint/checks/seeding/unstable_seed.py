"""TDL007 `unstable-seed-value`: a seed that changes between runs."""

from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from torchdet_lint.checks.seeding.rng_object import SEED_KEYWORDS
from torchdet_lint.model.facts import config_helpers, draw_kind, facts
from torchdet_lint.model.summary import RNG_KINDS
from torchdet_lint.names import NOT_LITERAL, arg_value, dotted_name, literal
from torchdet_lint.rule import Rule, last_names

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

    The seed is followed through the values a name or an attribute chain
    (`seed`, `args.seed`) was given before the call in the same function
    (for `self.seed`, in the class's methods above it), every branch
    included: `if opt.seed is None: opt.seed = random.randint(...)` makes
    `random.seed(opt.seed)` unstable on that path.

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

    @classmethod
    def words(cls, settings) -> Tuple[str, ...]:
        return last_names(["manual_seed", "seed", *facts().helpers, *SEED_KEYWORDS, *config_helpers(settings)])

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
            self.report(node, f"the seed comes from {source}, which changes between runs: use a fixed number (config, CLI argument)")

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
        return self._unstable(node)

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
            stack.extend(reversed(current.children))  # left to right: name the first source
        return None
