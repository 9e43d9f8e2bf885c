"""SummaryCollector: fills a file's `FileSummary` during the shared traversal
(the same walk as the file rules): definitions, calls, draws, seeds, CUDA
work, catalog operations and DataLoaders, per function.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Container, Dict, FrozenSet, List, NamedTuple, Optional, Sequence, Set, Tuple

import libcst as cst

from torchdet_lint.core.call_edits import with_keywords
from torchdet_lint.core.catalog import RAISES
from torchdet_lint.core.grad_uses import used_only_without_grad
from torchdet_lint.core.names import (
    NOT_LITERAL,
    arg_value,
    canonical,
    display_length,
    dotted_name,
    find_arg,
    has_star_args,
    literal,
    opaque_keywords,
)
from torchdet_lint.core.operations import OperationMatch, backward_only_module, gradient_parameters, match_operations
from torchdet_lint.core.registrations import LIBRARY_METHODS, stores_functions
from torchdet_lint.core.source import block_top_line
from torchdet_lint.core.traversal import contains, sub_nodes
from torchdet_lint.model.arguments import MAX_CALLS as MAX_ARGUMENT_CALLS
from torchdet_lint.model.arguments import (
    Passed,
    call_arguments,
    expected_to_raise,
    open_rebound,
    parameter_table,
    project_directory,
)
from torchdet_lint.model.facts import (
    BACKWARD_METHODS,
    BENCHMARK_SETTINGS,
    COMMAND_RUNNERS,
    CONTAINERS,
    CONVOLUTION_RE,
    DATA_LOADING,
    DEVICE_CALLS,
    DEVICE_KEYWORDS,
    DICT_WEIGHT_LOADERS,
    DISTRIBUTION_SAMPLES,
    EVAL_PROOF_DROPOUTS,
    GRADIENT_SCALERS,
    LAMBDA_CALLERS,
    LIGHTNING_CLI,
    LIGHTNING_LOADER_HOOKS,
    RESEEDED,
    RUNNER_METHODS,
    RUNNERS,
    TRAINER_METHODS,
    TRAINING_CALLS,
    TRAINING_LOOPS,
    TRAINING_METHODS,
    accelerators,
    builds_from_module_dict,
    builds_optimizer,
    config_helpers,
    draw_kind,
    entry_configured,
    eval_proof_dropout,
    facts,
    fresh_tensor,
    helper_covers,
    is_cuda_work,
    is_dataloader,
    is_module_base,
    is_setup_call,
    loader_name,
    loader_position,
    loader_shuffles,
    loads_pretrained_weights,
    mentions_cuda,
    method_draw_kind,
    own_worker_init_loaders,
    reseeds_at_random,
    seeding_methods,
    torch_device_call,
)
from torchdet_lint.model.inductor import COVER_EXPLICIT, COVER_FLAG, inductor_facts
from torchdet_lint.model.makers import COMMON_METHODS, MAX_CANDIDATES, Makers, unwrap_self_returning
from torchdet_lint.model.named import (
    BUILD_METHODS,
    COMMAND_DECORATORS,
    CONFIG,
    CONFIG_INSTANTIATORS,
    CONFIG_LOADERS,
    DYNAMIC,
    IMPORT,
    IMPORTERS,
    LOCATORS,
    MAX_DYNAMIC_CANDIDATES,
    METHOD,
    MODULE,
    NAME_CONSTRUCTORS,
    NAMED,
    NAMED_KEYS,
    SET_DEFAULTS,
    TEST_METHOD_PREFIXES,
    TEST_RUNNERS,
    dotted_literal,
    seed_by_harness,
)
from torchdet_lint.model.options import (
    MAX_OPTION_CONDITIONS,
    OPTION_SEPARATOR,
    attribute_writes,
    evaluated_reads,
    parsed_options,
)
from torchdet_lint.model.parameters import generator_given
from torchdet_lint.model.processes import (
    FORK,
    INDEXING_LAUNCHERS,
    LAUNCHERS,
    POOL_METHODS,
    PROCESS_CLASSES,
    REMOTE_EXECUTORS,
    process_start,
    sets_spawn_start,
)
from torchdet_lint.model.scan import ast_anchors, function_spans, names_bound_in
from torchdet_lint.model.summary import (
    LAMBDA_KEY,
    MAIN_KEY,
    MAX_REGISTRY_MEMBERS,
    MAX_SITES,
    MODULE_KEY,
    RAISING_ALWAYS,
    RAISING_STRICT,
    REGISTRY_MEMBER,
    ClassSummary,
    DatasetRef,
    FileSummary,
    FunctionSummary,
    FunctionTop,
    LoaderSite,
    RngAttribute,
    Site,
    Spawn,
    WorkerFunction,
    epoch_receivers_bound_elsewhere,
)

if TYPE_CHECKING:  # pragma: no cover
    from torchdet_lint.core.context import FileContext


class _EveryName:
    """The container that holds every name (`_star_bound` of a file without a first-party star import)."""

    def __contains__(self, name: object) -> bool:
        return True


_EVERY_NAME = _EveryName()

# A file that mentions none of these (nor what the rules declare, `BaseRule.prefilter_words`)
# holds no summary fact and no finding of any file rule, so it is never parsed (the byte scan
# is far cheaper than a LibCST parse).
SUMMARY_WORDS = (
    "torch",
    "random",
    "numpy",
    "DataLoader",
    "lightning",
    "transformers",
    "accelerate",
    "PYTHONHASHSEED",
    "mmengine",
    "CUBLAS",
    "seed",
    "Dataset",
    "load_state_dict",
    # Process starts: a launcher that only imports
    # `multiprocessing` starts a spawned entry point, reported at its `Process(...)`.
    "multiprocessing",
    "ProcessPool",
    # A launcher that hands the training to a job (submitit) holds that job's fixes.
    "submitit",
    # Objects built from names (hydra, hyperpyyaml, dnnlib, importlib, jsonargparse): a launcher
    # that only instantiates a configured trainer mentions no torch word, and its reach is
    # what the run does.
    "instantiate",
    "hyperpyyaml",
    "_by_name",
    "import_module",
    "_target_",
    "class_path",
    "locate",
)
_ENVIRON_CALLS = frozenset({"os.environ.setdefault", "os.environ.update"})


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


# Calls of one first-party target whose arguments are kept per calling function (`call_gradients`).
MAX_GRADIENT_CALLS = 16


class _OptionFrame(NamedTuple):
    """A function's view of command-line namespaces (`model/options.py`)."""

    if_base: int  # `if` statements and conditional expressions enclosing the function itself
    ifexp_base: int
    parameters: Dict[str, int]  # parameter -> position (the receiver of a method not counted; -1 keyword-only)
    namespaces: Dict[str, FrozenSet[str]]  # names bound to a fully visible parser's `parse_args()` -> its options
    scope: Optional[cst.CSTNode]  # the function (None: the module)
    parameter_sites: List[Site]  # sites whose option is on a parameter, undone if the body binds it again
    records: List[Dict[str, str]]  # `call_options` records made here, likewise


class _CallFacts(NamedTuple):
    """One call as every part of `SummaryCollector.visit_Call` reads it."""

    node: cst.Call
    func: cst.BaseExpression
    qualified: Optional[str]
    attribute: Optional[str]  # `x.attribute(...)`: exact type tests, this is a hot path
    function: FunctionSummary
    seen: Set[str]
    index: int  # the call's number in the file, for `site`
    target: Optional[str]
    loader: Optional[str]  # the name read as a DataLoader's (a DataLoader subclass of this file too)
    site: Callable[[str], Site]


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
        self.summary = FileSummary(
            path=context.path,
            module_name=context.module_name,
            imports_torch=context.imports_torch,
            is_package=context.resolver.is_package,
            configured_entry=entry_configured(context.settings, context.path),
        )
        self.calls_seen = 0
        self.assigns_seen = 0
        # The calls and assignments in the order visited: on the `ast`-built tree a waiting
        # site's line is its node's own (on LibCST's, `_lines` pairs them with `ast`'s).
        self.visited: Dict[str, List[cst.CSTNode]] = {"call": [], "assign": []}
        # Per node, memoised: what `call_target` and `def_key` answer, whichever collector of the
        # shared walk asks first (the summary collector itself, or a fact collector).
        self._call_targets: Dict[int, Optional[str]] = {}
        self._def_keys: Dict[int, str] = {}
        self._imports_taken = 0
        self.pending: List[Tuple[Any, str, int]] = []  # (object with a `line`, "call" | "assign", index)
        # The function key stack: (key, class name, calls seen, local variable types).
        self.keys: List[Tuple[str, Optional[str], Set[str], Dict[str, str]]] = [(MODULE_KEY, None, set(), {})]
        self.class_stack: List[Optional[str]] = []
        self.module_statement_depth = 0
        self.main_guard: Optional[cst.If] = None
        self.in_main = False
        self.loader_calls: List[Tuple[cst.Call, Optional[DatasetRef], str]] = []
        self.trainer_loaders: Set[int] = set()  # ids of DataLoader calls handed to a Lightning Trainer
        self.function_nodes: Dict[str, cst.FunctionDef] = {}
        self.worker_init_names: Set[str] = set()
        # Local datasets: names bound in the current function -> the expression bound.
        self.bound_expressions: List[Dict[str, cst.BaseExpression]] = [{}]
        self.module_defs: Set[str] = set()
        self.module_rng_names: Set[str] = set()
        self.nested: Dict[str, Dict[str, str]] = {}  # function key -> its nested functions' keys
        self.running_lambdas: Set[int] = set()
        self.spawn_calls: List[Tuple[cst.Call, Spawn]] = []  # placed in `finish`
        # Operations whose catalog conditions all need a backward pass, where whether a gradient
        # flows is decided at the end of the file: modules bound to a name, calls in a function
        # that may only run without gradient: (where, site, the binding or function).
        self.bound_modules: List[Tuple[FunctionSummary, Site, Tuple[Optional[str], str]]] = []
        # Loss modules reported in profile strict only, unless a call of theirs has spatial input.
        self.spatial_undecided: List[Tuple[FunctionSummary, int, cst.Call, OperationMatch, bool]] = []
        # Enclosing `if` statements: [node, in its else branch]; a seed guarded by one is copied with it.
        self.ifs: List[List[Any]] = []
        # Raising operations whose gradient question is decided at the end of the file, as TDL202
        # decides it: (function, call index, the function's identity, as found, as without a gradient).
        self.raising_undecided: List[
            Tuple[FunctionSummary, int, Any, Optional[OperationMatch], Optional[OperationMatch], str]
        ] = []
        self.makers = Makers(context.scopes, context.first_party)
        self.attribute_calls: List[Tuple[FunctionSummary, str, Set[str]]] = []  # method calls on values, for `args.func(...)`
        self.bound_to: Dict[str, Set[str]] = {}  # name -> the calls any function of the file binds it to
        self.star_bound: Optional[Tuple[int, Container[str]]] = None  # see `_star_bound`
        self.runs_tests = False  # the main block calls a test runner
        self.test_runner: Optional[Tuple[Site, str]] = None  # its first call, and how it is spelled
        self.module_locals: Dict[str, str] = {}  # names bound to `importlib.import_module("pkg.mod")`
        # Per function: (the `if` depth at its start, its parameters that default to a false value).
        self.flag_parameters: List[Tuple[int, Dict[str, int]]] = [(0, {})]
        self.option_frames: List[_OptionFrame] = [_OptionFrame(0, 0, {}, {}, None, [], [])]
        self.ifexps: List[cst.IfExp] = []  # enclosing conditional expressions
        self.plain_calls: Set[Tuple[str, str]] = set()  # (function key, target): a call passing no namespace
        # id of a call that drew from torch -> (its site, the branch depth it was made at)
        self.construction_sites: Dict[int, Tuple[Site, int]] = {}
        self.construction_depths: Dict[int, int] = {}  # id of a first-party call -> its branch depth
        self.expected_to_raise: Set[int] = set()  # ids of calls a `with pytest.raises(...)` expects to raise
        self.loops = 0  # enclosing `for`/`while`/`try` statements (with `self.ifs`: the branch depth)
        self.seeded_objects: Set[int] = set()  # ids of constructions whose objects `set_random_state` seeds
        self.seeded_names: Optional[FrozenSet[str]] = None  # names `X` of `X.set_random_state(...)` in the file
        self.accelerators_on_cpu: Dict[str, bool] = {}  # library -> every accelerator the file builds is on the CPU
        # Per function: its parameter table and the calls recorded with a parameter passed on.
        self.argument_frames: List[Tuple[Dict[str, Any], List[Tuple[str, int]]]] = [({}, [])]

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
        self._aliases(node.body)
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

    def _aliases(self, body: Sequence[cst.BaseStatement]) -> None:
        """`Model = DetectionModel` at module level: the final binding of a name to one of this
        file's functions or classes (or to such an alias), as the resolver reads imports."""
        aliases = self.summary.aliases
        for statement in body:
            if type(statement) is cst.SimpleStatementLine:
                for small in statement.body:
                    if type(small) is not cst.Assign:
                        continue
                    value = small.value
                    local = (
                        value.value
                        if type(value) is cst.Name and (value.value in self.module_defs or value.value in aliases)
                        else None
                    )
                    for target in small.targets:
                        if type(target.target) is cst.Name:
                            name = target.target.value
                            if local is not None and name != local:
                                aliases[name] = aliases.get(local, "." + local)
                            else:
                                aliases.pop(name, None)
            elif type(statement) in (cst.FunctionDef, cst.ClassDef):
                aliases.pop(statement.name.value, None)

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
        if self.ifs and self.ifs[-1][0].orelse is node:
            self.ifs[-1][1] = True  # an `elif`: the outer test does not hold here
        self.ifs.append([node, False])
        self._enter_compound(node)

    def visit_Else(self, node: cst.Else) -> None:
        if self.ifs:
            self.ifs[-1][1] = True

    def leave_If(self, original_node: cst.If) -> None:
        if original_node is self.main_guard:
            self.keys.pop()
            self.in_main = False
            self.module_statement_depth -= 1
            return
        self.ifs.pop()
        self._leave_compound()

    def visit_For(self, node: cst.For) -> None:
        if self._at_module_level() and not self.in_main:
            self.summary.module_work = True
        self._enter_compound(node)
        self.loops += 1

    def leave_For(self, original_node: cst.For) -> None:
        self._leave_compound()
        self.loops -= 1

    def visit_While(self, node: cst.While) -> None:
        if self._at_module_level() and not self.in_main:
            self.summary.module_work = True
        self._enter_compound(node)
        self.loops += 1

    def leave_While(self, original_node: cst.While) -> None:
        self._leave_compound()
        self.loops -= 1

    def visit_Try(self, node: cst.Try) -> None:
        self._enter_compound(node)
        self.loops += 1

    def leave_Try(self, original_node: cst.Try) -> None:
        self._leave_compound()
        self.loops -= 1

    def visit_With(self, node: cst.With) -> None:
        self._enter_compound(node)
        raising = expected_to_raise(node, self.context.qualified_name)
        if raising is not None:
            self.expected_to_raise.add(id(raising))

    def leave_With(self, original_node: cst.With) -> None:
        self._leave_compound()

    # -- definitions -------------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        outer = self.class_stack[-1] if self.class_stack else None
        if self._at_module_level() or (len(self.keys) == 1 and outer is not None):
            # A class of the module, or nested in one's body (`Algo.Policy`): its methods are
            # functions of their own, run when called, not import-time code.
            name = f"{outer}.{node.name.value}" if outer else node.name.value
            bases = [t for t in (self._target(arg.value) for arg in node.bases if arg.keyword is None) if t]
            self.summary.classes[name] = ClassSummary(0, bases)
            if outer is None:
                self._decorators(node)
            self.class_stack.append(name)
        else:
            self.class_stack.append(None)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.class_stack.pop()

    # -- what the fact collectors of the walk ask (`BaseRule.collectors`) --------------------------
    def call_target(self, node: cst.Call) -> Optional[str]:
        """The target a call records (`FunctionSummary.calls`): a qualified name, or ".name" for
        this file's own code; None for a builtin or what cannot be named. Asked before or after
        this collector visits the call, the answer is the same (read off the enclosing state)."""
        key = id(node)
        if key not in self._call_targets:
            self._call_targets[key] = self._target(node.func, self.context.call_name(node))
        return self._call_targets[key]

    def def_key(self, node: cst.FunctionDef) -> str:
        """The key of the function a `def` makes (a method of a class defined in a function
        or the main block is part of that code: its key is the enclosing one). The same answer
        before or after this collector visits the `def`."""
        key = id(node)
        if key not in self._def_keys:
            name = node.name.value
            if len(self.keys) == 1 and not self.in_main:
                class_name = self.class_stack[-1] if self.class_stack else None  # every class here is named
                self._def_keys[key] = f"{class_name}.{name}" if class_name else name
            elif self.class_stack and self.class_stack[-1] is None:
                self._def_keys[key] = self.key
            else:
                self._def_keys[key] = f"{self.key}.<locals>.{name}"
        return self._def_keys[key]

    def target_of(self, node: cst.CSTNode, qualified: Any = NOT_LITERAL) -> Optional[str]:
        """A call target or reference (`call_target`'s answer for any name or attribute)."""
        return self._target(node, qualified)

    def accelerator_on_cpu(self, receiver: cst.BaseExpression, library: Any) -> Optional[bool]:
        """`_accelerator_on_cpu`, for the fact collectors."""
        return self._accelerator_on_cpu(receiver, library)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        name = node.name.value
        def_key = self.def_key(node)
        if len(self.keys) == 1 and not self.in_main:
            class_name = self.class_stack[-1] if self.class_stack else None  # every class here is named
            key = def_key
            if class_name:
                self.summary.classes[class_name].methods.append(name)
                if name == "__init__":
                    params = node.params
                    self.summary.classes[class_name].init_parameters = [
                        p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
                    ]
            else:
                self.summary.signatures[name] = _signature(node)
                self.function_nodes[name] = node
                self._decorators(node)
            if class_name:
                self.function_nodes[key] = node  # a launched object's `__call__` gets its fixes at its top
            static = any(dotted_name(d.decorator) == "staticmethod" for d in node.decorators)
            table = parameter_table(node, method=bool(class_name) and not static)
            self.summary.parameters[key] = table
            self.argument_frames.append((table, []))
            self.summary.function(key)
            self.keys.append((key, class_name, set(), self._annotated_parameters(node)))
            returned = self._annotation_target(node.returns.annotation) if node.returns is not None else None
            if returned is not None and self._first_party(returned):
                self.summary.function(key).returns.append(returned)  # `def build(self) -> Trainer:`
        elif self.class_stack and self.class_stack[-1] is None:
            # A method of a class defined in a function or the main block: part of that code.
            self.argument_frames.append(({}, []))
            self.keys.append((self.key, self.keys[-1][1], self.keys[-1][2], self.keys[-1][3]))
        else:
            # A nested function runs when it is called (a decorator's wrapper may never be):
            # a key of its own, reached through calls of its name in the enclosing code.
            outer = self.key
            key = def_key
            self.nested.setdefault(outer, {})[name] = key
            self.argument_frames.append(({}, []))
            self.summary.function(key)
            self.keys.append((key, self.keys[-1][1], set(), {**self.keys[-1][3], **self._annotated_parameters(node)}))
        self.bound_expressions.append({})
        method = bool(self.keys[-1][1]) and len(self.keys) == 2
        self.flag_parameters.append(self._flag_parameters(node, method))
        own = self.keys[-1][0] != self.keys[-2][0]  # not a method of a class in a function: a key of its own
        self.option_frames.append(
            _OptionFrame(len(self.ifs), len(self.ifexps), self._positions(node, method) if own else {}, {}, node, [], [])
        )

    def _annotated_parameters(self, node: cst.FunctionDef) -> Dict[str, str]:
        """Parameters annotated with a first-party class (`cfg: TrainConfig`): what they hold."""
        found: Dict[str, str] = {}
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.annotation is not None:
                target = self._annotation_target(param.annotation.annotation)
                if target is not None and self._first_party(target):
                    found[param.name.value] = target
        return found

    def _annotation_target(self, annotation: cst.BaseExpression, depth: int = 0) -> Optional[str]:
        """The class an annotation names: `Trainer`, `pkg.Trainer`, `"Trainer"`, `Optional[Trainer]`,
        `Trainer | None`; None for anything else (a container, a callable, a type variable)."""
        kind = type(annotation)
        if depth > 3:
            return None
        if kind is cst.Name or kind is cst.Attribute:
            return self._target(annotation)
        if kind is cst.SimpleString:
            text = literal(annotation)
            if isinstance(text, str) and text.replace(".", "").replace("_", "").isalnum():
                try:
                    return self._annotation_target(cst.parse_expression(text), depth + 1)
                except cst.ParserSyntaxError:
                    return None
            return None
        if kind is cst.Subscript and self.context.qualified_name(annotation.value) in ("typing.Optional", "typing.Union"):
            for element in annotation.slice:
                if type(element.slice) is cst.Index:
                    found = self._annotation_target(element.slice.value, depth + 1)
                    if found is not None and found != "None":
                        return found
            return None
        if kind is cst.BinaryOperation and type(annotation.operator) is cst.BitOr:
            return self._annotation_target(annotation.left, depth + 1) or self._annotation_target(annotation.right, depth + 1)
        return None

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        """`trainer: Trainer = ...` binds a local of that class; `model: ModelConfig` in a class body
        and `self.trainer: Trainer = ...` in a method, an attribute of it."""
        if node.value is not None:
            self._attribute_assignments([node.target], node.value)
            self._namespace_writes(node.target)
        if type(node.target) is cst.Name and self.class_stack and len(self.keys) == 1:
            self._optional_seed(node.target.value, node.value)
        target = self._annotation_target(node.annotation.annotation)
        if target is None or not self._first_party(target):
            return
        name = node.target
        class_name = self.class_stack[-1] if self.class_stack else None
        if type(name) is cst.Name:
            if len(self.keys) == 1 and class_name is not None and class_name in self.summary.classes:
                self.summary.classes[class_name].attribute_types[name.value] = target
            else:
                self.keys[-1][3][name.value] = target
        elif type(name) is cst.Attribute and type(name.value) is cst.Name and name.value.value == "self":
            owner = self.keys[-1][1]
            if owner in self.summary.classes:
                self.summary.classes[owner].attribute_types[name.attr.value] = target

    def _decorators(self, node: Any) -> None:
        """A module-level definition's first-party decorators (`@register`, `@register("acc")`):
        a registering one puts it in a registry (resolved by the project phase). A command of a
        click or typer group (`@cli.command()`) joins the group's registry: calling the group runs it."""
        found = []
        for decorator in node.decorators:
            expression = decorator.decorator
            func = expression.func if type(expression) is cst.Call else expression
            if type(func) is cst.Attribute and func.attr.value in COMMAND_DECORATORS and type(func.value) is cst.Name:
                group = func.value.value
                if group in self.module_defs or group in self.resolver.module_final:
                    members = self.summary.registries.setdefault(group, [])
                    if "." + node.name.value not in members:
                        members.append("." + node.name.value)
            target = self._target(expression.func if type(expression) is cst.Call else expression)
            if target and self._first_party(target):
                found.append(target)
        if found:
            self.summary.decorators[node.name.value] = found

    def _makers_of(self, expression: cst.BaseExpression) -> List[str]:
        return self.makers.of(expression, self._call_target, self._registry_member)

    def _call_target(self, func: cst.BaseExpression) -> Optional[str]:
        # Through the context's memo: the walk resolves the same call again when it visits it.
        return self._target(func, self.context.qualified_name(func))

    def _registry_member(self, registry: cst.BaseExpression) -> Optional[str]:
        """ "<registry>[]" for `REGISTRY[...]`: the project phase resolves it through
        `FileSummary.registries` and the registering decorators."""
        if type(registry) not in (cst.Name, cst.Attribute):
            return None
        target = self._target(registry)
        if target is None and type(registry) is cst.Name and self._module_name(registry.value):
            target = "." + registry.value  # `_METRICS[name](...)` in the registry's own module
        return f"{target}{REGISTRY_MEMBER}" if target else None

    def _module_name(self, name: str) -> bool:
        """A name of this module's own (not an import, not a local of the running function)."""
        return (
            name in self.resolver.module_final
            and self.resolver.module_final[name] is None
            and (self.key in (MODULE_KEY, MAIN_KEY) or not self.context.scopes.values(name))
        )

    def _first_party(self, target: str) -> bool:
        return target.startswith(".") or target.split(".", 1)[0] in self.context.first_party

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None and self.key not in (MODULE_KEY, MAIN_KEY, LAMBDA_KEY):
            returns = self.function.returns
            for made in self._makers_of(node.value):
                if made not in returns and len(returns) < MAX_CANDIDATES:
                    returns.append(made)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.argument_frames.append(({}, []))
        self.option_frames.append(_OptionFrame(len(self.ifs), len(self.ifexps), {}, {}, node, [], []))
        if id(node) in self.running_lambdas:
            self.keys.append(self.keys[-1])
        else:
            # Stored for later: its calls are nobody's (the key is never reached).
            self.keys.append((LAMBDA_KEY, self.keys[-1][1], set(), {}))

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.keys.pop()
        self.argument_frames.pop()
        self.option_frames.pop()

    # -- command-line options (`model/options.py`) ---------------------------------------------------
    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.ifexps.append(node)

    def leave_IfExp(self, original_node: cst.IfExp) -> None:
        self.ifexps.pop()

    @staticmethod
    def _positions(node: cst.FunctionDef, method: bool) -> Dict[str, int]:
        params = node.params
        positional = [*params.posonly_params, *params.params]
        found: Dict[str, int] = {}
        for index, param in enumerate([*positional, *params.kwonly_params]):
            if not (method and index == 0):  # the receiver: an object, not a namespace handed in
                found[param.name.value] = index - (1 if method else 0) if index < len(positional) else -1
        return found

    def _under_option(self, node: cst.Call, site: Site) -> None:
        """`Site.option` of a draw or loader here: the first option an enclosing test certainly reads
        on a namespace whose parser does not define it, else on a parameter of this function."""
        frame = self.option_frames[-1]
        tests = [(entry[0].test, not entry[1]) for entry in self.ifs[frame.if_base :]]
        for ifexp in self.ifexps[frame.ifexp_base :]:
            if contains(ifexp.body, node):
                tests.append((ifexp.test, True))
            elif contains(ifexp.orelse, node):
                tests.append((ifexp.test, False))
        found: List[str] = []
        for test, outcome in tests:
            for name, option in evaluated_reads(test, outcome):
                if name in frame.namespaces:
                    if option not in frame.namespaces[name]:
                        site.option = "!" + option
                        return
                elif name in frame.parameters:
                    condition = f"|{self.key}|{name}|{frame.parameters[name]}|{option}"
                    if condition not in found and len(found) < MAX_OPTION_CONDITIONS:
                        found.append(condition)
        if found:
            site.option = OPTION_SEPARATOR.join(found)
            frame.parameter_sites.append(site)

    def _namespace(self, name: str, value: cst.BaseExpression) -> None:
        """`args = parser.parse_args()` of a parser whose options this scope shows in full."""
        frame = self.option_frames[-1]
        scope = frame.scope if frame.scope is not None else self.context.module
        options = parsed_options(
            scope,
            name,
            value,
            lambda call: (
                self.context.call_name(call) == "argparse.ArgumentParser"
                and not any(arg.keyword is not None and arg.keyword.value == "parents" for arg in call.args)
            ),
        )
        if options is not None:
            frame.namespaces[name] = frozenset(options)
            self.function.namespaces[name] = options

    def _namespace_writes(self, node: cst.CSTNode) -> None:
        writes = self.function.namespace_writes
        for name in attribute_writes(node):
            if name not in writes:
                writes.append(name)

    def _call_options(self, node: cst.Call, target: str, function: FunctionSummary) -> None:
        """What a first-party call passes that a callee's `Site.option` may be about. Only calls that
        pass a namespace or a parameter are kept one by one; the others all read alike (the option
        holds for all they tell), so one empty record stands for them, and none while no call of the
        target passes anything (the callee then finds no record: the same answer)."""
        frame = self.option_frames[-1]
        record: Dict[str, str] = {}
        for index, arg in enumerate(node.args):
            if arg.star:
                record["*"] = "?"
                continue
            if type(arg.value) is not cst.Name:
                continue
            key = arg.keyword.value if arg.keyword is not None else f"#{index}"
            name = arg.value.value
            if name in frame.namespaces:
                record[key] = "n|" + name
            elif name in frame.parameters:
                record[key] = f"p|{name}|{frame.parameters[name]}"
        plain = not any(passed != "?" for passed in record.values())
        calls = function.call_options.get(target)
        if plain:
            if calls is None:
                self.plain_calls.add((self.key, target))
            elif {} not in calls:
                calls.append({})
            return
        if calls is None:
            calls = function.call_options[target] = [{}] if (self.key, target) in self.plain_calls else []
        if len(calls) >= MAX_ARGUMENT_CALLS:
            if {} not in calls:
                calls.append({})  # too many to keep: the callee's parameters may get anything
            return
        calls.append(record)
        if any(passed.startswith("p|") for passed in record.values()):
            frame.records.append(record)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        # Only now is the whole body seen: a parameter bound again is not passed on as is, and a
        # test of it decides nothing.
        rebound = self.context.scopes.rebound_parameters(original_node)
        if rebound and self.argument_frames[-1][0]:
            _drop_rebound_tests(self.function, rebound)
        self.keys.pop()
        table, recorded = self.argument_frames.pop()
        frame = self.option_frames.pop()
        if recorded and rebound:
            for target, index in recorded:
                calls = self.summary.call_arguments[target]
                calls[index] = (calls[index][0], open_rebound(list(calls[index][1]), rebound))
        self.bound_expressions.pop()
        self.flag_parameters.pop()
        for site in frame.parameter_sites:
            # `args = load(args.config)`: no longer the namespace passed in.
            kept = [c for c in site.option.split(OPTION_SEPARATOR) if c.split("|")[2] not in rebound]
            site.option = OPTION_SEPARATOR.join(kept)
        for record in frame.records:
            for key, passed in list(record.items()):
                if passed.startswith("p|") and passed.split("|")[1] in rebound:
                    del record[key]

    def _flag_parameters(self, node: cst.FunctionDef, method: bool) -> Tuple[int, Dict[str, int]]:
        """(depth of the `if` stack at the function's start, parameters that default to a false
        literal -> their position, the receiver of a method not counted)."""
        params = node.params
        positional = [*params.posonly_params, *params.params]
        found: Dict[str, int] = {}
        for index, param in enumerate([*positional, *params.kwonly_params]):
            if param.default is not None and literal(param.default) in (False, None, 0):
                position = index - (1 if method else 0) if index < len(positional) else -1
                found[param.name.value] = position
        return len(self.ifs), found

    def _parameter_condition(self) -> str:
        """ "<function>|<parameter>|<position>" when the current statement runs only under
        `if <parameter>:` (or `is True`) on a parameter of the function that defaults to a false
        value: `def seed_everything(seed, deterministic=False): if deterministic: ...`."""
        base, flags = self.flag_parameters[-1]
        if not flags or len(self.ifs) <= base:
            return ""
        test, in_else = self.ifs[-1][0].test, self.ifs[-1][1]
        if in_else:
            return ""
        if type(test) is cst.Comparison and len(test.comparisons) == 1 and literal(test.comparisons[0].comparator) is True:
            test = test.left
        if type(test) is cst.Name and test.value in flags:
            return f"{self.key}|{test.value}|{flags[test.value]}"
        return ""

    def _parameter_tests(self) -> Tuple[Tuple[str, str, str, Any], ...]:
        """`Site.branch`: the tests of the function's own parameters that every enclosing `if` of
        the current statement needs to hold (`if not memory_map:` -> (key, "memory_map", "false",
        None)); only in a function whose parameters callers pass (module level, a method)."""
        table = self.argument_frames[-1][0]
        if not table:
            return ()
        found: List[Tuple[str, str, str, Any]] = []
        for statement, in_else in self.ifs[self.flag_parameters[-1][0] :]:
            test = _parameter_test(statement.test, table)
            if test is not None:
                name, kind, value = test
                found.append((self.key, name, _NEGATED[kind] if in_else else kind, value))
        return tuple(found)

    def _call_flags(self, node: cst.Call, target: str, function: FunctionSummary) -> None:
        """The parameters a call of a first-party function passes a value that may be true for."""
        passed = function.call_flags.setdefault(target, [])
        for index, arg in enumerate(node.args):
            value = literal(arg.value)
            if arg.star or value not in (False, None, 0):
                key = "**" if arg.star else (arg.keyword.value if arg.keyword is not None else f"#{index}")
                if key not in passed:
                    passed.append(key)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._namespace_writes(node.target)
        self._attribute_assignments([node.target], None)

    def _attribute_assignments(self, targets: List[cst.BaseExpression], value: Optional[cst.BaseExpression]) -> None:
        """`self.<attr>` set anywhere in a class but by its `__init__`'s first `self.<attr> = <parameter>`:
        the attribute's values are not that parameter's alone."""
        owner = self.summary.classes.get(self.keys[-1][1] or "")
        if owner is None:
            return
        stack = list(targets)
        while stack:
            target = stack.pop()
            if type(target) in (cst.Tuple, cst.List):
                stack.extend(element.value for element in target.elements)
                value = None
                continue
            if type(target) is cst.StarredElement:
                stack.append(target.value)
                continue
            if type(target) is not cst.Attribute or type(target.value) is not cst.Name or target.value.value != "self":
                continue
            attribute = target.attr.value
            in_init = self.key.endswith(".__init__") and attribute not in owner.attribute_parameters
            from_parameter = in_init and type(value) is cst.Name and value.value in owner.init_parameters
            length = display_length(value) if in_init and attribute not in owner.attribute_lengths else None
            if length is not None:
                owner.attribute_lengths[attribute] = length
            elif not from_parameter and attribute not in owner.reassigned_attributes:
                owner.reassigned_attributes.append(attribute)

    def _call_arguments(self, node: cst.Call, target: str) -> None:
        """What a call of a first-party function passes, for the values its parameters can hold."""
        calls = self.summary.call_arguments.setdefault(target, [])
        if len(calls) >= MAX_ARGUMENT_CALLS or id(node) in self.expected_to_raise:
            return
        table, recorded = self.argument_frames[-1]
        scopes = self.context.scopes
        arguments = call_arguments(node, table, scopes.values, scopes.loop_values, scopes.reaching_value)
        if any(isinstance(value, Passed) for _, value in arguments):
            recorded.append((target, len(calls)))
        calls.append((self.key, arguments))

    def _call_gradients(self, node: cst.Call, target: str, function: FunctionSummary) -> None:
        """What each argument of a first-party call carries of a gradient (`call_gradients`)."""
        calls = function.call_gradients.setdefault(target, [])
        if len(calls) > MAX_GRADIENT_CALLS:
            return
        scopes = self.context.scopes
        if len(calls) == MAX_GRADIENT_CALLS:
            calls.append((False, True, {}))  # too many to keep: the callee's parameters may get anything
            return
        off = scopes.grad_disabled
        arguments: Dict[str, str] = {}
        hidden = False
        for index, arg in enumerate(node.args):
            if arg.star:
                hidden = True
                continue
            key = arg.keyword.value if arg.keyword is not None else f"#{index}"
            if off:
                arguments[key] = ""
                continue
            names = scopes.gradient_parameters(arg.value)
            if names is None:
                arguments[key] = "?"
            else:
                arguments[key] = ",".join(f"{name}#{position}" for name, position in scopes.parameter_positions(names))
        calls.append((off, hidden, arguments))

    def _handed_on(self) -> None:
        """The first-party functions used here other than by a call (`handed_on`)."""
        if not self.context.imports_torch:
            return
        handed = self.summary.handed_on
        methods: Dict[str, List[str]] = {}
        for key in self.summary.functions:
            methods.setdefault(key.rpartition(".")[2], []).append(key)
        for owner, name in self.context.scopes.escapes:
            if owner == "self":
                found = ["." + key for key in methods.get(name, ()) if "." in key and "<locals>" not in key]
            elif owner is None:
                if name in self.summary.functions:
                    found = ["." + name]
                else:
                    qualified = self.resolver.module_final.get(name)
                    found = [qualified] if qualified and self._first_party(qualified) else []
            else:
                found = []
            handed.extend(target for target in found if target not in handed)

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
        if head == "self" and class_name and rest:
            if "." not in rest:
                return f".{class_name}.{rest}"
            attribute, _, method = rest.partition(".")
            owner = self.summary.classes.get(class_name)
            typed = owner.attribute_types.get(attribute) if owner is not None else None
            return f"{typed}.{method}" if typed is not None else None
        if head in types and rest:
            return f"{types[head]}.{rest}"
        if head in self.module_defs and self.resolver.lookup(head) is None:
            return "." + dotted
        if head in self.summary.aliases and self.resolver.lookup(head) is None:
            return self.summary.aliases[head] + ("." + rest if rest else "")
        if self.resolver.star_imports and head not in self._star_bound():
            # `from utils import *` (a sibling module of a script), then `ReplayBuffer()`: a name the
            # file never binds comes from the star import; the project phase looks it up there.
            return "." + dotted
        return None

    def _star_bound(self) -> Container[str]:
        """The names the file binds anywhere and the builtins, once it star-imports a module of the project;
        every name (nothing comes from a star import) otherwise."""
        imports = len(self.resolver.star_imports)
        if self.star_bound is None or self.star_bound[0] != imports:
            first_party = any(self._first_party(module) for module in self.resolver.star_imports)
            tree = self.context.python_tree() if first_party else None  # `from torch.nn import *` needs no names
            self.star_bound = (imports, names_bound_in(tree) if tree is not None else _EVERY_NAME)
        return self.star_bound[1]

    def visit_Assign(self, node: cst.Assign) -> None:
        self.assigns_seen += 1
        self.visited["assign"].append(node)
        for assigned in node.targets:
            self._namespace_writes(assigned.target)
        if len(node.targets) == 1 and type(node.targets[0].target) is cst.Name:
            self._namespace(node.targets[0].target.value, node.value)
        self._bound_then_seeded(node)
        value = node.value
        if self._at_module_level() and not self.in_main and isinstance(value, (cst.Dict, cst.List, cst.Tuple)):
            self._registry(node)
        if len(node.targets) == 1:
            target = node.targets[0].target
            if isinstance(target, cst.Name):
                self.bound_expressions[-1][target.value] = value
                if isinstance(value, cst.Call):
                    built = unwrap_self_returning(value)  # `model = Net().to(device)`
                    called = self._target(built.func) if type(built) is cst.Call else None
                    if called in IMPORTERS and type(built) is cst.Call:
                        module = literal(arg_value(built, "name", 0))
                        if isinstance(module, str) and self._first_party(module):
                            self.module_locals[target.value] = module
                            called = module
                    if type(built) is cst.Call and (called is None or not self._first_party(called)):
                        # `trainer = instantiate(cfg.trainer)`: an object of a class named by a string
                        named, kind = self._built_by_name(built, self.context.call_name(built))
                        called = named or (DYNAMIC + kind if kind in (NAMED, CONFIG) else called)
                    if called:
                        self.keys[-1][3][target.value] = called
                        self.bound_to.setdefault(target.value, set()).add(called)
                    if called == "functools.partial" and value.args and self._at_module_level():
                        bound = value.args[0].value
                        inner = self._target(bound) if type(bound) in (cst.Name, cst.Attribute) else None
                        if inner:
                            self.summary.partials[target.value] = inner
            elif isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, cst.Call):
                for index, element in enumerate(target.elements):
                    if isinstance(element.value, cst.Name):
                        self.bound_expressions[-1][element.value.value] = cst.Subscript(
                            value=value, slice=[cst.SubscriptElement(cst.Index(cst.Integer(str(index))))]
                        )
        self._record_rng_assignment(node)
        self._attribute_assignments([t.target for t in node.targets], value)
        if type(value) is cst.Name and self.keys[-1][1] in self.summary.classes and self.key.endswith(".__init__"):
            owner = self.summary.classes[self.keys[-1][1]]
            for target in node.targets:
                attribute = target.target
                if type(attribute) is cst.Attribute and type(attribute.value) is cst.Name and attribute.value.value == "self":
                    if value.value in owner.init_parameters:
                        owner.attribute_parameters[attribute.attr.value] = value.value
                        annotated = self.keys[-1][3].get(value.value)
                        if annotated is not None:
                            owner.attribute_types.setdefault(attribute.attr.value, annotated)
        for target in node.targets:
            if type(target.target) is cst.Subscript and type(target.target.value) is cst.Name:
                self._registering(target.target.value.value, value)
            # Only an attribute target sets a flag (`saved = torch.backends.cudnn.benchmark` reads it).
            name = self.context.qualified_name(target.target) if type(target.target) is cst.Attribute else None
            if name == "torch.backends.cudnn.deterministic" and literal(value) is True:
                self.function.add_cover("cudnn", self._site("`cudnn.deterministic = True`", "assign"))
            elif name == "torch.backends.cudnn.benchmark":
                self.function.add_cover("cudnn-benchmark", self._site("`cudnn.benchmark = ...`", "assign"))
            elif (
                name is not None
                and name.startswith("torch._inductor.")
                and name == inductor_facts().deterministic.qualified
                and literal(value) is True
            ):
                self.function.add_cover(COVER_EXPLICIT, self._site("`torch._inductor.config.deterministic = True`", "assign"))
            elif type(target.target) is cst.Subscript and self.context.qualified_name(target.target.value) == "os.environ":
                element = target.target.slice[0].slice if len(target.target.slice) == 1 else None
                if type(element) is cst.Index:
                    self._inductor_variable(literal(element.value), value, "assign")

    def _seeded_in_class(self, summary: ClassSummary, receiver: cst.BaseExpression) -> None:
        """`self.g.manual_seed(...)` or `g.manual_seed(...)` in a method: what the class seeds itself."""
        if type(receiver) is cst.Attribute and type(receiver.value) is cst.Name and receiver.value.value == "self":
            if receiver.attr.value not in summary.seeded_attributes:
                summary.seeded_attributes.append(receiver.attr.value)
        elif type(receiver) is cst.Name and self.key.endswith(".__init__") and receiver.value in summary.init_parameters:
            if receiver.value not in summary.seeded_parameters:
                summary.seeded_parameters.append(receiver.value)

    def _registry(self, node: cst.Assign) -> None:
        """`MODELS = {"small": Small, "large": Large}`: the functions or classes one may pick."""
        members = [e.value for e in node.value.elements if isinstance(e, (cst.DictElement, cst.Element))]
        targets = [t for t in (self._target(m) for m in members if isinstance(m, (cst.Name, cst.Attribute))) if t]
        if targets:
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self.summary.registries[target.target.value] = targets

    def _registering(self, registry: str, value: cst.BaseExpression) -> None:
        """`REGISTRY[key] = fn`: at module level, `fn` joins the registry; in a function (a
        registering decorator, `_METRICS[fn.__name__] = fn`), the function is a registrar."""
        if registry not in self.resolver.module_final or type(value) not in (cst.Name, cst.Attribute):
            return
        if self._at_module_level():
            if not self.in_main:
                member = self._target(value)
                if member:
                    self.summary.registries.setdefault(registry, []).append(member)
            return
        owner = self.keys[1][0] if len(self.keys) > 1 else None
        if owner is None or owner in (MAIN_KEY, LAMBDA_KEY) or "." in owner or self.context.scopes.values(registry):
            return  # not a module-level function, or a local of that name
        if type(value) is cst.Name and self.context.scopes.values(value.value) == [None]:  # a parameter: what is decorated
            self.summary.registrars[owner] = registry

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
                self.summary.module_rngs[name] = self._located(
                    RngAttribute(name, constructor, 0, module_level=True), "call", self.calls_seen
                )
            class_name = self.keys[-1][1] if len(self.keys) > 1 else (self.class_stack[-1] if self.class_stack else None)
            if class_name is None or class_name not in self.summary.classes:
                continue
            in_init = self.key == f"{class_name}.__init__"
            in_class_body = len(self.keys) == 1 and self.class_stack and self.class_stack[-1] == class_name
            if (
                in_init
                and isinstance(target_node, cst.Attribute)
                and isinstance(target_node.value, cst.Name)
                and target_node.value.value == "self"
            ):
                self.summary.classes[class_name].rng_attributes.append(
                    self._located(RngAttribute(target_node.attr.value, constructor, 0), "call", self.calls_seen)
                )
            elif in_class_body and isinstance(target_node, cst.Name):
                self.summary.classes[class_name].rng_attributes.append(
                    self._located(RngAttribute(target_node.value, constructor, 0), "call", self.calls_seen)
                )

    # -- calls -------------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        """What a call tells, one part per kind of fact (in this order), over one reading of the
        call (`_CallFacts`)."""
        call = self._call_facts(node)
        self._namespace_writes(node)
        self._call_graph(call)
        self._training(node, call.qualified, call.attribute, call.function, call.site)
        self._named_objects(node, call.qualified, call.attribute, call.function, call.seen, call.site)
        self._draws(call)
        self._seeding(call)
        self._cuda_work(call)
        self._cudnn_choices(call)
        self._operations(call)
        self._data_loading(call)

    def _call_facts(self, node: cst.Call) -> "_CallFacts":
        func = node.func
        qualified = self.context.call_name(node)
        index = self.calls_seen
        self.calls_seen += 1
        self.visited["call"].append(node)

        def site(text: str) -> Site:
            return self._located(Site(0, text), "call", index)

        return _CallFacts(
            node,
            func,
            qualified,
            func.attr.value if type(func) is cst.Attribute else None,
            self.function,
            self.keys[-1][2],
            index,
            self.call_target(node),
            # A DataLoader subclass of this file is a DataLoader (`InfiniteDataLoader(ds, shuffle=True)`).
            qualified if qualified is not None or type(func) is not cst.Name else loader_name(self.context, node),
            site,
        )

    def _call_graph(self, call: "_CallFacts") -> None:
        """Calls, references and process starts: the edges of the call graph, with the registries,
        `set_epoch` receivers and options the project phase follows."""
        node, func, qualified, attribute, function, seen, index, target, loader, site = call
        if target:
            function.add_call(target, seen)
            if self._first_party(target):
                self._call_options(node, target, function)
            if node.args and self._first_party(target):
                self._call_flags(node, target, function)
                if self.context.imports_torch:
                    self._call_gradients(node, target, function)
            if self._first_party(target) or project_directory(self.context.settings.root, target):
                self._call_arguments(node, target)
            if self._first_party(target):
                self.construction_depths[id(node)] = self._branch_depth()
        if attribute in ("manual_seed", "seed") and self.keys[-1][1] in self.summary.classes:
            self._seeded_in_class(self.summary.classes[self.keys[-1][1]], func.value)
        if attribute == "load_state_dict" and qualified is None:
            strict = arg_value(node, "strict", 1)
            self._weights_loaded(node.func.value, strict, function)
        elif qualified in DICT_WEIGHT_LOADERS:
            (modules, at), strict = DICT_WEIGHT_LOADERS[qualified]
            loaded = arg_value(node, modules, at)
            for element in loaded.elements if type(loaded) is cst.Dict else ():
                if type(element) is cst.DictElement:
                    self._weights_loaded(element.value, arg_value(node, *strict), function)
        if attribute == "add_argument":
            self._option(node)
        elif attribute == "set_defaults":
            for arg in node.args:
                if arg.keyword is not None and type(arg.value) in (cst.Name, cst.Attribute):
                    handler = self._target(arg.value)
                    if handler is not None and self._first_party(handler):
                        self.summary.registries.setdefault(f"{SET_DEFAULTS}{arg.keyword.value}>", []).append(handler)
        elif qualified in TEST_RUNNERS and self.key == MAIN_KEY:
            self.runs_tests = True
            if self.test_runner is None:
                self.test_runner = (site(f"`{_spelling(func)}(...)`"), _spelling(func))
        if type(func) is cst.Name and func.value in self.summary.registries and self._module_name(func.value):
            function.add_call(f".{func.value}{REGISTRY_MEMBER}", seen)  # `cli()`: the group runs its commands
        elif attribute is not None and qualified is None:
            self.attribute_calls.append((function, attribute, seen))  # `args.func(args)`, decided at the end
        if attribute == "set_epoch":
            receiver = dotted_name(func.value)
            if receiver is not None:
                # The call the receiver's name was bound from (`sampler = build_sampler(...)`).
                entry = (receiver, self.keys[-1][3].get(receiver.split(".", 1)[0], ""))
                if entry not in self.summary.set_epoch:
                    self.summary.set_epoch.append(entry)
        runs_arguments = qualified in RUNNERS or attribute in RUNNER_METHODS
        if runs_arguments or qualified in LAMBDA_CALLERS or attribute == "sort":
            self.running_lambdas.update(id(arg.value) for arg in node.args if isinstance(arg.value, cst.Lambda))
        # A function handed to a call may run (`launch(main)`); one handed to a constructor or a
        # container (`OpInfo(sample_inputs_func=f)`, `dict(fn=f)`) is stored for later.
        callee = (qualified or dotted_name(func) or "").rsplit(".", 1)[-1]
        # `partial(f, ...)` makes a callable for later: a function handed to it is reached (as by a
        # runner), a class is not instantiated by it (`SwiGLU = partial(GluMlp, act=...)` builds nothing).
        binds_arguments = qualified == "functools.partial"
        # A registration (`register_autograd("ns::op", backward)`, `x.register_hook(fn)`,
        # `atexit.register(fn)`) stores the function: it does not run here.
        registers = stores_functions(
            qualified,
            attribute,
            attribute in LIBRARY_METHODS and self.context.scopes.library_receiver(func.value) is not None,
        )
        stores_nothing = bool(callee) and not callee[:1].isupper() and qualified not in CONTAINERS and not registers
        started = None
        if qualified in LAUNCHERS or qualified in PROCESS_CLASSES or attribute == "Process" or attribute in POOL_METHODS:
            started = self._process_start(node, qualified, index)
        for arg in node.args:
            value = arg.value
            if value is started:
                continue  # runs in another process, with fresh RNG states: a spawned entry point, not a call
            if type(value) is cst.Name or type(value) is cst.Attribute:
                reference = self._target(value)
                if reference and binds_arguments:
                    function.add_reference(reference)
                elif reference and runs_arguments:
                    function.add_call(reference, seen)
                elif reference and stores_nothing and self._first_party(reference):
                    function.add_reference(reference)
                    callee_target = self._target(func) if type(func) in (cst.Name, cst.Attribute) else None
                    if callee_target is None and type(func) is cst.Name and self._module_name(func.value):
                        callee_target = "." + func.value  # a module-level name: `register = partial(...)`
                    if callee_target and self._first_party(callee_target):
                        function.reference_callees.setdefault(reference, callee_target)
            if runs_arguments and type(value) in (cst.Name, cst.Attribute, cst.Call):
                self._runs_object(value, function, seen)
            if qualified in COMMAND_RUNNERS:
                for member in self._commands(value):
                    function.add_call(member, seen)
            if (
                arg.keyword is not None
                and arg.keyword.value == "device"
                and torch_device_call(qualified)
                and self._cuda_device(value)
            ):
                self._cuda(function, site(f"`device={_short(self.context.code_of(value))}`"))
        if attribute == "submit":
            self._remote_launch(node, function)
        for instance_call in self._instance_calls(func, qualified):
            function.add_call(instance_call, seen)
        if attribute is not None and qualified is None and attribute not in COMMON_METHODS:
            for made in self._receiver_makers(func.value):
                function.add_call(f"{made}.{attribute}", seen)

    def _draws(self, call: "_CallFacts") -> None:
        """Draws from a global RNG (a shuffling DataLoader, a module built with random weights)."""
        node, func, qualified, attribute, function, seen, index, target, loader, site = call
        kind = draw_kind(qualified, node, self.context)
        if kind == "torch" and qualified in self.facts.torch_modules and self.context.scopes.skips_init:
            kind = None  # `with torch.device("meta"):` and the like build modules without drawing weights
        if kind is None and type(func) is cst.Subscript and builds_from_module_dict(self.context.qualified_name(func.value)):
            kind = "torch"
        if kind is None and is_dataloader(loader):
            if loader_shuffles(node, self.context.call_name, loader) and not _seeded_generator(self.context, node):
                kind = "torch"
        if (
            kind is None
            and attribute in self.facts.torch_methods
            and qualified is None
            and self.context.imports_torch
            and not generator_given(self.context, node)
        ):
            kind = "torch"
        if kind is None and attribute in DISTRIBUTION_SAMPLES and qualified is None and self._distribution(func.value):
            kind = "torch"  # `Categorical(logits=x).sample()`: a torch.distributions draw
        kind = self._library_draw(node, qualified, attribute, kind)
        if kind is not None:
            text = f"a shuffling `{_spelling(func)}(...)`" if is_dataloader(loader) else f"`{_spelling(func)}(...)`"
            drawn = site(text)
            self._under_option(node, drawn)
            drawn.branch = self._parameter_tests()
            drawn.eval_proof = kind == "torch" and self._eval_proof(node, func, qualified, attribute)
            if drawn.eval_proof:
                drawn.text = _eval_proof_text(func, qualified)
            function.add_draw(kind, drawn)
            if kind == "torch":
                self.construction_sites[id(node)] = (drawn, self._branch_depth())
                # A builder that loads its pretrained weights overwrites what it drew at once.
                drawn.overwritten = loads_pretrained_weights(qualified, node)
            class_name = self.keys[-1][1]
            if kind == "numpy" and class_name in self.summary.classes:
                sites = self.summary.classes[class_name].global_draws
                if len(sites) < MAX_SITES:
                    sites.append(site(f"`{_spelling(func)}(...)`"))
        if not function.does_more and not _seeding_body_call(qualified, attribute, self.facts, self.config_helpers):
            function.does_more = True

    def _eval_proof(self, node: cst.Call, func: cst.BaseExpression, qualified: Optional[str], attribute: Optional[str]) -> bool:
        """`Site.eval_proof`: a dropout given a literal `training=True`, or a random fill of a tensor
        built in the same expression, outside every test of `self.training` (`if self.training:`,
        `... if self.training else ...`), which would tie it to the module's mode again."""
        if qualified is not None:
            if not eval_proof_dropout(qualified, node):
                return False
        elif attribute not in self.facts.torch_methods:
            return False
        else:
            receiver = func.value if type(func) is cst.Attribute else None
            if type(receiver) is not cst.Call:
                return False
            built = receiver.func
            if not fresh_tensor(self.context.call_name(receiver), built.attr.value if type(built) is cst.Attribute else None):
                return False
        tests = [entry[0].test for entry in self.ifs] + [ifexp.test for ifexp in self.ifexps]
        return not any(_reads_training(test) for test in tests)

    def _seeding(self, call: "_CallFacts") -> None:
        """Seeding, determinism and the other covers a call sets (table helpers, config `seed-functions`)."""
        node, func, qualified, attribute, function, seen, index, target, loader, site = call
        if qualified is not None:
            helper = self.facts.helpers.get(qualified)
            covered = helper_covers(helper, node) if helper is not None else self.config_helpers.get(qualified)
            if helper is not None and reseeds_at_random(helper, node):
                function.add_cover(RESEEDED, site(f"`{_spelling(func)}({helper.none_reseeds[0]}=None)`"))
            if covered:
                seeding = site(f"`{_spelling(func)}(...)`")
                seeding.condition = self._parameter_condition()
                self._seed_argument(node, seeding)
                for kind_covered in covered:
                    function.add_cover(kind_covered, seeding)
                # From torch 2.10 the flag also turns Inductor's deterministic mode on (TDL306);
                # the debug-mode switch does not (it bypasses `use_deterministic_algorithms`).
                if "deterministic" in covered and qualified != "torch.set_deterministic_debug_mode":
                    function.add_cover(COVER_FLAG, seeding)
            elif qualified in _ENVIRON_CALLS:
                self._environ_call(node, qualified)
            elif sets_spawn_start(qualified, node):
                function.add_cover("spawn-start", site(f"`{_spelling(func)}(...)`"))
            elif qualified in self.facts.cuda_only:
                function.add_cover("cuda", site(f"`{_spelling(func)}(...)`"))
        elif attribute in self.facts.method_helpers:
            required, covered = self.facts.method_helpers[attribute]
            if any(canonical(m).split(".")[0] == required for m in self.resolver.imported_modules):
                for kind_covered in covered:
                    function.add_cover(kind_covered, site(f"`{_spelling(func)}(...)`"))

    def _cuda_work(self, call: "_CallFacts") -> None:
        """CUDA work, and the first call that may move the work to a device."""
        node, func, qualified, attribute, function, seen, index, target, loader, site = call
        if attribute == "cuda" and qualified is None:
            self._cuda(function, site(f"`{_spelling(func)}()`"))
        elif attribute == "to" and qualified is None:
            device = next((arg.value for arg in node.args if arg.keyword is None and self._cuda_device(arg.value)), None)
            if device is not None:
                self._cuda(function, site(f"`.to({_short(self.context.code_of(device))})`"))
        elif qualified is not None and qualified.startswith("torch.cuda.") and is_cuda_work(qualified):
            self._cuda(function, site(f"`{_spelling(func)}(...)`"))
        self._accelerator_work(node, qualified, attribute, function, site)
        if (
            function.moves is None
            and not self._stays_on_cpu(node, qualified, attribute)
            and self._may_move(node, qualified, attribute)
        ):
            function.moves = site(f"`{_spelling(func)}(...)`")

    def _cudnn_choices(self, call: "_CallFacts") -> None:
        """Convolutions and explicit cuDNN benchmark choices (TDL406)."""
        node, func, qualified, attribute, function, seen, index, target, loader, site = call
        if qualified is not None:
            if CONVOLUTION_RE.match(qualified):
                function.add_cover("convolution", site(f"`{_spelling(func)}(...)`"))
            elif qualified in BENCHMARK_SETTINGS and find_arg(node, "benchmark") is not None:
                function.add_cover("cudnn-benchmark", site(f"`{_spelling(func)}(benchmark=...)`"))

    def _operations(self, call: "_CallFacts") -> None:
        """Catalog operations (TDL302), from the ops family when it is installed."""
        node, func, qualified, attribute, function, seen, index, target, loader, site = call
        if self.context.imports_torch:
            if len(function.ops) < 4 * MAX_SITES:
                for match in match_operations(self.context, node):
                    scopes = self.context.scopes
                    identity = scopes.bound_calls.get(id(node))
                    found = site(f"`{match.name}`")
                    found.cuda_only = match.cuda_only
                    backward_only = not match_operations(self.context, node, assume_no_grad=True)
                    if backward_only and used_only_without_grad(self.context, node):
                        break  # no loss depends on the result: its backward never runs
                    if identity is not None and backward_only_module(self.context, node):
                        # Counted at the end, unless every call of the module is without gradient.
                        self.bound_modules.append((function, found, identity))
                    elif scopes.function_identity is not None and not scopes.grad_disabled and backward_only:
                        # Backward-only here: counted at the end unless the function only runs without
                        # gradient (a backward formula registered below, a helper of a no-grad caller).
                        found.gradient_from = _gradient_text(gradient_parameters(self.context, node))
                        self.bound_modules.append((function, found, scopes.function_identity))
                    else:
                        # Evidence only in a run that trains when no forward condition holds.
                        _add_op(function.ops, found, backward_only)
                    break
            self._raising(node, function, index)

    def _data_loading(self, call: "_CallFacts") -> None:
        """DataLoaders (TDL102), every data-loading call (the report's `dataloaders` check), and
        worker init functions."""
        node, func, qualified, attribute, function, seen, index, target, loader, site = call
        if qualified in DATA_LOADING or is_dataloader(loader):
            loading = site(f"`{_spelling(func)}(...)`")
            self._under_option(node, loading)
            # Loaders under an option have room of their own: dropped later, they must not crowd out the rest.
            if sum(1 for s in function.loading if bool(s.option) == bool(loading.option)) < MAX_SITES:
                function.loading.append(loading)
        if is_dataloader(loader):
            self._loader(node, loader)
            self._data_protocol(node, loader, target, function, seen)
        elif attribute in TRAINER_METHODS and qualified is None:
            self._trainer_loaders(node)
        if attribute is not None and type(func.value) is cst.Name and func.value.value in self.module_rng_names:
            class_name = self.keys[-1][1]
            summary_class = self.summary.classes.get(class_name) if class_name else None
            if summary_class is not None and not any(r.attribute == func.value.value for r in summary_class.rng_attributes):
                rng = self.summary.module_rngs.get(func.value.value)
                constructor = rng.constructor if rng else "numpy.random.default_rng"
                summary_class.rng_attributes.append(
                    self._located(RngAttribute(func.value.value, constructor, 0, module_level=True), "call", index)
                )
        worker_fn = arg_value(node, "worker_init_fn")
        if type(worker_fn) is cst.Name:
            self.worker_init_names.add(worker_fn.value)

    # -- accelerators (rules/runs.toml) -------------------------------------------------------------
    def _accelerator_work(self, node: cst.Call, qualified: Optional[str], attribute: Optional[str], function, site) -> None:
        """`accelerator.prepare(model, ...)`: the accelerator puts the model and the batches on its
        device, CUDA work unless it is visibly kept on the CPU (`Accelerator(cpu=True)`)."""
        if qualified is not None or attribute is None:
            return
        for library in accelerators():
            if attribute in library.device_methods and self._accelerator_on_cpu(node.func.value, library) is False:
                self._cuda(function, site(f"`{_spelling(node.func)}(...)`"))
                return

    def _stays_on_cpu(self, node: cst.Call, qualified: Optional[str], attribute: Optional[str]) -> bool:
        """`Accelerator(cpu=True)`, and what such an accelerator prepares: no move to a device."""
        for library in accelerators():
            if qualified in library.classes:
                return library.on_cpu(node)
            if qualified is None and attribute in library.device_methods:
                return self._accelerator_on_cpu(node.func.value, library) is True
        return False

    def _accelerator_on_cpu(self, receiver: cst.BaseExpression, library, depth: int = 0) -> Optional[bool]:
        """Whether the object is an accelerator kept on the CPU (True), one that may use a GPU
        (False), or not visibly an accelerator (None). An accelerator whose construction is not
        visible here (a parameter, another module's attribute) but is spelled as one counts."""
        kind = type(receiver)
        if kind is cst.Call:
            return library.on_cpu(receiver) if self.context.call_name(receiver) in library.classes else None
        if depth > 2 or kind not in (cst.Name, cst.Attribute):
            return None
        scopes = self.context.scopes
        values = scopes.values(receiver.value, module_too=True) if kind is cst.Name else scopes.expression_values(receiver)
        found = [self._accelerator_on_cpu(v, library, depth + 1) for v in values[-MAX_CANDIDATES:] if v is not None]
        known = [answer for answer in found if answer is not None]
        if known:
            return all(known)
        spelled = dotted_name(receiver)
        if spelled is None or spelled.rsplit(".", 1)[-1] != library.receiver:
            return None
        return self._file_keeps_on_cpu(library)

    def _file_keeps_on_cpu(self, library) -> bool:
        """Whether every accelerator this file builds (one at least) is kept on the CPU: then one
        handed to a function of the file (`def train(accelerator, ...)`) is such an accelerator."""
        if library.library not in self.accelerators_on_cpu:
            tree = self.context.python_tree()
            names = {name.rsplit(".", 1)[-1] for name in library.classes}
            builds = [
                node
                for node in (ast.walk(tree) if tree is not None else ())
                if type(node) is ast.Call and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) in names
            ]
            self.accelerators_on_cpu[library.library] = bool(builds) and all(
                any(
                    keyword.arg == library.cpu_keyword
                    and type(keyword.value) is ast.Constant
                    and keyword.value.value is library.cpu_value
                    for keyword in node.keywords
                )
                for node in builds
            )
        return self.accelerators_on_cpu[library.library]

    # -- library randomness (rules/rng_sources.toml) -----------------------------------------------
    def _library_draw(
        self, node: cst.Call, qualified: Optional[str], attribute: Optional[str], kind: Optional[str]
    ) -> Optional[str]:
        """A library method that draws (`ds.train_test_split(...)` of Hugging Face `datasets`), and no
        draw for a random object that `set_random_state` seeds (MONAI's `Rand*` transforms)."""
        if attribute in seeding_methods():
            self._seeds_itself(node.func.value)
        if kind is None and attribute is not None and qualified is None:
            return method_draw_kind(attribute, node, self.resolver.imported_modules, self.context.first_party)
        if kind is not None and id(node) in self.seeded_objects:
            return None
        return kind

    def _seeds_itself(self, built: cst.BaseExpression) -> None:
        """The constructions in `built` (`Compose([RandFlipd(...), ...])`) whose objects the
        method seeds: visited after this call, they are no draws."""
        pending = [built]
        while pending:
            current = pending.pop()
            if type(current) is cst.Call:
                self.seeded_objects.add(id(current))
            pending.extend(sub_nodes(current))

    def _bound_then_seeded(self, node: cst.Assign) -> None:
        """`train_transforms = Compose([...])` followed, anywhere in the file, by
        `train_transforms.set_random_state(...)`: the constructions bound are seeded."""
        if len(node.targets) != 1 or type(node.value) is not cst.Call:
            return
        if self.seeded_names is None:
            text = self.context.text
            found = [
                name
                for method in seeding_methods()
                if method in text
                for name in re.findall(r"([A-Za-z_][\w.]*)\s*\.\s*" + re.escape(method) + r"\s*\(", text)
            ]
            self.seeded_names = frozenset(found)
        name = dotted_name(node.targets[0].target)
        if name is not None and name in self.seeded_names:
            self._seeds_itself(node.value)

    # -- objects named by strings, code chosen at run time ----------------------------------------
    def _named_objects(
        self, node: cst.Call, qualified: Optional[str], attribute: Optional[str], function: FunctionSummary, seen: Set[str], site
    ) -> None:
        """Constructions and calls by name: a literal name is a call of that object; a name the
        analysis cannot read is a dynamic target the project phase resolves to its candidates
        (or leaves unresolved: the run is then incomplete)."""
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value in NAMED_KEYS:
                self._named_literal(literal(arg.value))
        if qualified == LIGHTNING_CLI:
            self._lightning_cli(node, function, seen, site)
            return
        if qualified in IMPORTERS:
            name = literal(arg_value(node, "name", 0))
            if isinstance(name, str) and not name.startswith("."):
                function.imports.append(name)  # importing it runs its module-level code
            else:
                unresolved = site(f"`{_spelling(node.func)}(...)`")
                unresolved.reaches = _import_prefix(arg_value(node, "name", 0))
                self._dynamic(IMPORT, function, seen, unresolved)
            return
        named, kind = self._built_by_name(node, qualified)
        if named is not None:
            self._named_call(named, function, seen)
        elif kind is not None:
            self._dynamic(kind, function, seen, site(f"`{_spelling(node.func)}(...)`"))
        elif (
            attribute in BUILD_METHODS
            and qualified is None
            and self.call_target(node) is None
            and not self._receiver_makers(node.func.value)
        ):
            # `cfg.build()` on a value of unknown class (the project phase keeps it unresolved only
            # where a first-party class defines such a method).
            unresolved = site(f"`{_spelling(node.func)}(...)`")
            unresolved.argument = METHOD + attribute
            function.add_unresolved(unresolved)

    def _built_by_name(self, node: cst.Call, qualified: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
        """(the dotted name a call builds or calls an object by, when it is a literal; else the
        dynamic kind of its candidates), or (None, None) for a call that names nothing."""
        callee = (qualified or dotted_name(node.func) or "").rsplit(".", 1)[-1]
        if callee in NAME_CONSTRUCTORS or qualified in LOCATORS:
            keyword, position = NAME_CONSTRUCTORS.get(callee, ("path", 0))
            value = arg_value(node, keyword, position)
            name = literal(value) if value is not None and not opaque_keywords(node) else NOT_LITERAL
            return (name, None) if dotted_literal(name) else (None, NAMED)
        if qualified in CONFIG_INSTANTIATORS:
            value = arg_value(node, "config", 0)
            name = literal(value) if value is not None else NOT_LITERAL
            if type(value) is cst.Dict:
                entries = [e for e in value.elements if type(e) is cst.DictElement and literal(e.key) == "_target_"]
                name = literal(entries[0].value) if entries else None
            return (name, None) if dotted_literal(name) else (None, CONFIG)
        if qualified in CONFIG_LOADERS:
            return None, CONFIG
        if qualified == "builtins.getattr" and len(node.args) >= 2 and not isinstance(literal(node.args[1].value), str):
            module = self._first_party_module(node.args[0].value)
            return None, (MODULE + module if module is not None else None)
        return None, None

    def _branch_depth(self) -> int:
        return len(self.ifs) + self.loops

    def _weights_loaded(
        self, receiver: cst.BaseExpression, strict: Optional[cst.BaseExpression], function: FunctionSummary
    ) -> None:
        """`model = Net(); model.load_state_dict(state)` (or a library loader given `{"net": model}`):
        a strict load overwrites every parameter and persistent buffer of what was built, so its
        initial draws do not reach the run."""
        if strict is not None and literal(strict) is not True:
            return  # a partial load keeps some initial weights
        if type(receiver) is cst.Name:
            values = self.context.scopes.values(receiver.value)
        elif type(receiver) is cst.Attribute and type(receiver.value) is cst.Name and receiver.value.value == "self":
            values = self.context.scopes.attribute_values(receiver.attr.value)
        else:
            return
        for value in values:
            built = unwrap_self_returning(value) if value is not None else None
            if type(built) is not cst.Call:
                continue
            drawn = self.construction_sites.get(id(built))
            if drawn is not None and self._branch_depth() <= drawn[1]:
                drawn[0].overwritten = True  # not when the load only happens on some path (a resume)
            target = self._target(built.func) if type(built.func) in (cst.Name, cst.Attribute) else None
            if drawn is None and self._branch_depth() > self.construction_depths.get(id(built), 0):
                continue
            if target is not None and self._first_party(target) and target not in function.loaded:
                function.loaded.append(target)

    def _optional_seed(self, name: str, default: Optional[cst.BaseExpression]) -> None:
        """A seed option or config field whose default is None: the default run is unseeded."""
        if "seed" in name.lower() and (default is None or literal(default) is None) and name not in self.summary.optional_seeds:
            self.summary.optional_seeds.append(name)

    def _option(self, node: cst.Call) -> None:
        """`parser.add_argument("--seed", type=int)`: an option that defaults to None."""
        flags = [literal(arg.value) for arg in node.args if arg.keyword is None]
        dest = literal(arg_value(node, "dest"))
        if not isinstance(dest, str):
            long = [flag for flag in flags if isinstance(flag, str) and flag.startswith("--")]
            dest = long[0][2:].replace("-", "_") if long else None
        action = literal(arg_value(node, "action"))
        if isinstance(dest, str) and not (isinstance(action, str) and action.startswith("store_")):
            self._optional_seed(dest, arg_value(node, "default"))

    def _named_literal(self, value: Any) -> None:
        targets = self.summary.named_targets
        if dotted_literal(value) and value not in targets and len(targets) < MAX_DYNAMIC_CANDIDATES:
            targets.append(value)

    def _named_call(self, name: str, function: FunctionSummary, seen: Set[str]) -> None:
        self._named_literal(name)
        if self._first_party(name):
            function.add_call(name, seen)

    def _dynamic(self, kind: str, function: FunctionSummary, seen: Set[str], site: Site) -> None:
        function.add_call(DYNAMIC + kind, seen)
        site.argument = kind
        function.add_unresolved(site)

    def _first_party_module(self, expression: cst.BaseExpression) -> Optional[str]:
        """The qualified name of a first-party module an expression names (`models` after `import
        models`), else None."""
        if type(expression) not in (cst.Name, cst.Attribute):
            return None
        if type(expression) is cst.Name and expression.value in self.module_locals:
            return self.module_locals[expression.value]  # `models = importlib.import_module("nets.models")`
        qualified = self.context.qualified_name(expression)
        if qualified is None or not self._first_party(qualified):
            return None
        return qualified if any(m == qualified or m.startswith(qualified + ".") for m in self.resolver.imported_modules) else None

    def _lightning_cli(self, node: cst.Call, function: FunctionSummary, seen: Set[str], site) -> None:
        """`LightningCLI(Model, DataModule)` builds those classes; without a model class, or in
        subclass mode, the classes come from `class_path` in the YAML configs."""
        classes = [arg_value(node, "model_class", 0), arg_value(node, "datamodule_class", 1)]
        for value in classes:
            target = self._target(value) if type(value) in (cst.Name, cst.Attribute) else None
            if target is not None and self._first_party(target):
                function.add_call(target, seen)
        subclass_mode = arg_value(node, "subclass_mode_model")
        if classes[0] is None or (subclass_mode is not None and literal(subclass_mode) is not False):
            self._dynamic(CONFIG, function, seen, site(f"`{_spelling(node.func)}(...)`"))

    def visit_Dict(self, node: cst.Dict) -> None:
        for element in node.elements:
            if type(element) is cst.DictElement and literal(element.key) in NAMED_KEYS:
                self._named_literal(literal(element.value))

    def _distribution(self, receiver: cst.BaseExpression, depth: int = 0) -> bool:
        """A `torch.distributions` object: built here, or bound to a name in this function."""
        if type(receiver) is cst.Call:
            return (self.context.call_name(receiver) or "").startswith("torch.distributions.")
        if type(receiver) in (cst.ListComp, cst.GeneratorExp):
            return self._distribution(receiver.elt, depth + 1)  # `[Categorical(logits=b(x)) for b in heads]`
        if type(receiver) in (cst.List, cst.Tuple):
            return any(self._distribution(element.value, depth + 1) for element in receiver.elements)
        if type(receiver) is not cst.Name or depth > 3:
            return False
        scopes = self.context.scopes
        return any(value is not None and self._distribution(value, depth + 1) for value in scopes.values(receiver.value)) or any(
            self._distribution(iterable, depth + 1) for iterable in scopes.iterated(receiver.value)
        )  # `for dist in probs: dist.sample()`

    def _training(
        self, node: cst.Call, qualified: Optional[str], attribute: Optional[str], function: FunctionSummary, site
    ) -> None:
        """A call that runs a backward pass: the run trains (backward-only conditions count)."""
        if function.trains is not None:
            return
        if qualified in TRAINING_CALLS or (attribute in BACKWARD_METHODS and qualified is None):
            function.add_trains(site(f"`{_spelling(node.func)}(...)`"))
        elif qualified is None and (
            attribute in TRAINING_METHODS
            or (
                attribute == "train"
                and all(literal(arg.value) is True for arg in node.args)
                and not self._built_network(node.func.value)
            )
        ):
            function.add_trains(site(f"`{_spelling(node.func)}(...)`"))
        elif qualified in GRADIENT_SCALERS or builds_optimizer(qualified):
            function.add_trains(site(f"`{_spelling(node.func)}(...)`"))
        elif qualified == LIGHTNING_CLI and literal(arg_value(node, "run")) is not False:
            function.add_trains(site("`LightningCLI(...)` (runs `fit`)"))
        elif attribute is not None and qualified is None and self._library_loop(node.func.value, attribute):
            function.add_trains(site(f"`{_spelling(node.func)}(...)`"))

    def _built_network(self, receiver: cst.BaseExpression) -> bool:
        """`model = UNet(...).cuda(); model.train()`: the receiver was visibly built here as a
        network (a torch or library module class or model builder, or a module class of this
        file), so `.train()` only sets its mode (Monte Carlo dropout at inference). On anything
        else (`trainer.train()`) it may start a loop the analysis cannot see."""
        if type(receiver) is cst.Name:
            values = self.context.scopes.values(receiver.value)
        elif type(receiver) is cst.Attribute and type(receiver.value) is cst.Name and receiver.value.value == "self":
            values = self.context.scopes.attribute_values(receiver.attr.value)
        else:
            return False
        for value in values or [None]:
            built = unwrap_self_returning(value) if value is not None else None
            if type(built) is not cst.Call:
                return False
            name = self.context.call_name(built)
            if name is not None:
                if not is_module_base(name) and draw_kind(name) != "torch":
                    return False
            elif type(built.func) is not cst.Name or built.func.value not in self.summary.classes:
                return False
            elif not any(is_module_base(base) for base in self.summary.classes[built.func.value].bases):
                return False
        return True

    def _library_loop(self, receiver: cst.BaseExpression, method: str, depth: int = 0) -> bool:
        """`trainer.fit(model)` on a Lightning `Trainer`, `trainer.train()` on a Transformers one (or
        a subclass of this file): a library loop that trains."""
        kind = type(receiver)
        if kind is cst.Call:
            name = self.context.call_name(receiver)
            if name is None and type(receiver.func) is cst.Name and receiver.func.value in self.summary.classes:
                return any(method in TRAINING_LOOPS.get(base, ()) for base in self.summary.classes[receiver.func.value].bases)
            return method in TRAINING_LOOPS.get(name or "", ())
        if depth > 2:
            return False
        if kind is cst.Name:
            values = self.context.scopes.values(receiver.value, module_too=True)
        elif kind is cst.Attribute:
            values = self.context.scopes.expression_values(receiver)
        else:
            return False
        return any(value is not None and self._library_loop(value, method, depth + 1) for value in values[-MAX_CANDIDATES:])

    def _receiver_makers(self, receiver: cst.BaseExpression) -> List[str]:
        """What `receiver.method()` may be called on: a first-party constructor or factory call
        (`TrainLoop(...).run_loop()`), a name or `self.` attribute bound from one."""
        kind = type(receiver)
        if kind is cst.Call or (kind is cst.Name and receiver.value != "self"):
            return self._makers_of(receiver)
        if kind is cst.Attribute and type(receiver.value) is cst.Name and receiver.value.value == "self":
            return self._makers_of(receiver)
        return []

    def _commands(self, value: cst.BaseExpression) -> List[str]:
        """The functions of a table of commands handed to a command-line launcher: a dict or list
        display (`fire.Fire({"train": train})`), a name bound to one in this function or at module
        level, or a module-level registry (`CLI(PARSER_DATA)`, also imported): each may run."""
        kind = type(value)
        if kind in (cst.Dict, cst.List, cst.Tuple, cst.Set):
            elements = value.elements
            if len(elements) > MAX_REGISTRY_MEMBERS:
                return []
            members = [e.value for e in elements if type(e) in (cst.DictElement, cst.Element)]
            return [t for t in (self._target(m) for m in members if type(m) in (cst.Name, cst.Attribute)) if t]
        if kind is not cst.Name and kind is not cst.Attribute:
            return []
        found: List[str] = []
        if kind is cst.Name:
            for bound in self.context.scopes.values(value.value, module_too=True)[-MAX_CANDIDATES:]:
                if bound is not None and type(bound) in (cst.Dict, cst.List, cst.Tuple, cst.Set):
                    found += self._commands(bound)
        # A registry filled elsewhere (`COMMANDS["eval"] = evaluate`), or imported; not a function of this file.
        member = self._registry_member(value) if kind is cst.Attribute or value.value not in self.module_defs else None
        if member is not None:
            found.append(member)
        return found

    def _runs_object(self, value: cst.BaseExpression, function: FunctionSummary, seen: Set[str]) -> None:
        """A first-party object handed to a launcher or an executor (`executor.submit(trainer)`):
        the launcher calls it."""
        for made in self._receiver_makers(value):
            function.add_call(f"{made}.__call__", seen)

    def _remote_launch(self, node: cst.Call, function: FunctionSummary) -> None:
        """`executor.submit(trainer)` on a submitit executor: the job runs `trainer.__call__` (or the
        function handed over) in a process of its own, where the run's fixes belong."""
        value = arg_value(node, "fn", 0)
        if value is None or not self._remote_executor(node.func.value):
            return
        target = self._target(value) if type(value) in (cst.Name, cst.Attribute) else None
        launched = [target] if target is not None and self._first_party(target) else []
        if not launched:
            launched = [f"{made}.__call__" for made in self._receiver_makers(value)]
        for target in launched:
            if target not in function.launches:
                function.launches.append(target)

    def _remote_executor(self, receiver: cst.BaseExpression, depth: int = 0) -> bool:
        if type(receiver) is cst.Call:
            return self.context.call_name(receiver) in REMOTE_EXECUTORS
        if type(receiver) is not cst.Name or depth > 2:
            return False
        return any(
            value is not None and self._remote_executor(value, depth + 1) for value in self.context.scopes.values(receiver.value)
        )

    def _process_start(self, node: cst.Call, qualified: Optional[str], index: int) -> Optional[cst.BaseExpression]:
        """Record a function started in a new process; return the argument that names it."""
        started = process_start(node, qualified, self.context.qualified_name, self.context.scopes)
        if started is None or started[1] == FORK:
            return None
        expression, method = started
        target = self._target(expression) if type(expression) in (cst.Name, cst.Attribute) else None
        if target is None:
            # An object whose `__call__` the new process runs (`pool.submit(trainer)`).
            made = self._receiver_makers(expression)
            target = f"{made[0]}.__call__" if made else None
        if target is None:
            return None
        code = self.context.code_of
        spawn = Spawn(target, method, code(expression), _spelling(node.func), indexed=qualified in INDEXING_LAUNCHERS)
        spawn.passed = self._functions_passed(node, expression)
        self.function.spawns.append(spawn)
        self.spawn_calls.append((node, spawn))
        return expression

    def _functions_passed(self, node: cst.Call, started: cst.BaseExpression) -> List[str]:
        """First-party functions handed to the started function as its arguments (`Process(
        target=spawned_train, args=(train_fn, opt))`): the new process calls them, as OpenNMT's
        `spawned_train(process_fn, ...)` does."""
        values: List[cst.BaseExpression] = []
        for arg in node.args:
            if arg.value is started:
                continue
            if arg.keyword is not None and arg.keyword.value == "args" and type(arg.value) in (cst.Tuple, cst.List):
                values.extend(element.value for element in arg.value.elements)
            elif arg.keyword is None:
                values.append(arg.value)  # `executor.submit(fn, train_fn, opt)`
        passed = []
        for value in values:
            target = self._target(value) if type(value) in (cst.Name, cst.Attribute) else None
            if target and self._first_party(target) and target not in passed:
                passed.append(target)
        return passed

    def _seed_argument(self, node: cst.Call, site: Site) -> None:
        """The seed a seeding call passes, and the `if` that guards it on that seed
        (`if args.seed is not None:`): a spawned worker's fix seeds the same way."""
        found = find_arg(node, "seed", 0)
        if found is None or found.star:
            return
        seed = found.value
        code = self.context.code_of
        site.argument = code(seed)
        if self.ifs and not self.ifs[-1][1]:
            test = self.ifs[-1][0].test
            # The `if` guards this seed when its test reads that very expression (not a longer
            # one that merely contains its text: `seed` in `args.seed is not None`).
            if any(part.deep_equals(seed) for part in _subexpressions(test)):
                site.guard = code(test)

    def _instance_calls(self, func: cst.BaseExpression, qualified: Optional[str]) -> List[str]:
        """What calling an object runs: `model(x)` for `model = Net()` (its `__call__`, or `forward`
        for a module), `Net()(x)`, `self.model(x)` for `self.model = Net()`; and the constructors a
        registry call may run, `MODELS[name](...)` for `MODELS = {"a": NetA, "b": NetB}`."""
        found: List[str] = []
        kind = type(func)
        if kind is cst.Name:
            types = self.keys[-1][3]
            if func.value in types:
                found.append(f"{types[func.value]}.__call__")
            if qualified is None:  # a local, not an import or a builtin: `x = a or Net()`
                found.extend(f"{made}.__call__" for made in self._makers_of(func))
        elif kind is cst.Call:
            built = unwrap_self_returning(func)  # `Net().cuda()(x)`
            made = self._target(built.func) if type(built) is cst.Call else None
            if made:
                found.append(f"{made}.__call__")
        elif kind is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self":
            found.extend(f"{made}.__call__" for made in self._makers_of(func))
        elif kind is cst.Subscript:
            member = self._registry_member(func.value)
            if member:
                found.append(member)
        return found

    def _located(self, item: Any, kind: str, index: int) -> Any:
        """`item` gets its line (from `ast`) at the end of the file."""
        self.pending.append((item, kind, index))
        return item

    def _site(self, text: str, kind: str) -> Site:
        index = (self.calls_seen if kind == "call" else self.assigns_seen) - 1
        return self._located(Site(0, text), kind, index)

    def _environ_call(self, node: cst.Call, qualified: str) -> None:
        """`os.environ.setdefault(name, value)`, `os.environ.update({...}, name=value)`."""
        if qualified == "os.environ.setdefault":
            self._inductor_variable(literal(arg_value(node, position=0)), arg_value(node, position=1), "call")
            return
        for arg in node.args:
            if arg.keyword is not None:
                self._inductor_variable(arg.keyword.value, arg.value, "call")
            elif type(arg.value) is cst.Dict:
                for element in arg.value.elements:
                    if type(element) is cst.DictElement:
                        self._inductor_variable(literal(element.key), element.value, "call")

    def _inductor_variable(self, variable: Any, value: Optional[cst.BaseExpression], kind: str) -> None:
        """TORCHINDUCTOR_DETERMINISTIC=1 set before torch is imported turns Inductor's deterministic
        mode on: the variable is read when Inductor's config is imported."""
        setting = inductor_facts().deterministic
        if variable != setting.env or value is None or literal(value) != "1":
            return
        if any(m == "torch" or m.startswith("torch.") for m in self.resolver.imported_modules):
            return
        self.function.add_cover(COVER_EXPLICIT, self._site(f"`{setting.env}=1`", kind))

    # -- TDL302: operations that raise under the flag ------------------------------------------
    def _raising_match(self, node: cst.Call, assume_no_grad: bool) -> Optional[OperationMatch]:
        """The operation TDL202 would report for this call (in some profile), as TDL202 picks it."""
        raising = [m for m in match_operations(self.context, node, assume_no_grad=assume_no_grad) if m.behavior == RAISES]
        if not raising:
            return None
        return max(raising, key=lambda m: (not m.strict_only, m.certain))

    def _raising(self, node: cst.Call, function: FunctionSummary, index: int) -> None:
        """Record an operation that raises under the flag, with TDL202's reading of whether a
        gradient flows (TDL302's fix is withheld where such an operation is reached); one that
        raises only in a backward pass is marked so (it raises only in a run that trains)."""
        found = self._raising_match(node, False)
        if found is None:
            return
        scopes = self.context.scopes
        without_grad = self._raising_match(node, True)
        if without_grad is None and used_only_without_grad(self.context, node):
            return  # no loss depends on the result (TDL202 is silent too)
        if found.strict_only and found.module_form and scopes.watch_module(node):
            self.spatial_undecided.append((function, index, node, found, without_grad is None))
            return
        identity = scopes.function_identity
        if identity is not None and not scopes.grad_disabled and without_grad != found:
            gradient = _gradient_text(gradient_parameters(self.context, node)) if without_grad is None else ""
            self.raising_undecided.append((function, index, identity, found, without_grad, gradient))
            return
        self._add_raising(function, index, found, without_grad is None)

    def _add_raising(
        self, function: FunctionSummary, index: int, match: OperationMatch, backward: bool, gradient: str = ""
    ) -> None:
        verb = "raises" if match.certain else "may raise"
        site = Site(0, f"`{match.name}` {verb}", backward=backward, cuda_only=match.cuda_only, gradient_from=gradient)
        site = self._located(site, "call", index)
        function.add_raising(RAISING_STRICT if match.strict_only else RAISING_ALWAYS, site)

    def _decide_raising(self) -> None:
        scopes = self.context.scopes
        for function, index, identity, found, without_grad, gradient in self.raising_undecided:
            chosen = without_grad if scopes.only_called_without_grad(identity) else found
            if chosen is not None:
                backward = chosen is found and without_grad is None
                gradient = gradient if backward and identity not in scopes.escapes else ""
                self._add_raising(function, index, chosen, backward, gradient)
        self.raising_undecided = []
        for function, index, node, found, backward in self.spatial_undecided:
            # A call with visibly spatial input: TDL202 reports the loss in every profile.
            chosen = replace(found, strict_only=False) if scopes.spatial_use(node) else found
            self._add_raising(function, index, chosen, backward)
        self.spatial_undecided = []

    def _cuda_device(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """A device that is CUDA: a string naming it (also in `"cuda" if ... else "cpu"`), a
        `torch.device(...)` of one, or a name, `self.<attr>` or attribute chain bound to one in
        this function (or, for a name, at module level). A `torch.device` object alone runs
        nothing: what uses it is the work."""
        if mentions_cuda(node):
            return True
        if depth > 3:
            return False
        kind = type(node)
        if kind is cst.Call:
            return self.context.call_name(node) == "torch.device" and any(
                self._cuda_device(value, depth + 1) for value in (arg_value(node, "type", 0),) if value is not None
            )
        if kind is cst.IfExp:
            return self._cuda_device(node.body, depth + 1) or self._cuda_device(node.orelse, depth + 1)
        if kind is cst.Name:
            values = self.context.scopes.values(node.value, module_too=True)
        elif kind is cst.Attribute:
            values = self.context.scopes.expression_values(node)
        else:
            return False
        return any(value is not None and self._cuda_device(value, depth + 1) for value in values)

    def _may_move(self, node: cst.Call, qualified: Optional[str], attribute: Optional[str]) -> bool:
        """Whether a call may put work on an accelerator: `.to(x)` or `device=x` with a device
        that is not visibly the CPU, `accelerator.prepare(...)`, DDP, a library trainer."""
        if qualified in DEVICE_CALLS:
            backend = literal(arg_value(node, "backend", 0)) if qualified == "torch.distributed.init_process_group" else None
            return backend != "gloo"
        if qualified is None and type(node.func) is cst.Name and node.func.value in self.summary.classes:
            # `class MyTrainer(Trainer)` of this file places the work as its library base does.
            if any(base in DEVICE_CALLS for base in self.summary.classes[node.func.value].bases):
                return True
        if qualified is None and attribute in ("cuda", "prepare"):
            return True
        if qualified is None and attribute == "to":
            if any(arg.keyword is None and self._not_cpu(arg.value, dtype_ok=True) for arg in node.args):
                return True
        return torch_device_call(qualified) and any(
            arg.keyword is not None and arg.keyword.value in DEVICE_KEYWORDS and self._not_cpu(arg.value) for arg in node.args
        )

    def _not_cpu(self, value: cst.BaseExpression, dtype_ok: bool = False, depth: int = 0) -> bool:
        """A device argument that may name an accelerator: not the literal CPU (`"cpu"`,
        `torch.device("cpu")`), not `None`, and, for `.to(...)`, not a dtype (`torch.float16`)."""
        kind = type(value)
        if kind is cst.Integer:
            return True  # `device=0`: a GPU index
        text = literal(value)
        if isinstance(text, str):
            return not text.startswith("cpu")
        if text is not NOT_LITERAL:
            return False  # None, a bool
        if kind is cst.Call and self.context.call_name(value) == "torch.device":
            inner = arg_value(value, "type", 0)
            return inner is None or self._not_cpu(inner, depth=depth + 1)
        qualified = self.context.qualified_name(value) if kind in (cst.Name, cst.Attribute) else None
        if qualified is not None and qualified.startswith("torch.") and dtype_ok:
            return False  # `torch.float16`, `torch.long`: a dtype
        if kind is cst.Name and depth < 2:
            values = self.context.scopes.values(value.value, module_too=True)
            if values and all(v is not None for v in values):
                return any(self._not_cpu(v, dtype_ok, depth + 1) for v in values)
        return True

    def _cuda(self, function: FunctionSummary, site: Site) -> None:
        if len(function.cuda) < MAX_SITES:
            function.cuda.append(site)

    # -- TDL102: DataLoaders with workers ------------------------------------------------------
    def _loader(self, node: cst.Call, qualified: str) -> None:
        if opaque_keywords(node):
            return  # num_workers / worker_init_fn may be hidden in **kwargs
        if qualified in own_worker_init_loaders():
            return  # the class gives its workers a worker_init_fn when the call gives none
        workers = arg_value(node, "num_workers", loader_position(qualified, 5))
        if (
            workers is None
            or literal(workers) == 0
            or arg_value(node, "worker_init_fn", loader_position(qualified, 10)) is not None
        ):
            return
        dataset_expression = arg_value(node, "dataset", 0)
        reference = self._dataset(dataset_expression, [], 0) if dataset_expression is not None else None
        self.loader_calls.append((node, reference, self.key))

    def _data_protocol(
        self, node: cst.Call, loader: str, target: Optional[str], function: FunctionSummary, seen: Set[str]
    ) -> None:
        """What iterating a DataLoader runs in this process: a first-party sampler's or batch
        sampler's `__iter__` always, a DataLoader subclass's own `__iter__`, and, without workers
        (`num_workers` absent or 0), the dataset's `__getitem__`/`__iter__` and the `collate_fn`:
        their draws are this run's draws. With workers they run in processes PyTorch seeds per
        worker (TDL102 covers the generators it cannot reseed)."""
        if target is not None and self._first_party(target):
            function.add_call(f"{target}.__iter__", seen)
        for keyword, position in (("sampler", 3), ("batch_sampler", 4)):
            value = arg_value(node, keyword, loader_position(loader, position))
            for made in self._makers_of(value) if value is not None else ():
                function.add_call(f"{made}.__iter__", seen)
        workers = arg_value(node, "num_workers", loader_position(loader, 5))
        if opaque_keywords(node) or (workers is not None and literal(workers) != 0):
            return
        dataset = arg_value(node, "dataset", loader_position(loader, 0))
        if dataset is not None:
            reference = self._dataset(dataset, [], 0)
            candidates = [t for t in (reference.targets if reference is not None else []) if self._first_party(t)]
            candidates += [made for made in self._makers_of(dataset) if made not in candidates]
            for made in candidates[:MAX_CANDIDATES]:
                function.add_call(f"{made}.__getitem__", seen)
                function.add_call(f"{made}.__iter__", seen)
        collate = arg_value(node, "collate_fn", loader_position(loader, 6))
        if type(collate) in (cst.Name, cst.Attribute):
            collate_target = self._target(collate)
            if collate_target is not None and self._first_party(collate_target):
                function.add_call(collate_target, seen)
            else:
                for made in self._makers_of(collate):
                    function.add_call(f"{made}.__call__", seen)

    def _trainer_loaders(self, node: cst.Call) -> None:
        """`trainer.fit(model, train_loader)`: the loaders handed to a Trainer, inline or
        through a name bound once in this function (Lightning gives them a worker_init_fn
        after `seed_everything(workers=True)`)."""
        for arg in node.args:
            value = arg.value
            if isinstance(value, cst.Name):
                bound = self.context.scopes.values(value.value)
                value = bound[0] if len(bound) == 1 else value
            if isinstance(value, cst.Call):
                self.trainer_loaders.add(id(value))

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
        return DatasetRef([target], wrappers, self.context.code_of(expression.func))

    # -- the end: offsets the project fixes need ------------------------------------------------------
    def finish(self) -> None:
        self._decide_raising()
        epoch_receivers_bound_elsewhere(self.summary, self.bound_to)
        self._handed_on()
        self._dispatch()
        summary = self.summary
        for function, site, identity in self.bound_modules:
            if identity in self.context.scopes.escapes:
                site.gradient_from = ""  # handed on: may be called with anything
            if not self.context.scopes.only_called_without_grad(identity):
                _add_op(function.ops, site, True)
        summary.imports = list(self.resolver.imported_modules)
        summary.star_imports = list(self.resolver.star_imports)
        summary.from_modules = list(self.resolver.from_modules)
        summary.exports = {name: value for name, value in self.resolver.module_final.items() if value is not None}
        needs_anchors = (
            summary.main_guard_line is not None
            or summary.module_work
            or summary.configured_entry
            or summary.is_notebook
            or self.context.path.endswith((".ipynb", "__main__.py"))
            or bool(self.loader_calls)
            or bool(self.spawn_calls)  # a spawned function's fix may need imports (a library file starting processes)
        )
        located = (
            self.context.has_reports or bool(self.loader_calls) or bool(self.spawn_calls)
        )  # findings to place in their functions
        positions = self.context.tree_positions
        if positions is not None:
            for item, kind, index in self.pending:
                item.line = positions.range(self.visited[kind][index])[0]
        if needs_anchors or self.pending or located:
            tree = self.context.python_tree()
            if tree is not None:
                # The walk over `ast` costs ~2% of a cold run: only when something waits for a line.
                if self.pending and positions is None:
                    self._lines(tree)
                if needs_anchors:
                    ast_anchors(tree, self.context.text, summary)
                if located:  # positions parsed the tree already
                    summary.spans = function_spans(tree)
        if self.loader_calls:
            self._loader_sites()
        if self.spawn_calls or any(function.launches for function in summary.functions.values()):
            self._spawn_sites()

    def _dispatch(self) -> None:
        """What runs by name at the end of the walk: `args.func(args)` runs every function handed to
        `set_defaults(func=...)` in this file; a main block that calls a test runner runs the file's
        `TestCase` methods and `test_*` functions."""
        handlers = {name[len(SET_DEFAULTS) : -1] for name in self.summary.registries if name.startswith(SET_DEFAULTS)}
        for function, attribute, seen in self.attribute_calls if handlers else ():
            if attribute in handlers:
                function.add_call(f".{SET_DEFAULTS}{attribute}>{REGISTRY_MEMBER}", seen)
        self.attribute_calls = []
        if self.runs_tests:
            main = self.summary.function(MAIN_KEY)
            seen = set(main.calls)
            for key in list(self.summary.functions):
                owner, _, name = key.rpartition(".")
                method = bool(owner) and owner in self.summary.classes and name.startswith(TEST_METHOD_PREFIXES)
                if method or (not owner and name.startswith("test_")):
                    main.add_call("." + key, seen)
            if self.test_runner is not None:
                runner, spelling = self.test_runner
                seed_by_harness(main, self.summary.classes, self.facts.test_bases, runner, spelling, self.facts.setup_test_bases)

    def _spawn_sites(self) -> None:
        """Where each process start is (its diagnostics), and where the fixes of the functions
        of this file that it starts go: the top of their bodies."""
        context = self.context
        for node, spawn in self.spawn_calls:
            spawn.line, column, spawn.end_line, end_column = context.node_range(node)
            spawn.column, spawn.end_column = column + 1, end_column + 1
            spawn.start_offset, spawn.end_offset = context.node_offsets(node)
        module_names = sorted(set(self.module_defs) | set(self.resolver.module_final))
        started = [spawn.target for _, spawn in self.spawn_calls]
        started += [target for function in self.summary.functions.values() for target in function.launches]
        for target in started:
            name = target[1:]
            node = self.function_nodes.get(name) if target.startswith(".") else None
            if node is None or name in self.summary.function_tops or type(node.body) is not cst.IndentedBlock:
                continue
            # The lines go after the docstring and the `global` declarations.
            body = list(node.body.body)
            if body and _is_docstring(body[0]):
                body.pop(0)
            while body and _is_declaration(body[0]):
                body.pop(0)
            if not body:
                continue  # nothing to put the lines before
            first = body[0]
            line = context.node_range(first)[0]
            indent = context.lines.line_text(line)[: context.node_range(first)[1]]
            if indent.strip():
                continue  # `def f(): ...; x` on one line
            params = node.params
            names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
            names += [p.name.value for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
            top = block_top_line(context.lines, line, indent)
            positional = [p.name.value for p in (*params.posonly_params, *params.params)]
            self.summary.function_tops[name] = FunctionTop(
                context.lines.offset(top, 0), top, indent, names + module_names, positional
            )

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
                indent = (
                    body.indent
                    if isinstance(body, cst.IndentedBlock) and body.indent is not None
                    else context.module.default_indent
                )
                params = node.params.params
                parameter = params[0].name.value if params else "worker_id"
                end_line = context.node_range(node)[2]
                end_offset = context.lines.offset(end_line + 1, 0) if end_line < len(context.lines.starts) else len(context.text)
                self.summary.worker_functions[name] = WorkerFunction(name, end_offset, indent, parameter, context.text[start:end])
        reuse = (
            "seed_worker"
            if "seed_worker" in self.summary.worker_functions
            else next(iter(sorted(self.summary.worker_functions)), None)
        )
        for node, reference, key in self.loader_calls:
            line, column, end_line, end_column = context.node_range(node)
            start, end = context.node_offsets(node)
            worker_edit = None
            if node.args and not has_star_args(node):
                # The TDL102 fix's call, laid out here: the project phase has no CST.
                written = context.written(node)
                new = with_keywords(written, [("worker_init_fn", cst.Name(reuse or "seed_worker"))])
                span = context.replacement_offsets(written)
                worker_edit = (span[0], span[1], context.call_text(written, new))
            to_trainer = id(node) in self.trainer_loaders or key.rsplit(".", 1)[-1] in LIGHTNING_LOADER_HOOKS
            self.summary.loaders.append(
                LoaderSite(line, column + 1, end_line, end_column + 1, start, end, reference, worker_edit, reuse, to_trainer)
            )
        for module in ("torch", "numpy", "random"):
            edit = context.import_edit(module)
            if edit is not None:
                self.summary.rng_import_edits[module] = (edit.start, edit.content)


_NEGATED = {"true": "false", "false": "true", "is": "is not", "is not": "is", "==": "!=", "!=": "=="}
_COMPARISONS = {cst.Is: "is", cst.IsNot: "is not", cst.Equal: "==", cst.NotEqual: "!="}


def _parameter_test(test: cst.BaseExpression, parameters: Dict[str, Any]) -> Optional[Tuple[str, str, Any]]:
    """(parameter, test, literal) for `p`, `not p`, `p is [not] None/True/False`, `p ==/!= <literal>`."""
    if type(test) is cst.Name and test.value in parameters:
        return test.value, "true", None
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        inner = _parameter_test(test.expression, parameters)
        if inner is not None and inner[1] in ("true", "false"):
            return inner[0], _NEGATED[inner[1]], None
        return None
    if type(test) is not cst.Comparison or len(test.comparisons) != 1 or type(test.left) is not cst.Name:
        return None
    name, comparison = test.left.value, test.comparisons[0]
    kind = _COMPARISONS.get(type(comparison.operator))
    value = literal(comparison.comparator)
    if name not in parameters or kind is None or not (value is None or isinstance(value, (bool, int, float, str))):
        return None
    if kind in ("is", "is not") and not (value is None or value is True or value is False):
        return None
    return name, kind, value


def _reads_training(test: cst.BaseExpression) -> bool:
    """A test that reads a module's mode: `self.training`, `self.training and p > 0`, `not model.training`."""
    stack: List[cst.CSTNode] = [test]
    while stack:
        node = stack.pop()
        if type(node) is cst.Attribute and node.attr.value == "training":
            return True
        stack.extend(sub_nodes(node))
    return False


def _drop_rebound_tests(function: FunctionSummary, rebound: Set[str]) -> None:
    """A parameter the body binds again (`memory_map = memory_map or x`) no longer holds what the
    callers pass: a test of it decides nothing."""
    sites = [site for sites in function.draws.values() for site in sites if site.branch]
    for site in sites:
        site.branch = tuple(test for test in site.branch if test[1] not in rebound)


def _gradient_text(params: Tuple[Tuple[str, int], ...]) -> str:
    """`Site.gradient_from`: "x#0,y#-1"."""
    return ",".join(f"{name}#{position}" for name, position in params)


def _add_op(ops: List[Site], site: Site, backward: bool) -> None:
    """A catalog operation, kept while fewer than `MAX_SITES` of its kind (forward or backward-only)
    are: a run that never trains still needs its forward ones named."""
    site.backward = backward
    if sum(1 for s in ops if s.backward == backward and s.cuda_only == site.cuda_only) < MAX_SITES:
        ops.append(site)


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


def _signature(node: cst.FunctionDef) -> Tuple[int, str, bool]:
    params = node.params
    positional = [*params.posonly_params, *params.params]
    required = sum(1 for p in positional if p.default is None) + sum(1 for p in params.kwonly_params if p.default is None)
    names = {p.name.value for p in (*positional, *params.kwonly_params)}
    return required, positional[0].name.value if positional else "", "seed" in names


def _subexpressions(node: cst.CSTNode) -> List[cst.CSTNode]:
    """The expressions inside `node` (an attribute's name is not one: `seed` of `args.seed`)."""
    found, pending = [], [node]
    while pending:
        current = pending.pop()
        found.append(current)
        pending.extend([current.value] if type(current) is cst.Attribute else sub_nodes(current))
    return found


def _is_declaration(statement: cst.BaseStatement) -> bool:
    return type(statement) is cst.SimpleStatementLine and all(
        type(small) in (cst.Global, cst.Nonlocal) for small in statement.body
    )


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        type(statement) is cst.SimpleStatementLine
        and len(statement.body) == 1
        and type(statement.body[0]) is cst.Expr
        and type(statement.body[0].value) in (cst.SimpleString, cst.ConcatenatedString)
    )


def _eval_proof_text(func: cst.BaseExpression, qualified: Optional[str]) -> str:
    """`F.dropout(..., training=True)`, `torch.cuda.FloatTensor(...).normal_(...)`: what makes the draw eval-proof."""
    if qualified is not None:
        return f"`{_spelling(func)}(..., {EVAL_PROOF_DROPOUTS[qualified][0]}=True)`"
    built = func.value.func if type(func) is cst.Attribute and type(func.value) is cst.Call else func
    return f"`{_spelling(built)}(...){_spelling(func)}(...)`"


def _spelling(func: cst.BaseExpression) -> str:
    dotted = dotted_name(func)
    if dotted is not None:
        return dotted
    if isinstance(func, cst.Attribute):
        return "." + func.attr.value
    if isinstance(func, cst.Subscript) and dotted_name(func.value) is not None:
        return f"{dotted_name(func.value)}[...]"
    return "call"


# What a seeding helper's body may call besides seeding: flag settings, logging, argument handling.
_HELPER_BODY_PREFIXES = (
    "torch.backends.",
    "os.environ",
    "logging.",
    "warnings.",
    "torch.use_deterministic_algorithms",
    "torch.set_deterministic",
)
_HELPER_BODY_CALLS = frozenset(
    "builtins." + name
    for name in ("print", "int", "str", "float", "bool", "isinstance", "hasattr", "getattr", "len", "abs", "hash", "max", "min")
) | frozenset({"os.getenv", "torch.cuda.is_available", "torch.initial_seed"})
_HELPER_BODY_METHODS = frozenset(
    {"manual_seed", "manual_seed_all", "seed", "info", "warning", "warn", "debug", "get", "setdefault", "format"}
)


def _seeding_body_call(qualified: Optional[str], attribute: Optional[str], table, configured) -> bool:
    """A call a seeding helper may make: a seeding call, a flag setting, logging, argument handling."""
    if qualified is None:
        return attribute in _HELPER_BODY_METHODS
    return (
        qualified in table.helpers
        or qualified in configured
        or qualified in table.cuda_only
        or qualified in _HELPER_BODY_CALLS
        or qualified.startswith(_HELPER_BODY_PREFIXES)
        or "seed" in qualified.rsplit(".", 1)[-1].lower()
    )


def _short(code: str) -> str:
    """An argument as written, for a message: one line, at most 40 characters."""
    code = " ".join(code.split())
    return code if len(code) <= 40 else code[:37] + "..."


def _seeded_generator(context: "FileContext", call: cst.Call) -> bool:
    """`generator=` given and not derived from `torch.initial_seed()` (which is random until seeded)."""
    value = arg_value(call, "generator")
    if value is None or not generator_given(context, call):
        return False
    code = cst.Module([]).code_for_node(value)
    return "initial_seed" not in code


def _import_prefix(name: Optional[cst.BaseExpression]) -> str:
    """The package a computed module name stays in: `"pkg.models." + file` and
    `f"pkg.models.{file}"` import only modules of `pkg.models`; "" when the name is not bounded."""
    if type(name) is cst.BinaryOperation and type(name.operator) is cst.Add:
        head = literal(name.left)
    elif type(name) is cst.FormattedString and name.parts and type(name.parts[0]) is cst.FormattedStringText:
        head = name.parts[0].value
    else:
        return ""
    if not isinstance(head, str) or not head.endswith(".") or head.startswith("."):
        return ""
    return head
