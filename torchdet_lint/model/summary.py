"""FileSummary: what the project phase needs to know about one file, as plain
picklable data (small, cacheable). `collector.py` fills it during the shared
traversal; `scan.py` fills it for a file the pre-filter skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Set, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from torchdet_lint.model.checkpoints import ResumeFacts
    from torchdet_lint.model.rank_order import RankOrderFacts
    from torchdet_lint.model.resume_data import ResumeDataFacts

MODULE_KEY = "<module>"  # module-level code outside the main block
MAIN_KEY = "<main>"  # the `if __name__ == "__main__":` block
LAMBDA_KEY = "<lambda>"  # lambdas stored for later: reached by nothing
REGISTRY_MEMBER = "[]"  # a call target suffix: "a member of this registry is called" (`MODELS[name](...)`)
RNG_KINDS = ("torch", "random", "numpy")
RAISING_ALWAYS = "any"  # FunctionSummary.raising: reported by TDL202 in every profile
RAISING_STRICT = "strict"  # in profile strict only
MAX_SITES = 5  # sites kept per function and kind: enough for messages, small to pickle


# A registry filled by a decorator over a whole model zoo: picking "any member" from it would reach
# the zoo; past this many members a registry call (or a table of commands) is not followed.
MAX_REGISTRY_MEMBERS = 64


@dataclass
class Site:
    """Something found at a line of the file: a draw, a seeding, CUDA work, an operation."""

    line: int
    text: str
    argument: str = ""  # a seeding call's seed, as written (`args.seed`)
    guard: str = ""  # the test of the `if` a seeding call sits in, when it tests that seed
    # An operation whose catalog condition needs a backward pass (`nn.Embedding`, a bilinear
    # `interpolate`): evidence only in a run that trains.
    backward: bool = False
    # An operation whose catalog condition needs a CUDA device: evidence only in a run that may use one.
    cuda_only: bool = False
    # A setting that holds only when the function is called with a flag on: `if deterministic:` on a
    # parameter that defaults to a false value. "<function key>|<parameter>|<position>": resolved
    # on each call by the arguments it passes (`set_seed(0, deterministic=True)` enables the flag).
    condition: str = ""
    # A module's construction whose parameters a strict `load_state_dict` of the same object then
    # overwrites: its initial draws do not reach the run's numbers.
    overwritten: bool = False
    # An unresolved `importlib.import_module(prefix + name)`: the package prefix of every module it
    # can import ("" when nothing bounds it).
    reaches: str = ""
    # A backward-only operation whose tensors get a gradient only from these parameters of its
    # function ("x#0,y#-1"): evidence only where some call of the function passes one a gradient.
    gradient_from: str = ""
    # A draw or loader that runs only where a command-line option exists (`if args.shuffle_bin:`,
    # `RandomSampler(d) if args.shuffle_bin else None`: reading an option the namespace lacks raises):
    # "<file>|<function key>|<parameter>|<position>|<option>" (joined by ";", one per option read)
    # while the namespace is a parameter of that function (file "" = the site's own), "!<option>" once
    # it is known to be the namespace of a fully visible parser that defines no such option
    # (see `model/options.py`).
    option: str = ""
    # A draw that runs only under tests of parameters of its function (`if not memory_map:`): each
    # (function key, parameter, test, literal), the test one of "true", "false", "is", "is not",
    # "==", "!=" against the literal. Decided per run by the values its calls pass the parameter.
    branch: Tuple[Tuple[str, str, str, Any], ...] = ()
    # A torch draw that `model.eval()` and `no_grad` leave on, outside any test of `self.training`:
    # a functional dropout given a literal `training=True`, a random fill of a tensor built on the
    # spot (`torch.cuda.FloatTensor(n).normal_()`). Counted in the `forward` of a module a run
    # builds even where the run's calls of the module are out of sight (`Project.effective_draws`).
    eval_proof: bool = False


@dataclass
class Spawn:
    """A call that starts a function in a new process (which starts with fresh RNG states)."""

    target: str  # the function started: a qualified name, or ".name" of this file
    method: str  # `processes.SPAWN`, or `processes.DEFAULT` (a boundary after `set_start_method("spawn")`)
    function: str  # the function as written (`main_worker`)
    launcher: str  # the call as written (`mp.spawn`)
    line: int = 0
    column: int = 1
    end_line: int = 0
    end_column: int = 1
    start_offset: int = 0
    end_offset: int = 0
    # First-party functions handed to the started function as arguments: it may call them.
    passed: List[str] = field(default_factory=list)
    # The launcher passes the process's index as the function's first argument (`mp.spawn`): the rank.
    indexed: bool = False


@dataclass
class FunctionTop:
    """Where statements go at the top of a function's body (the fixes of a spawned entry point)."""

    offset: int
    line: int
    indent: str
    names: List[str]  # its parameters and the module's names: what an inserted line may use
    positional: List[str] = field(default_factory=list)  # its positional parameters, in order


@dataclass
class FunctionSummary:
    calls: List[str] = field(default_factory=list)  # targets: qualified names, or ".local" names of this file
    references: List[str] = field(default_factory=list)  # functions passed by name to a call: they may run
    # reference -> the first-party function it was handed to: a registering one (`register_backend(
    # compiler_fn=f)` storing `f` in a module-level dict) keeps it for later, it does not run it.
    reference_callees: Dict[str, str] = field(default_factory=dict)
    imports: List[str] = field(default_factory=list)  # modules imported when this code runs (lazy imports)
    draws: Dict[str, List[Site]] = field(default_factory=dict)  # RNG kind -> first sites
    covers: Dict[str, Site] = field(default_factory=dict)  # torch/random/numpy/deterministic/cudnn/cuda -> first site
    cuda: List[Site] = field(default_factory=list)
    ops: List[Site] = field(default_factory=list)
    # Operations that raise under the flag (TDL202), by the profile from which TDL202 reports
    # them (`RAISING_ALWAYS`, or `RAISING_STRICT` for the losses reported in profile strict only).
    raising: Dict[str, List[Site]] = field(default_factory=dict)
    loading: List[Site] = field(default_factory=list)  # DataLoaders, random samplers and splits built here
    # The first call that trains (`.backward()`, `torch.autograd.grad`, `trainer.fit(...)`): a run
    # that reaches none runs no backward pass.
    trains: Optional[Site] = None
    # The first place that may put work on an accelerator: a device move to a device that is not
    # visibly the CPU (`.to(device)`, `device=args.device`), `accelerator.prepare`, DDP... A run
    # that reaches none and no CUDA work runs on the CPU, where CUDA-only conditions cannot hold.
    moves: Optional[Site] = None
    # First-party call target -> the parameters (names, or "#<position>") it is passed a value
    # that may be true for: what turns on the settings a callee makes under `if <parameter>:`.
    call_flags: Dict[str, List[str]] = field(default_factory=dict)
    # First-party call target -> one record per call: (no gradient flows at the call, a `*`/`**`
    # argument hides what is passed, argument -> what it carries). An argument ("#<position>" or its
    # keyword) maps to "" (no gradient), "?" (may carry one), or the parameters of this function it
    # gets its gradient from ("x#0,y#-1"): whether a callee's backward-only kernel runs.
    call_gradients: Dict[str, List[Tuple[bool, bool, Dict[str, str]]]] = field(default_factory=dict)
    # First-party constructions (and factories) whose result's parameters a strict `load_state_dict`
    # in this function overwrites: their initial draws do not count for TDL001.
    loaded: List[str] = field(default_factory=list)
    # Functions (or `Class.__call__`) handed to an executor that runs them in a job of their own
    # (submitit): the training process starts there, and so do its fixes.
    launches: List[str] = field(default_factory=list)
    # Construction or dispatch sites whose target the analysis cannot resolve (a class named by a
    # string from configuration, `cfg.build()` on a value of unknown class): what lies behind them
    # is unknown, so a "never" conclusion is not one.
    unresolved: List[Site] = field(default_factory=list)
    spawns: List[Spawn] = field(default_factory=list)  # functions started in new processes from here
    # A call that is not seeding, a flag setting, logging or argument handling: not a seeding helper
    # a fix may call (calling one that does more would change what the program does).
    does_more: bool = False
    # First-party calls whose result a `return` hands back (`return UniformSampler(d)`): what a
    # method called on this function's result runs.
    returns: List[str] = field(default_factory=list)
    # Names bound here to `parser.parse_args()` of a parser whose every option is visible -> the
    # options it defines (`model/options.py`).
    namespaces: Dict[str, List[str]] = field(default_factory=dict)
    # First-party call target -> one record per call: argument ("#<position>" or keyword) -> "n|<name>"
    # (one of `namespaces`) or "p|<parameter>|<position>" (a parameter of this function); "*" when a
    # `*`/`**` argument hides what is passed. What resolves a callee's `Site.option`.
    call_options: Dict[str, List[Dict[str, str]]] = field(default_factory=dict)
    # Attributes this code sets on an object other than `self`/`cls` (`args.lr = ...`,
    # `setattr(args, "lr", ...)`); "*" for one it cannot name (`vars(args).update(...)`).
    namespace_writes: List[str] = field(default_factory=list)

    def add_call(self, target: str, seen: Set[str]) -> None:
        if target not in seen:
            seen.add(target)
            self.calls.append(target)

    def add_reference(self, target: str) -> None:
        # Kept when the function also calls it: handed on, it may run with arguments no call shows.
        if target not in self.references:
            self.references.append(target)

    def add_draw(self, kind: str, site: Site) -> None:
        sites = self.draws.setdefault(kind, [])
        # Draws under an option have room of their own: dropped later, they must not have crowded out the rest.
        if sum(1 for s in sites if bool(s.option) == bool(site.option)) < MAX_SITES:
            sites.append(site)

    def add_cover(self, kind: str, site: Site) -> None:
        current = self.covers.get(kind)
        if current is None or (current.condition and not site.condition):
            self.covers[kind] = site

    def add_raising(self, profile: str, site: Site) -> None:
        sites = self.raising.setdefault(profile, [])
        if sum(1 for s in sites if s.backward == site.backward and s.cuda_only == site.cuda_only) < MAX_SITES:
            sites.append(site)

    def add_trains(self, site: Site) -> None:
        if self.trains is None:
            self.trains = site

    def add_unresolved(self, site: Site) -> None:
        """Past `MAX_SITES`, a site is still kept when it opens a part of the project none of the kept
        ones does (what the open world may hide is then known in full: see `unbounded_reach`)."""
        if any(s.text == site.text and s.line == site.line for s in self.unresolved):
            return
        if len(self.unresolved) < MAX_SITES or all(s.reaches != site.reaches for s in self.unresolved):
            self.unresolved.append(site)


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
    # TDL005: the `__init__` parameters (in order) and those the class seeds itself
    # (`param.manual_seed(...)`, or `self.g = param` and `self.g.manual_seed(...)` in any method).
    init_parameters: List[str] = field(default_factory=list)
    seeded_parameters: List[str] = field(default_factory=list)
    attribute_parameters: Dict[str, str] = field(default_factory=dict)  # `self.<attr> = <param>` in __init__
    # `self.<attr> = <display>` in __init__ (`self.padding = [p] * 4`): the length it always has,
    # unless the attribute is also reassigned.
    attribute_lengths: Dict[str, int] = field(default_factory=dict)
    # Attributes annotated with a first-party class (`model: ModelConfig` in a dataclass, `self.trainer:
    # Trainer = ...`, `self.cfg = cfg` for `cfg: Config`): `self.<attr>.build()` runs that class's method.
    attribute_types: Dict[str, str] = field(default_factory=dict)
    seeded_attributes: List[str] = field(default_factory=list)
    # Attributes set anywhere but by `__init__`'s first `self.<attr> = <parameter>` (another method, a
    # second assignment, `+=`): their values are not that parameter's alone.
    reassigned_attributes: List[str] = field(default_factory=list)


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
    # The call rewritten with `worker_init_fn=<worker>` in the file's layout: (start, end, text).
    worker_edit: Optional[Tuple[int, int, str]]
    worker_function: Optional[str] = None  # an existing module-level worker function to reuse
    to_trainer: bool = False  # built in a Lightning `*_dataloader` hook, or handed to `trainer.fit(...)`


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
    # After the last module-level change of `sys.path` (0: none): a first-party import above it
    # may not be importable yet.
    path_setup_end: int = 0


@dataclass
class FileSummary:
    path: str
    module_name: Optional[str] = None
    imports: List[str] = field(default_factory=list)  # qualified modules/names imported anywhere, in order
    module_imports: List[str] = field(default_factory=list)  # those imported at module level (run on import)
    # `from .conv import *` at module level: the modules whose public names this one re-exports.
    star_imports: List[str] = field(default_factory=list)
    # The modules named by `from m import ...` statements: `m` is the module itself, never what a
    # package above it re-exports under that name (`pkg.Mod` after `from .Mod import Mod` in `pkg`).
    from_modules: List[str] = field(default_factory=list)
    imports_torch: bool = False
    is_notebook: bool = False  # a Jupyter notebook: an entry point of its own (module_name is None)
    is_package: bool = False
    parsed: bool = True  # False: filled by the cheap scan of a pre-filtered file
    main_guard_line: Optional[int] = None
    module_work: bool = False  # a loop or a call statement at module level (a script when nothing imports it)
    configured_entry: bool = False  # matches config `entry-points`
    functions: Dict[str, FunctionSummary] = field(default_factory=dict)
    classes: Dict[str, ClassSummary] = field(default_factory=dict)
    signatures: Dict[str, Tuple[int, str, bool]] = field(
        default_factory=dict
    )  # function -> (required positionals, first parameter, has `seed`)
    exports: Dict[str, str] = field(default_factory=dict)  # module-level name -> qualified name it is bound to
    # Module-level imports outside the main block, name -> (qualified module or name, line); filled with `anchors`.
    module_bindings: Dict[str, Tuple[str, int]] = field(default_factory=dict)
    module_rngs: Dict[str, RngAttribute] = field(default_factory=dict)
    loaders: List[LoaderSite] = field(default_factory=list)
    worker_functions: Dict[str, WorkerFunction] = field(default_factory=dict)
    anchors: Optional[FixAnchors] = None
    rng_import_edits: Dict[str, Tuple[int, str]] = field(default_factory=dict)  # module -> (offset, text) for TDL102
    # Module-level dicts, lists and tuples of functions or classes (`MODELS = {"a": NetA}`): their members.
    registries: Dict[str, List[str]] = field(default_factory=dict)
    # Registering decorators defined here: function -> the module-level registry its body stores the
    # decorated function in (`_METRICS[fn.__name__] = fn`, also from a nested `deco(fn)`).
    registrars: Dict[str, str] = field(default_factory=dict)
    # Objects named by dotted string literals where code builds objects from names (`class_name=
    # "pkg.Net"`, `{"_target_": "pkg.Net"}`): the candidates of a construction by name.
    named_targets: List[str] = field(default_factory=list)
    # Seed options that default to None (`--seed` without a default, `seed: Optional[int] = None`
    # in a config class): a seeding guarded by them runs only on request (the report's `opt-in`).
    optional_seeds: List[str] = field(default_factory=list)
    # Module-level aliases of this file's own functions and classes (`Model = DetectionModel`):
    # name -> ".DetectionModel" (an alias of an import is in `exports`).
    aliases: Dict[str, str] = field(default_factory=dict)
    # Module-level `name = functools.partial(f, ...)`: name -> f's target (`register_debug_backend =
    # partial(register_backend, tags=...)` registers as `register_backend` does).
    partials: Dict[str, str] = field(default_factory=dict)
    # Module-level functions and classes -> their first-party decorators (a registrar fills a registry).
    decorators: Dict[str, List[str]] = field(default_factory=dict)
    # Module-level functions started in new processes from this file: where their fixes go.
    function_tops: Dict[str, FunctionTop] = field(default_factory=dict)
    # Function key -> (first line, last line), in files with findings: which code a finding is in.
    spans: Dict[str, Tuple[int, int]] = field(default_factory=dict)
    # The receivers of `.set_epoch(` calls, as written (`sampler`, `loader.sampler`), with the call target
    # the receiver's first name was bound from in that function ("" when none; see
    # `epoch_receivers_bound_elsewhere`): TDL105 across files.
    set_epoch: List[Tuple[str, str]] = field(default_factory=list)
    # Checkpoints, optimizer loads, RNG state reads, loader generators, reseeding loops (TDL008).
    resume: Optional["ResumeFacts"] = None
    # Loops over loaders, skips and restored positions (TDL010); orders the ranks share (TDL011).
    resume_data: Optional["ResumeDataFacts"] = None
    rank_order: Optional["RankOrderFacts"] = None
    # First-party call target -> what each call passes ((calling function, arguments): see
    # `model.arguments`), and each function's parameters (position, literal default): the values a
    # parameter can hold over the whole project.
    call_arguments: Dict[str, List[Tuple[str, Tuple[Tuple[str, Any], ...]]]] = field(default_factory=dict)
    parameters: Dict[str, Dict[str, Tuple[Optional[int], Any]]] = field(default_factory=dict)
    # First-party functions this file uses other than by calling them (passed, stored, mapped), as
    # call targets: code the project does not show may call them with anything.
    handed_on: List[str] = field(default_factory=list)
    # The facts of other collectors the rules declare (`BaseRule.collectors`), by collector name:
    # a new collector keeps its facts here, so adding one needs no field above.
    facts: Dict[str, Any] = field(default_factory=dict)

    def function(self, key: str) -> FunctionSummary:
        summary = self.functions.get(key)
        if summary is None:
            summary = self.functions[key] = FunctionSummary()
        return summary

    @property
    def defined(self) -> Set[str]:
        return set(self.functions) | set(self.classes)


def epoch_receivers_bound_elsewhere(summary: FileSummary, bound_to: Dict[str, Set[str]]) -> None:
    """A `set_epoch` receiver its own function does not bind from a call (`loader_train, loader_eval
    = create_loaders(args)`, then `loader_train.sampler.set_epoch(epoch)`) takes the calls its first
    name is bound to in the file's other functions (`loader_train = create_loader(...)` in
    `create_loaders`): TDL105 matches names across files, and a name the same file binds to a
    loader factory is that factory's loader far more often than not."""
    for receiver, origin in list(summary.set_epoch):
        if origin:
            continue
        for called in sorted(bound_to.get(receiver.split(".", 1)[0], ())):
            if (receiver, called) not in summary.set_epoch:
                summary.set_epoch.append((receiver, called))
