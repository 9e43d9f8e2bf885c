"""FileSummary: what the project phase needs to know about one file, as plain
picklable data, filled by `SummaryCollector` during the shared traversal (or,
for a file the pre-filter skipped, by a cheap `ast` scan in `empty_summary`).
"""

from __future__ import annotations

import ast
import fnmatch
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import libcst as cst

from torchdet_lint.names import NOT_LITERAL, arg_value, canonical, dotted_name, find_arg, literal

if TYPE_CHECKING:  # pragma: no cover
    from torchdet_lint.context import FileContext

from torchdet_lint.data import load_toml, rules_directory

MODULE_KEY = "<module>"  # module-level code outside the main block
MAIN_KEY = "<main>"  # the `if __name__ == "__main__":` block
LAMBDA_KEY = "<lambda>"  # lambdas stored for later: reached by nothing
RNG_KINDS = ("torch", "random", "numpy")
MAX_SITES = 5  # sites kept per function and kind: enough for messages, small to pickle


# -- the fact tables in rules/ ---------------------------------------------------------


def rules_file(name: str) -> Path:
    """A data file of rules/ (see `data.rules_directory`)."""
    path = rules_directory() / name
    if not path.is_file():
        raise FileNotFoundError(f"rules/{name} not found in {path.parent}")
    return path


@dataclass(frozen=True)
class Helper:
    name: str
    covers: FrozenSet[str]
    keyword_covers: Tuple[Tuple[str, FrozenSet[str]], ...] = ()
    enabled_by: Optional[Tuple[str, int, bool]] = None  # keyword, position, counts when absent


@dataclass(frozen=True)
class RngObject:
    name: str
    kind: str
    seed_methods: FrozenSet[str]
    seeded: str  # template of a seeded construction, "" when there is none
    type: str  # template of the object's type, for isinstance checks


@dataclass(frozen=True)
class Facts:
    helpers: Dict[str, Helper]
    method_helpers: Dict[str, Tuple[str, FrozenSet[str]]]  # attribute -> (required import, covers)
    cuda_only: FrozenSet[str]
    torch_functions: FrozenSet[str]
    torch_modules: FrozenSet[str]
    torch_prefixes: Tuple[str, ...]
    random_class_modules: FrozenSet[str]
    random_class_names: FrozenSet[str]
    torch_methods: FrozenSet[str]
    unless_generator: FrozenSet[str]
    random_not_drawing: FrozenSet[str]
    numpy_not_drawing: FrozenSet[str]
    rng_objects: Dict[str, RngObject]


@lru_cache(maxsize=None)
def facts() -> Facts:
    helpers_table = load_toml(rules_file("seed_helpers.toml"))
    sources = load_toml(rules_file("rng_sources.toml"))
    helpers = {}
    for entry in helpers_table.get("helper", []):
        enabled = entry.get("enabled-by")
        helpers[entry["name"]] = Helper(
            name=entry["name"],
            covers=frozenset(entry.get("covers", ())),
            keyword_covers=tuple((k, frozenset(v)) for k, v in entry.get("keyword-covers", {}).items()),
            enabled_by=(enabled["keyword"], enabled["position"], enabled.get("default-enabled", False)) if enabled else None,
        )
    torch = sources["torch"]
    return Facts(
        helpers=helpers,
        method_helpers={
            e["attribute"]: (e["requires-import"], frozenset(e["covers"])) for e in helpers_table.get("method-helper", [])
        },
        cuda_only=frozenset(e["name"] for e in helpers_table.get("cuda-only", [])),
        torch_functions=frozenset(torch["functions"]),
        torch_modules=frozenset("torch.nn." + name for name in torch["modules"]),
        torch_prefixes=tuple(torch["prefixes"]),
        random_class_modules=frozenset(torch["random_classes_in"]),
        random_class_names=frozenset(torch["random_class_names"]),
        torch_methods=frozenset(torch["methods"]),
        unless_generator=frozenset(torch["unless_generator"]),
        random_not_drawing=frozenset(sources["random"]["not_drawing"]),
        numpy_not_drawing=frozenset(sources["numpy"]["not_drawing"]),
        rng_objects={
            e["name"]: RngObject(e["name"], e["kind"], frozenset(e["seed-methods"]), e["seeded"], e["type"])
            for e in sources["rng-object"]
        },
    )


def truthy_setting(value: Any) -> bool:
    """A switch argument that turns something on: True, "warn"/"error", 1/2, or a non-literal."""
    if value is NOT_LITERAL:
        return True
    if isinstance(value, str):
        return value in ("warn", "error")
    return value is True or (isinstance(value, int) and not isinstance(value, bool) and value > 0)


def helper_covers(helper: Helper, call: cst.Call) -> FrozenSet[str]:
    """What one call of a table helper covers, given its arguments."""
    if helper.enabled_by is not None:
        keyword, position, default = helper.enabled_by
        value = arg_value(call, keyword, position)
        if value is None:
            if not default:
                return frozenset()
        elif not truthy_setting(literal(value)):
            return frozenset()
    covered = set(helper.covers)
    for keyword, extra in helper.keyword_covers:
        value = arg_value(call, keyword)
        if value is not None and truthy_setting(literal(value)):
            covered |= extra
    return frozenset(covered)


def config_helpers(settings) -> Dict[str, FrozenSet[str]]:
    """Config `seed-functions`: canonical qualified name -> what it covers."""
    return {canonical(name): frozenset(covers) for name, covers in getattr(settings, "seed_functions", ())}


def draw_kind(name: Optional[str], call: Optional[cst.Call] = None) -> Optional[str]:
    """The global RNG a call with this qualified name draws from, if any."""
    if not name:
        return None
    table = facts()
    head = name.split(".", 1)[0]
    if head == "random":
        rest = name[len("random.") :]
        if rest and "." not in rest and rest not in table.random_not_drawing and not rest.startswith("_"):
            return "random"
        return None
    if head == "numpy":
        if name.startswith("numpy.random."):
            rest = name[len("numpy.random.") :]
            if "." not in rest and rest[:1].islower() and rest not in table.numpy_not_drawing:
                return "numpy"
        return None
    if name in table.torch_functions or name in table.torch_modules:
        return "torch"
    if name in table.unless_generator:
        return None if call is not None and _has_generator(call, name) else "torch"
    module, _, last = name.rpartition(".")
    if module in table.random_class_modules and (last.startswith("Random") or last in table.random_class_names):
        return "torch"
    if any(name.startswith(prefix) and last[:1].islower() and not last.startswith(("get_", "list_")) for prefix in table.torch_prefixes):
        return "torch"
    return None


_GENERATOR_POSITION = {
    "torch.utils.data.random_split": 2,
    "torch.utils.data.RandomSampler": 3,
    "torch.utils.data.SubsetRandomSampler": 1,
    "torch.utils.data.WeightedRandomSampler": 3,
    "torch.utils.data.DataLoader": None,
}
RANDOM_SAMPLERS = frozenset(
    {"torch.utils.data.RandomSampler", "torch.utils.data.SubsetRandomSampler", "torch.utils.data.WeightedRandomSampler"}
)
DATALOADER = "torch.utils.data.DataLoader"


def _has_generator(call: cst.Call, name: str) -> bool:
    position = _GENERATOR_POSITION.get(name)
    value = arg_value(call, "generator", position)
    if value is None:
        return any(arg.star == "**" for arg in call.args)
    return literal(value) is not None


def loader_shuffles(call: cst.Call, resolve) -> Optional[str]:
    """How a DataLoader call shuffles: "shuffle", "sampler" (an inline random sampler
    without its own generator), or None. `resolve` gives qualified names."""
    shuffle = arg_value(call, "shuffle", 2)
    if shuffle is not None and literal(shuffle) not in (False, None):
        return "shuffle"
    sampler = arg_value(call, "sampler", 3)
    if isinstance(sampler, cst.Call):
        name = resolve(sampler)
        if name in RANDOM_SAMPLERS and not _has_generator(sampler, name):
            return "sampler"
    return None


def mentions_cuda(node: Optional[cst.CSTNode]) -> bool:
    """A string literal containing "cuda", also inside a conditional expression or f-string."""
    if node is None:
        return False
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = literal(node)
        return isinstance(value, str) and "cuda" in value
    if isinstance(node, cst.FormattedString):
        return any(isinstance(part, cst.FormattedStringText) and "cuda" in part.value for part in node.parts)
    if isinstance(node, cst.IfExp):
        return mentions_cuda(node.body) or mentions_cuda(node.orelse)
    return False


# Calls that run a function passed to them (`fire.Fire(main)`, `mp.spawn(worker, ...)`):
# their function arguments are followed as calls. Other function arguments (callbacks
# stored in tables, `OpInfo(sample_inputs_func=...)`) are not: nothing says they run.
RUNNERS = frozenset(
    {
        "fire.Fire", "typer.run", "absl.app.run", "jsonargparse.CLI", "jsonargparse.auto_cli", "functools.partial",
        "builtins.map", "torch.multiprocessing.spawn", "torch.multiprocessing.start_processes", "multiprocessing.Process",
        "threading.Thread", "torch.distributed.elastic.multiprocessing.start_processes", "accelerate.notebook_launcher",
        "hydra.main", "submitit.AutoExecutor.submit",
    }
)
RUNNER_METHODS = frozenset({"submit", "map", "imap", "imap_unordered", "starmap", "apply_async", "run_in_executor", "launch", "spawn"})
# A lambda runs as part of the enclosing code only when handed to one of these (or a runner);
# elsewhere it is stored for later (`make_prim(..., lambda d: torch.randint(...))`).
LAMBDA_CALLERS = frozenset({"builtins.sorted", "builtins.min", "builtins.max", "builtins.filter", "builtins.map", "builtins.list"})
# `torch.cuda.*` calls that are not CUDA work: the contract's exceptions, and queries that
# only read the device's state (library code asks them to pick a code path).
CUDA_NOT_WORK = frozenset(
    {
        "is_available", "device_count", "get_device_name", "manual_seed", "manual_seed_all", "is_initialized",
        "current_device", "get_device_properties", "get_device_capability", "get_arch_list", "is_bf16_supported",
        "is_tf32_supported", "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
        "memory_stats", "memory_summary", "mem_get_info", "utilization", "get_rng_state", "get_rng_state_all",
    }
)


def is_cuda_work(qualified: str) -> bool:
    """A `torch.cuda.*` call that does CUDA work (not a query, not private plumbing)."""
    rest = qualified[len("torch.cuda.") :].split(".")
    return rest[-1] not in CUDA_NOT_WORK and not any(part.startswith("_") for part in rest)
# TDL406: convolution layers and calls (torchvision's model builders are CNNs), and the
# settings that choose cuDNN benchmarking explicitly (True or False: a deliberate choice).
_CONVOLUTION_RE = re.compile(
    r"^torch\.(?:nn\.(?:Lazy)?Conv(?:Transpose)?[123]d|(?:nn\.functional\.)?conv(?:_transpose)?[123]d)$"
    r"|^torchvision\.models\.(?:[a-z_]+\.)*(?!get_|list_)[a-z][a-z0-9_]*$"
)
BENCHMARK_SETTINGS = frozenset({"lightning.pytorch.Trainer", "torch.backends.cudnn.flags"})


# -- the summary data --------------------------------------------------------------------


@dataclass
class Site:
    """Something found at a line of the file: a draw, a seeding, CUDA work, an operation."""

    line: int
    text: str


@dataclass
class FunctionSummary:
    calls: List[str] = field(default_factory=list)  # targets: qualified names, or ".local" names of this file
    imports: List[str] = field(default_factory=list)  # modules imported when this code runs (lazy imports)
    draws: Dict[str, List[Site]] = field(default_factory=dict)  # RNG kind -> first sites
    covers: Dict[str, Site] = field(default_factory=dict)  # torch/random/numpy/deterministic/cudnn/cuda -> first site
    cuda: List[Site] = field(default_factory=list)
    ops: List[Site] = field(default_factory=list)

    def add_call(self, target: str, seen: Set[str]) -> None:
        if target not in seen:
            seen.add(target)
            self.calls.append(target)

    def add_draw(self, kind: str, site: Site) -> None:
        sites = self.draws.setdefault(kind, [])
        if len(sites) < MAX_SITES:
            sites.append(site)

    def add_cover(self, kind: str, site: Site) -> None:
        self.covers.setdefault(kind, site)


@dataclass
class RngAttribute:
    """An RNG object the dataset class creates outside the workers."""

    attribute: str  # `self.<attribute>` (or the module-level name for a module RNG)
    constructor: str  # qualified constructor name
    line: int
    module_level: bool = False


@dataclass
class ClassSummary:
    line: int
    bases: List[str] = field(default_factory=list)  # qualified names, or ".Local"
    methods: List[str] = field(default_factory=list)
    rng_attributes: List[RngAttribute] = field(default_factory=list)  # class body and __init__
    global_draws: List[Site] = field(default_factory=list)  # legacy NumPy global RNG in any method


@dataclass
class DatasetRef:
    """What a DataLoader's dataset expression was resolved to."""

    targets: List[str]  # the classes (qualified or ".Local"): one, or a ConcatDataset's members
    wrappers: List[str] = field(default_factory=list)  # Subset / ConcatDataset / random_split around them
    text: str = ""  # the expression as written


@dataclass
class LoaderSite:
    """A DataLoader with workers and no `worker_init_fn=` (a TDL102 candidate)."""

    line: int
    column: int
    end_line: int
    end_column: int
    start_offset: int
    end_offset: int
    dataset: Optional[DatasetRef]
    keyword_offset: Optional[int]  # where `, worker_init_fn=seed_worker` goes (end of the last argument)
    worker_function: Optional[str] = None  # an existing module-level worker function to reuse


@dataclass
class WorkerFunction:
    """A module-level `seed_worker`-like function the TDL102 fix can reuse."""

    name: str
    end_offset: int  # where lines are appended to its body
    indent: str
    parameter: str
    text: str  # its source, to see what it already re-creates


@dataclass
class HeaderImport:
    start: int
    end: int
    module: str
    is_from: bool


@dataclass
class FixAnchors:
    """Offsets the project fixes need (the project phase has no CST)."""

    after_imports: int
    after_imports_eof: bool  # inserting at the end of a file without a final newline
    after_imports_line: int = 1
    main_top: Optional[int] = None  # start of the main block's first line
    main_top_line: int = 0
    main_indent: str = ""
    header_imports: List[HeaderImport] = field(default_factory=list)
    newline: str = "\n"


@dataclass
class FileSummary:
    path: str
    module_name: Optional[str] = None
    imports: List[str] = field(default_factory=list)  # qualified modules/names imported anywhere, in order
    module_imports: List[str] = field(default_factory=list)  # those imported at module level (run on import)
    imports_torch: bool = False
    is_notebook: bool = False  # a Jupyter notebook: an entry point of its own (module_name is None)
    is_package: bool = False
    parsed: bool = True  # False: filled by the cheap scan of a pre-filtered file
    main_guard_line: Optional[int] = None
    module_work: bool = False  # a loop or a call statement at module level (a script when nothing imports it)
    configured_entry: bool = False  # matches config `entry-points`
    functions: Dict[str, FunctionSummary] = field(default_factory=dict)
    classes: Dict[str, ClassSummary] = field(default_factory=dict)
    signatures: Dict[str, Tuple[int, str, bool]] = field(default_factory=dict)  # function -> (required positionals, first parameter, has `seed`)
    exports: Dict[str, str] = field(default_factory=dict)  # module-level name -> qualified name it is bound to
    # Module-level imports outside the main block, name -> (qualified module or name, line); filled with `anchors`.
    module_bindings: Dict[str, Tuple[str, int]] = field(default_factory=dict)
    module_rngs: Dict[str, RngAttribute] = field(default_factory=dict)
    loaders: List[LoaderSite] = field(default_factory=list)
    worker_functions: Dict[str, WorkerFunction] = field(default_factory=dict)
    anchors: Optional[FixAnchors] = None
    rng_import_edits: Dict[str, Tuple[int, str]] = field(default_factory=dict)  # module -> (offset, text) for TDL102

    def function(self, key: str) -> FunctionSummary:
        summary = self.functions.get(key)
        if summary is None:
            summary = self.functions[key] = FunctionSummary()
        return summary

    @property
    def defined(self) -> Set[str]:
        return set(self.functions) | set(self.classes)


# -- helpers shared by both scanners -----------------------------------------------------


_SETUP_CALL_PREFIXES = ("argparse.", "logging.", "warnings.", "sys.path.")
_SETUP_METHODS = frozenset(
    {
        "add_argument", "add_argument_group", "add_mutually_exclusive_group", "add_subparsers", "add_parser",
        "set_defaults", "parse_args", "parse_known_args", "setLevel", "addHandler", "setFormatter", "addFilter",
        "basicConfig", "filterwarnings", "simplefilter",
    }
)


def is_setup_call(qualified: Optional[str], dotted: Optional[str]) -> bool:
    """Argument parsing, logging and warnings set-up (and `sys.path` edits, `__all__` building):
    module-level calls that do not make a file a script."""
    if qualified and qualified.startswith(_SETUP_CALL_PREFIXES):
        return True
    if dotted:
        last = dotted.rsplit(".", 1)[-1]
        if last in _SETUP_METHODS or dotted.startswith("__all__."):
            return True
    return False


def entry_configured(settings, path: str) -> bool:
    patterns = getattr(settings, "entry_points", ())
    if not patterns:
        return False
    candidates = {path, Path(path).name}
    try:
        candidates.add(Path(path).resolve().relative_to(settings.root).as_posix())
    except (ValueError, OSError):
        pass
    return any(fnmatch.fnmatch(c, pattern) for c in candidates for pattern in patterns)


def line_starts(text: str) -> List[int]:
    return [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]


def _newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


# -- the cheap scan of a pre-filtered file -------------------------------------------------


def empty_summary(path: str, module_name: Optional[str], text: str) -> FileSummary:
    """The summary of a file the pre-filter skipped (it mentions no torch, random,
    numpy, seed, ...): it can neither draw nor seed, but it can pass calls on
    (`main.py` calling `train.run()`), so imports, definitions, calls and entry
    status come from Python's own (much faster) `ast` parser."""
    summary = FileSummary(path=path, module_name=module_name, parsed=False, is_package=path.endswith("__init__.py"))
    tree = _ast_tree(text)
    if tree is None:
        return summary
    try:
        _AstScanner(summary, text).scan(tree)
    except RecursionError:
        pass
    return summary


def _ast_tree(text: str) -> Optional[ast.Module]:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # syntax LibCST accepts but this Python does not: no lines, no fix anchors


def _absolute_module(summary: FileSummary, node: ast.ImportFrom) -> str:
    module = node.module or ""
    if not node.level:
        return module
    parts = summary.module_name.split(".") if summary.module_name else []
    if not summary.is_package:
        parts = parts[:-1]
    if node.level > 1:
        parts = parts[: max(0, len(parts) - (node.level - 1))]
    base = ".".join(parts)
    return f"{base}.{module}" if base and module else (base or module)


def _import_bindings(summary: FileSummary, statement: ast.stmt):
    """(bound name, qualified module or name) for one import statement."""
    if isinstance(statement, ast.Import):
        for alias in statement.names:
            if alias.asname:
                yield alias.asname, alias.name
            else:
                head = alias.name.split(".")[0]
                yield head, head
    elif isinstance(statement, ast.ImportFrom):
        module = _absolute_module(summary, statement)
        for alias in statement.names:
            if alias.name != "*":
                yield alias.asname or alias.name, f"{module}.{alias.name}" if module else alias.name


def _module_level(body: Sequence[ast.stmt]):
    """Module-level statements, into `if` / `try` / `with` blocks, except the main block."""
    for statement in body:
        if _is_main_guard(statement):
            continue
        yield statement
        if isinstance(statement, (ast.If, ast.Try, ast.With)):
            children = [*statement.body, *getattr(statement, "orelse", []), *getattr(statement, "finalbody", [])]
            for handler in getattr(statement, "handlers", []):
                children.extend(handler.body)
            yield from _module_level(children)


def ast_anchors(tree: ast.Module, text: str, summary: FileSummary) -> None:
    """The main guard's line, the module-level import bindings with their lines, and
    the offsets the project fixes insert at (after the imports, top of the main block)."""
    starts = line_starts(text)

    def offset(line: int) -> int:
        return starts[line - 1] if 0 < line <= len(starts) else len(text)

    body = tree.body
    after_line = body[0].lineno if body else len(starts) + 1
    headers = []
    for index, statement in enumerate(body):
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            headers.append(statement)
            after_line = (statement.end_lineno or statement.lineno) + 1
        elif index == 0 and isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) and isinstance(statement.value.value, str):
            after_line = (statement.end_lineno or statement.lineno) + 1
        else:
            break
    after = offset(after_line)
    anchors = FixAnchors(after, after == len(text) and bool(text) and not text.endswith(("\n", "\r")), after_line, newline=_newline_of(text))
    for statement in headers:
        end = offset((statement.end_lineno or statement.lineno) + 1)
        module = statement.names[0].name if isinstance(statement, ast.Import) else "." * statement.level + (statement.module or "")
        anchors.header_imports.append(HeaderImport(offset(statement.lineno), end, module, isinstance(statement, ast.ImportFrom)))
    for statement in body:
        if _is_main_guard(statement):
            summary.main_guard_line = statement.lineno
            first = statement.body[0]
            first_line = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", ()))])
            if first_line > statement.lineno:
                anchors.main_top = offset(first_line)
                anchors.main_top_line = first_line
                line_text = text[anchors.main_top : anchors.main_top + 200]
                anchors.main_indent = line_text[: len(line_text) - len(line_text.lstrip(" \t"))]
            break
    bindings: Dict[str, Tuple[str, int]] = {}
    for statement in _module_level(body):
        for name, qualified in _import_bindings(summary, statement):
            bindings.setdefault(name, (qualified, statement.lineno))
    summary.module_bindings = bindings
    summary.anchors = anchors


class _AstScanner:
    def __init__(self, summary: FileSummary, text: str) -> None:
        self.summary = summary
        self.text = text
        self.bindings: Dict[str, str] = {}
        self.local_defs: Set[str] = set()
        self.types: Dict[str, Dict[str, str]] = {}  # function -> local name -> the class it was built from

    def scan(self, tree: ast.Module) -> None:
        summary = self.summary
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                summary.imports.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                module = _absolute_module(summary, node)
                for alias in node.names:
                    summary.imports.append(module if alias.name == "*" else (f"{module}.{alias.name}" if module else alias.name))
        for statement in tree.body:
            self._bind_module_level(statement)
        summary.exports = {k: canonical(v) for k, v in self.bindings.items()}
        for statement in tree.body:
            self._statement(statement, MODULE_KEY, None)
        # Pre-filtered files are few: give each the anchors (it may be a configured entry point).
        ast_anchors(tree, self.text, summary)

    def _bind_module_level(self, statement: ast.stmt) -> None:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.local_defs.add(statement.name)
            self.bindings.pop(statement.name, None)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            for name, qualified in _import_bindings(self.summary, statement):
                self.bindings[name] = qualified
        elif isinstance(statement, (ast.If, ast.Try)):
            for child in [*statement.body, *getattr(statement, "orelse", []), *getattr(statement, "finalbody", [])]:
                self._bind_module_level(child)

    def _target(self, node: ast.AST, class_name: Optional[str]) -> Optional[str]:
        dotted = _ast_dotted(node)
        if dotted is None:
            return None
        parts = dotted.split(".")
        head = parts[0]
        if head == "self" and class_name and len(parts) == 2:
            return f".{class_name}.{parts[1]}"
        if head in self.local_defs:
            return "." + dotted
        if head in self.bindings:
            return canonical(".".join([self.bindings[head], *parts[1:]]))
        return None

    def _statement(self, statement: ast.stmt, key: str, class_name: Optional[str]) -> None:
        summary = self.summary
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = f"{class_name}.{statement.name}" if class_name else statement.name
            summary.function(inner)
            if class_name:
                summary.classes[class_name].methods.append(statement.name)
            else:
                arguments = statement.args
                positional = [*arguments.posonlyargs, *arguments.args]
                required = len(positional) - len(arguments.defaults) + sum(1 for d in arguments.kw_defaults if d is None)
                names = {a.arg for a in (*positional, *arguments.kwonlyargs)}
                summary.signatures[statement.name] = (required, positional[0].arg if positional else "", "seed" in names)
            for child in statement.body:
                self._walk_calls(child, inner, class_name)
            return
        if isinstance(statement, ast.ClassDef) and class_name is None:
            summary.classes[statement.name] = ClassSummary(
                statement.lineno, [t for t in (self._target(b, None) for b in statement.bases) if t]
            )
            for child in statement.body:
                self._statement(child, MODULE_KEY, statement.name)
            return
        if class_name is None and _is_main_guard(statement):
            summary.main_guard_line = statement.lineno
            for child in statement.body:
                self._walk_calls(child, MAIN_KEY, None)
            return
        if class_name is None:
            if isinstance(statement, (ast.For, ast.While, ast.AsyncFor)):
                summary.module_work = True
            elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
                call = statement.value
                if not is_setup_call(self._target(call.func, None), _ast_dotted(call.func)):
                    summary.module_work = True
            elif isinstance(statement, (ast.If, ast.Try, ast.With)):
                for child in [*statement.body, *getattr(statement, "orelse", []), *getattr(statement, "finalbody", [])]:
                    self._statement(child, key, None)
                for handler in getattr(statement, "handlers", []):
                    for child in handler.body:
                        self._statement(child, key, None)
                return
        self._walk_calls(statement, key, class_name)

    def _walk_calls(self, node: ast.AST, key: str, class_name: Optional[str]) -> None:
        function = self.summary.function(key)
        seen = set(function.calls)
        types = self.types.setdefault(key, {})
        for child in ast.walk(node):
            # `trainer = Trainer()`, then `trainer.fit()`: the method of that class
            if isinstance(child, ast.Assign) and len(child.targets) == 1 and isinstance(child.targets[0], ast.Name) and isinstance(child.value, ast.Call):
                called = self._target(child.value.func, class_name)
                if called:
                    types[child.targets[0].id] = called
        imports = self.summary.module_imports if key == MODULE_KEY else function.imports
        for child in ast.walk(node):
            if isinstance(child, ast.Import):
                imports.extend(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                module = _absolute_module(self.summary, child)
                imports.extend(module if a.name == "*" else (f"{module}.{a.name}" if module else a.name) for a in child.names)
            if isinstance(child, ast.Call):
                target = self._target(child.func, class_name)
                func = child.func
                if target is None and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in types:
                    target = f"{types[func.value.id]}.{func.attr}"
                if target:
                    function.add_call(target, seen)
                if isinstance(child.func, ast.Attribute) and child.func.attr == "cuda" and len(function.cuda) < MAX_SITES:
                    function.cuda.append(Site(child.lineno, "`.cuda()`"))
                if target in RUNNERS or (isinstance(func, ast.Attribute) and func.attr in RUNNER_METHODS):
                    for argument in [*child.args, *(k.value for k in child.keywords)]:
                        if isinstance(argument, (ast.Name, ast.Attribute)):
                            reference = self._target(argument, class_name)
                            if reference:
                                function.add_call(reference, seen)


def _ast_dotted(node: ast.AST) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _is_main_guard(statement: ast.stmt) -> bool:
    if not isinstance(statement, ast.If) or not isinstance(statement.test, ast.Compare):
        return False
    test = statement.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and any(
        isinstance(s, ast.Constant) and s.value == "__main__" for s in sides
    )


# -- the collector in the shared traversal -------------------------------------------------


def is_main_guard(node: cst.If) -> bool:
    test = node.test
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    comparison = test.comparisons[0]
    if not isinstance(comparison.operator, cst.Equal):
        return False
    sides = [test.left, comparison.comparator]
    return any(isinstance(s, cst.Name) and s.value == "__name__" for s in sides) and any(
        literal(s) == "__main__" for s in sides if isinstance(s, (cst.SimpleString, cst.ConcatenatedString))
    )


class SummaryCollector(cst.BatchableCSTVisitor):
    """Fills the file's `FileSummary` during the one traversal.

    Lines are not asked from LibCST (its positions cost about twice the
    parse): a site remembers which call (or assignment) of the file it was, in
    source order, and `finish` takes the lines from Python's own `ast`, only
    for files that recorded something to locate.
    """

    def __init__(self, context: "FileContext") -> None:
        super().__init__()
        self.context = context
        self.resolver = context.resolver
        self.facts = facts()
        self.config_helpers = config_helpers(context.settings)
        self.summary = context.summary = FileSummary(
            path=context.path,
            module_name=context.module_name,
            imports_torch=context.imports_torch,
            is_package=context.resolver.is_package,
            configured_entry=entry_configured(context.settings, context.path),
        )
        self.calls_seen = 0
        self.assigns_seen = 0
        self._imports_taken = 0
        self.pending: List[Tuple[Any, str, int]] = []  # (object with a `line`, "call" | "assign", index)
        # The function key stack: (key, class name, calls seen, local variable types).
        self.keys: List[Tuple[str, Optional[str], Set[str], Dict[str, str]]] = [(MODULE_KEY, None, set(), {})]
        self.class_stack: List[Optional[str]] = []
        self.module_statement_depth = 0
        self.main_guard: Optional[cst.If] = None
        self.in_main = False
        self.loader_calls: List[Tuple[cst.Call, Optional[DatasetRef], str]] = []
        self.function_nodes: Dict[str, cst.FunctionDef] = {}
        self.worker_init_names: Set[str] = set()
        # Local datasets: names bound in the current function -> the expression bound.
        self.bound_expressions: List[Dict[str, cst.BaseExpression]] = [{}]
        self._ops = _operation_matcher()
        self.module_defs: Set[str] = set()
        self.module_rng_names: Set[str] = set()
        self.nested: Dict[str, Dict[str, str]] = {}  # function key -> its nested functions' keys
        self.running_lambdas: Set[int] = set()

    # -- where we are --------------------------------------------------------------------
    @property
    def key(self) -> str:
        return self.keys[-1][0]

    @property
    def function(self) -> FunctionSummary:
        return self.summary.function(self.keys[-1][0])

    def _at_module_level(self) -> bool:
        return len(self.keys) == 1 and not self.class_stack

    def visit_Module(self, node: cst.Module) -> None:
        self.summary.function(MODULE_KEY)
        self.module_defs = {s.name.value for s in node.body if isinstance(s, (cst.FunctionDef, cst.ClassDef))}
        # Module-level RNG objects, known before the classes that use them are visited.
        final = self.resolver.module_final
        for statement in node.body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call):
                        head, _, rest = (dotted_name(small.value.func) or "").partition(".")
                        bound = final.get(head)
                        if bound and canonical(f"{bound}.{rest}" if rest else bound) in self.facts.rng_objects:
                            self.module_rng_names.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))

    # -- statements: header imports, main guard, script work ------------------------------
    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if not self._at_module_level() or self.in_main:
            return
        for small in node.body:
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                call = small.value
                if not is_setup_call(self.resolver.qualified_name(call.func), dotted_name(call.func)):
                    self.summary.module_work = True

    def visit_Import(self, node: cst.Import) -> None:
        self._take_imports()

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self._take_imports()

    def _take_imports(self) -> None:
        """The modules the resolver just recorded for this import statement, for the running code."""
        recorded = self.resolver.imported_modules
        new, self._imports_taken = recorded[self._imports_taken :], len(recorded)
        if self.key == MODULE_KEY:
            self.summary.module_imports.extend(new)
        else:
            self.function.imports.extend(new)

    def _enter_compound(self, node: cst.CSTNode) -> None:
        if self._at_module_level():
            self.module_statement_depth += 1

    def _leave_compound(self) -> None:
        if self._at_module_level():
            self.module_statement_depth -= 1

    def visit_If(self, node: cst.If) -> None:
        if self._at_module_level() and self.module_statement_depth == 0 and self.main_guard is None and is_main_guard(node):
            self.main_guard = node
            self.in_main = True
            self.summary.main_guard_line = 1  # the line comes from `ast` in `finish`
            self.keys.append((MAIN_KEY, None, set(), {}))
            self.module_statement_depth += 1
            return
        self._enter_compound(node)

    def leave_If(self, original_node: cst.If) -> None:
        if original_node is self.main_guard:
            self.keys.pop()
            self.in_main = False
            self.module_statement_depth -= 1
            return
        self._leave_compound()

    def visit_For(self, node: cst.For) -> None:
        if self._at_module_level() and not self.in_main:
            self.summary.module_work = True
        self._enter_compound(node)

    def leave_For(self, original_node: cst.For) -> None:
        self._leave_compound()

    def visit_While(self, node: cst.While) -> None:
        if self._at_module_level() and not self.in_main:
            self.summary.module_work = True
        self._enter_compound(node)

    def leave_While(self, original_node: cst.While) -> None:
        self._leave_compound()

    def visit_Try(self, node: cst.Try) -> None:
        self._enter_compound(node)

    def leave_Try(self, original_node: cst.Try) -> None:
        self._leave_compound()

    def visit_With(self, node: cst.With) -> None:
        self._enter_compound(node)

    def leave_With(self, original_node: cst.With) -> None:
        self._leave_compound()

    # -- definitions -------------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self._at_module_level():
            name = node.name.value
            bases = [t for t in (self._target(arg.value) for arg in node.bases if arg.keyword is None) if t]
            self.summary.classes[name] = ClassSummary(0, bases)
            self.class_stack.append(name)
        else:
            self.class_stack.append(None)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.class_stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        name = node.name.value
        if len(self.keys) == 1 and not self.in_main:
            class_name = self.class_stack[-1] if self.class_stack else None
            if self.class_stack and class_name is None:
                # A method of a class nested in a function body: part of the enclosing code.
                self.keys.append((self.key, None, self.keys[-1][2], self.keys[-1][3]))
                self.bound_expressions.append({})
                return
            key = f"{class_name}.{name}" if class_name else name
            if class_name:
                self.summary.classes[class_name].methods.append(name)
            else:
                self.summary.signatures[name] = _signature(node)
                self.function_nodes[name] = node
            self.summary.function(key)
            self.keys.append((key, class_name, set(), {}))
        elif self.class_stack and self.class_stack[-1] is None:
            # A method of a class defined in a function or the main block: part of that code.
            self.keys.append((self.key, self.keys[-1][1], self.keys[-1][2], self.keys[-1][3]))
        else:
            # A nested function runs when it is called (a decorator's wrapper may never be):
            # a key of its own, reached through calls of its name in the enclosing code.
            outer = self.key
            key = f"{outer}.<locals>.{name}"
            self.nested.setdefault(outer, {})[name] = key
            self.summary.function(key)
            self.keys.append((key, self.keys[-1][1], set(), dict(self.keys[-1][3])))
        self.bound_expressions.append({})

    def visit_Lambda(self, node: cst.Lambda) -> None:
        if id(node) in self.running_lambdas:
            self.keys.append(self.keys[-1])
        else:
            # Stored for later: its calls are nobody's (the key is never reached).
            self.keys.append((LAMBDA_KEY, self.keys[-1][1], set(), {}))

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.keys.pop()

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.keys.pop()
        self.bound_expressions.pop()

    # -- names ---------------------------------------------------------------------------------
    def _target(self, node: cst.CSTNode, qualified: Any = NOT_LITERAL) -> Optional[str]:
        """A call target or reference: a qualified name, or ".name" for this file's own code."""
        if qualified is NOT_LITERAL:
            qualified = self.resolver.qualified_name(node)
        if qualified is not None:
            return None if qualified.startswith("builtins.") else qualified
        dotted = dotted_name(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        _, class_name, _, types = self.keys[-1]
        for key, _, _, _ in reversed(self.keys):
            nested = self.nested.get(key)
            if nested is not None and head in nested:
                return "." + nested[head] + ("." + rest if rest else "")
        if head == "self" and class_name and rest and "." not in rest:
            return f".{class_name}.{rest}"
        if head in types and rest:
            return f"{types[head]}.{rest}"
        if head in self.module_defs and self.resolver.lookup(head) is None:
            return "." + dotted
        return None

    def visit_Assign(self, node: cst.Assign) -> None:
        self.assigns_seen += 1
        value = node.value
        if len(node.targets) == 1:
            target = node.targets[0].target
            if isinstance(target, cst.Name):
                self.bound_expressions[-1][target.value] = value
                if isinstance(value, cst.Call):
                    called = self._target(value.func)
                    if called:
                        self.keys[-1][3][target.value] = called
            elif isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, cst.Call):
                for index, element in enumerate(target.elements):
                    if isinstance(element.value, cst.Name):
                        self.bound_expressions[-1][element.value.value] = cst.Subscript(
                            value=value, slice=[cst.SubscriptElement(cst.Index(cst.Integer(str(index))))]
                        )
        self._record_rng_assignment(node)
        for target in node.targets:
            if self.context.qualified_name(target.target) == "torch.backends.cudnn.deterministic" and literal(value) is True:
                self.function.add_cover("cudnn", self._site("`cudnn.deterministic = True`", "assign"))
            elif self.context.qualified_name(target.target) == "torch.backends.cudnn.benchmark":
                self.function.add_cover("cudnn-benchmark", self._site("`cudnn.benchmark = ...`", "assign"))

    def _record_rng_assignment(self, node: cst.Assign) -> None:
        if not isinstance(node.value, cst.Call):
            return
        constructor = self.resolver.qualified_name(node.value.func)
        if constructor not in self.facts.rng_objects:
            return
        for target in node.targets:
            target_node = target.target
            if self._at_module_level() and isinstance(target_node, cst.Name):
                name = target_node.value
                self.summary.module_rngs[name] = self._located(RngAttribute(name, constructor, 0, module_level=True), "call", self.calls_seen)
            class_name = self.keys[-1][1] if len(self.keys) > 1 else (self.class_stack[-1] if self.class_stack else None)
            if class_name is None or class_name not in self.summary.classes:
                continue
            in_init = self.key == f"{class_name}.__init__"
            in_class_body = len(self.keys) == 1 and self.class_stack and self.class_stack[-1] == class_name
            if in_init and isinstance(target_node, cst.Attribute) and isinstance(target_node.value, cst.Name) and target_node.value.value == "self":
                self.summary.classes[class_name].rng_attributes.append(self._located(RngAttribute(target_node.attr.value, constructor, 0), "call", self.calls_seen))
            elif in_class_body and isinstance(target_node, cst.Name):
                self.summary.classes[class_name].rng_attributes.append(self._located(RngAttribute(target_node.value, constructor, 0), "call", self.calls_seen))

    # -- calls -------------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        function = self.function
        seen = self.keys[-1][2]
        qualified = self.context.call_name(node)
        target = self._target(func, qualified)
        if target:
            function.add_call(target, seen)
        index = self.calls_seen
        self.calls_seen += 1

        def site(text: str) -> Site:
            return self._located(Site(0, text), "call", index)

        runs_arguments = qualified in RUNNERS or (isinstance(func, cst.Attribute) and func.attr.value in RUNNER_METHODS)
        if runs_arguments or qualified in LAMBDA_CALLERS or (isinstance(func, cst.Attribute) and func.attr.value == "sort"):
            self.running_lambdas.update(id(arg.value) for arg in node.args if isinstance(arg.value, cst.Lambda))
        for arg in node.args:
            value = arg.value
            if runs_arguments and isinstance(value, (cst.Name, cst.Attribute)):
                reference = self._target(value)
                if reference:
                    function.add_call(reference, seen)
            if arg.keyword is not None and arg.keyword.value == "device" and mentions_cuda(value):
                self._cuda(function, site("`device=\"cuda\"`"))
        attribute = func.attr.value if isinstance(func, cst.Attribute) else None
        # RNG draws
        kind = draw_kind(qualified, node)
        if kind is None and qualified == DATALOADER:
            if loader_shuffles(node, self.context.call_name) and not _seeded_generator(node):
                kind = "torch"
        if kind is None and attribute in self.facts.torch_methods and qualified is None and self.context.imports_torch:
            kind = "torch"
        if kind is not None:
            text = f"a shuffling `{_spelling(func)}(...)`" if qualified == DATALOADER else f"`{_spelling(func)}(...)`"
            function.add_draw(kind, site(text))
            class_name = self.keys[-1][1]
            if kind == "numpy" and class_name in self.summary.classes:
                sites = self.summary.classes[class_name].global_draws
                if len(sites) < MAX_SITES:
                    sites.append(site(f"`{_spelling(func)}(...)`"))
        # seeding and determinism
        if qualified is not None:
            helper = self.facts.helpers.get(qualified)
            covered = helper_covers(helper, node) if helper is not None else self.config_helpers.get(qualified)
            if covered:
                for kind_covered in covered:
                    function.add_cover(kind_covered, site(f"`{_spelling(func)}(...)`"))
            elif qualified in self.facts.cuda_only:
                function.add_cover("cuda", site(f"`{_spelling(func)}(...)`"))
        elif attribute in self.facts.method_helpers:
            required, covered = self.facts.method_helpers[attribute]
            if any(canonical(m).split(".")[0] == required for m in self.resolver.imported_modules):
                for kind_covered in covered:
                    function.add_cover(kind_covered, site(f"`{_spelling(func)}(...)`"))
        # CUDA work
        if attribute == "cuda" and qualified is None:
            self._cuda(function, site(f"`{_spelling(func)}()`"))
        elif attribute == "to" and any(mentions_cuda(arg.value) for arg in node.args if arg.keyword is None):
            self._cuda(function, site("`.to(\"cuda\")`"))
        elif qualified is not None and qualified.startswith("torch.cuda.") and is_cuda_work(qualified):
            self._cuda(function, site(f"`{_spelling(func)}(...)`"))
        elif qualified == "torch.device" and mentions_cuda(arg_value(node, "type", 0)):
            self._cuda(function, site("`torch.device(\"cuda\")`"))
        # convolutions and explicit cuDNN benchmark choices (TDL406)
        if qualified is not None:
            if _CONVOLUTION_RE.match(qualified):
                function.add_cover("convolution", site(f"`{_spelling(func)}(...)`"))
            elif qualified in BENCHMARK_SETTINGS and find_arg(node, "benchmark") is not None:
                function.add_cover("cudnn-benchmark", site(f"`{_spelling(func)}(benchmark=...)`"))
        # catalog operations (TDL302), from the ops family when it is installed
        if self._ops is not None and self.context.imports_torch and len(function.ops) < MAX_SITES:
            for match in self._ops(self.context, node):
                function.ops.append(site(f"`{_operation_display(match)}`"))
                break
        # DataLoaders for TDL102
        if qualified == DATALOADER:
            self._loader(node)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in self.module_rng_names:
            class_name = self.keys[-1][1]
            summary_class = self.summary.classes.get(class_name) if class_name else None
            if summary_class is not None and not any(r.attribute == func.value.value for r in summary_class.rng_attributes):
                rng = self.summary.module_rngs.get(func.value.value)
                constructor = rng.constructor if rng else "numpy.random.default_rng"
                summary_class.rng_attributes.append(self._located(RngAttribute(func.value.value, constructor, 0, module_level=True), "call", index))
        worker_fn = arg_value(node, "worker_init_fn")
        if isinstance(worker_fn, cst.Name):
            self.worker_init_names.add(worker_fn.value)

    def _located(self, item: Any, kind: str, index: int) -> Any:
        """`item` gets its line (from `ast`) at the end of the file."""
        self.pending.append((item, kind, index))
        return item

    def _site(self, text: str, kind: str) -> Site:
        index = (self.calls_seen if kind == "call" else self.assigns_seen) - 1
        return self._located(Site(0, text), kind, index)

    def _cuda(self, function: FunctionSummary, site: Site) -> None:
        if len(function.cuda) < MAX_SITES:
            function.cuda.append(site)

    # -- TDL102: DataLoaders with workers ------------------------------------------------------
    def _loader(self, node: cst.Call) -> None:
        if any(arg.star == "**" for arg in node.args):
            return  # num_workers / worker_init_fn may be hidden in **kwargs
        workers = arg_value(node, "num_workers", 5)
        if workers is None or literal(workers) == 0 or arg_value(node, "worker_init_fn", 10) is not None:
            return
        dataset_expression = arg_value(node, "dataset", 0)
        reference = self._dataset(dataset_expression, [], 0) if dataset_expression is not None else None
        self.loader_calls.append((node, reference, self.key))

    def _dataset(self, expression: cst.BaseExpression, wrappers: List[str], depth: int) -> Optional[DatasetRef]:
        if depth > 6:
            return None
        if isinstance(expression, cst.Name):
            bound = self.bound_expressions[-1].get(expression.value)
            if bound is None:
                return None
            return self._dataset(bound, wrappers, depth + 1)
        if isinstance(expression, cst.Subscript) and isinstance(expression.value, cst.Call):
            # `train, val = random_split(ds, ...)`: one of the splits
            return self._dataset(expression.value, wrappers, depth + 1)
        if not isinstance(expression, cst.Call):
            return None
        name = self.context.call_name(expression)
        if name in ("torch.utils.data.Subset", "torch.utils.data.random_split"):
            inner = arg_value(expression, "dataset", 0)
            return self._dataset(inner, wrappers + ["dataset"], depth + 1) if inner is not None else None
        if name == "torch.utils.data.ConcatDataset":
            inner = arg_value(expression, "datasets", 0)
            if isinstance(inner, (cst.List, cst.Tuple)) and inner.elements:
                members = [self._dataset(element.value, wrappers + ["datasets"], depth + 1) for element in inner.elements]
                found = [member for member in members if member is not None]
                if found:
                    return DatasetRef([t for member in found for t in member.targets], wrappers + ["datasets"], found[0].text)
            return None
        target = self._target(expression.func)
        if target is None:
            return None
        return DatasetRef([target], wrappers, self.context.module.code_for_node(expression.func))

    # -- the end: offsets the project fixes need ------------------------------------------------------
    def finish(self) -> None:
        summary = self.summary
        summary.imports = list(self.resolver.imported_modules)
        summary.exports = {name: value for name, value in self.resolver.module_final.items() if value is not None}
        needs_anchors = (
            summary.main_guard_line is not None
            or summary.module_work
            or summary.configured_entry
            or summary.is_notebook
            or self.context.path.endswith((".ipynb", "__main__.py"))
            or bool(self.loader_calls)
        )
        if needs_anchors or self.pending:
            tree = self.context.python_tree()
            if tree is not None:
                self._lines(tree)
                if needs_anchors:
                    ast_anchors(tree, self.context.text, summary)
        if self.loader_calls:
            self._loader_sites()

    def _lines(self, tree: ast.Module) -> None:
        """Lines of the recorded sites: the i-th call (assignment) visited is the
        i-th in `ast`'s source order (outer before inner, as LibCST visits)."""
        calls, assigns = _calls_and_assignments(tree)
        ordered = {"call": calls, "assign": assigns}
        for nodes in ordered.values():
            nodes.sort(key=lambda n: (n.lineno, n.col_offset, -(n.end_lineno or 0), -(n.end_col_offset or 0)))
        expected = {"call": self.calls_seen, "assign": self.assigns_seen}
        for item, kind, index in self.pending:
            nodes = ordered[kind]
            if len(nodes) == expected[kind] and 0 <= index < len(nodes):
                item.line = nodes[index].lineno

    def _loader_sites(self) -> None:
        context = self.context
        for name, node in self.function_nodes.items():
            if name == "seed_worker" or name in self.worker_init_names:
                start, end = context.node_offsets(node)
                body = node.body
                indent = body.indent if isinstance(body, cst.IndentedBlock) and body.indent is not None else context.module.default_indent
                params = node.params.params
                parameter = params[0].name.value if params else "worker_id"
                end_line = context.node_range(node)[2]
                end_offset = context.lines.offset(end_line + 1, 0) if end_line < len(context.lines.starts) else len(context.text)
                self.summary.worker_functions[name] = WorkerFunction(name, end_offset, indent, parameter, context.text[start:end])
        reuse = "seed_worker" if "seed_worker" in self.summary.worker_functions else next(iter(sorted(self.summary.worker_functions)), None)
        for node, reference, _ in self.loader_calls:
            line, column, end_line, end_column = context.node_range(node)
            start, end = context.node_offsets(node)
            keyword_offset = None
            if node.args:
                keyword_offset = context.node_offsets(node.args[-1].value)[1]
            self.summary.loaders.append(
                LoaderSite(line, column + 1, end_line, end_column + 1, start, end, reference, keyword_offset, reuse)
            )
        for module in ("torch", "numpy", "random"):
            edit = context.import_edit(module)
            if edit is not None:
                self.summary.rng_import_edits[module] = (edit.start, edit.content)


def _calls_and_assignments(tree: ast.AST) -> Tuple[List[ast.Call], List[ast.Assign]]:
    """Every call and assignment of a tree, in no particular order.

    One explicit-stack walk for both: `ast.walk` (two generators deep per
    node) made this lookup ~7% of the analysis time on `torch/nn`.
    """
    calls: List[ast.Call] = []
    assigns: List[ast.Assign] = []
    stack: List[ast.AST] = [tree]
    pop, push, node_class = stack.pop, stack.append, ast.AST
    while stack:
        node = pop()
        node_type = type(node)
        if node_type is ast.Call:
            calls.append(node)
        elif node_type is ast.Assign:
            assigns.append(node)
        for name in node_type._fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, node_class):
                        push(item)
            elif isinstance(value, node_class):
                push(value)
    return calls, assigns


def _count_lines(value: str) -> int:
    return value.count("\n") + value.count("\r") - value.count("\r\n")


def _signature(node: cst.FunctionDef) -> Tuple[int, str, bool]:
    params = node.params
    positional = [*params.posonly_params, *params.params]
    required = sum(1 for p in positional if p.default is None) + sum(1 for p in params.kwonly_params if p.default is None)
    names = {p.name.value for p in (*positional, *params.kwonly_params)}
    return required, positional[0].name.value if positional else "", "seed" in names


def _spelling(func: cst.BaseExpression) -> str:
    dotted = dotted_name(func)
    if dotted is not None:
        return dotted
    if isinstance(func, cst.Attribute):
        return "." + func.attr.value
    return "call"


def _seeded_generator(call: cst.Call) -> bool:
    """`generator=` given and not derived from `torch.initial_seed()` (which is random until seeded)."""
    value = arg_value(call, "generator")
    if value is None or literal(value) is None:
        return False
    code = cst.Module([]).code_for_node(value)
    return "initial_seed" not in code


@lru_cache(maxsize=None)
def _operation_matcher():
    """The ops family's `match_operations(context, call)`, when it exists."""
    try:
        from torchdet_lint.checks import ops
    except ImportError:
        return None
    return getattr(ops, "match_operations", None)


def _operation_display(match: Any) -> str:
    for attribute in ("display", "display_name", "name", "op_id", "id"):
        value = getattr(match, attribute, None)
        if isinstance(value, str) and value:
            return value
    return str(match)
