"""Orders the ranks of a distributed run must share, for TDL011: what makes a run distributed
(a process group, DDP, Accelerate, torchrun's variables), seeds drawn per process and where a
sampler or generator uses them, first-party samplers that shuffle from a process-global RNG, and
splits seeded from `torch.initial_seed()`; with the text edits of the fix (the rank-0 value,
broadcast). Filled in the shared traversal, right after the summary collector.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.core.names import arg_value, dotted_name, last_part
from torchdet_lint.core.traversal import contains, sub_nodes
from torchdet_lint.model.ranks import DISTRIBUTED_SETUP, RANK_NAMES, rank_variable

if TYPE_CHECKING:  # pragma: no cover
    from torchdet_lint.core.context import FileContext

HELPER = "rank_zero_value"  # the fix's helper: a value as rank 0 has it, on every rank
DISTRIBUTED = ":distributed"  # suffix of `torch_name` when it names `torch.distributed` itself
# A file none of these words appear in holds no distributed set-up, no sampler and no seed drawn.
WORDS = ("distributed", "Sampler", "sampler", "seed", "RANK", "Accelerator", "random_split")
# Draws of a seed per process, by qualified name: the global RNGs, the clock, the OS.
SEED_SOURCES = {
    "random.randint": "random",
    "random.randrange": "random",
    "random.random": "random",
    "random.getrandbits": "random",
    "numpy.random.randint": "numpy",
    "numpy.random.rand": "numpy",
    "numpy.random.random": "numpy",
    "torch.randint": "torch",
    "torch.seed": "torch",
    "time.time": "clock",
    "time.time_ns": "clock",
    "time.perf_counter": "clock",
    "os.urandom": "os",
    "os.getpid": "os",
    "secrets.randbits": "os",
    "secrets.randbelow": "os",
}
SEEDINGS = {
    "random.seed": "random",
    "numpy.random.seed": "numpy",
    "torch.manual_seed": "torch",
    "torch.random.manual_seed": "torch",
}
# Objects that take an order from a seed: the seed given to them is an order's.
ORDER_SEEDED = frozenset(
    {
        "torch.utils.data.DistributedSampler",
        "torch.utils.data.distributed.DistributedSampler",
        "random.Random",
        "numpy.random.RandomState",
        "numpy.random.default_rng",
    }
)
# Draws from a process-global RNG that put data in an order (in a sampler): in place, or a value.
IN_PLACE = {"random.shuffle": "random", "numpy.random.shuffle": "numpy"}
VALUE_DRAWS = {
    "random.sample": "random",
    "random.choice": "random",
    "random.choices": "random",
    "random.randint": "random",
    "random.randrange": "random",
    "random.random": "random",
    "numpy.random.permutation": "numpy",
    "numpy.random.choice": "numpy",
    "numpy.random.randint": "numpy",
    "numpy.random.rand": "numpy",
    "torch.randperm": "torch",
    "torch.randint": "torch",
    "torch.rand": "torch",
    "torch.multinomial": "torch",
}
SAMPLER_BASES = frozenset({"Sampler", "BatchSampler", "DistributedSampler"})
SPLIT = "torch.utils.data.random_split"


@dataclass
class OrderDraw:
    """A draw the ranks must agree on: a seed drawn per process (`seed`), a shuffle in a
    first-party sampler (`sampler`), a split seeded from `torch.initial_seed()` (`split`)."""

    kind: str  # "seed", "sampler", "split"
    key: str  # the function
    line: int
    column: int
    end_line: int
    end_column: int
    start_offset: int
    end_offset: int
    text: str  # as written
    rng: str  # the RNG it draws from: "random", "numpy", "torch", "clock", "os"
    name: str = ""  # a seed draw: the name it is bound to (`args.seed`); a sampler draw: its class
    # The fix's edits: (start, end, text) with `HELPER(...)` around the value, or a line after the
    # statement for an in-place shuffle. Empty: no fix.
    edits: List[Tuple[int, int, str]] = field(default_factory=list)


@dataclass
class SeedUse:
    """A seed handed to what orders data (`DistributedSampler(seed=args.seed)`,
    `torch.Generator().manual_seed(seed)`): where the fix wraps it."""

    key: str
    line: int
    name: str  # the seed's dotted name
    text: str  # the call, as written
    edits: List[Tuple[int, int, str]] = field(default_factory=list)


@dataclass
class RankOrderFacts:
    distributed: Dict[str, List[Tuple[int, str]]] = field(default_factory=dict)  # function -> set-up calls
    draws: List[OrderDraw] = field(default_factory=list)
    uses: List[SeedUse] = field(default_factory=list)
    sampler_classes: List[str] = field(default_factory=list)  # first-party samplers defined here
    # The helper's anchor: where it goes, `torch`'s name (None: `import torch` to add at `import_edit`).
    helper_defined: bool = False
    helper_offset: int = 0
    helper_blank_after: int = 0
    helper_at_end: bool = False
    torch_name: Optional[str] = None  # the module's name for `torch.distributed` (`dist`), else for `torch`
    import_edit: Optional[Tuple[int, str]] = None


class RankOrderCollector(cst.BatchableCSTVisitor):
    def __init__(self, context: "FileContext", collector: Any) -> None:
        super().__init__()
        self.context = context
        self.collector = collector
        self.facts = RankOrderFacts()
        self.classes: List[Optional[str]] = []  # per enclosing class or def: a sampler class's name
        self.seeded: List[Set[str]] = [set()]  # per function: the RNGs seeded with a value every rank shares
        self._draws: List[Tuple[OrderDraw, cst.CSTNode, Optional[cst.CSTNode]]] = []
        self._uses: List[Tuple[SeedUse, cst.Call, List[cst.BaseExpression]]] = []
        self._statement: Optional[cst.SimpleStatementLine] = None
        self._setups: List[Tuple[str, str, cst.CSTNode]] = []  # (function, what, node): placed in `finish`
        self._shared = 0  # depth of `rank_zero_value(...)` calls around the walk: what is in them is shared
        self._shared_names: Set[Tuple[str, str]] = set()  # (function, name) of `x = rank_zero_value(x)`

    @classmethod
    def for_file(cls, context: "FileContext", collector: Any) -> Optional["RankOrderCollector"]:
        text = context.text
        return cls(context, collector) if any(word in text for word in WORDS) else None

    # -- where we are ------------------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        bases = {last_part(arg.value) for arg in node.bases if arg.keyword is None}
        # A class named like a sampler is one when it yields an order as torch's samplers do
        # (`__iter__`): a diffusion `ScheduleSampler` draws each rank's own timesteps, no order.
        named = node.name.value.endswith("Sampler") and _defines(node, "__iter__")
        sampler = node.name.value if bases & SAMPLER_BASES or named else None
        if sampler is not None and not self.classes:
            self.facts.sampler_classes.append(sampler)
        self.classes.append(sampler)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.classes.append(self.classes[-1] if self.classes else None)
        self.seeded.append(set())

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.classes.pop()
        self.seeded.pop()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._statement = node

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine) -> None:
        self._statement = None

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if len(node.targets) == 1 and type(value) is cst.Call and last_part(value.func) == HELPER and len(value.args) == 1:
            target = dotted_name(node.targets[0].target)
            if target is not None and target == dotted_name(value.args[0].value):
                self._shared_names.add((self.collector.key, target))

    def leave_Call(self, original_node: cst.Call) -> None:
        if last_part(original_node.func) == HELPER:
            self._shared -= 1

    # -- calls -------------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        if last_part(node.func) == HELPER:
            self._shared += 1  # the fix's own broadcast: what it wraps is shared already
            return
        if self._shared:
            return
        qualified = self.context.call_name(node)
        key = self.collector.key
        if qualified in DISTRIBUTED_SETUP or rank_variable(node):
            self._setups.append((key, _code(self.context, node.func), node))
            return
        if qualified in SEEDINGS and node.args and not _mentions_rank(node.args[0].value):
            self.seeded[-1].add(SEEDINGS[qualified])
        source = SEED_SOURCES.get(qualified or "")
        if source is not None:
            self._seed_draw(node, source, key)
        sampler = self.classes[-1] if self.classes else None
        if sampler is not None and arg_value(node, "generator") is None:
            if qualified in IN_PLACE:
                self._sampler_draw(node, IN_PLACE[qualified], key, sampler, in_place=True)
            elif qualified in VALUE_DRAWS:
                self._sampler_draw(node, VALUE_DRAWS[qualified], key, sampler, in_place=False)
        if qualified == SPLIT:
            self._split(node, key)
        self._seed_use(node, qualified, key)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if rank_variable(node):
            self._setups.append((self.collector.key, _code(self.context, node), node))

    def _seed_draw(self, node: cst.Call, source: str, key: str) -> None:
        """`args.seed = random.randint(0, 2**32)`: a seed each process draws on its own."""
        statement = self._statement
        if statement is None or len(statement.body) != 1 or type(statement.body[0]) is not cst.Assign:
            return
        assign = statement.body[0]
        if len(assign.targets) != 1 or not contains(assign.value, node):
            return
        name = dotted_name(assign.targets[0].target)
        if name is None or "seed" not in name.rsplit(".", 1)[-1].lower():
            return
        if source in self.seeded[-1]:
            return  # drawn after a seed every rank shares: the same on every rank
        draw = OrderDraw("seed", key, 0, 0, 0, 0, 0, 0, _code(self.context, node), source, name)
        self._draws.append((draw, node, None))

    def _sampler_draw(self, node: cst.Call, rng: str, key: str, sampler: str, in_place: bool) -> None:
        draw = OrderDraw("sampler", key, 0, 0, 0, 0, 0, 0, _code(self.context, node), rng, sampler)
        target = None
        if in_place:
            statement = self._statement
            shuffled = dotted_name(node.args[0].value) if node.args else None
            if statement is not None and shuffled is not None and len(statement.body) == 1 and _is_expression(statement, node):
                target = statement
                draw.name = f"{sampler}:{shuffled}"
        self._draws.append((draw, node, target))

    def _split(self, node: cst.Call, key: str) -> None:
        """`random_split(..., generator=torch.Generator().manual_seed(torch.initial_seed()))`: each
        rank splits by its own torch seed."""
        generator = arg_value(node, "generator", 2)
        if generator is None:
            return  # TDL104's
        initial = _find_call(generator, lambda call: self.context.call_name(call) == "torch.initial_seed")
        if initial is None or _find_call(generator, lambda call: last_part(call.func) == HELPER) is not None:
            return
        draw = OrderDraw("split", key, 0, 0, 0, 0, 0, 0, _code(self.context, node), "torch")
        self._draws.append((draw, node, initial))

    def _seed_use(self, node: cst.Call, qualified: Optional[str], key: str) -> None:
        """A seed handed to what orders data: a sampler, an RNG object, a generator's `manual_seed`."""
        func = node.func
        orders = (
            qualified in ORDER_SEEDED
            or (last_part(func) or "").endswith("Sampler")
            or (type(func) is cst.Attribute and func.attr.value == "manual_seed" and qualified not in SEEDINGS)
        )
        if not orders:
            return
        values = [arg.value for arg in node.args if not arg.star and _seed_name(arg.value) is not None]
        for value in values:
            use = SeedUse(key, 0, _seed_name(value) or "", _code(self.context, node))
            self._uses.append((use, node, [value]))

    # -- the end -----------------------------------------------------------------------------------
    def finish(self) -> Optional[RankOrderFacts]:
        facts = self.facts
        context = self.context
        for key, text, node in self._setups:
            facts.distributed.setdefault(key, []).append((context.node_range(node)[0], text))
        for draw, node, extra in self._draws:
            if draw.kind == "sampler" and ":" in draw.name and (draw.key, draw.name.split(":", 1)[1]) in self._shared_names:
                continue  # `indices = rank_zero_value(indices)` follows the shuffle
            line, column, end_line, end_column = context.node_range(node)
            draw.line, draw.column, draw.end_line, draw.end_column = line, column + 1, end_line, end_column + 1
            draw.start_offset, draw.end_offset = context.node_offsets(node)
            draw.edits = self._edits(draw, node, extra)
            facts.draws.append(draw)
        for use, node, values in self._uses:
            use.line = context.node_range(node)[0]
            for value in values:
                start, end = context.node_offsets(value)
                use.edits.append((start, start, HELPER + "("))
                use.edits.append((end, end, ")"))
            facts.uses.append(use)
        if not (facts.distributed or facts.draws or facts.uses or facts.sampler_classes):
            return None
        if facts.draws or facts.uses:
            self._anchor()
        self.collector.summary.rank_order = facts
        return facts

    def _edits(self, draw: OrderDraw, node: cst.CSTNode, extra: Optional[cst.CSTNode]) -> List[Tuple[int, int, str]]:
        context = self.context
        if draw.kind == "sampler" and extra is not None:
            # `random.shuffle(indices)` on a line of its own: `indices = rank_zero_value(indices)` after it.
            line, column, end_line, _ = context.node_range(extra)
            text = context.lines.line_text(line)
            if text[:column].strip() or end_line >= len(context.lines.starts):
                return []
            shuffled = draw.name.split(":", 1)[1]
            offset = context.lines.offset(end_line + 1, 0)
            return [(offset, offset, f"{text[:column]}{shuffled} = {HELPER}({shuffled})\n")]
        target = extra if draw.kind == "split" else node
        if draw.kind == "seed":
            return []  # wrapped where it is used
        start, end = context.node_offsets(target)
        return [(start, start, HELPER + "("), (end, end, ")")]

    def _anchor(self) -> None:
        context = self.context
        facts = self.facts
        final = context.resolver.module_final
        facts.helper_defined = HELPER in final
        offset = context.after_imports_offset()
        following = context.text[offset:]
        facts.helper_offset = offset
        facts.helper_blank_after = following[: len(following) - len(following.lstrip("\r\n"))].count("\n")
        facts.helper_at_end = not following.strip()
        named = sorted(name for name, bound in final.items() if bound == "torch.distributed")
        if named:
            facts.torch_name = ("dist" if "dist" in named else named[0]) + DISTRIBUTED
        elif final.get("torch") == "torch":
            facts.torch_name = "torch"
        else:
            facts.torch_name = next((name for name, bound in sorted(final.items()) if bound == "torch"), None)
        if facts.torch_name is None and "torch" not in final:
            edit = context.import_edit("torch")
            if edit is not None:
                facts.import_edit = (edit.start, edit.content)


def _code(context: "FileContext", node: cst.CSTNode) -> str:
    return context.code_of(node).strip()


def _seed_name(value: cst.BaseExpression) -> Optional[str]:
    """`args.seed`, `seed`, `self.seed`: a seed's dotted name."""
    dotted = dotted_name(value)
    return dotted if dotted is not None and "seed" in dotted.rsplit(".", 1)[-1].lower() else None


def _mentions_rank(node: cst.BaseExpression) -> bool:
    """An expression that uses a rank (`args.seed + rank`, `seed + dist.get_rank()`)."""
    found = _find(node, lambda n: type(n) in (cst.Name, cst.Attribute) and last_part(n) in RANK_NAMES)
    return found is not None


def _find(root: cst.CSTNode, test) -> Optional[cst.CSTNode]:
    pending = [root]
    while pending:
        current = pending.pop()
        if test(current):
            return current
        pending.extend(sub_nodes(current))
    return None


def _find_call(root: cst.CSTNode, test) -> Optional[cst.Call]:
    found = _find(root, lambda n: type(n) is cst.Call and test(n))
    return found  # type: ignore[return-value]


def _is_expression(statement: cst.SimpleStatementLine, node: cst.Call) -> bool:
    return type(statement.body[0]) is cst.Expr and statement.body[0].value is node


def _defines(node: cst.ClassDef, method: str) -> bool:
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    return any(type(statement) is cst.FunctionDef and statement.name.value == method for statement in body)
