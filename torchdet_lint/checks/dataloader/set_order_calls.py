"""TDL107's table of known calls, as data: how a call uses its arguments (does the order of
a set handed to it reach data?) and what it returns (strings, numbers, sequences of them).
`set_order_analysis` reads it; the calls with logic of their own (`set`, `list`, `sorted`,
`enumerate`, `map`, ...) are written there. Any other call hands its arguments on (`_OTHER`)
and returns an unknown value.

A result is "str" or "nonstr" (an element kind), None (unknown), or a tuple: ("seq", item)
an iterable in a fixed order, ("tuple", item, ...) a tuple of those items, ("mapping", key)
a dict whose keys are of that kind.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import libcst as cst

from torchdet_lint.checks.dataloader.set_order_values import _FREE, _ORDER, _OTHER

# Last names of the calls whose qualified name the analysis needs (resolved after the walk, from
# the function's own imports and the module's final bindings); any other call is read by its
# spelling only.
_RESOLVE = frozenset(
    """set frozenset list tuple sorted reversed len min max sum any all isinstance bool hash id print repr str
    format chr int float ord round abs enumerate zip dict iter next map filter open Counter listdir glob iglob
    walk scandir basename dirname join abspath realpath relpath normpath expanduser expandvars splitext split
    splitdrive reader DictReader array asarray tensor as_tensor LongTensor Tensor unique choice choices sample
    shuffle permutation warn info debug warning error exception critical log Path PurePath PosixPath range vars""".split()
)
_DRAWS = frozenset({"choice", "choices", "sample", "shuffle", "permutation"})
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
_STR_METHODS = frozenset(
    {
        "lower",
        "upper",
        "strip",
        "lstrip",
        "rstrip",
        "title",
        "capitalize",
        "casefold",
        "zfill",
        "removeprefix",
        "removesuffix",
        "decode",
        "format",
        "swapcase",
        "ljust",
        "rjust",
        "center",
    }
)
_SPLITS = frozenset({"split", "rsplit", "splitlines"})
_NUMBER_METHODS = frozenset({"item", "numel"})  # a tensor's (or array's) Python number
_SET_RESULTS = frozenset({"union", "intersection", "difference", "symmetric_difference", "copy"})
_SET_UPDATES = frozenset({"update", "intersection_update", "symmetric_difference_update"})
_SET_OPERATORS = (cst.BitOr, cst.BitAnd, cst.Subtract, cst.BitXor)
# A loop over a set whose body does one of these puts the set's order into data.
_BUILDING_METHODS = frozenset({"append", "extend", "insert", "appendleft"})
_TORCH_DRAWS = frozenset(
    "torch." + name
    for name in (
        "rand",
        "randn",
        "randint",
        "randperm",
        "normal",
        "bernoulli",
        "multinomial",
        "rand_like",
        "randn_like",
        "randint_like",
    )
)
_LOOP_DRAWS = frozenset(
    {
        "choice",
        "choices",
        "sample",
        "shuffle",
        "permutation",
        "randint",
        "integers",
        "randrange",
        "rand",
        "randn",
        "randperm",
        "normal_",
        "uniform_",
    }
)


# Qualified name -> (how the call uses its arguments, what it returns).
KNOWN_CALLS: Dict[str, Tuple[int, object]] = {
    # Builtins that read their arguments without depending on their order.
    "builtins.abs": (_FREE, "nonstr"),
    "builtins.all": (_FREE, "nonstr"),
    "builtins.any": (_FREE, "nonstr"),
    "builtins.bool": (_FREE, "nonstr"),
    "builtins.chr": (_FREE, "str"),
    "builtins.float": (_FREE, "nonstr"),
    "builtins.format": (_FREE, "str"),
    "builtins.hash": (_FREE, "nonstr"),
    "builtins.id": (_FREE, "nonstr"),
    "builtins.int": (_FREE, "nonstr"),
    "builtins.isinstance": (_FREE, "nonstr"),
    "builtins.len": (_FREE, "nonstr"),
    "builtins.max": (_FREE, None),
    "builtins.min": (_FREE, None),
    "builtins.next": (_FREE, None),
    "builtins.open": (_FREE, ("seq", "str")),
    "builtins.ord": (_FREE, "nonstr"),
    "builtins.print": (_FREE, None),
    "builtins.range": (_FREE, ("seq", "nonstr")),
    "builtins.repr": (_FREE, "str"),
    "builtins.round": (_FREE, "nonstr"),
    "builtins.str": (_FREE, "str"),
    "builtins.sum": (_FREE, "nonstr"),
    "builtins.vars": (_OTHER, ("mapping", "str")),
    # Files, paths and tables: what they give is strings.
    "csv.DictReader": (_FREE, ("seq", ("seq", "str"))),
    "csv.reader": (_FREE, ("seq", ("seq", "str"))),
    "glob.glob": (_FREE, ("seq", "str")),
    "glob.iglob": (_FREE, ("seq", "str")),
    "os.listdir": (_FREE, ("seq", "str")),
    "os.path.split": (_FREE, ("tuple", "str", "str")),
    "os.path.splitdrive": (_FREE, ("tuple", "str", "str")),
    "os.path.splitext": (_FREE, ("tuple", "str", "str")),
    "os.walk": (_FREE, ("seq", ("tuple", "str", ("seq", "str"), ("seq", "str")))),
    "pathlib.Path": (_FREE, "str"),
    "pathlib.PosixPath": (_FREE, "str"),
    "pathlib.PurePath": (_FREE, "str"),
    # Other calls.
    "collections.Counter": (_FREE, None),
    "numpy.array": (_ORDER, None),
    "numpy.asarray": (_ORDER, None),
    "torch.LongTensor": (_ORDER, None),
    "torch.Tensor": (_ORDER, None),
    "torch.as_tensor": (_ORDER, None),
    "torch.tensor": (_ORDER, None),
    "warnings.warn": (_FREE, None),
}
# Families read by their prefix, after the names above: (prefix, use, result).
KNOWN_PREFIXES: Tuple[Tuple[str, int, object], ...] = (
    ("logging.", _FREE, None),
    ("os.path.", _FREE, "str"),
)
# `os.path` predicates and sizes: numbers and booleans, not strings.
PATH_NUMBERS = frozenset({"exists", "isfile", "isdir", "getsize", "getmtime", "islink", "isabs"})
# The draws of `random` and `numpy.random` put their arguments' order into data.
DRAW_MODULES = ("random.", "numpy.random.")


def known_call(name: str) -> Optional[Tuple[int, object]]:
    """How the table reads a call of `name`: (use, result); None for a call it does not know."""
    found = KNOWN_CALLS.get(name)
    if found is not None:
        return found
    for prefix, use, result in KNOWN_PREFIXES:
        if name.startswith(prefix):
            if prefix == "os.path." and name.rsplit(".", 1)[-1] in PATH_NUMBERS:
                return use, "nonstr"
            return use, result
    if name.rsplit(".", 1)[-1] in _DRAWS and name.startswith(DRAW_MODULES):
        return _ORDER, None
    return None
