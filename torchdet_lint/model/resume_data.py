"""Where a resumed run picks its data up again, for TDL010: the loops over a loader's batches
(and what they save inside), the skips of consumed batches, the loader or sampler positions a
run restores, and the resumes that are not an optimizer's `load_state_dict` (Accelerate's
`load_state`). Filled in the shared traversal, right after the summary collector (it reads the
collector's function key and call target); the project phase connects the functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import libcst as cst

from torchdet_lint.core.names import arg_value, dotted_name, last_part, literal
from torchdet_lint.model.checkpoints import STATEFUL_LOADERS
from torchdet_lint.model.facts import is_dataloader

if TYPE_CHECKING:  # pragma: no cover
    from torchdet_lint.core.context import FileContext

# A file none of these words appear in holds no loop over a loader and no resume: it is not walked.
WORDS = ("loader", "Loader", "next(", "load_state", "save_state", "islice", "skip_first_batches")
# Calls whose first argument is what a loop iterates (`enumerate(loader)`, `tqdm(loader)`).
WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "zip", "cycle", "track", "progress", "repeat", "chain"})
# Calls that skip the batches a resumed run has already seen.
SKIPS = frozenset({"islice", "skip_first_batches"})
# Savers of a whole training state that carry no loader position unless configured to.
STATE_SAVES = frozenset({"save_state"})
# Keyword arguments of a sampler or loader that start it where a run stopped (`consumed_samples=`).
POSITION_WORDS = ("consumed", "start", "skip", "resume", "offset")


@dataclass
class Place:
    key: str  # the function (summary key)
    line: int
    text: str
    # The node's range: (column, end line, end column, start offset, end offset), columns 1-based.
    span: Tuple[int, int, int, int, int] = (1, 0, 1, 0, 0)


@dataclass
class BatchLoop:
    """A loop that takes a loader's batches (`for batch in loader`, `batch = next(data_iter)` in a
    `while`), with the saves and the first-party calls in its body."""

    key: str
    line: int
    end_line: int
    loader: str  # as written
    saves: List[Place] = field(default_factory=list)  # `torch.save(...)`, `accelerator.save_state(...)`
    calls: List[Tuple[str, int]] = field(default_factory=list)  # first-party targets called in the body, with lines
    skips: bool = False  # it skips consumed batches (`islice`, `skip_first_batches`, `if step < start: continue`)
    # What each save holds, by line: the keys of a visible dict (or a description).
    holds: Dict[int, str] = field(default_factory=dict)
    tests: Dict[int, str] = field(default_factory=dict)  # the `if` test over each save, by line


@dataclass
class ResumeDataFacts:
    loops: List[BatchLoop] = field(default_factory=list)
    skips: Dict[str, List[Place]] = field(default_factory=dict)  # function -> skips of consumed batches
    restores: List[Place] = field(default_factory=list)  # loader or sampler positions restored
    resumes: List[Place] = field(default_factory=list)  # `accelerator.load_state(...)` and the like
    state_saves: Dict[str, List[Place]] = field(default_factory=dict)  # function -> `accelerator.save_state(...)`


class _Loop:
    __slots__ = ("key", "node", "loader", "saves", "calls", "skips", "tests", "ifs")

    def __init__(self, key: str, node: cst.CSTNode, loader: Optional[str], skips: bool, ifs: int) -> None:
        self.key = key
        self.node = node
        self.loader = loader
        self.saves: List[Tuple[cst.Call, str]] = []
        self.calls: List[Tuple[str, cst.Call]] = []
        self.skips = skips
        self.tests: List[Tuple[cst.Call, str]] = []
        self.ifs = ifs  # the depth of the `if` stack when the loop started


class ResumeDataCollector(cst.BatchableCSTVisitor):
    def __init__(self, context: "FileContext", collector: Any) -> None:
        super().__init__()
        self.context = context
        self.collector = collector
        self.facts = ResumeDataFacts()
        self.loops: List[_Loop] = []
        self.ifs: List[cst.If] = []
        self._found: List[_Loop] = []
        self._places: List[Tuple[Place, cst.CSTNode]] = []

    @classmethod
    def for_file(cls, context: "FileContext", collector: Any) -> Optional["ResumeDataCollector"]:
        text = context.text
        return cls(context, collector) if any(word in text for word in WORDS) else None

    # -- loops -----------------------------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.loops.append(None)  # a barrier: a nested function's body is not the loop's
        self.ifs.append(None)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.loops.pop()
        self.ifs.pop()

    def visit_For(self, node: cst.For) -> None:
        loader, skips = self._loader(node.iter)
        self.loops.append(_Loop(self.collector.key, node, loader, skips, len(self.ifs)))

    def leave_For(self, original_node: cst.For) -> None:
        loop = self.loops.pop()
        self._leave(loop)
        if loop.loader is None and _fast_forward(original_node):
            self._place(self.facts.skips, original_node, "a loop of `next(...)` calls that skips batches")

    def visit_While(self, node: cst.While) -> None:
        self.loops.append(_Loop(self.collector.key, node, None, False, len(self.ifs)))

    def leave_While(self, original_node: cst.While) -> None:
        self._leave(self.loops.pop())

    def _leave(self, loop: _Loop) -> None:
        if loop.loader is not None and (loop.saves or loop.calls):
            self._found.append(loop)

    def visit_If(self, node: cst.If) -> None:
        self.ifs.append(node)

    def leave_If(self, original_node: cst.If) -> None:
        self.ifs.pop()

    def visit_Continue(self, node: cst.Continue) -> None:
        loop = self._loop()
        if loop is None:
            return
        # `if step < resume_step: continue`: the consumed batches are skipped.
        if any(test is not None and _orders(test.test) for test in self.ifs[loop.ifs :]):
            loop.skips = True

    def _loop(self) -> Optional[_Loop]:
        return self.loops[-1] if self.loops else None

    # -- what a loop iterates ----------------------------------------------------------------------
    def _loader(self, node: cst.BaseExpression, depth: int = 0) -> Tuple[Optional[str], bool]:
        """(the loader as written, whether consumed batches are skipped) when `node` yields a
        loader's batches; (None, False) otherwise."""
        if depth > 4:
            return None, False
        kind = type(node)
        if kind is cst.IfExp:
            body, body_skips = self._loader(node.body, depth + 1)
            orelse, orelse_skips = self._loader(node.orelse, depth + 1)
            return body or orelse, body_skips or orelse_skips
        if kind is cst.Call:
            name = last_part(node.func)
            if name in SKIPS and node.args:
                loader, _ = self._loader(node.args[0].value, depth + 1)
                return loader, loader is not None
            if name in WRAPPERS and node.args:
                return self._loader(node.args[0].value, depth + 1)
            qualified = self.context.call_name(node)
            if is_dataloader(qualified) or qualified in STATEFUL_LOADERS:
                return self.context.code_of(node.func) + "(...)", False
            return None, False
        if kind in (cst.Name, cst.Attribute):
            dotted = dotted_name(node)
            if dotted is None:
                return None, False
            if "loader" in dotted.rsplit(".", 1)[-1].lower():
                return dotted, False
            if kind is cst.Name:
                bound = self.context.scopes.value(node.value)
                if bound is not None and type(bound) in (cst.Call, cst.IfExp, cst.Name, cst.Attribute) and bound is not node:
                    loader, skips = self._loader(bound, depth + 1)
                    return (dotted if loader is not None else None), skips
        return None, False

    # -- calls -----------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = last_part(func)
        loop = self._loop()
        if name == "next" and type(func) is cst.Name and node.args and loop is not None and loop.loader is None:
            loader, skips = self._loader(node.args[0].value)
            if loader is not None:
                loop.loader, loop.skips = loader, loop.skips or skips
        if name in SKIPS:
            self._place(self.facts.skips, node, f"`{_code(self.context, func)}(...)` skips consumed batches")
        elif name == "load_state_dict" and type(func) is cst.Attribute and self._positioned(func.value):
            self.facts.restores.append(self._at(node, f"`{_code(self.context, func)}(...)` restores the loader's position"))
        elif name == "load_state" and type(func) is cst.Attribute and _accelerator(func.value):
            self.facts.resumes.append(self._at(node, f"`{_code(self.context, func)}(...)`"))
        elif name in STATE_SAVES and type(func) is cst.Attribute and _accelerator(func.value):
            self._place(self.facts.state_saves, node, f"`{_code(self.context, func)}(...)`")
            for enclosing in self._enclosing():
                enclosing.saves.append((node, "the model, optimizer and RNG states"))
                self._test(enclosing, node)
        elif self.context.call_name(node) == "torch.save":
            for enclosing in self._enclosing():
                enclosing.saves.append((node, self._holds(node)))
                self._test(enclosing, node)
        else:
            self._position_keywords(node, name)
            target = self.collector.call_target(node)
            if target and (target.startswith(".") or target.split(".", 1)[0] in self.context.first_party):
                for enclosing in self._enclosing():
                    enclosing.calls.append((target, node))
                    self._test(enclosing, node)

    def _enclosing(self) -> List[_Loop]:
        found = []
        for loop in reversed(self.loops):
            if loop is None:
                break
            found.append(loop)
        return found

    def _test(self, loop: _Loop, node: cst.Call) -> None:
        tests = [test for test in self.ifs[loop.ifs :] if test is not None]
        if tests:
            loop.tests.append((node, _code(self.context, tests[-1].test)))

    def _positioned(self, receiver: cst.BaseExpression) -> bool:
        """A loader or sampler whose state a `load_state_dict` restores (torchdata's
        `StatefulDataLoader`, a resumable sampler)."""
        dotted = dotted_name(receiver) or ""
        last = dotted.rsplit(".", 1)[-1].lower()
        if "loader" in last or "sampler" in last:
            return True
        if type(receiver) is cst.Name:
            bound = self.context.scopes.value(receiver.value)
            return type(bound) is cst.Call and self.context.call_name(bound) in STATEFUL_LOADERS
        return False

    def _position_keywords(self, node: cst.Call, name: Optional[str]) -> None:
        """`Sampler(..., consumed_samples=n)`, `Accelerator(dataloader_config=DataLoaderConfiguration(
        use_stateful_dataloader=True))`: the run starts its data where it stopped."""
        for arg in node.args:
            keyword = arg.keyword.value if arg.keyword is not None else None
            if keyword is None:
                continue
            if keyword == "use_stateful_dataloader" and literal(arg.value) is True:
                self.facts.restores.append(self._at(node, "a stateful dataloader (`use_stateful_dataloader=True`)"))
            elif name and ("Sampler" in name or "Loader" in name) and any(word in keyword for word in POSITION_WORDS):
                self.facts.restores.append(self._at(node, f"`{name}({keyword}=...)` starts where the run stopped"))

    def _holds(self, node: cst.Call) -> str:
        """What a `torch.save` writes: the keys of a visible dict."""
        obj = arg_value(node, "obj", 0)
        if type(obj) is cst.Name:
            obj = self.context.scopes.value(obj.value) or obj
        if type(obj) is cst.Dict:
            keys = [literal(element.key) for element in obj.elements if type(element) is cst.DictElement]
            shown = [f"`{key}`" for key in keys if isinstance(key, str)]
            if shown:
                return ", ".join(shown)
        return ""

    # -- positions -------------------------------------------------------------------------------
    def _at(self, node: cst.CSTNode, text: str) -> Place:
        place = Place(self.collector.key, 0, text)
        self._places.append((place, node))
        return place

    def _place(self, table: Dict[str, List[Place]], node: cst.CSTNode, text: str) -> None:
        table.setdefault(self.collector.key, []).append(self._at(node, text))

    def finish(self) -> Optional[ResumeDataFacts]:
        facts = self.facts
        context = self.context
        for loop in self._found:
            line, _, end_line, _ = context.node_range(loop.node)
            found = BatchLoop(loop.key, line, end_line, loop.loader or "", skips=loop.skips)
            for node, holds in loop.saves:
                save_line = context.node_range(node)[0]
                found.saves.append(Place(found.key, save_line, _code(context, node.func)))
                if holds:
                    found.holds[save_line] = holds
            found.calls = [(target, context.node_range(node)[0]) for target, node in loop.calls]
            for node, test in loop.tests:
                found.tests.setdefault(context.node_range(node)[0], test)
            facts.loops.append(found)
        for place, node in self._places:
            line, column, end_line, end_column = context.node_range(node)
            place.line, place.span = line, (column + 1, end_line, end_column + 1, *context.node_offsets(node))
        if not (facts.loops or facts.skips or facts.restores or facts.resumes or facts.state_saves):
            return None
        self.collector.summary.resume_data = facts
        return facts


def _code(context: "FileContext", node: cst.CSTNode) -> str:
    return context.code_of(node).strip()


def _accelerator(receiver: cst.BaseExpression) -> bool:
    """`accelerator`, `self.accelerator`: Accelerate's object (its `save_state`/`load_state`)."""
    dotted = dotted_name(receiver) or ""
    return dotted.rsplit(".", 1)[-1].lower().endswith("accelerator")


def _orders(test: cst.BaseExpression) -> bool:
    """A test holding an ordering comparison (`step < resume_step`)."""
    kind = type(test)
    if kind is cst.Comparison:
        return any(
            type(target.operator) in (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)
            for target in test.comparisons
        )
    if kind is cst.BooleanOperation:
        return _orders(test.left) or _orders(test.right)
    if kind is cst.UnaryOperation:
        return _orders(test.expression)
    return False


def _fast_forward(node: cst.For) -> bool:
    """`for _ in range(n): next(data_iter)`: the consumed batches are skipped."""
    body = node.body
    if type(body) is not cst.IndentedBlock or not body.body:
        return False
    for statement in body.body:
        if type(statement) is not cst.SimpleStatementLine:
            return False
        for small in statement.body:
            value = small.value if type(small) in (cst.Expr, cst.Assign) else None
            if type(value) is not cst.Call or last_part(value.func) != "next":
                return False
    return True
