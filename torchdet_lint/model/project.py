"""The project model: every file's summary, indexed; the entry points; what each
one reaches (draws, seeds, CUDA work, operations), through the first-party
module graph. Data and queries for the project rules; it runs nothing.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Mapping, Optional, Set, Tuple

from torchdet_lint.core.catalog import Sized
from torchdet_lint.core.diagnostics import Diagnostic
from torchdet_lint.core.names import canonical
from torchdet_lint.core.settings import Settings
from torchdet_lint.core.source import LineIndex
from torchdet_lint.model.arguments import index_of
from torchdet_lint.model.facts import config_helpers, entry_configured, is_module_base
from torchdet_lint.model.modules import ModuleIndex
from torchdet_lint.model.named import CONFIG, DYNAMIC, IMPORT, MAX_DYNAMIC_CANDIDATES, METHOD, MODULE, NAMED, yaml_targets
from torchdet_lint.model.options import OPTION_SEPARATOR
from torchdet_lint.model.processes import SPAWN
from torchdet_lint.model.summary import (
    LAMBDA_KEY,
    MAIN_KEY,
    MAX_REGISTRY_MEMBERS,
    MAX_SITES,
    MODULE_KEY,
    REGISTRY_MEMBER,
    FileSummary,
    Site,
    Spawn,
)

Node = Tuple[str, str]  # (file path as displayed, function key)


# Files that a package or a tool imports as a module, never runs as a script: a package's
# `__init__.py`, pytest's `conftest.py`, torch.hub's `hubconf.py` (its module-level code
# registers the models the hub serves).
IMPORTED_BY_TOOLS = frozenset({"__init__.py", "conftest.py", "hubconf.py"})

# `self.` calls followed through a base class's methods for one built class (a bound, not a limit
# real trainers reach: their template methods call a handful of hooks).
MAX_OVERRIDE_STEPS = 32
# Callers followed up from a function whose parameters are passed on (`resize(x)` called with the
# caller's own parameter): a bound, not a limit helpers reach.
MAX_GRADIENT_DEPTH = 8


@dataclass
class Located:
    path: str
    site: Site

    def where(self) -> str:
        return f"{self.path}:{self.site.line}" if self.site.line else self.path


@dataclass
class Reach:
    """What code reachable from a node does: draws, seedings, CUDA work, operations."""

    draws: Dict[str, List[Located]] = field(default_factory=dict)
    covers: Dict[str, Located] = field(default_factory=dict)
    cuda: List[Located] = field(default_factory=list)
    ops: List[Located] = field(default_factory=list)
    raising: Dict[str, List[Located]] = field(default_factory=dict)  # operations that raise under the flag, by profile
    loading: List[Located] = field(default_factory=list)  # DataLoaders, random samplers and splits
    spawns: List[Tuple[str, Spawn]] = field(default_factory=list)  # (file, process start): the processes it starts
    trains: List[Located] = field(default_factory=list)  # calls that run a backward pass (the first few)
    moves: List[Located] = field(default_factory=list)  # calls that may put work on an accelerator
    unresolved: List[Located] = field(default_factory=list)  # sites whose target is unknown (an open world)

    def governed(self, trains: bool, cuda: bool = True) -> Tuple[List[Located], List[Located]]:
        """(CUDA work, catalog operations) that make deterministic mode matter: in a run that never
        trains, only operations whose condition holds in a forward pass (CUDA work alone, an
        `nn.Embedding` or a bilinear `interpolate` change nothing there); in a run that never
        leaves the CPU, only operations whose condition holds there."""
        ops = [item for item in self.ops if (trains or not item.site.backward) and (cuda or not item.site.cuda_only)]
        return (self.cuda if trains else []), ops

    def merge(self, other: "Reach") -> None:
        for kind, sites in other.draws.items():
            mine = self.draws.setdefault(kind, [])
            _extend_optioned(mine, sites)
        for kind, site in other.covers.items():
            current = self.covers.get(kind)
            if current is None or (current.site.condition and not site.site.condition):
                self.covers[kind] = site  # a setting that always holds wins over one that needs a flag
        _extend(self.cuda, other.cuda)
        _extend_by_phase(self.ops, other.ops)
        for profile, sites in other.raising.items():
            _extend_by_phase(self.raising.setdefault(profile, []), sites)
        _extend_optioned(self.loading, other.loading)
        _extend(self.trains, other.trains)
        _extend(self.moves, other.moves)
        _extend_unresolved(self.unresolved, other.unresolved)
        for spawn in other.spawns:
            if spawn not in self.spawns:
                self.spawns.append(spawn)


def _extend_optioned(mine: List[Located], more: Iterable[Located]) -> None:
    """As `_extend`, with room of its own for sites under a command-line option (`Site.option`),
    which an entry point may drop: they do not crowd out the others, and a site that holds without
    one replaces the same site under one."""
    for item in more:
        same = next((m for m in mine if item.path == m.path and item.site.line == m.site.line), None)
        if same is not None:
            if same.site.option.startswith("!") and not item.site.option.startswith("!"):
                mine[mine.index(same)] = item
            continue
        if sum(1 for m in mine if bool(m.site.option) == bool(item.site.option)) < MAX_SITES:
            mine.append(item)


def _extend_unresolved(mine: List[Located], more: Iterable[Located]) -> None:
    """As `_extend`; past the bound, a site is kept when it opens a part of the project that none of
    the kept ones opens."""
    for item in more:
        if any(item.path == m.path and item.site.line == m.site.line for m in mine):
            continue
        if len(mine) < MAX_SITES or all(item.site.reaches != m.site.reaches for m in mine):
            mine.append(item)


def _extend_by_phase(mine: List[Located], more: Iterable[Located]) -> None:
    """As `_extend`, with room for `MAX_SITES` of each kind (backward-only or not, CUDA-only or
    not): the operations a run that never trains, or never leaves the CPU, is judged by are not
    crowded out by the others."""
    for kind in ((False, False), (False, True), (True, False), (True, True)):
        kept = [item for item in mine if (item.site.backward, item.site.cuda_only) == kind]
        _extend(kept, (item for item in more if (item.site.backward, item.site.cuda_only) == kind))
        mine[:] = [item for item in mine if (item.site.backward, item.site.cuda_only) != kind] + kept


def _test_holds(test: str, literal: Any, value: Any) -> bool:
    """Whether `if <parameter> <test> <literal>:` takes its body when the parameter holds `value`."""
    if test in ("true", "false"):
        return bool(value) is (test == "true")
    if test in ("is", "is not"):
        return (value is literal) is (test == "is")
    if isinstance(value, Sized) and isinstance(literal, (tuple, list)):
        return True  # a display of computed elements may equal the literal tuple
    return (value == literal) is (test == "==")


def _test_text(parameter: str, test: str, literal: Any) -> str:
    if test in ("true", "false"):
        return parameter if test == "true" else f"not {parameter}"
    return f"{parameter} {test} {literal!r}"


def _extend(mine: List[Located], more: Iterable[Located]) -> None:
    for item in more:
        if len(mine) >= MAX_SITES:
            return
        if all(item.path != m.path or item.site.line != m.site.line for m in mine):
            mine.append(item)


@dataclass
class EntryPoint:
    path: str
    reason: str  # "main block", "__main__.py", "notebook", "configured", "script", "spawned"
    summary: FileSummary
    # A spawned entry point (its process starts with fresh RNG states): the call that starts the process
    # (in `path`), the entry point that runs that call, and the functions started.
    spawn: Optional[Spawn] = None
    parent: Optional["EntryPoint"] = None
    targets: Tuple[Node, ...] = ()

    @property
    def line(self) -> int:
        if self.spawn is not None:
            return self.spawn.line
        return self.summary.main_guard_line or 1

    @property
    def root(self) -> "EntryPoint":
        """The entry point the user runs (a spawned one's outermost parent)."""
        return self if self.parent is None else self.parent.root


class Project:
    """Every file's summary, indexed for the project rules; the analysis is computed once, lazily.

    `summaries`, `paths` and `sources` are keyed by the path as displayed;
    `sources` (the decoded texts, for positions and notebook cells) may lack
    files whose diagnostics nobody will see.
    """

    def __init__(
        self,
        summaries: Mapping[str, FileSummary],
        paths: Mapping[str, Path],
        sources: Mapping[str, Any],
        settings: Settings,
        torch_version: Tuple[int, int],
        first_party: frozenset = frozenset(),
        reported: Optional[Set[str]] = None,
        config_files: Optional[Callable[[], List[Path]]] = None,
    ) -> None:
        self.settings = settings
        self.reported = reported  # the files whose diagnostics are shown (None: every file)
        self.torch_version = torch_version
        self.first_party = first_party
        self.paths: Dict[str, Path] = dict(paths)
        self.summaries: Dict[str, FileSummary] = dict(summaries)
        self.sources: Dict[str, Any] = dict(sources)
        self._index: Optional[ModuleIndex] = None
        self._entry_points: Optional[List[EntryPoint]] = None
        self._reach: Dict[Node, Reach] = {}
        self._call_reach: Dict[Node, Reach] = {}
        self._call_edge_cache: Dict[Node, List[Node]] = {}
        self._edges: Dict[Node, List[Node]] = {}
        self._reached_nodes: Dict[Tuple[Node, ...], FrozenSet[Node]] = {}
        self._built_draws: Dict[Tuple[Node, ...], List[Located]] = {}
        self._ruled_out: Dict[Tuple[Tuple[Node, ...], str, Tuple[Any, ...]], Optional[str]] = {}
        self._in_process: Dict[Node, List[Node]] = {}
        self._resolved: Dict[Tuple[str, str], List[Node]] = {}
        self._helpers: Optional[List[Tuple[Node, Reach]]] = None
        self._spawned: Optional[List[EntryPoint]] = None
        self._spawn_start: Optional[Tuple[Set[str], Set[Node]]] = None
        self._registered: Optional[Dict[Tuple[str, str], List[Node]]] = None
        self._imported: Optional[Set[str]] = None
        # (needs a backward pass, needs CUDA) -> the nodes of the runs that may meet such a condition.
        self._condition_nodes: Dict[Tuple[bool, bool], Set[Node]] = {}
        self._suppliers: Optional[Dict[str, List[Tuple[Node, Located]]]] = None
        self._optional_seeds: Optional[Set[str]] = None
        # The project's YAML configs (found on first need: only runs with config-built objects read them).
        self.config_files = config_files  # called once, when a config-built run needs the configs
        self._config_names: Optional[List[Tuple[Path, List[str]]]] = None
        self._dynamic_cache: Dict[Tuple[str, str], List[Node]] = {}  # (file, kind.method) -> candidates
        self._named: Optional[List[str]] = None
        self._methods: Optional[Set[str]] = None
        self._calls_by_callee: Optional[Dict[Node, List[Tuple[Node, bool, bool, Dict[str, str]]]]] = None
        self._references: Optional[Set[Node]] = None
        self._without_gradient: Dict[Tuple[Node, Tuple[Tuple[str, int], ...]], bool] = {}

    # -- the module graph ------------------------------------------------------------------
    @property
    def index(self) -> ModuleIndex:
        if self._index is None:
            self._index = ModuleIndex(self.summaries, self.paths, self.settings.root)
        return self._index

    def imported_files(self) -> Set[str]:
        """The files another first-party file imports (anywhere in its code)."""
        if self._imported is None:
            imported: Set[str] = set()
            for display, summary in self.summaries.items():
                for name in summary.imports:
                    imported.update(found for found in self.index.modules_of_import(name, display) if found != display)
            self._imported = imported
        return self._imported

    @property
    def entry_points(self) -> List[EntryPoint]:
        if self._entry_points is None:
            self._entry_points = self._find_entry_points()
        return self._entry_points

    def _find_entry_points(self) -> List[EntryPoint]:
        entries = []
        imported: Optional[Set[str]] = None
        for display in sorted(self.summaries):
            summary = self.summaries[display]
            name = Path(display).name
            reason = None
            if summary.is_notebook or display.endswith(".ipynb"):
                reason = "notebook"
            elif summary.main_guard_line is not None:
                reason = "main block"
            elif name == "__main__.py":
                reason = "__main__.py"
            elif summary.configured_entry or entry_configured(self.settings, display):
                reason = "configured"
            elif summary.module_work and name not in IMPORTED_BY_TOOLS and "." not in (summary.module_name or ""):
                # A module inside a package is library code even when nothing in the
                # run imports it (a one-file run, or an API imported by users): only a
                # main block, `__main__.py` or config `entry-points` make it an entry point.
                if imported is None:
                    imported = self.imported_files()
                if display not in imported:
                    reason = "script"
            if reason is not None:
                entries.append(EntryPoint(display, reason, summary))
        return entries

    # -- process boundaries ----------------------------------------------------------------------
    def sets_spawn_start(self, node: Node) -> bool:
        """Whether `set_start_method("spawn"|"forkserver")` applies to the default-context
        `Process`es and `Pool`s that a function starts: its file calls it, or an entry point that
        reaches the function also reaches the call (the start method is global to the process: a
        script sets it once, in its main block, for the library code it runs). Elsewhere they are
        taken for forks, Linux's default."""
        if self._spawn_start is None:
            self._spawn_start = self._find_spawn_start()
        files, nodes = self._spawn_start
        return node[0] in files or node in nodes

    def _find_spawn_start(self) -> Tuple[Set[str], Set[Node]]:
        setters = {
            path for path, summary in self.summaries.items() if any("spawn-start" in f.covers for f in summary.functions.values())
        }
        if not setters or not any(
            spawn.method != SPAWN for s in self.summaries.values() for f in s.functions.values() for spawn in f.spawns
        ):
            return setters, set()
        # Which runs reach a setter: backwards from the setters over the in-process edges of
        # everything the entry points reach (one walk for all, not one per entry point: the torch
        # tree has hundreds of scripts and two setters).
        everything = _closure(
            [start for entry in self.entry_points for start in self.entry_starts(entry)], self._calls_and_imports
        )
        callers: Dict[Node, List[Node]] = {}
        for node in everything:
            for successor in self._calls_and_imports(node):
                callers.setdefault(successor, []).append(node)
        setter_nodes = [
            (file, key)
            for file, key in everything
            if file in setters and "spawn-start" in getattr(self.summaries[file].functions.get(key), "covers", ())
        ]
        reaching = _closure(setter_nodes, lambda node: callers.get(node, []))
        marked: Set[Node] = set()
        for entry in self.entry_points:
            starts = self.entry_starts(entry)
            if any(start in reaching for start in starts):
                marked |= self._reached_in_process(
                    starts
                )  # the functions this run calls, not every function of the files it imports
        return setters, marked

    def _reached_in_process(self, starts: List[Node]) -> Set[Node]:
        """What `starts` reach through calls and imports, without following any process start
        (whether those are boundaries is what the caller is finding out)."""
        return _closure(starts, self._calls_and_imports)

    def is_boundary(self, node: Node, spawn: Spawn) -> bool:
        """Whether a process start in the function `node` starts a fresh interpreter."""
        return spawn.method == SPAWN or self.sets_spawn_start(node)

    @property
    def spawned_entry_points(self) -> List[EntryPoint]:
        """Functions started in a new process by code an entry point (or another spawned one) runs."""
        if self._spawned is None:
            self._spawned = self._find_spawned()
        return self._spawned

    def _find_spawned(self) -> List[EntryPoint]:
        if not any(f.spawns for summary in self.summaries.values() for f in summary.functions.values()):
            return []
        found: Dict[Tuple[str, int, int, str], EntryPoint] = {}
        pending = list(self.entry_points)
        while pending:
            parent = pending.pop(0)
            for display, spawn in self.entry_reach(parent).spawns:
                key = (display, spawn.line, spawn.column, spawn.target)
                targets = tuple(self.resolve(display, spawn.target))
                if targets:
                    targets += tuple(self._passed_functions(display, spawn, targets))
                if key in found or not targets:
                    continue
                entry = EntryPoint(display, "spawned", self.summaries[display], spawn, parent, targets)
                found[key] = entry
                pending.append(entry)
        return sorted(found.values(), key=lambda e: (e.path, e.line, e.spawn.column))

    def _passed_functions(self, display: str, spawn: Spawn, already: Tuple[Node, ...]) -> List[Node]:
        """The first-party functions (not classes) a process start hands to its function."""
        found: List[Node] = []
        for passed in spawn.passed:
            if self.class_node(display, passed) is None:
                found.extend(node for node in self.resolve(display, passed) if node not in already and node not in found)
        return found

    @property
    def runs(self) -> List[EntryPoint]:
        """Every entry point with state of its own: those the user starts and the spawned ones."""
        return [*self.entry_points, *self.spawned_entry_points]

    @property
    def reported_runs(self) -> List[EntryPoint]:
        """The runs whose diagnostics are shown (a spawned one's are at the call that starts it).
        A named file that starts no process shows no spawned run: finding them would compute the
        reach of every entry point of the project (2 s of a pre-commit run in the torch tree)."""
        if self.reported is not None and not any(
            function.spawns
            for display in self.reported
            if display in self.summaries
            for function in self.summaries[display].functions.values()
        ):
            return [entry for entry in self.entry_points if self.is_reported(entry.path)]
        return [entry for entry in self.runs if self.is_reported(entry.path)]

    def parent_only(self, entry: EntryPoint, kind: str) -> Optional[Located]:
        """For a spawned entry point, the parent's setting of `kind` (a seed, the flag) that does not
        carry over into the new process."""
        if entry.parent is None:
            return None
        return self.entry_reach(entry.parent).covers.get(kind)

    def is_reported(self, display: str) -> bool:
        return self.reported is None or display in self.reported

    @property
    def reported_entry_points(self) -> List[EntryPoint]:
        """The entry points whose diagnostics are shown (the others are analysed, never reported)."""
        return [entry for entry in self.entry_points if self.is_reported(entry.path)]

    def entry_point(self, display: str) -> Optional[EntryPoint]:
        return next((e for e in self.entry_points if e.path == display), None)

    # -- resolving calls ---------------------------------------------------------------------
    def resolve(self, display: str, target: str, depth: int = 0) -> List[Node]:
        """The first-party functions a call target names (a class: its `__init__`s)."""
        key = (display, target)
        cached = self._resolved.get(key)
        if cached is not None:
            return cached
        result: List[Node] = []
        if target.startswith(DYNAMIC):
            kind = target[len(DYNAMIC) :]
            method = ""
            if kind.startswith((NAMED + ".", CONFIG + ".")):  # a method of what was built: `trainer.train()`
                kind, _, method = kind.partition(".")
            result = self._dynamic(display, kind, method)
        elif depth <= 4:
            if target.startswith("."):
                result = self._local(display, target[1:], depth)
            else:
                found = self.index.module(target, display)
                if found is not None and found[1]:
                    result = self._local(found[0], found[1], depth)
        self._resolved[key] = result
        return result

    def _local(self, display: str, name: str, depth: int) -> List[Node]:
        summary = self.summaries.get(display)
        if summary is None:
            return []
        if name in summary.functions and name not in (MODULE_KEY, MAIN_KEY):
            return [(display, name)]
        if name.endswith(REGISTRY_MEMBER):
            # A member picked from a registry of first-party classes or functions: any of them.
            return self._registry_members(display, name[: -len(REGISTRY_MEMBER)], depth)
        owner, _, method = name.rpartition(".")
        if owner.endswith(REGISTRY_MEMBER) and method == "__call__":  # `model_fn = MODELS[name]; model_fn(cfg)`
            return self._registry_members(display, owner[: -len(REGISTRY_MEMBER)], depth)
        made = summary.functions.get(owner) if owner else None
        if made is not None and made.returns:
            # A method called on what a first-party factory returns (`create_sampler(...).sample()`):
            # that method of each class it may return; a getter's registry member (`get_model(name)(cfg)`)
            # is called itself.
            found: List[Node] = []
            for returned in made.returns:
                if returned.endswith(REGISTRY_MEMBER):
                    found += self.resolve(display, returned, depth + 1) if method == "__call__" else []
                else:
                    found += self.resolve(display, f"{returned}.{method}", depth + 1)
            return list(dict.fromkeys(found))
        head, _, rest = name.partition(".")
        if rest and head in summary.classes and "." in name:
            # A class nested in a class body (`Algo.Policy`, `Algo.Policy.act`): the longest class named.
            if name in summary.classes:
                head, rest = name, ""
            elif owner in summary.classes:
                head, rest = owner, method
        if head in summary.classes:
            if not rest:
                constructors = self._constructor(display, head, set())
                return constructors + self._overrides_run(display, head, constructors)
            if "." not in rest:
                method = self._method(display, head, rest, set())
                if method is None and rest == "__call__":
                    # Calling an instance of a module runs its `forward` (nn.Module.__call__).
                    method = self._method(display, head, "forward", set())
                return [method, *self._overrides_run(display, head, [method])] if method else []
            # `cfg.model.build()` for `cfg: Config`: the class an attribute is annotated with.
            attribute, _, more = rest.partition(".")
            for file, cls in self.base_classes(display, head, set()):
                typed = self.summaries[file].classes[cls].attribute_types.get(attribute)
                if typed is not None:
                    return self.resolve(file, f"{typed}.{more}", depth + 1)
            return []
        if head in summary.exports:
            alias = summary.exports[head]
            return self.resolve(display, alias + ("." + rest if rest else ""), depth + 1) if not alias.startswith(".") else []
        if head in summary.aliases:  # `Model = DetectionModel`, imported as `from models import Model`
            return self.resolve(display, summary.aliases[head] + ("." + rest if rest else ""), depth + 1)
        for module in summary.star_imports if not head.startswith("_") else ():
            # `from .conv import *` in a package's `__init__.py` (PyG's `torch_geometric.nn`).
            found = self.resolve(display, f"{module}.{name}", depth + 1)
            if found:
                return found
        return []

    # -- code chosen at run time ---------------------------------------------------------------
    def _dynamic(self, display: str, kind: str, method: str = "") -> List[Node]:
        """The candidates of a construction or call by name in `display` (see `model.named`):
        every object the project's `class_name=`/`_target_` literals name, those of the YAML
        configs beside and below the file, a module's public callables. None when there are none
        or more than a registry's bound: the site then stays unresolved."""
        key = (display, kind + "." + method)
        found = self._dynamic_cache.get(key)
        if found is not None:
            return found
        names: List[str] = []
        if kind == NAMED:
            names = self._named_literals()
        elif kind == CONFIG:
            names = self._configured_names(display) or self._named_literals()
        elif kind.startswith(MODULE):
            names = self._module_callables(display, kind[len(MODULE) :])
        nodes: List[Node] = []
        for name in dict.fromkeys(names):
            if name.split(".", 1)[0] in self.first_party:
                nodes.extend(node for node in self.resolve(display, f"{name}.{method}" if method else name) if node not in nodes)
        found = self._dynamic_cache[key] = nodes if len(nodes) <= MAX_DYNAMIC_CANDIDATES else []
        return found

    def _named_literals(self) -> List[str]:
        if self._named is None:
            self._named = [name for summary in self.summaries.values() for name in summary.named_targets]
        return self._named

    def _configured_names(self, display: str) -> List[str]:
        """What the YAML configs in the file's directory and below it name (a recipe's
        `hparams/`, hydra's `conf/`), else those of the whole project. Among them, a config named
        after the script (`extract_feats.py` and `hparams/extract_feats.yaml`) is the one it is
        run with: the others configure the recipe's other scripts."""
        if self._config_names is None:
            self._config_names = []
            for path in self.config_files() if self.config_files is not None else []:
                try:
                    text = path.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                names = yaml_targets(text)
                if names:
                    self._config_names.append((path, names))
        script = self.paths.get(display, Path(display))
        script = script if script.is_absolute() else Path.cwd() / script
        directory = script.parent
        near = [(path, names) for path, names in self._config_names if directory in path.parents]
        own = [(path, names) for path, names in near if path.stem == script.stem]
        chosen = own or near or self._config_names
        return [name for _, names in chosen for name in names]

    def _module_callables(self, display: str, module: str) -> List[str]:
        """`getattr(models, name)`: the public functions and classes of a first-party module."""
        found = self.index.module(module, display)
        if found is None or found[1]:
            return []
        summary = self.summaries[found[0]]
        names = [name for name in (*summary.functions, *summary.classes) if "." not in name and not name.startswith(("_", "<"))]
        names += [name for name in summary.exports if not name.startswith("_")]
        return [f"{module}.{name}" for name in names]

    def still_unresolved(self, display: str, site: Site) -> bool:
        """Whether an unresolved site of a summary stays so in this project: a `cfg.build()` on an
        unknown value only where a first-party class defines `build`; a construction by name only
        where its candidates cannot be enumerated."""
        kind = site.argument
        if kind.startswith(METHOD):
            if self._methods is None:
                self._methods = {
                    method for summary in self.summaries.values() for c in summary.classes.values() for method in c.methods
                }
            return kind[len(METHOD) :] in self._methods
        if kind == IMPORT:
            return True
        return not self._dynamic(display, kind)

    def _registry_members(self, display: str, registry: str, depth: int) -> List[Node]:
        listed = self.summaries[display].registries.get(registry, [])
        members = [node for member in listed for node in self.resolve(display, member, depth + 1)]
        members += self.registered().get((display, registry), [])
        return list(dict.fromkeys(members)) if len(members) <= MAX_REGISTRY_MEMBERS else []

    def _registrar(self, display: str, callee: str) -> bool:
        """A first-party function that stores the function handed to it in a module-level registry
        (`_COMPILER_FNS[name] = compiler_fn`): handing it a function registers it, runs nothing."""
        nodes = self.resolve(display, callee)
        if not nodes:  # a module-level `functools.partial` of a registrar
            module, _, name = callee.rpartition(".")
            files = [display] if module == "" else self.index.modules_of_import(module, display)[-1:]
            for file in files:
                inner = self.summaries[file].partials.get(name)
                if inner:
                    nodes = self.resolve(file, inner)
        return any(key in self.summaries[file].registrars for file, key in nodes)

    def registered(self) -> Dict[Tuple[str, str], List[Node]]:
        """(file, registry) -> the definitions a registering decorator of that file puts in it
        (`@register` where `register` stores its argument in `_METRICS`)."""
        if self._registered is None:
            found: Dict[Tuple[str, str], List[Node]] = {}
            for display, summary in self.summaries.items():
                for name, decorators in summary.decorators.items():
                    for decorator in decorators:
                        for file, key in self.resolve(display, decorator):
                            registry = self.summaries[file].registrars.get(key)
                            if registry is not None:
                                found.setdefault((file, registry), []).extend(self.resolve(display, "." + name))
            self._registered = found
        return self._registered

    def class_node(self, display: str, target: str, depth: int = 0) -> Optional[Tuple[str, str]]:
        """(file, class name) of a first-party class named by a qualified or local target."""
        if depth > 4:
            return None
        if target.startswith("."):
            display_, name = display, target[1:]
        else:
            found = self.index.module(target, display)
            if found is None or not found[1]:
                return None
            display_, name = found
        summary = self.summaries.get(display_)
        if summary is None:
            return None
        if name in summary.classes:
            return display_, name
        head, _, rest = name.partition(".")
        if head in summary.exports and not rest:
            return self.class_node(display_, summary.exports[head], depth + 1)
        if head in summary.aliases and not rest:
            return self.class_node(display_, summary.aliases[head], depth + 1)
        for module in summary.star_imports if not rest and not head.startswith("_") else ():
            found = self.class_node(display_, f"{module}.{head}", depth + 1)
            if found is not None:
                return found
        return None

    def external_name(self, display: str, target: str, depth: int = 0) -> Optional[str]:
        """The third-party name a first-party qualified name is bound to through the re-exports of
        the project's modules (`pkg.sampler.SubsetRandomSampler` where `pkg/sampler.py` imports
        `SubsetRandomSampler` from `torch.utils.data`); None when it is a definition of the project
        or cannot be followed."""
        found = self.index.module(target, display)
        if found is None or not found[1] or "." in found[1] or depth > 4:
            return None
        summary = self.summaries.get(found[0])
        bound = summary.exports.get(found[1]) if summary is not None else None
        if bound is None or bound.startswith("."):
            return None
        if bound.split(".", 1)[0] in self.first_party:
            return self.external_name(found[0], bound, depth + 1)
        return canonical(bound)

    def builds_drawing_module(self, display: str, target: str) -> bool:
        """Whether calling `target` builds a first-party class whose construction draws from torch
        (`Net()` with an `nn.Linear` in `__init__`), directly or as what a first-party factory
        returns (`build_model(cfg)` returning `Net(...)`), without seeding torch itself. What the
        construction runs counts (the `__init__`s and what they call), not the module-level code
        of the modules imported on the way: that ran at the import line."""

        def draws(file: str, name: str) -> bool:
            if self.class_node(file, name) is None:
                return False
            reached = [self.call_reach(node) for node in self.resolve(file, name)]
            return any("torch" in r.draws and "torch" not in r.covers for r in reached)

        if draws(display, target):
            return True
        if self.class_node(display, target) is not None:
            return False
        for file, key in self.resolve(display, target):
            function = self.summaries[file].functions.get(key)
            if function is not None and any(draws(file, made) for made in function.returns):
                return True
        return False

    def seeds_argument(self, display: str, target: str, keyword: Optional[str], position: Optional[int]) -> bool:
        """Whether a first-party class seeds the object handed to its constructor as `keyword=`
        (or at `position`): it calls `.manual_seed`/`.seed` on that parameter in `__init__` (its
        own or, when it has none, the nearest base's), or on the attribute that `__init__` stores
        it in, in any method of the class or its bases."""
        found = self.class_node(display, target)
        if found is None:
            return False
        chain = self.base_classes(found[0], found[1], set())
        # The `__init__` that runs: the class's own, or the nearest base's (a subclass that only
        # adds `__iter__` takes its base's parameters and the attributes they are stored in).
        owners = [self.summaries[file].classes[name] for file, name in chain]
        cls = next((owner for owner in owners if "__init__" in owner.methods), None)
        if cls is None:
            return False
        parameters = cls.init_parameters[1:]  # after `self`
        name = (
            keyword
            if keyword in parameters
            else parameters[position]
            if position is not None and position < len(parameters)
            else None
        )
        if name is None:
            return False
        if name in cls.seeded_parameters:
            return True
        attributes = {attribute for attribute, parameter in cls.attribute_parameters.items() if parameter == name}
        return any(
            attribute in self.summaries[file].classes[base].seeded_attributes for file, base in chain for attribute in attributes
        )

    def base_classes(self, display: str, name: str, seen: Set[Tuple[str, str]]) -> List[Tuple[str, str]]:
        """The class and its first-party bases, nearest first."""
        if (display, name) in seen:
            return []
        seen.add((display, name))
        chain = [(display, name)]
        for base in self.summaries[display].classes[name].bases:
            found = self.class_node(display, base if not base.startswith(".") else base)
            if found is not None:
                chain.extend(self.base_classes(found[0], found[1], seen))
        return chain

    def _overrides_run(self, display: str, name: str, methods: List[Node]) -> List[Node]:
        """The overrides in class `name` that `self.x()` calls in the inherited `methods` run.

        A base's `fit` calling `self.train_step()` runs the built class's `train_step`, not the
        base's: for each `self.` call in a method defined in a base class (followed through the
        base methods those calls reach), the method nearest to `name` when it is not the one the
        base itself would run. Only for the class actually built or called, never for every
        subclass of the base (a project that builds a quiet and a noisy trainer is not charged the
        noisy one's draws where it builds the quiet one)."""
        chain = self.base_classes(display, name, set())
        own = chain[0] if chain else (display, name)
        found: List[Node] = []
        pending = [m for m in methods if (m[0], m[1].rpartition(".")[0]) != own]
        seen = set(pending)
        while pending and len(seen) < MAX_OVERRIDE_STEPS:
            file, key = pending.pop()
            owner = key.rpartition(".")[0]
            function = self.summaries[file].functions.get(key)
            for call in function.calls if function is not None else ():
                if not call.startswith(f".{owner}.") or "." in call[len(owner) + 2 :]:
                    continue  # not `self.x()` (or `Owner.x()`) inside the base class
                method = call.rpartition(".")[2]
                nearest = self._method(display, name, method, set())
                if nearest is None or nearest in seen:
                    continue
                seen.add(nearest)
                if nearest != self._method(file, owner, method, set()):
                    found.append(nearest)
                if (nearest[0], nearest[1].rpartition(".")[0]) != own:
                    pending.append(nearest)  # another base method: its `self.` calls go to `name` too
        return found

    def _constructor(self, display: str, name: str, seen: Set) -> List[Node]:
        nodes = []
        for file, cls in self.base_classes(display, name, seen):
            key = f"{cls}.__init__"
            if key in self.summaries[file].functions:
                nodes.append((file, key))
        return nodes

    def _method(self, display: str, name: str, method: str, seen: Set) -> Optional[Node]:
        for file, cls in self.base_classes(display, name, seen):
            key = f"{cls}.{method}"
            if key in self.summaries[file].functions:
                return (file, key)
        return None

    def edges(self, node: Node) -> List[Node]:
        found = self._edges.get(node)
        if found is not None:
            return found
        targets = list(self._calls_and_imports(node))
        display, key = node
        function = self.summaries[display].functions.get(key)
        # A function started in a new process is not part of this process (a spawned entry
        # point), unless the start method is the default one and nothing sets it to "spawn".
        for spawn in function.spawns if function is not None else ():
            if not self.is_boundary(node, spawn):
                started = self.resolve(display, spawn.target)
                targets.extend(started)
                targets.extend(self._passed_functions(display, spawn, tuple(started)))
        unique = list(dict.fromkeys(t for t in targets if t != node and t[0] in self.summaries))
        self._edges[node] = unique
        return unique

    def _calls_and_imports(self, node: Node) -> List[Node]:
        """The functions and modules `node` runs in its own process: every edge but process starts."""
        found = self._in_process.get(node)
        if found is not None:
            return found
        display, key = node
        summary = self.summaries[display]
        targets: List[Node] = []
        function = summary.functions.get(key)
        if key != MODULE_KEY:
            targets.append((display, MODULE_KEY))  # a function of a module runs after its import
        # Importing a first-party module runs its module-level code: at import time for
        # module-level imports, when the function runs for the lazy ones.
        imported_here = summary.module_imports if key == MODULE_KEY else (function.imports if function is not None else [])
        for name in imported_here:
            for imported in self.index.modules_of_import(name, display):
                targets.append((imported, MODULE_KEY))
        if function is not None:
            for call in function.calls:
                targets.extend(self.resolve(display, call))
            # A first-party function passed by name to a call (`launch(main, ...)`,
            # `Thread(target=worker)`) runs; a class passed by name is not instantiated by that.
            for reference in function.references:
                callee = function.reference_callees.get(reference)
                if self.class_node(display, reference) is None and not (callee and self._registrar(display, callee)):
                    targets.extend(self.resolve(display, reference))
        unique = list(dict.fromkeys(t for t in targets if t != node and t[0] in self.summaries))
        self._in_process[node] = unique
        return unique

    # -- reach: strongly connected components, successors first -------------------------------
    def reach(self, node: Node) -> Reach:
        if node not in self._reach:
            self._compute(node, self.edges, self._reach)
        return self._reach[node]

    def call_reach(self, node: Node) -> Reach:
        """What running `node` itself does: the functions it calls, without the module-level code
        of the modules imported on the way (that ran at their import, not in this call)."""
        if node not in self._call_reach:
            self._compute(node, self._call_edges, self._call_reach)
        return self._call_reach[node]

    def _call_edges(self, node: Node) -> List[Node]:
        found = self._call_edge_cache.get(node)
        if found is None:
            found = self._call_edge_cache[node] = [successor for successor in self.edges(node) if successor[1] != MODULE_KEY]
        return found

    def _own(self, node: Node) -> Reach:
        display, key = node
        function = self.summaries[display].functions.get(key)
        own = Reach()
        if function is None:
            return own
        for kind, sites in function.draws.items():
            own.draws[kind] = [Located(display, s) for s in sites]
        for kind, site in function.covers.items():
            own.covers[kind] = Located(display, site)
        own.cuda = [Located(display, s) for s in function.cuda]
        own.ops = [Located(display, s) for s in function.ops if self._evidence_holds(node, s)]
        own.raising = {
            profile: [Located(display, s) for s in sites if self._evidence_holds(node, s)]
            for profile, sites in function.raising.items()
        }
        own.loading = [Located(display, s) for s in function.loading]
        own.trains = [Located(display, function.trains)] if function.trains is not None else []
        own.moves = [Located(display, function.moves)] if function.moves is not None else []
        own.unresolved = [Located(display, s) for s in function.unresolved if self.still_unresolved(display, s)]
        own.spawns = [(display, spawn) for spawn in function.spawns if self.is_boundary(node, spawn)]
        return own

    def _compute(self, start: Node, edges, store: Dict[Node, Reach]) -> None:
        """Iterative Tarjan: every node reachable from `start` through `edges` gets (in `store`)
        the union of what it reaches."""
        index: Dict[Node, int] = {}
        low: Dict[Node, int] = {}
        stack: List[Node] = []
        on_stack: Set[Node] = set()
        counter = 0
        work = [(start, 0)]
        while work:
            node, position = work.pop()
            if position == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            successors = edges(node)
            recursed = False
            while position < len(successors):
                successor = successors[position]
                position += 1
                if successor in store:
                    continue
                if successor not in index:
                    work.append((node, position))
                    work.append((successor, 0))
                    recursed = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if recursed:
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                combined = Reach()
                members = set(component)
                for member in sorted(component):
                    combined.merge(self._own(member))
                for member in component:
                    for successor in edges(member):
                        if successor not in members:
                            combined.merge(self._across(member, successor, store[successor]))
                if len(component) > 1:
                    # Members call each other with arguments no single outside call decides.
                    combined = _options_resolved(combined, lambda located, node: "" if node in members else None)
                for member in component:
                    store[member] = combined
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])

    def _across(self, caller: Node, callee: Node, reach: Reach) -> Reach:
        """What a call from `caller` gets of `callee`'s reach: a setting the callee makes only under
        `if <flag parameter>:` holds when the caller passes that flag a value that may be true
        (`seed_everything(0, deterministic=True)`), and not otherwise (the default is false)."""
        reach = self._options_across(caller, callee, reach)
        conditional = [kind for kind, site in reach.covers.items() if site.site.condition]
        if not conditional:
            return reach
        function = self.summaries[caller[0]].functions.get(caller[1])
        passed: List[str] = []
        for target, flags in function.call_flags.items() if function is not None else ():
            if callee in self.resolve(caller[0], target):
                passed.extend(flags)
        resolved = Reach(**{name: getattr(reach, name) for name in reach.__dataclass_fields__})
        resolved.covers = dict(reach.covers)
        for kind in conditional:
            located = reach.covers[kind]
            key, parameter, position = located.site.condition.split("|")
            if key != callee[1]:
                continue  # a deeper function's: decided on its own call
            if parameter in passed or f"#{position}" in passed or "**" in passed:
                site = Site(**{**located.site.__dict__, "condition": ""})
                resolved.covers[kind] = Located(located.path, site)
            else:
                del resolved.covers[kind]
        return resolved

    def _options_across(self, caller: Node, callee: Node, reach: Reach) -> Reach:
        """A callee's draw or loader under `if <parameter>.<option>:` as its caller sees it: under the
        caller's own parameter it passes on; dropped (`!`) where it passes the namespace of a fully
        visible parser that defines no such option; kept otherwise, and where its calls disagree."""
        if not any(callee in _option_nodes(item) for item in _optioned(reach)):
            return reach
        function = self.summaries[caller[0]].functions.get(caller[1])
        records = [
            record
            for target, calls in (function.call_options.items() if function is not None else ())
            if callee in self.resolve(caller[0], target)
            for record in calls
        ]

        def across(condition: str, node: Node) -> Optional[str]:
            if node != callee:
                return None  # a deeper function's: decided on its own call
            _, _, parameter, position, option = condition.split("|")
            outcomes = set()
            for record in records:
                passed = record.get(parameter) or (record.get("#" + position) if position != "-1" else None)
                if passed is None:
                    outcomes.add("")  # its default, or hidden behind `*`/`**`
                elif passed.startswith("n|"):
                    outcomes.add("" if option in function.namespaces.get(passed[2:], ()) else "!" + option)
                else:
                    _, name, at = passed.split("|")
                    outcomes.add(f"{caller[0]}|{caller[1]}|{name}|{at}|{option}")
            return outcomes.pop() if len(outcomes) == 1 else ""

        return _options_resolved(reach, across)

    def entry_starts(self, entry: EntryPoint) -> List[Node]:
        """Where an entry point's code starts: its module-level code and main block; for a
        configured entry point, also each of its module-level functions (a launcher, `fire`,
        a job runner may call any of them). A spawned entry point starts at the functions started and
        at the module-level code of their modules and of the program's main module, which a new
        process imports again (its main block it does not run)."""
        if entry.spawn is not None:
            starts = list(entry.targets)
            for file in [*(node[0] for node in entry.targets), entry.root.path]:
                if MODULE_KEY in self.summaries[file].functions and (file, MODULE_KEY) not in starts:
                    starts.append((file, MODULE_KEY))
            return starts
        keys = [MAIN_KEY, MODULE_KEY]
        if entry.reason == "configured":
            keys += [key for key in entry.summary.functions if "." not in key and not key.startswith("<")]
        return [(entry.path, key) for key in keys if key in entry.summary.functions]

    def module_code_reach(self, display: str) -> Reach:
        """What a file's own module-level code does once its imports have run: its statements
        and the functions they call, without the module-level code of the modules it imports,
        which ran at import time, before any line placed after the imports could."""
        start = (display, MODULE_KEY)
        combined = Reach()
        if MODULE_KEY not in self.summaries[display].functions:
            return combined
        seen: Set[Node] = {start}
        pending = [start]
        while pending:
            for successor in self.edges(pending.pop()):
                if successor not in seen and (successor[1] != MODULE_KEY or successor[0] == display):
                    seen.add(successor)
                    pending.append(successor)
        for node in sorted(seen):
            combined.merge(self._own(node))
        return combined

    def entry_reach(self, entry: EntryPoint) -> Reach:
        combined = Reach()
        for start in self.entry_starts(entry):
            combined.merge(self.reach(start))
        # A setting left under a flag parameter nobody passed: the flag keeps its false default.
        combined.covers = {kind: site for kind, site in combined.covers.items() if not site.site.condition}
        if any(item.site.option.startswith("!") for item in _optioned(combined)):
            # Under an option the entry point's parser never defines, unless reached code sets it.
            written = {name for node in self.reached_nodes(entry) for name in self._namespace_writes(node)}
            if "*" not in written:
                combined = _options_resolved(combined, drop=_dropped(written))
        return combined

    def _namespace_writes(self, node: Node) -> List[str]:
        function = self.summaries[node[0]].functions.get(node[1]) if node[0] in self.summaries else None
        return function.namespace_writes if function is not None else []

    def reached_nodes(self, entry: EntryPoint) -> FrozenSet[Node]:
        """Every function (file, key) whose code an entry point runs. Kept per start: several rules
        and the report ask it of every run, and a big project's closure holds thousands of nodes."""
        starts = tuple(self.entry_starts(entry))
        found = self._reached_nodes.get(starts)
        if found is None:
            found = self._reached_nodes[starts] = frozenset(_closure(starts, self.edges))
        return found

    def node_at(self, display: str, line: int) -> Node:
        """The function of a file that holds a line (its innermost span; else the module's code)."""
        best: Optional[Tuple[int, str]] = None
        for key, (first, last) in self.summaries[display].spans.items():
            if first <= line <= last and (best is None or last - first < best[0]):
                best = (last - first, key)
        return (display, best[1] if best else MODULE_KEY)

    # -- what a run really does ---------------------------------------------------------------
    def unresolved(self, entry: EntryPoint) -> List[Located]:
        """The construction and dispatch sites the entry point's reach passes through and the
        analysis could not resolve: behind them lies code it never read."""
        return self.entry_reach(entry).unresolved

    def incomplete(self, entry: EntryPoint) -> bool:
        return bool(self.unresolved(entry))

    def uses_cuda(self, entry: EntryPoint) -> bool:
        """Whether the run may put work on an accelerator: it reaches CUDA work, a device move to
        a device that is not visibly the CPU, a library that picks the device (DDP, Accelerate, a
        Lightning or Transformers trainer), or code the analysis cannot follow. A run with none of
        these computes on the CPU, PyTorch's default device."""
        reach = self.entry_reach(entry)
        return bool(reach.cuda or reach.moves or reach.unresolved)

    def trains(self, entry: EntryPoint) -> bool:
        """Whether the run may run a backward pass: it reaches a call that trains, or it is
        incomplete (what it cannot see may train)."""
        reach = self.entry_reach(entry)
        return bool(reach.trains) or bool(reach.unresolved)

    def training_assumed(self, entry: EntryPoint) -> bool:
        """Whether `trains` holds only because the run is incomplete: nothing it was seen to reach
        trains, so whether it trains is unknown. Not said of a function started in new processes
        (`mp.spawn`, a launcher): such a worker is there to train, and what it runs is often a
        function handed to it (`distributed_main(i, main, cfg)`), which the analysis cannot follow."""
        reach = self.entry_reach(entry)
        return entry.spawn is None and not reach.trains and bool(reach.unresolved)

    def unreached_supplier(self, entry: EntryPoint, kind: str) -> Optional[Located]:
        """Open world: for an incomplete entry point, a first-party seeding or determinism helper
        of the project (its name says `seed` or `determinis`, or config `seed-functions` lists it)
        that would supply the missing fact and that no run of the project reaches: such a helper
        is there to be called, and what calls it may well sit behind the site the analysis could
        not follow (a trainer built from configuration). Helpers of the tests and of other
        programs (entry-point scripts, functions some run reaches) do not count, nor a module's
        private function (`_reset_seeds`), nor one outside the packages that the unresolved sites
        can reach when each of them is bounded (`import_module("pkg.models." + name)`)."""
        if not self.incomplete(entry):
            return None
        if self._suppliers is None:
            self._suppliers = {}
            scripts = {other.path for other in self.entry_points}
            configured = {name.rsplit(".", 1)[-1] for name in config_helpers(self.settings)}
            candidates = []
            for display, summary in sorted(self.summaries.items()):
                if _is_test_file(display) or display in scripts:
                    continue  # a test's helper, or another program's own code
                for key, function in summary.functions.items():
                    name = key.rsplit(".", 1)[-1].lower()
                    if key in (MODULE_KEY, MAIN_KEY, LAMBDA_KEY) or "<locals>" in key or not function.covers:
                        continue
                    if "." not in key and name.startswith("_"):
                        continue  # a module's private function: code outside would call a public one
                    if "seed" in name or "determinis" in name or key.rsplit(".", 1)[-1] in configured:
                        candidates.append(((display, key), function))
            if candidates:
                runs = [start for run in self.runs for start in self.entry_starts(run)]
                everywhere = _closure(runs, self.edges)
                for node, function in candidates:
                    if node in everywhere:
                        continue  # part of a program the analysis follows: not what hides behind the site
                    for covered, site in function.covers.items():
                        if not site.condition:
                            self._suppliers.setdefault(covered, []).append((node, Located(node[0], site)))
        reached = self.reached_nodes(entry)
        prefixes = {item.site.reaches for item in self.unresolved(entry)}
        for node, located in self._suppliers.get(kind, ()):
            if node in reached:
                continue
            # Behind imports of `pkg.models.` + name lie only the modules of `pkg.models`.
            module = self.summaries[node[0]].module_name or ""
            if "" in prefixes or any(module.startswith(prefix) for prefix in prefixes):
                return Located(located.path, Site(located.site.line, f"`{node[1]}` ({located.site.text})"))
        return None

    def open_world_note(self, entry: EntryPoint, supplier: Located, what: str) -> str:
        """`the run passes through ... which the analysis cannot follow; ... is reached by no path it could follow`."""
        sites = ", ".join(f"{item.site.text} at {self.where(item)}" for item in self.unresolved(entry)[:2])
        return (
            f"; the run passes through {sites}, which the analysis cannot follow, and {supplier.site.text} at "
            f"{self.where(supplier)}, which {what}, is reached by no path it could follow"
        )

    def unknown_training_note(self, entry: EntryPoint) -> str:
        """`no call that trains was seen, and the run passes through ... which the analysis cannot follow`."""
        sites = ", ".join(f"{item.site.text} at {self.where(item)}" for item in self.unresolved(entry)[:2])
        return (
            f"; it matters only if the run trains: no call that trains was seen, and the run passes through {sites}, "
            "which the analysis cannot follow"
        )

    def launched(self, entry: EntryPoint) -> List[Node]:
        """The functions an entry point's own code hands to an executor that runs them as a job of
        their own (submitit): the training process is the job's."""
        found: List[Node] = []
        for key in (MAIN_KEY, MODULE_KEY) if entry.spawn is None else ():
            function = entry.summary.functions.get(key)
            for target in function.launches if function is not None else ():
                found.extend(node for node in self.resolve(entry.path, target) if node not in found)
        return found

    def effective_draws(self, entry: EntryPoint, kind: str) -> List[Located]:
        """The draws from a global generator that reach the run's numbers: for torch, not the
        initial weights of a module whose parameters a strict `load_state_dict` then overwrites
        (an inference script that builds its model and loads a checkpoint); not a draw under a test
        of its function's parameter that no call of the run can pass (see `branch_ruled_out`)."""
        draws = self._loaded_draws(entry, kind)
        if kind == "torch":
            built = [item for item in self.built_module_draws(entry) if all(item.where() != draw.where() for draw in draws)]
            draws = draws + built
        if not any(draw.site.branch for draw in draws):
            return draws
        return [draw for draw in draws if self.branch_ruled_out(entry, draw) is None]

    def built_module_draws(self, entry: EntryPoint) -> List[Located]:
        """The draws `model.eval()` leaves on (`Site.eval_proof`) in what the `forward` of each
        first-party `nn.Module` whose `__init__` the run reaches calls. A module is built to be
        called, and a run's calls of it are often out of sight (a model returned in a tuple, handed
        to a helper, kept in a list or loaded from a checkpoint of its own): those draws do not
        depend on the mode the run puts the module in."""
        starts = tuple(self.entry_starts(entry))
        found = self._built_draws.get(starts)
        if found is not None:
            return found
        forwards: List[Node] = []
        for display, key in sorted(self.reached_nodes(entry)):
            owner, _, name = key.rpartition(".")
            if name == "__init__" and owner in self.summaries[display].classes and self.is_module_class(display, owner):
                forward = self._method(display, owner, "forward", set())
                if forward is not None:
                    forwards.append(forward)
        found = []
        for display, key in sorted(_closure(forwards, self._call_edges)) if forwards else ():
            function = self.summaries[display].functions.get(key)
            sites = [site for site in function.draws.get("torch", ()) if site.eval_proof] if function is not None else []
            _extend(found, [Located(display, site) for site in sites])
        self._built_draws[starts] = found
        return found

    def is_module_class(self, display: str, name: str) -> bool:
        """Whether a first-party class derives from `torch.nn.Module` (through first-party bases)."""
        return any(
            is_module_base(base)
            for file, cls in self.base_classes(display, name, set())
            for base in self.summaries[file].classes[cls].bases
        )

    def branch_ruled_out(self, entry: EntryPoint, draw: Located) -> Optional[str]:
        """The test (`not memory_map`) a draw runs under that no call the run makes of its function
        can satisfy: every such call passes a literal (or leaves a literal default) that fails it,
        followed through callers that pass on a parameter of their own. None, and the draw counts,
        when a value is out of sight or the function is reached otherwise than by a recorded call."""
        if not draw.site.branch:
            return None
        memo = (tuple(self.entry_starts(entry)), draw.path, draw.site.branch)
        if memo not in self._ruled_out:
            self._ruled_out[memo] = None
            for key, parameter, test, value in draw.site.branch:
                values = self._run_values(entry, (draw.path, key), parameter)
                if values is not None and not any(_test_holds(test, value, one) for one in values):
                    self._ruled_out[memo] = _test_text(parameter, test, value)
                    break
        return self._ruled_out[memo]

    def _run_values(self, entry: EntryPoint, node: Node, parameter: str) -> Optional[List[Any]]:
        """The values a parameter of a module-level function or of a top-level class's `__init__`
        (its constructions) holds over the calls one run makes. Other methods are left open: their
        calls on an object of unknown class are not all recorded."""
        display, key = node
        owner, _, name = key.rpartition(".")
        summary = self.summaries[display]
        table = summary.parameters.get(key)
        if table is None or parameter not in table or "." in owner:
            return None
        if owner and (name != "__init__" or owner not in summary.classes):
            return None
        index = index_of(self)
        if (display, owner) in index.loose_classes or node in self.entry_starts(entry):
            return None
        reached = self.reached_nodes(entry)
        recorded = {(caller_file, call[0]) for caller_file, call in index.callers.get(node, ())}
        if any(other not in recorded and node in self.edges(other) for other in reached):
            return None  # reached through an edge no recorded call explains (a framework, a protocol)
        position, default = table[parameter]
        return index.values(node, parameter, position, default, within=reached)

    def _loaded_draws(self, entry: EntryPoint, kind: str) -> List[Located]:
        draws = self.entry_reach(entry).draws.get(kind, [])
        if kind != "torch" or not draws:
            return draws
        nodes = self.reached_nodes(entry)
        functions = [self.summaries[file].functions.get(key) for file, key in nodes]
        if not any(f is not None and (f.loaded or any(s.overwritten for s in f.draws.get(kind, ()))) for f in functions):
            return draws
        found: List[Located] = []
        seen: Set[Node] = set()
        pending = list(self.entry_starts(entry))
        while pending:
            node = pending.pop()
            if node in seen:
                continue
            seen.add(node)
            function = self.summaries[node[0]].functions.get(node[1])
            if function is None:
                continue
            _extend(found, [Located(node[0], site) for site in function.draws.get(kind, ()) if not site.overwritten])
            skipped = {callee for target in function.loaded for callee in self.resolve(node[0], target)}
            pending.extend(successor for successor in self.edges(node) if successor not in skipped)
        # A draw under a command-line option stands only where the run's reach kept it (`entry_reach`).
        kept = {(item.path, item.site.line) for item in draws}
        return [item for item in found if not item.site.option or (item.path, item.site.line) in kept]

    def optional_seed(self, guard: str) -> bool:
        """Whether a seeding's guard tests a seed option that defaults to None (`args.seed is not
        None`, `cfg.seed`): the seeding runs only when the option is given."""
        try:
            test = ast.parse(guard, mode="eval").body
        except SyntaxError:
            return False
        while isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            test = test.values[0]
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot):
            test = test.left
        name = test.attr if isinstance(test, ast.Attribute) else test.id if isinstance(test, ast.Name) else None
        if name is None:
            return False
        if self._optional_seeds is None:
            self._optional_seeds = {seed for summary in self.summaries.values() for seed in summary.optional_seeds}
        return name in self._optional_seeds

    def analysed_line(self, diagnostic: Diagnostic) -> int:
        """A file finding's line in the analysed text (a notebook's joined cells), as the
        summaries' spans count; a notebook's finding is placed in its cell already."""
        source = self.sources.get(diagnostic.path)
        if diagnostic.cell is not None and source is not None:
            return LineIndex(source.text).position(diagnostic.start_offset)[0]
        return diagnostic.line

    def condition_can_hold(self, display: str, line: int, backward: bool, cuda: bool) -> bool:
        """Whether an operation's condition at `display:line` can hold in some run: one that reaches
        it trains (for a condition in the backward pass) and may use CUDA (for a CUDA-only one); or
        no run reaches it (library code, judged as if it ran so)."""
        if display not in self.summaries:
            return True
        key = (backward, cuda)
        if key not in self._condition_nodes:
            runs = self.runs
            if not self._condition_nodes:
                self._condition_nodes[(False, False)] = _closure(
                    [s for entry in runs for s in self.entry_starts(entry)], self.edges
                )
            wanted = [e for e in runs if (not backward or self.trains(e)) and (not cuda or self.uses_cuda(e))]
            self._condition_nodes[key] = _closure([s for entry in wanted for s in self.entry_starts(entry)], self.edges)
        node = self.node_at(display, line)
        return node not in self._condition_nodes[(False, False)] or node in self._condition_nodes[key]

    # -- gradients passed by callers ------------------------------------------------------------
    def _evidence_holds(self, node: Node, site: Site) -> bool:
        """A backward-only operation on tensors that get a gradient only from the function's
        parameters is no evidence when every call of the function passes them none."""
        if not site.gradient_from:
            return True
        params = []
        for part in site.gradient_from.split(","):
            name, _, position = part.rpartition("#")
            params.append((name, int(position)))
        return not self.passed_without_gradient(node, tuple(sorted(params)))

    def _gradient_calls(self) -> Dict[Node, List[Tuple[Node, bool, bool, Dict[str, str]]]]:
        """Each first-party function -> its calls in the project: (calling function, no gradient
        flows at the call, hidden arguments, what each argument carries)."""
        if self._calls_by_callee is None:
            found: Dict[Node, List[Tuple[Node, bool, bool, Dict[str, str]]]] = {}
            for display, summary in self.summaries.items():
                for key, function in summary.functions.items():
                    for target, calls in function.call_gradients.items():
                        for callee in self.resolve(display, target):
                            found.setdefault(callee, []).extend(((display, key), *call) for call in calls)
            self._calls_by_callee = found
        return self._calls_by_callee

    def _referenced(self) -> Set[Node]:
        """Functions handed on by name (`pretrained_filter_fn=checkpoint_filter_fn`): code the project
        does not show may call them."""
        if self._references is None:
            self._references = {
                node
                for display, summary in self.summaries.items()
                for reference in [
                    *summary.handed_on,
                    *(reference for function in summary.functions.values() for reference in function.references),
                ]
                for node in self.resolve(display, reference)
            }
        return self._references

    def passed_without_gradient(
        self, node: Node, params: Tuple[Tuple[str, int], ...], seen: FrozenSet[Node] = frozenset()
    ) -> bool:
        """Whether every call of `node` in the project passes its parameters `params` (name, position;
        -1: keyword-only) values without gradient, or runs where no gradient flows; an argument that
        is a parameter of the caller is decided by the caller's calls in turn. A function with no
        call in the project, or handed on by name, may be called with anything: False."""
        key = (node, params)
        cached = self._without_gradient.get(key)
        if cached is not None:
            return cached
        if node in seen or len(seen) > MAX_GRADIENT_DEPTH:
            return False  # a cycle of calls proves nothing
        calls = self._gradient_calls().get(node)
        answer = bool(calls) and node not in self._referenced()
        for caller, off, hidden, arguments in calls or ():
            if not answer:
                break
            if off:
                continue
            needed: Dict[Tuple[str, int], bool] = {}
            for name, position in params:
                value = arguments.get(name)
                if value is None and position >= 0 and not hidden:
                    value = arguments.get(f"#{position}")
                if value is None:
                    # Not passed: the default (a literal), unless a `*`/`**` argument may carry it.
                    answer = not hidden
                elif value == "?":
                    answer = False
                elif value:
                    for part in value.split(","):
                        passed, _, where = part.rpartition("#")
                        needed[(passed, int(where))] = True
                if not answer:
                    break
            if answer and needed:
                answer = self.passed_without_gradient(caller, tuple(sorted(needed)), seen | {node})
        self._without_gradient[key] = answer
        return answer

    def deterministic_mode_enabled(self) -> bool:
        """One entry point that enables the flag silences TDL201 project-wide (library code
        included: it runs under that flag); with no entry point, nothing enables it."""
        return any("deterministic" in self.entry_reach(entry).covers for entry in self.runs)

    def covered_where_reached(self, display: str, line: int, kinds: Iterable[str]) -> bool:
        """Whether code at `display:line` runs only where one of the cover `kinds` is on: every
        entry point (spawned ones included) that reaches it covers one; for code no entry point
        reaches, one covering entry point in the project is enough (as TDL201's flag)."""
        kinds = tuple(kinds)
        entries = self.runs
        if display not in self.summaries or not entries:
            return False

        def covers(entry: EntryPoint) -> bool:
            reach = self.entry_reach(entry).covers
            return any(kind in reach for kind in kinds)

        node = self.node_at(display, line)
        reaching = [entry for entry in entries if node in self.reached_nodes(entry)]
        if reaching:
            return all(covers(entry) for entry in reaching)
        return any(covers(entry) for entry in entries)

    # -- seeding helpers the fixes can call -----------------------------------------------------------
    def seeding_helpers(self) -> List[Tuple[Node, Reach]]:
        """First-party module-level functions whose bodies (transitively) seed, best first."""
        if self._helpers is None:
            self._helpers = self._find_seeding_helpers()
        return self._helpers

    def _find_seeding_helpers(self) -> List[Tuple[Node, Reach]]:
        found = []
        configured = set()
        for name, covers in config_helpers(self.settings).items():
            for display in self.summaries:
                for node in self.resolve(display, name):
                    if node not in configured and "." not in node[1]:
                        configured.add(node)
                        reach = Reach(covers={kind: Located(node[0], Site(0, f"`{name}(...)`")) for kind in covers})
                        found.append((node, reach))
                break
        for display, summary in sorted(self.summaries.items()):
            for name, function in summary.functions.items():
                if "." in name or name.startswith(("_", "<")) or (display, name) in configured:
                    continue
                # A seeding helper a fix may call is named for seeding and
                # lives outside the tests (a `main()` that seeds before spawning is not one).
                # Its body does nothing but seed, set flags, log and handle its arguments, and it lives
                # outside every entry-point script.
                if (
                    "seed" not in name.lower()
                    or _is_test_file(display)
                    or function.does_more
                    or self.entry_point(display) is not None
                ):
                    continue
                reach = self.reach((display, name))
                # A helper seeds and does nothing else worth naming: no draws, no device work, no processes.
                if any(kind in reach.covers for kind in ("torch", "random", "numpy")) and not (
                    reach.draws or reach.cuda or reach.ops or reach.spawns
                ):
                    found.append(((display, name), reach))
        return found

    def where(self, located: Located) -> str:
        """`path:line`, or `path:cell N:line` in a notebook."""
        return self.cite(located.path, located.site.line) if located.site.line else located.where()

    def cite(self, path: str, line: int) -> str:
        """How a message names a line of a file: `path:line`, or `path:cell N:line` in a notebook."""
        notebook = getattr(self.sources.get(path), "notebook", None)
        if notebook is None:
            return f"{path}:{line}"
        cell, line_in_cell, _ = notebook.cell_position(_line_offset(notebook.code, line))
        return f"{path}:cell {cell}:{line_in_cell}"

    # -- diagnostics on an entry point -----------------------------------------------------------------
    def entry_diagnostic(self, entry: EntryPoint, code: str, name: str, message: str, fix=None) -> Diagnostic:
        source = self.sources.get(entry.path)
        spawn = entry.spawn
        if spawn is not None:  # at the call that starts the process
            line, column, end_line, end_column = spawn.line, spawn.column, spawn.end_line, spawn.end_column
            offset, end_offset = spawn.start_offset, spawn.end_offset
        else:
            text = getattr(source, "text", "") or ""
            line = end_line = entry.line
            column = end_column = 1
            offset = end_offset = _line_offset(text, line)
        diagnostic = Diagnostic(
            path=entry.path,
            line=line,
            column=column,
            end_line=end_line,
            end_column=end_column,
            code=code,
            name=name,
            message=message,
            fix=fix,
            start_offset=offset,
            end_offset=end_offset,
        )
        return self.placed(diagnostic)

    def span_diagnostic(self, display: str, span, code: str, name: str, message: str, fix=None) -> Diagnostic:
        """A project rule's finding at a recorded span of a file (a site, a draw, a loader: anything
        with lines, columns and offsets), placed in its notebook cell when the file is a notebook."""
        return self.placed(
            Diagnostic(
                path=display,
                line=span.line,
                column=span.column,
                end_line=span.end_line,
                end_column=span.end_column,
                code=code,
                name=name,
                message=message,
                fix=fix,
                start_offset=span.start_offset,
                end_offset=span.end_offset,
            )
        )

    def placed(self, diagnostic: Diagnostic) -> Diagnostic:
        """The diagnostic with its lines named by notebook cell when its file is a notebook."""
        notebook = getattr(self.sources.get(diagnostic.path), "notebook", None)
        return notebook.place(diagnostic) if notebook is not None else diagnostic


def _closure(starts: Iterable[Node], successors: Callable[[Node], List[Node]]) -> Set[Node]:
    """`starts` and every node reachable from them through `successors`."""
    seen: Set[Node] = set(starts)
    pending = list(seen)
    while pending:
        for successor in successors(pending.pop()):
            if successor not in seen:
                seen.add(successor)
                pending.append(successor)
    return seen


def _is_test_file(display: str) -> bool:
    path = Path(display)
    return "tests" in path.parts[:-1] or path.name.startswith("test_") or path.name == "conftest.py"


def _line_offset(text: str, line: int) -> int:
    offset = 0
    for _ in range(line - 1):
        found = text.find("\n", offset)
        if found < 0:
            return len(text)
        offset = found + 1
    return offset


def _optioned(reach: Reach) -> List[Located]:
    return [item for sites in (*reach.draws.values(), reach.loading) for item in sites if item.site.option]


def _condition_node(condition: str, located: Located) -> Optional[Node]:
    """The function whose parameter an option condition is on (None: decided, `!<option>`)."""
    if condition.startswith("!"):
        return None
    file, key = condition.split("|", 2)[:2]
    return (file or located.path, key)


def _option_nodes(located: Located) -> List[Node]:
    conditions = located.site.option.split(OPTION_SEPARATOR) if located.site.option else []
    return [node for node in (_condition_node(c, located) for c in conditions) if node is not None]


def _dropped(written: Set[str]) -> Callable[[Located], bool]:
    """At an entry point: a site under an option its parser lacks, which no reached code sets."""
    return lambda located: located.site.option.startswith("!") and located.site.option[1:] not in written


def _options_resolved(
    reach: Reach,
    decide: Optional[Callable[[str, Node], Optional[str]]] = None,
    drop: Optional[Callable[[Located], bool]] = None,
) -> Reach:
    """A copy of `reach` whose optioned draws and loaders have each condition on a parameter replaced
    by what `decide` returns for it (None: unchanged; "": it holds for all `decide` knows; `!<option>`:
    it cannot hold, and neither can the site), without the sites `drop` leaves out."""
    if not _optioned(reach):
        return reach

    def option_of(located: Located) -> str:
        if decide is None or not located.site.option or located.site.option.startswith("!"):
            return located.site.option
        conditions: List[str] = []
        for condition in located.site.option.split(OPTION_SEPARATOR):
            node = _condition_node(condition, located)
            decided = decide(condition, node) if node is not None else None
            if decided is None:
                decided = condition
            if decided.startswith("!"):
                return decided
            if decided and decided not in conditions:
                conditions.append(decided)
        return OPTION_SEPARATOR.join(conditions)

    def resolved(sites: List[Located]) -> List[Located]:
        kept: List[Located] = []
        for item in sites:
            if drop is not None and item.site.option and drop(item):
                continue
            option = option_of(item)
            kept.append(item if option == item.site.option else Located(item.path, replace(item.site, option=option)))
        return kept

    copy = Reach(**{name: getattr(reach, name) for name in reach.__dataclass_fields__})
    copy.draws = {kind: kept for kind, kept in ((kind, resolved(sites)) for kind, sites in reach.draws.items()) if kept}
    copy.loading = resolved(reach.loading)
    return copy
