"""Resume facts for TDL008, filled in the shared traversal: the checkpoints a file
saves (`torch.save` of a visible dict holding an optimizer's `state_dict()`), the
optimizer loads that resume training, the RNG states each function reads, the
named generators handed to loaders, and the reseeding its loops do.

First-party helpers are connected by the project phase (`wrapped_checkpoints`,
`parameter_loads`): a file records which parameters its functions `torch.save`
or call `load_state_dict` on, and the calls that hand such a function a
checkpoint dict or an optimizer. Where the fix's edits go is planned in
`checkpoint_edits`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, NamedTuple, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.core.names import NOT_LITERAL, arg_value, dotted_name, literal, opaque_keywords
from torchdet_lint.core.traversal import BatchedWalker
from torchdet_lint.model.checkpoint_edits import KEY, EntryEdit, _code, entry_edit, place_helpers
from torchdet_lint.model.facts import (
    GENERATOR_POSITION,
    RANDOM_SAMPLERS,
    accelerators,
    config_helpers,
    facts,
    helper_covers,
    is_dataloader,
    loader_name,
    loader_shuffles,
)
from torchdet_lint.model.ranks import main_process_test, may_test_rank

if TYPE_CHECKING:  # pragma: no cover
    from torchdet_lint.core.context import FileContext

# A file none of these words appear in holds no checkpoint, no optimizer load, no
# state capture, no named loader generator, no reseeding loop and no save function
# (`def save_on_master(*args, **kwargs): torch.save(*args, **kwargs)` in a `utils.py`
# that mentions nothing else: 11 more files of torch's 2285): it is not walked.
WORDS = ("state_dict", "seed", "get_state", "getstate", "get_rng_state", "generator", "_collect_rng_states", "torch.save")
# The states a checkpoint may carry, in the order messages and the fix's helper list them.
STATE_KINDS = ("torch", "cuda", "random", "numpy")
GENERATOR = "generator:"  # prefix of a named generator's state: "generator:g"
CALL = "call:"  # prefix of a first-party seeding call in a loop (resolved by the project phase)
# Calls that read a global RNG's state (for a checkpoint), by qualified name.
CAPTURES: Dict[str, Tuple[str, ...]] = {
    "torch.get_rng_state": ("torch",),
    "torch.random.get_rng_state": ("torch",),
    "torch.default_generator.get_state": ("torch",),
    "torch.cuda.get_rng_state": ("cuda",),
    "torch.cuda.get_rng_state_all": ("cuda",),
    "torch.cuda.random.get_rng_state": ("cuda",),
    "torch.cuda.random.get_rng_state_all": ("cuda",),
    "random.getstate": ("random",),
    "numpy.random.get_state": ("numpy",),
    # Lightning's own checkpoints carry these four (lightning/fabric/utilities/seed.py).
    "lightning.fabric.utilities.seed._collect_rng_states": STATE_KINDS,
    "lightning_fabric.utilities.seed._collect_rng_states": STATE_KINDS,
    "pytorch_lightning.utilities.seed._collect_rng_states": STATE_KINDS,
}
# Optimizers built by a factory or a class outside `torch.optim` (a load of their state resumes training).
OPTIMIZER_FACTORIES = frozenset(
    {
        "timm.optim.create_optimizer",
        "timm.optim.create_optimizer_v2",
        "transformers.AdamW",
        "transformers.Adafactor",
        "transformers.optimization.AdamW",
        "transformers.optimization.Adafactor",
        "torch.distributed.optim.ZeroRedundancyOptimizer",
    }
)
OPTIMIZER_PACKAGES = ("torch.optim.", "bitsandbytes.optim.", "apex.optimizers.", "deepspeed.ops.adam.")
NOT_OPTIMIZERS = ("torch.optim.lr_scheduler.", "torch.optim.swa_utils.")
SAMPLERS = RANDOM_SAMPLERS | {"torch.utils.data.DataLoader"}
STATEFUL_LOADERS = frozenset({"torchdata.stateful_dataloader.StatefulDataLoader"})


class Parameter(NamedTuple):
    """A function's parameter as a caller passes it: at `position` (None: keyword-only;
    methods count from the argument after `self`), by `keyword` (None: positional only).
    `rest`: `*args` (any position from `position` on) or `**kwargs` (any keyword but `named`)."""

    position: Optional[int]
    keyword: Optional[str]
    rest: bool = False
    named: Tuple[str, ...] = ()

    def takes(self, position: Optional[int], keyword: Optional[str]) -> bool:
        """Whether the argument a call passes at `position` or by `keyword` binds this parameter."""
        if keyword is not None:
            if self.keyword is not None:
                return keyword == self.keyword
            return self.rest and self.position is None and keyword not in self.named
        if position is None or self.position is None:
            return False
        return position == self.position or (self.rest and position > self.position)

    def forwarded(self, position: Optional[int], out: Optional[int]) -> Optional[int]:
        """Where an argument taken at `position` lands in a call passing this parameter at `out`
        (`f(*args)` shifts it along)."""
        if self.rest and self.keyword is None and self.position is not None and out is not None and position is not None:
            return out + position - self.position
        return out


class Forward(NamedTuple):
    """A function passes its parameter on: `save_on_master(state, path)` in `save_checkpoint(state, ...)`."""

    parameter: Parameter
    target: str
    position: Optional[int]
    keyword: Optional[str]


class Through(NamedTuple):
    """A checkpoint handed to a first-party function (`save_checkpoint({...}, is_best)`): the
    call's target, where it passes the dict, and how the call is spelled."""

    target: str
    position: Optional[int]
    keyword: Optional[str]
    spelling: str


class OptimizerArgument(NamedTuple):
    """An optimizer handed to a first-party function (`restart_from_checkpoint(..., optimizer=optimizer)`)."""

    key: str  # the calling function
    target: str
    position: Optional[int]
    keyword: Optional[str]
    receiver: str  # as written


@dataclass
class RankGuard:
    """The test that makes a save run on the main process only (`if rank == 0:`, or an early
    `if not is_main_process(): return`)."""

    line: int
    text: str  # the test as written
    # The start of the `if` statement's line, and its indentation: a line inserted there runs on
    # every rank before the test (None: the `if` shares its line with other code).
    offset: Optional[int] = None
    indent: str = ""
    display_inside: bool = True  # the checkpoint's dict is built under the test
    early: bool = False  # `if not main: return` before the save, not an `if` around it


@dataclass
class CheckpointSite:
    key: str  # the function (summary key) holding the `torch.save`
    line: int
    column: int  # 1-based
    end_line: int
    end_column: int
    start_offset: int
    end_offset: int
    # First-party calls in the checkpoint's values: (target, dotted names passed), e.g. a helper
    # `rng_state_dict(g)` whose body reads the states.
    helper_calls: List[Tuple[str, List[str]]] = field(default_factory=list)
    bound: List[str] = field(default_factory=list)  # names bound in the function at the save
    entry: Optional[EntryEdit] = None  # None: no fix (not a visible dict, odd layout, key taken)
    quote: str = '"'
    through: Optional[Through] = None  # saved by a first-party function this call hands the dict to
    rank_guard: Optional[RankGuard] = None  # the save (or the call handing the dict over) runs on the main process only
    name: Optional[str] = None  # the name the dict is bound to, when it is not built in the call
    key_taken: bool = False  # the dict already has a `"rng_state"` key
    doubtful: str = ""  # a test around the save that may pick processes in a way not read (`args.gpu == 0`)
    # A library's own checkpoint (`accelerator.save_state(...)`): the call as written, and the RNG
    # states it stores itself (rules/runs.toml).
    saved_by: str = ""
    carries: List[str] = field(default_factory=list)


@dataclass
class OptimizerLoad:
    key: str
    line: int
    receiver: str  # as written: `optimizer`, `self.optim`
    # Where the `load_state_dict(...)` call is: (column, end line, end column, start offset, end offset),
    # columns 1-based (TDL010 reports there).
    span: Tuple[int, int, int, int, int] = (1, 0, 1, 0, 0)
    checkpoint: Optional[str] = None  # the name bound from `torch.load(...)` whose item is loaded
    restore_offset: Optional[int] = None  # start of the line after the load statement
    indent: str = ""
    bound: List[str] = field(default_factory=list)
    # A load of whatever the callers pass as this parameter (`value.load_state_dict(...)` for
    # `for key, value in kwargs.items()`): a resume when a caller passes an optimizer there.
    parameter: Optional[Parameter] = None
    via: Optional[Tuple[str, str]] = None  # (file, function) of that caller: the load runs when it is reached
    method: str = "load_state_dict"  # `load_state` for a library's resume (`accelerator.load_state(path)`)


@dataclass
class ResumeFacts:
    checkpoints: List[CheckpointSite] = field(default_factory=list)
    loads: List[OptimizerLoad] = field(default_factory=list)
    captures: Dict[str, List[str]] = field(default_factory=dict)  # function key -> states its code reads
    loader_generators: Dict[str, List[str]] = field(default_factory=dict)  # function key -> named generators
    # Function key -> `loader.generator` of the shuffling loaders and random samplers bound to a name
    # without a generator: TDL101/TDL104's fixes give them one, which the TDL008 fix saves too.
    fix_generators: Dict[str, List[str]] = field(default_factory=dict)
    # Functions whose `torch.save` of a parameter runs on the main process only (`save_on_master`), and
    # the first-party functions each function calls on the main process only.
    guarded_savers: List[str] = field(default_factory=list)
    guarded_calls: Dict[str, List[str]] = field(default_factory=dict)
    loop_seeds: Dict[str, List[str]] = field(default_factory=dict)  # function key -> what its loops reseed
    # First-party helpers, connected by the project phase: calls that hand a checkpoint dict to a
    # function (a checkpoint when that function saves the parameter), the parameters each function
    # `torch.save`s or passes on, loads of a parameter, and the optimizers handed to functions.
    wrapped: List[CheckpointSite] = field(default_factory=list)
    parameter_saves: Dict[str, List[Parameter]] = field(default_factory=dict)
    forwards: Dict[str, List[Forward]] = field(default_factory=dict)
    parameter_loads: List[OptimizerLoad] = field(default_factory=list)
    optimizer_arguments: List[OptimizerArgument] = field(default_factory=list)
    module_names: List[str] = field(default_factory=list)
    # The fix's anchors: after the imports, the blank lines that follow there, imports to add.
    helper_offset: int = 0
    helper_blank_after: int = 0
    helper_at_eof: bool = False
    helper_at_end: bool = False  # nothing but blank lines follows the anchor
    import_edits: Dict[str, Tuple[int, str]] = field(default_factory=dict)
    indent_unit: str = "    "


def _add(table: Dict[str, List[Any]], key: str, item: Any) -> None:
    items = table.setdefault(key, [])
    if item not in items:
        items.append(item)


def optimizer_class(qualified: Optional[str]) -> bool:
    if not qualified:
        return False
    if qualified in OPTIMIZER_FACTORIES:
        return True
    if qualified.startswith(NOT_OPTIMIZERS) or not qualified.startswith(OPTIMIZER_PACKAGES):
        return False
    return qualified.rsplit(".", 1)[-1][:1].isupper()


class _Frame:
    __slots__ = ("loops", "items", "key", "node", "method", "_parameters", "spread", "guards", "early", "doubts")

    def __init__(self, key: str = "", node: Optional[cst.FunctionDef] = None, method: bool = False) -> None:
        self.loops = 0
        self.items: Dict[str, List[Tuple[object, cst.BaseExpression]]] = {}  # `d["k"] = v` per name
        self.key = key
        self.node = node  # None: the module, or a def that is part of its enclosing code
        self.method = method
        self._parameters: Optional[Dict[str, Parameter]] = None
        self.spread: Dict[str, Parameter] = {}  # `for key, value in kwargs.items()`: value -> **kwargs
        self.guards: List[cst.If] = []  # the enclosing `if`s whose block runs on the main process only
        self.early: Optional[cst.If] = None  # an `if not main: return` passed: the rest runs on the main process only
        self.doubts: List[cst.If] = []  # enclosing `if`s that may pick processes in a way not read (`args.gpu == 0`)

    @property
    def parameters(self) -> Dict[str, Parameter]:
        """The function's own parameters (computed when first asked: most functions never are)."""
        if self._parameters is None:
            self._parameters = _parameters(self.node, self.method) if self.node is not None else {}
        return self._parameters


def _parameters(node: cst.FunctionDef, method: bool) -> Dict[str, Parameter]:
    """A def's parameters as its callers pass them (a method's first one is the instance)."""
    params = node.params
    positional = [*params.posonly_params, *params.params]
    if method:
        static = any(dotted_name(d.decorator) == "staticmethod" for d in node.decorators)
        positional = positional if static else positional[1:]
    only = {id(p) for p in params.posonly_params}
    found: Dict[str, Parameter] = {}
    for index, param in enumerate(positional):
        found[param.name.value] = Parameter(index, None if id(param) in only else param.name.value)
    for param in params.kwonly_params:
        found[param.name.value] = Parameter(None, param.name.value)
    named = tuple(found)
    if type(params.star_arg) is cst.Param:
        found[params.star_arg.name.value] = Parameter(len(positional), None, True)
    if type(params.star_kwarg) is cst.Param:
        found[params.star_kwarg.name.value] = Parameter(None, None, True, named)
    return found


def _star(parameter: Optional[Parameter]) -> bool:
    """`*args` (not `**kwargs`)."""
    return parameter is not None and parameter.rest and parameter.keyword is None and parameter.position is not None


def _first_party(context: "FileContext", target: Optional[str]) -> bool:
    """A call target that may be first-party code (the project phase resolves it): this file's, the
    project's packages', or a module of a plain directory (`from src.utils import f`), not a library's."""
    if not target:
        return False
    head = target.split(".", 1)[0]
    return target.startswith(".") or head in context.first_party or head not in LIBRARIES


# Never first-party unless the project is one of them (a cost filter: the project phase decides).
LIBRARIES = frozenset(sys.stdlib_module_names) | {
    "torch",
    "torchvision",
    "torchaudio",
    "numpy",
    "scipy",
    "pandas",
    "sklearn",
    "PIL",
    "cv2",
    "matplotlib",
    "transformers",
    "accelerate",
    "datasets",
    "lightning",
    "pytorch_lightning",
    "timm",
    "apex",
    "deepspeed",
    "wandb",
    "tensorboard",
    "tqdm",
    "einops",
    "fvcore",
    "detectron2",
    "hydra",
    "omegaconf",
    "submitit",
}


class _CallCollector(cst.BatchableCSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.calls: List[cst.Call] = []

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)


class ResumeCollector(cst.BatchableCSTVisitor):
    """Walks with the `SummaryCollector` (`collector`: it asks it the function keys and call
    targets, in any order of the walk, and stores the facts in its summary)."""

    def __init__(self, context: "FileContext", collector: Any) -> None:
        super().__init__()
        self.context = context
        self.collector = collector
        self.resolver = context.resolver
        self.facts = ResumeFacts()
        self.frames: List[_Frame] = [_Frame()]
        self.helpers = facts().helpers
        self.config_helpers = config_helpers(context.settings)
        # (site, the call, the dict display or `dict(...)` call, the name its items are assigned to, key taken)
        self._saves: List[Tuple[CheckpointSite, cst.Call, cst.BaseExpression, Optional[str], bool]] = []
        self._loads: List[Tuple[OptimizerLoad, cst.Call]] = []
        self._classes: List[bool] = [False]  # per enclosing def or class: a class body
        self._guard_blocks: Dict[int, cst.If] = {}  # id of a block that runs on the main process only -> its `if`
        self._doubt_blocks: Dict[int, cst.If] = {}  # id of a block whose test may pick processes -> its `if`
        self._assigned: Dict[int, str] = {}  # id of a call assigned to a name or attribute -> that target
        self._guards: List[Tuple[RankGuard, cst.If, Optional[cst.CSTNode]]] = []  # placed in `_locate`

    @classmethod
    def for_file(cls, context: "FileContext", collector: Any) -> Optional["ResumeCollector"]:
        text = context.text
        words = WORDS + tuple(word for library in accelerators() for word in (library.save_state, library.load_state))
        return cls(context, collector) if any(word in text for word in words) else None

    # -- where we are ---------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(True)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        key = self.collector.def_key(node)
        own = key != self.frames[-1].key  # not a method of a class defined in a function body
        self.frames.append(_Frame(key, node if own else None, self._classes[-1]))
        self._classes.append(False)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.frames.pop()
        self._classes.pop()

    def visit_For(self, node: cst.For) -> None:
        frame = self.frames[-1]
        frame.loops += 1
        iterated = node.iter
        if frame.node is not None and (
            type(iterated) is cst.Name or (type(iterated) is cst.Call and type(iterated.func) is cst.Attribute)
        ):
            self._spread(frame, node)

    def _spread(self, frame: _Frame, node: cst.For) -> None:
        """`for key, value in kwargs.items()`, `for value in kwargs.values()`, `for value in args`:
        `value` is any of the arguments gathered by `**kwargs` / `*args`."""
        target, iterated = node.target, node.iter
        name = None
        if type(iterated) is cst.Name:
            parameter = frame.parameters.get(iterated.value)
            if _star(parameter) and type(target) is cst.Name:
                name = target.value
        elif type(iterated) is cst.Call and type(iterated.func) is cst.Attribute and type(iterated.func.value) is cst.Name:
            method = iterated.func.attr.value
            if method not in ("items", "values"):
                return
            parameter = frame.parameters.get(iterated.func.value.value)
            if parameter is None or not (parameter.rest and parameter.position is None):
                return
            if method == "values" and type(target) is cst.Name:
                name = target.value
            elif method == "items" and type(target) is cst.Tuple and len(target.elements) == 2:
                value = target.elements[1].value
                name = value.value if type(value) is cst.Name else None
        else:
            return
        if name is not None:
            frame.spread[name] = parameter

    def leave_For(self, original_node: cst.For) -> None:
        self.frames[-1].loops -= 1

    def visit_While(self, node: cst.While) -> None:
        self.frames[-1].loops += 1

    def leave_While(self, original_node: cst.While) -> None:
        self.frames[-1].loops -= 1

    # -- the main process only -------------------------------------------------------------
    def visit_If(self, node: cst.If) -> None:
        test = main_process_test(node.test)
        if test is True:
            self._guard_blocks[id(node.body)] = node
        elif test is False and type(node.orelse) is cst.Else:
            self._guard_blocks[id(node.orelse.body)] = node
        elif test is None and may_test_rank(node.test):
            self._doubt_blocks[id(node.body)] = node
            if type(node.orelse) is cst.Else:
                self._doubt_blocks[id(node.orelse.body)] = node

    def leave_If(self, original_node: cst.If) -> None:
        frame = self.frames[-1]
        body = original_node.body
        statements = body.body if type(body) in (cst.IndentedBlock, cst.SimpleStatementSuite) else ()
        if (
            frame.node is not None
            and not frame.guards
            and original_node.orelse is None
            and main_process_test(original_node.test) is False
            and _only_returns(statements)
        ):
            frame.early = original_node  # `if not is_main_process(): return`

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._enter_block(node)

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self._leave_block(original_node)

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self._enter_block(node)

    def leave_SimpleStatementSuite(self, original_node: cst.SimpleStatementSuite) -> None:
        self._leave_block(original_node)

    def _enter_block(self, node: cst.CSTNode) -> None:
        guard = self._guard_blocks.get(id(node))
        if guard is not None:
            self.frames[-1].guards.append(guard)
        doubt = self._doubt_blocks.get(id(node))
        if doubt is not None:
            self.frames[-1].doubts.append(doubt)

    def _leave_block(self, node: cst.CSTNode) -> None:
        if id(node) in self._guard_blocks:
            self.frames[-1].guards.pop()
        if id(node) in self._doubt_blocks:
            self.frames[-1].doubts.pop()

    def _main_only(self) -> Optional[cst.If]:
        """The `if` that makes the code here run on the main process only (None: every rank runs it)."""
        frame = self.frames[-1]
        return frame.guards[-1] if frame.guards else frame.early

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        kind = type(target)
        if type(node.value) is cst.Call and kind in (cst.Name, cst.Attribute):
            dotted = dotted_name(target)
            if dotted is not None:
                self._assigned[id(node.value)] = dotted
        items = self.frames[-1].items
        if kind is cst.Subscript and type(target.value) is cst.Name and len(target.slice) == 1:
            index = target.slice[0].slice
            key = literal(index.value) if type(index) is cst.Index else NOT_LITERAL
            items.setdefault(target.value.value, []).append((key, node.value))
        elif kind is cst.Name and target.value in items:
            del items[target.value]  # rebound: a new dict

    # -- calls ------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        function_type = type(func)
        attribute = func.attr.value if function_type is cst.Attribute else None
        if attribute == "load_state_dict":
            if node.args:
                if self._is_optimizer(func.value) or _optimizer_item(node.args[0].value):
                    self._load(node, func.value)
                else:
                    parameter = self._parameter(func.value, spread=True)
                    if parameter is not None:
                        self._load(node, func.value, parameter)
            return
        qualified = self.context.call_name(node)
        if qualified is None and type(func) is cst.Name:
            qualified = loader_name(self.context, node)  # a DataLoader subclass of this file
        if qualified is None and attribute is not None and self._library_checkpoint(node, attribute):
            return
        key = self.collector.key
        target = self.collector.call_target(node)
        if self._main_only() is not None and _first_party(self.context, target):
            _add(self.facts.guarded_calls, key, target)
        if qualified is not None:
            captured = CAPTURES.get(qualified)
            if captured is not None:
                for kind in captured:
                    _add(self.facts.captures, key, kind)
            elif qualified == "torch.save":
                self._save(node)
                return
            elif qualified in SAMPLERS or is_dataloader(qualified) or qualified in STATEFUL_LOADERS:
                self._loader_generator(node, qualified, key)
        elif attribute == "get_state" and not node.args:
            # `g.get_state()`: a generator object's state (`np.random.get_state` resolves above).
            receiver = dotted_name(func.value)
            _add(self.facts.captures, key, GENERATOR + (receiver or ""))
        if self.frames[-1].loops and node.args:
            self._loop_seed(node, qualified, attribute)
        if node.args and qualified not in CAPTURES:
            target = self.collector.call_target(node)
            if _first_party(self.context, target):
                self._handed(node, target)

    def _loader_generator(self, node: cst.Call, qualified: str, key: str) -> None:
        """The generator a loader or random sampler draws its order from, as the checkpoint can name
        it: `g`, or `loader.generator` for one built in the call (TDL101/TDL104's fix writes
        `generator=torch.Generator().manual_seed(...)`), or, for a shuffling one without a generator
        yet, `loader.generator` as the fix that gives it one will make it."""
        generator = arg_value(node, "generator", GENERATOR_POSITION.get(qualified))
        name = dotted_name(generator) if generator is not None else None
        if name is not None:
            _add(self.facts.loader_generators, key, name)
            return
        bound = self._assigned.get(id(node))
        if bound is None or opaque_keywords(node):
            return
        if generator is not None:
            if literal(generator) is NOT_LITERAL:
                _add(self.facts.loader_generators, key, bound + ".generator")
        elif qualified in RANDOM_SAMPLERS or loader_shuffles(node, self.context.call_name, qualified) == "shuffle":
            _add(self.facts.fix_generators, key, bound + ".generator")

    def _loop_seed(self, node: cst.Call, qualified: Optional[str], attribute: Optional[str]) -> None:
        """A seeding call in a loop body from a value that changes (`torch.manual_seed(seed + step)`):
        each step or epoch then draws from streams that a resumed run draws from too."""
        if qualified is not None:
            helper = self.helpers.get(qualified)
            covered = helper_covers(helper, node) if helper is not None else self.config_helpers.get(qualified)
            last = qualified.rsplit(".", 1)[-1]
            if not covered and "seed" not in last.lower():
                return
        elif attribute == "manual_seed":
            covered = None
        else:
            spelled = attribute if attribute is not None else (node.func.value if type(node.func) is cst.Name else "")
            if "seed" not in spelled.lower():
                return
            covered = None
        if all(literal(arg.value) is not NOT_LITERAL for arg in node.args):
            return
        key = self.collector.key
        if covered:
            for kind in covered:
                if kind in ("torch", "random", "numpy"):
                    _add(self.facts.loop_seeds, key, kind)
                if kind in ("torch", "cuda"):
                    _add(self.facts.loop_seeds, key, "cuda")
        elif qualified is None and attribute == "manual_seed":
            receiver = dotted_name(node.func.value)
            if receiver is not None:
                _add(self.facts.loop_seeds, key, GENERATOR + receiver)
        else:
            target = self.collector.target_of(node.func, qualified)
            if target:
                _add(self.facts.loop_seeds, key, CALL + target)

    def _library_checkpoint(self, node: cst.Call, attribute: str) -> bool:
        """`accelerator.save_state(dir)`: a checkpoint that stores the global RNG states itself
        (no fix: there is no dict to add to); `accelerator.load_state(dir)`: training resumes."""
        for library in accelerators():
            if attribute not in (library.save_state, library.load_state):
                continue
            if self.collector.accelerator_on_cpu(node.func.value, library) is None:
                continue
            spelled = dotted_name(node.func) or attribute
            if attribute == library.load_state:
                receiver = dotted_name(node.func.value) or library.receiver
                load = OptimizerLoad(self.collector.key, 0, receiver, bound=self._bound_here(), method=attribute)
                self._loads.append((load, node))
                self.facts.loads.append(load)
                return True
            site = CheckpointSite(self.collector.key, 0, 0, 0, 0, 0, 0, saved_by=spelled, carries=list(library.states))
            self._saves.append((site, node, None, None, True))  # "key taken": no entry to add
            self.facts.checkpoints.append(site)
            return True
        return False

    # -- optimizers ---------------------------------------------------------------------------
    def _is_optimizer(self, node: cst.BaseExpression) -> bool:
        """An optimizer: a name or attribute ending in `optimizer`/`optim`, or bound to a
        `torch.optim` class or a known factory."""
        dotted = dotted_name(node)
        if dotted is None:
            return False
        if dotted.rsplit(".", 1)[-1].lower().endswith(("optimizer", "optim")):
            return True
        scopes = self.context.scopes
        values = scopes.values(dotted, module_too=True) if type(node) is cst.Name else scopes.expression_values(node)
        for value in values:
            if type(value) is cst.Call and optimizer_class(self.resolver.qualified_name(value.func)):
                return True
        return False

    def _optimizer_state(self, key: object, value: cst.BaseExpression, depth: int = 0) -> bool:
        """A checkpoint value holding an optimizer's `state_dict()` (directly or through a name)."""
        if type(value) is cst.Name and depth == 0:
            bound = self.context.scopes.value(value.value)
            return bound is not None and self._optimizer_state(key, bound, 1)
        if type(value) is not cst.Call or type(value.func) is not cst.Attribute or value.func.attr.value != "state_dict":
            return False
        return self._is_optimizer(value.func.value) or (isinstance(key, str) and "optim" in key.lower())

    # -- saves and loads -------------------------------------------------------------------------
    def _save(self, node: cst.Call) -> None:
        obj = arg_value(node, "obj", 0)
        if obj is None:
            # `torch.save(*args, **kwargs)` in `def save_on_master(*args, **kwargs)`: the caller's first argument.
            first = node.args[0] if node.args else None
            if first is not None and first.star == "*" and type(first.value) is cst.Name:
                parameter = self.frames[-1].parameters.get(first.value.value)
                if _star(parameter) and self._unbound(first.value.value):
                    _add(self.facts.parameter_saves, self.collector.key, parameter._replace(rest=False))
                    self._guarded_saver()
            return
        if not self._checkpoint(node, obj, None):
            parameter = self._parameter(obj)
            if parameter is not None and not parameter.rest:
                _add(self.facts.parameter_saves, self.collector.key, parameter)
                self._guarded_saver()

    def _guarded_saver(self) -> None:
        if self._main_only() is not None and self.collector.key not in self.facts.guarded_savers:
            self.facts.guarded_savers.append(self.collector.key)

    def _handed(self, node: cst.Call, target: str) -> None:
        """A call of a first-party function: the checkpoint dicts, optimizers and parameters it hands over."""
        position = 0
        frame = self.frames[-1]
        # A parameter passed on counts only to a function named for saving (`save_on_master`): passing
        # parameters on is what most functions do, and the second level is all that is followed.
        forwards = frame.node is not None and "save" in target.rsplit(".", 1)[-1].lower()
        for arg in node.args:
            if arg.star == "**":
                continue
            value = arg.value
            keyword = arg.keyword.value if arg.keyword is not None else None
            at = None if keyword is not None else position
            if arg.star == "*":
                if forwards and type(value) is cst.Name:
                    parameter = frame.parameters.get(value.value)
                    if _star(parameter) and self._unbound(value.value):
                        _add(self.facts.forwards, self.collector.key, Forward(parameter, target, position, None))
                break  # positions after `*args` are unknown
            if keyword is None:
                position += 1
            kind = type(value)
            if kind is cst.Name or kind is cst.Attribute:
                if self._is_optimizer(value):
                    argument = OptimizerArgument(self.collector.key, target, at, keyword, dotted_name(value) or "optimizer")
                    if argument not in self.facts.optimizer_arguments:
                        self.facts.optimizer_arguments.append(argument)
                if forwards and kind is cst.Name:
                    parameter = self._parameter(value)
                    if parameter is not None:
                        _add(self.facts.forwards, self.collector.key, Forward(parameter, target, at, keyword))
                        continue
            if kind is cst.Dict or kind is cst.Name or (kind is cst.Call and _dict_call(value, self.context)):
                spelling = dotted_name(node.func) or _code(self.context, node.func)
                self._checkpoint(node, value, Through(target, at, keyword, spelling))

    def _unbound(self, name: str) -> bool:
        """A name bound only as the function's parameter so far."""
        return self.context.scopes.values(name) == [None]

    def _parameter(self, value: cst.BaseExpression, spread: bool = False) -> Optional[Parameter]:
        """The parameter of the enclosing function a name holds (with `spread`, also a value taken
        from `*args` / `**kwargs` by a loop)."""
        if type(value) is not cst.Name:
            return None
        frame = self.frames[-1]
        name = value.value
        if spread and name in frame.spread:
            return frame.spread[name]
        parameter = frame.parameters.get(name)
        if parameter is None or _star(parameter) or (parameter.rest and parameter.position is None):
            return None
        return parameter if self._unbound(name) else None

    def _checkpoint(self, node: cst.Call, obj: cst.BaseExpression, through: Optional[Through]) -> bool:
        """A checkpoint: `obj` is a dict display or a `dict(...)` call, or a name bound to one in this
        function (with its item assignments so far), that holds an optimizer's state."""
        name = None
        items: List[Tuple[object, cst.BaseExpression]] = []
        kind = type(obj)
        if kind is cst.Dict or kind is cst.Call:
            display = obj
        elif kind is cst.Name:
            display = self.context.scopes.value(obj.value)
            name = obj.value
            items = self.frames[-1].items.get(name, [])
        else:
            return False
        if type(display) is cst.Dict:
            pairs = [(literal(e.key), e.value) for e in display.elements if type(e) is cst.DictElement]
            elements: List[Any] = list(display.elements)
            strings = [e.key for e in display.elements if type(e) is cst.DictElement and type(e.key) is cst.SimpleString]
        elif type(display) is cst.Call and _dict_call(display, self.context):
            pairs = [(arg.keyword.value, arg.value) for arg in display.args if arg.keyword is not None]
            elements = list(display.args)
            strings = []
        else:
            return False
        in_display = any(self._optimizer_state(key, value) for key, value in pairs)
        in_items = any(self._optimizer_state(key, value) for key, value in items)
        if not (in_display or in_items):
            return False
        site = CheckpointSite(self.collector.key, 0, 0, 0, 0, 0, 0, bound=self._bound_here(), through=through, name=name)
        guard = self._main_only()
        if guard is None and self.frames[-1].doubts:
            site.doubtful = _code(self.context, self.frames[-1].doubts[-1].test)
        if guard is not None:
            site.rank_guard = RankGuard(0, _code(self.context, guard.test), early=_is_early(guard))
            self._guards.append((site.rank_guard, guard, display if name is not None else None))
        calls = _CallCollector()
        walker = BatchedWalker([calls])
        for _, value in pairs + items:
            walker.walk(value)
            if type(value) is cst.Name:
                # `"rng_state": rng_state` of `rng_state = rng_state_dict()`, gathered before a main-process test.
                bound = self.context.scopes.value(value.value)
                if type(bound) is cst.Call:
                    walker.walk(bound)
        for call in calls.calls:
            if self.context.call_name(call) in CAPTURES:
                continue
            target = self.collector.target_of(call.func)
            if target:
                names = [d for d in (dotted_name(arg.value) for arg in call.args if not arg.star) if d]
                site.helper_calls.append((target, names))
        keys = [key for key, _ in pairs + items]
        if not strings:
            strings = _strings(node)
        if strings and strings[0].value.lstrip("rbuRBU").startswith("'"):
            site.quote = "'"
        by_item = name is not None and (in_items and not in_display or not elements)
        site.key_taken = KEY in keys
        self._saves.append((site, node, display, name if by_item else None, site.key_taken))
        (self.facts.wrapped if through is not None else self.facts.checkpoints).append(site)
        return True

    def _load(self, node: cst.Call, receiver: cst.BaseExpression, parameter: Optional[Parameter] = None) -> None:
        if parameter is not None:
            # Restored where the project phase finds the caller that passes an optimizer (no restore
            # edit: the helper loads whatever it is given, often in a loop over its arguments).
            load = OptimizerLoad(self.collector.key, 0, dotted_name(receiver) or "optimizer", parameter=parameter)
            self._loads.append((load, node))
            self.facts.parameter_loads.append(load)
            return
        load = OptimizerLoad(self.collector.key, 0, dotted_name(receiver) or "optimizer", bound=self._bound_here())
        value = node.args[0].value
        scopes = self.context.scopes
        if type(value) is cst.Name:
            value = scopes.value(value.value) or value
        base = None
        if type(value) is cst.Subscript and type(value.value) is cst.Name:
            base = value.value.value
        elif type(value) is cst.Call and type(value.func) is cst.Attribute and type(value.func.value) is cst.Name:
            base = value.func.value.value if value.func.attr.value == "get" else None  # `checkpoint.get("optimizer")`
        if base is not None:
            bound = scopes.value(base)
            if type(bound) is cst.Call and self.context.call_name(bound) == "torch.load":
                load.checkpoint = base
        self._loads.append((load, node))
        self.facts.loads.append(load)

    def _bound_here(self) -> List[str]:
        """Names bound so far in the enclosing functions (module names are added in `finish`)."""
        names: List[str] = []
        for scope in self.resolver.scopes[1:]:
            if scope.kind == "function":
                names.extend(scope.bindings)
        return sorted(set(names))

    # -- the end: lines and the fix's offsets ----------------------------------------------------
    def finish(self) -> Optional[ResumeFacts]:
        facts_ = self.facts
        if not (
            facts_.checkpoints
            or facts_.loads
            or facts_.captures
            or facts_.loader_generators
            or facts_.loop_seeds
            or facts_.wrapped
            or facts_.parameter_saves
            or facts_.forwards
            or facts_.parameter_loads
            or facts_.optimizer_arguments
            or facts_.fix_generators
            or facts_.guarded_savers
            or facts_.guarded_calls
        ):
            return None
        if facts_.checkpoints or facts_.loads or facts_.wrapped or facts_.parameter_loads:
            self._locate()
        self.collector.summary.resume = facts_
        return facts_

    def _locate(self) -> None:
        context = self.context
        facts_ = self.facts
        facts_.module_names = sorted(self.resolver.module_final)
        facts_.indent_unit = context.module.default_indent
        for site, node, display, item_name, key_taken in self._saves:
            line, column, end_line, end_column = context.node_range(node)
            site.line, site.column, site.end_line, site.end_column = line, column + 1, end_line, end_column + 1
            site.start_offset, site.end_offset = context.node_offsets(node)
            if not key_taken:
                site.entry = entry_edit(context, node, display, item_name, site.quote)
        for guard, node, display in self._guards:
            line, column, _, _ = context.node_range(node)
            guard.line = line
            text = context.lines.line_text(line)
            if text[:column].strip():
                continue  # the `if` shares its line with other code
            guard.offset, guard.indent = context.lines.offset(line, 0), text[:column]
            if display is not None:
                start, end = context.node_offsets(node)
                built = context.node_offsets(display)[0]
                # After an early `if not main: return`, what follows it runs on the main process only.
                guard.display_inside = start <= built and (built < end or _is_early(node))
        for load, node in self._loads:
            line, column, end_line, end_column = context.node_range(node)
            load.line = line
            load.span = (column + 1, end_line, end_column + 1, *context.node_offsets(node))
            if load.parameter is not None:
                continue
            text = context.lines.line_text(line)
            after = context.lines.line_text(end_line)[end_column:].strip()
            if not text[:column].strip() and (not after or after.startswith("#")) and end_line < len(context.lines.starts):
                load.indent = text[:column]
                load.restore_offset = context.lines.offset(end_line + 1, 0)
        if facts_.checkpoints or facts_.wrapped:
            place_helpers(context, facts_)


def _only_returns(statements) -> bool:
    """A block that only returns (`return`, `return None`)."""
    found = False
    for statement in statements:
        small = statement.body if type(statement) is cst.SimpleStatementLine else (statement,)
        for item in small:
            if type(item) is not cst.Return or (item.value is not None and literal(item.value) is not None):
                return False
            found = True
    return found


def _is_early(node: cst.If) -> bool:
    """`if not is_main_process(): return`: the code after it, not in it, runs on the main process only."""
    return node.orelse is None and main_process_test(node.test) is False


def _optimizer_item(value: cst.BaseExpression) -> bool:
    """`checkpoint["optimizer"]`, `state.get("optim_state")`: an item whose key names an optimizer."""
    key = None
    if type(value) is cst.Subscript and len(value.slice) == 1 and type(value.slice[0].slice) is cst.Index:
        key = literal(value.slice[0].slice.value)
    elif type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value == "get" and value.args:
        key = literal(value.args[0].value)
    return isinstance(key, str) and "optim" in key.lower()


def _dict_call(node: cst.Call, context: "FileContext") -> bool:
    """`dict(epoch=..., optimizer=optimizer.state_dict())`."""
    return type(node.func) is cst.Name and node.func.value == "dict" and context.call_name(node) == "builtins.dict"


class _StringCollector(cst.BatchableCSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.strings: List[cst.SimpleString] = []

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.strings.append(node)


def _strings(node: cst.CSTNode) -> List[cst.SimpleString]:
    """The string literals in a call (the quote style of a checkpoint without string keys)."""
    collector = _StringCollector()
    BatchedWalker([collector]).walk(node)
    return collector.strings


# -- the project phase: first-party helpers ------------------------------------------------------
# (`project` is the model's `Project`: `resolve(file, target)` names the first-party functions a call target is.)
Node = Tuple[str, str]


def saves_argument(
    project: Any, resume: Dict[str, ResumeFacts], node: Node, position: Optional[int], keyword: Optional[str], depth: int = 0
) -> bool:
    """Whether the function `node` `torch.save`s the argument a call passes it at `position` or by
    `keyword` (itself, or through one more first-party function it passes the parameter to)."""
    facts = resume.get(node[0])
    if facts is None:
        return False
    if any(parameter.takes(position, keyword) for parameter in facts.parameter_saves.get(node[1], ())):
        return True
    if depth >= 1:
        return False
    for forward in facts.forwards.get(node[1], ()):
        if forward.parameter.takes(position, keyword):
            out = forward.parameter.forwarded(position, forward.position)
            for callee in project.resolve(node[0], forward.target):
                if saves_argument(project, resume, callee, out, forward.keyword, depth + 1):
                    return True
    return False


def wrapped_checkpoints(project: Any, resume: Dict[str, ResumeFacts], display: str) -> List[Tuple[CheckpointSite, List[Node]]]:
    """The dicts a file hands to a first-party function that saves them: (site, those functions)."""
    found = []
    for site in resume[display].wrapped:
        through = site.through
        savers = [
            node
            for node in project.resolve(display, through.target)
            if saves_argument(project, resume, node, through.position, through.keyword)
        ]
        if savers:
            found.append((site, savers))
    return found


def optimizer_loads(project: Any, resume: Dict[str, ResumeFacts]) -> List[Tuple[str, OptimizerLoad]]:
    """Every optimizer load: the direct ones, and the loads of a helper's parameter that a caller
    hands an optimizer (`via` that caller). `load_node` says which function must be reached."""
    found: List[Tuple[str, OptimizerLoad]] = []
    seen: Set[Tuple[str, int, Tuple[str, str]]] = set()
    for display, file_facts in sorted(resume.items()):
        found.extend((display, load) for load in file_facts.loads)
        for argument in file_facts.optimizer_arguments:
            for path, key in project.resolve(display, argument.target):
                helper = resume.get(path)
                for load in helper.parameter_loads if helper is not None else ():
                    via = (display, argument.key)
                    if (
                        load.key == key
                        and load.parameter.takes(argument.position, argument.keyword)
                        and (path, load.line, via) not in seen
                    ):
                        seen.add((path, load.line, via))
                        found.append((path, OptimizerLoad(key, load.line, argument.receiver, parameter=load.parameter, via=via)))
    return found


def load_node(path: str, load: OptimizerLoad) -> Node:
    """The function whose reach makes the load run: its caller for a helper's parameter."""
    return load.via if load.via is not None else (path, load.key)
