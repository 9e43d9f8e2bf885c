"""Objects named by strings and code chosen at run time: the idioms that build a
class from its name (`construct_class_by_name`, hydra's `instantiate`, a YAML
config's `_target_`), the dynamic call targets the collectors record for them,
and what the project phase can and cannot resolve them to. What stays unresolved
makes a run *incomplete*: behind it lies code the analysis never read.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional, Tuple

if TYPE_CHECKING:
    from torchdet_lint.model.summary import ClassSummary, FunctionSummary, Site

# A call target for code chosen at run time: "<dynamic>:<kind>" (the kinds below). The project
# phase resolves it to candidates; a site whose candidates it cannot enumerate stays unresolved.
DYNAMIC = "<dynamic>:"
NAMED = "named"  # `construct_class_by_name(**kwargs)`: any object a `class_name=` literal of the project names
CONFIG = "config"  # hydra `instantiate(cfg.model)`, hyperpyyaml, LightningCLI: what the project's YAML configs name
IMPORT = "import"  # `importlib.import_module(name)`: any module
MODULE = "module:"  # `getattr(models, name)`, `models.__dict__[name]`: the module's public callables
METHOD = "method:"  # `cfg.build()` on a value of unknown class: unresolved when a first-party class defines it

# Helpers that build or call an object from its dotted name (StyleGAN's dnnlib, pydoc, hydra's
# internal `locate`), by their last name: the argument holding the name (keyword, position).
NAME_CONSTRUCTORS: Dict[str, Tuple[str, int]] = {
    "construct_class_by_name": ("class_name", 0),
    "call_func_by_name": ("func_name", 0),
    "get_obj_by_name": ("name", 0),
    "get_obj_from_module": ("obj_name", 1),
}
LOCATORS = frozenset({"pydoc.locate", "hydra.utils.get_class", "hydra.utils.get_method", "hydra.utils.get_object"})
# Config-driven construction: the object comes from `_target_` (hydra) in the config handed over.
CONFIG_INSTANTIATORS = frozenset({"hydra.utils.instantiate", "hydra.utils.call"})
# Loaders that build the objects a YAML file names while loading it (hyperpyyaml's `!new:`,
# `!apply:`, `!name:` tags, as SpeechBrain's recipes use them).
CONFIG_LOADERS = frozenset({"hyperpyyaml.load_hyperpyyaml", "hyperpyyaml.core.load_hyperpyyaml"})
IMPORTERS = frozenset({"importlib.import_module"})
# Methods that build what a config describes (`cfg.build()`): on a value whose class the analysis
# cannot see, what they run is unknown.
BUILD_METHODS = frozenset({"build", "make", "create"})
# Keywords and dict keys whose string literal names an object to build (`class_name="pkg.Net"`,
# `{"_target_": "pkg.Net"}`, jsonargparse's `class_path`).
NAMED_KEYS = frozenset({"class_name", "func_name", "_target_", "class_path"})

# Command-line dispatch: a decorator `@<group>.command(...)` registers the function with a group
# (click, typer) that runs it when the group is called; `parser.set_defaults(func=f)` names the
# function `args.func(...)` calls. Registries "<group>" and "<set_defaults:func>" of the file.
COMMAND_DECORATORS = frozenset({"command", "group", "callback"})
SET_DEFAULTS = "<set_defaults:"
# Test runners in a main block run the file's tests: `TestCase` methods and `test_*` functions.
TEST_RUNNERS = frozenset(
    {"unittest.main", "pytest.main", "torch.testing._internal.common_utils.run_tests", "absl.testing.absltest.main"}
)
TEST_METHOD_PREFIXES = ("setUp", "tearDown", "test")


def harness_seeded_classes(
    classes: Dict[str, "ClassSummary"], test_bases: Dict[str, FrozenSet[str]], setup_bases: FrozenSet[str] = frozenset()
) -> Dict[str, str]:
    """The file's test classes whose harness seeds before each test (a class deriving, directly or
    through this file's classes, from one of `test_bases`): class name -> the harness base. A base
    of `setup_bases` seeds in its `setUp`, which a class of the file that defines its own
    `setUp` replaces (it may not call the base's)."""
    found: Dict[str, str] = {}

    def harness(name: str, depth: int, own_setup: bool) -> Optional[str]:
        own_setup = own_setup or "setUp" in classes[name].methods
        for base in classes[name].bases if depth < 8 else ():
            if base in test_bases and not (own_setup and base in setup_bases):
                return base
            local = base[1:] if base.startswith(".") else ""
            if local in classes:
                inherited = harness(local, depth + 1, own_setup)
                if inherited is not None:
                    return inherited
        return None

    for name in classes:
        base = harness(name, 0, False)
        if base is not None:
            found[name] = base
    return found


def seed_by_harness(
    main: "FunctionSummary",
    classes: Dict[str, "ClassSummary"],
    test_bases: Dict[str, FrozenSet[str]],
    runner: "Site",
    spelling: str,
    setup_bases: FrozenSet[str] = frozenset(),
) -> None:
    """A main block's test runner that runs a harness-seeded test class seeds what the harness
    seeds, at the runner's call (the site's text names the class and its harness)."""
    seeded = harness_seeded_classes(classes, test_bases, setup_bases)
    if not seeded:
        return
    name, base = next(iter(seeded.items()))
    runner.text = f"`{spelling}(...)` runs `{name}`, a `{base.rsplit('.', 1)[-1]}` seeded before each test"
    for kind in sorted(set().union(*(test_bases[b] for b in seeded.values()))):
        main.add_cover(kind, runner)


# Candidates are bounded like registries: past this many, a site is unresolved, not "everything".
MAX_DYNAMIC_CANDIDATES = 64

_DOTTED = r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+"
_YAML_TARGETS_RE = re.compile(
    r"(?:^|\s)(?:_target_|class_path)\s*:\s*[\"']?(" + _DOTTED + r")|!(?:new|apply|name):(" + _DOTTED + r")", re.M
)


def yaml_targets(text: str) -> List[str]:
    """The dotted names a YAML config builds or calls: hydra's `_target_`, jsonargparse's
    `class_path`, hyperpyyaml's `!new:`/`!apply:`/`!name:` tags (read as text: no YAML parser
    is needed to find them, and a broken file still gives what it names)."""
    found: List[str] = []
    for match in _YAML_TARGETS_RE.finditer(text):
        name = match.group(1) or match.group(2)
        if name not in found:
            found.append(name)
    return found


def dotted_literal(value: object) -> bool:
    """A string that names an object by its dotted path (`"training.networks.Generator"`)."""
    return isinstance(value, str) and re.fullmatch(_DOTTED, value) is not None


def kind_of(target: str) -> str:
    return target[len(DYNAMIC) :]


def first_party_heads(first_party: FrozenSet[str], names: List[str]) -> List[str]:
    return [name for name in names if name.split(".", 1)[0] in first_party]
