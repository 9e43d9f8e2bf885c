"""TDL009 `functional-dropout-always-on`: `F.dropout(...)` without `training=` in a
method of an `nn.Module` subclass, which keeps dropping after `model.eval()`.
"""

from __future__ import annotations

from typing import List, Optional, Set, Tuple

import libcst as cst

from torchdet_lint.core.call_edits import with_keywords
from torchdet_lint.core.diagnostics import Applicability, FixBuilder
from torchdet_lint.core.names import NOT_LITERAL, dotted_name, find_arg, has_star_args, literal
from torchdet_lint.core.rule import FixAvailability, Rule
from torchdet_lint.model.facts import is_module_base
from torchdet_lint.model.parameters import every_caller_passes, passed_parameter

# The functional dropouts whose `training` parameter (third, after `input` and `p`)
# defaults to True. `F.alpha_dropout` and `F.feature_alpha_dropout` default to False
# (every torch version): left out, see the docstring.
ALWAYS_ON = frozenset("torch.nn.functional." + name for name in ("dropout", "dropout1d", "dropout2d", "dropout3d"))
TRAINING_POSITION = 2
P_POSITION = 1


class FunctionalDropoutAlwaysOn(Rule):
    """
    ## Why is this bad?
    `nn.Dropout` follows the module's mode: it drops in `model.train()` and
    is the identity after `model.eval()`. The functional form does not know
    about the module: `F.dropout(x, p)` has `training=True` by default, so a
    `forward` that calls it without `training=` keeps drawing random masks
    after `model.eval()`. Evaluation metrics, predictions and exported
    outputs then change from run to run (and from call to call) even with
    every seed set, and the model scores worse than it is.

    Reported at the call: `F.dropout`, `F.dropout1d`, `F.dropout2d` and
    `F.dropout3d` (any spelling that resolves to `torch.nn.functional`:
    `import torch.nn.functional as F`, `from torch.nn import functional as F`,
    `torch.nn.functional.dropout`, `from torch.nn.functional import dropout`,
    aliases) without a `training` argument, neither as a keyword nor in its
    positional slot (`F.dropout(x, p, training)`: the third argument is
    `training`), in a method of an `nn.Module` subclass. A module class is one
    whose bases resolve to `torch.nn.Module` or another torch module class
    (`nn.Sequential`, `nn.Linear`, ..., `LightningModule`), or to a class of
    the same file that is one. Functions nested in such a method (a closure,
    a lambda) count: they run in the module's mode.

    Not reported either: a call that runs only in training mode, in the
    body of an `if` whose test is `self.training` or an `and` holding it
    (`if self.training and self.p > 0:`), in the `else` of
    `if not self.training:`, or in the training side of a conditional
    expression (`F.dropout(x, p) if self.training else x`).

    Not reported either: a dropout probability that is zero whenever the
    module is not training, so that the call draws nothing after
    `model.eval()`: `p=self.p if self.training else 0.0`, `p=0.0 if not
    self.training else self.p`, `p=self.p * self.training` (a bool is 0 or
    1), a literal `0`, a local name given only such values, or a parameter
    passed on (`F.dropout(x, p=dropout_p)` in a helper) for which every
    caller in the same file passes such an expression
    (`self._attend(q, k, dropout_p=0.0 if not self.training else self.p)`),
    or leaves it out when its default is one. A helper with no caller in its
    file, or one also used otherwise than called, is judged as written.

    Not reported: any `training` argument, since it is then a decision: a
    literal `training=True` is deliberate (Monte Carlo dropout), a
    non-literal one (`self.training`, a flag) follows something, and
    `training=False` never drops; `nn.Dropout` modules; calls outside a
    module class (a plain function receives no mode to follow); calls whose
    `*args` or `**kwargs` may carry `training`.

    Decisions where the contract's list and the code differ:
    `F.alpha_dropout` and `F.feature_alpha_dropout` default to
    `training=False` (in torch 2.13 as in every earlier release), so without
    `training=` they never drop, after `eval()` or before: nothing random
    remains, and they are not reported (that they do not drop in training
    either is a modelling bug this rule leaves alone). `torch.dropout`,
    `torch.alpha_dropout` and `torch.feature_alpha_dropout` take `train` as
    a required positional argument: it is always written, hence a decision,
    and they are not reported.

    ## Fix safety
    Unsafe: the fix passes `training=self.training` (as a keyword, appended
    the way the call is laid out: a one-line call stays on one line unless
    that passes the line length; then it is written one argument per line), so
    dropout stops after `model.eval()`. Evaluation and inference outputs
    change (they become deterministic, and usually better); a model that
    relied on dropout at inference (Monte Carlo dropout without saying so)
    should pass `training=True` instead. The fix is offered only when the
    enclosing method's first parameter is named `self` (and no nested
    function rebinds it); a `@staticmethod` or `@classmethod` gets none.

    ## Known problems
    The callers of a helper that passes its dropout probability on are
    read in the helper's own file only: a helper called from another module
    with `p if self.training else 0.0` is reported there.
    A module class whose base comes from another file (a first-party base
    module, a third-party model class other than Lightning's) is not
    recognised: its calls are not reported. The dropout of
    `F.scaled_dot_product_attention(..., dropout_p=p)` is always on too; it
    is not covered here (pass `dropout_p=p if self.training else 0.0`).

    ## Options
    None.

    ## References
    - `torch.nn.functional.dropout`: <https://pytorch.org/docs/stable/generated/torch.nn.functional.dropout.html>
    - `torch.nn.Module.eval`: <https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval>
    """

    code = "TDL009"
    name = "functional-dropout-always-on"
    summary = "`F.dropout(...)` without `training=` in an `nn.Module` keeps dropping after `model.eval()`"
    trigger_words = ("dropout",)
    fix_availability = FixAvailability.UNSAFE
    bad = (
        "import torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        return F.dropout(x, 0.5)\n",
        "from torch import nn\nfrom torch.nn.functional import dropout2d\n\n\n"
        "class Block(nn.Sequential):\n    def forward(self, x):\n        return dropout2d(super().forward(x), p=0.1)\n",
    )
    good = (
        "import torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        return F.dropout(x, 0.5, training=self.training)\n",
        "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.drop = nn.Dropout(0.5)\n\n    def forward(self, x):\n        return self.drop(x)\n",
        "import torch.nn.functional as F\n\n\ndef augment(x):\n    return F.dropout(x, 0.1)\n",
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        # Enclosing scopes, innermost last: ("class", is a module class, None) or
        # ("function", first parameter's name, every parameter's name).
        self.scopes: List[Tuple[str, object, object]] = []
        self.module_classes: Set[str] = set()
        # Blocks and expressions that run only in training mode (`if self.training and p > 0:`):
        # a dropout there never runs after `model.eval()`.
        self.training_only: Set[int] = set()
        self.in_training_block = 0

    # -- where we are ---------------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        is_module = any(self._module_base(base.value) for base in node.bases if base.keyword is None)
        if is_module:
            self.module_classes.add(node.name.value)
        self.scopes.append(("class", is_module, None))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.scopes.pop()

    def _module_base(self, base: cst.BaseExpression) -> bool:
        if type(base) is cst.Name and base.value in self.module_classes:
            return True  # a module class of this file
        return is_module_base(self.context.qualified_name(base))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scopes.append(("function",) + _parameters(node.params))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scopes.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.scopes.append(("function",) + _parameters(node.params))

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.scopes.pop()

    def _in_module_method(self) -> Tuple[bool, bool]:
        """(the code is in a method of a module class, possibly nested in it; `self` there is
        the module: the method's first parameter is `self` and no nested function rebinds it)."""
        shadowed = False
        for index in range(len(self.scopes) - 1, -1, -1):
            kind, first, names = self.scopes[index]
            if kind == "class":
                return False, False  # in a class body, not in one of its methods
            outer = self.scopes[index - 1] if index else None
            if outer is not None and outer[0] == "class":
                if not outer[1]:
                    return False, False
                return True, first == "self" and not shadowed
            shadowed = shadowed or "self" in names
        return False, False

    # -- training-only code ------------------------------------------------------------------
    def visit_If(self, node: cst.If) -> None:
        if _requires_training(node.test):
            self.training_only.add(id(node.body))
        elif _requires_eval(node.test) and type(node.orelse) is cst.Else:
            self.training_only.add(id(node.orelse.body))

    def visit_IfExp(self, node: cst.IfExp) -> None:
        if _requires_training(node.test):
            self.training_only.add(id(node.body))
        elif _requires_eval(node.test):
            self.training_only.add(id(node.orelse))

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.in_training_block += id(node) in self.training_only

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self.in_training_block -= id(original_node) in self.training_only

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self.in_training_block += id(node) in self.training_only

    def leave_SimpleStatementSuite(self, original_node: cst.SimpleStatementSuite) -> None:
        self.in_training_block -= id(original_node) in self.training_only

    # -- the calls --------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        if not self.scopes or self.in_training_block or id(node) in self.training_only:
            return
        func = node.func
        if type(func) is cst.Attribute and "dropout" not in func.attr.value:
            return  # a name may be an alias (`drop = F.dropout`), an attribute chain may not
        if self.context.call_name(node) not in ALWAYS_ON:
            return
        if find_arg(node, "training", TRAINING_POSITION) is not None or has_star_args(node):
            return
        probability = find_arg(node, "p", P_POSITION)
        if probability is not None and self._zero_in_eval(probability.value, 0):
            return
        in_method, has_self = self._in_module_method()
        if not in_method:
            return
        spelling = dotted_name(func) or "dropout"
        advice = "pass `training=self.training`" if has_self else "pass the module's `training` flag"
        self.report(
            node,
            f"`{spelling}(...)` without `training=` (it defaults to `True`) keeps drawing random masks after "
            f"`model.eval()`: evaluation outputs change from run to run; {advice}",
            self._fix(node) if has_self else None,
        )

    def _zero_in_eval(self, value: cst.BaseExpression, depth: int) -> bool:
        """A dropout probability that is zero whenever the module is not training: as written
        (`_zero_when_not_training`), through the values a local name was given, or a parameter
        passed on whose every caller in this file passes such a value (or leaves out a parameter
        whose default is one)."""
        if _zero_when_not_training(value):
            return True
        if type(value) is not cst.Name or depth > 3:
            return False
        if passed_parameter(self.context, value) is not None:
            return every_caller_passes(self.context, value, _zero_when_not_training)
        values = self.context.scopes.values(value.value)
        return bool(values) and all(v is not None and self._zero_in_eval(v, depth + 1) for v in values)

    def _fix(self, node: cst.Call) -> FixBuilder:
        builder = FixBuilder("Pass `training=self.training`", Applicability.UNSAFE)
        written = self.context.written(node)
        return builder.replace(node, with_keywords(written, [("training", cst.parse_expression("self.training"))]))


def _parameters(params: cst.Parameters) -> Tuple[Optional[str], frozenset]:
    """The first parameter's name (None when there is none) and every parameter's name."""
    positional = [*params.posonly_params, *params.params]
    names = [param.name.value for param in (*positional, *params.kwonly_params)]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            names.append(star.name.value)
    return (positional[0].name.value if positional else None), frozenset(names)


def _is_self_training(node: cst.BaseExpression) -> bool:
    return (
        type(node) is cst.Attribute
        and node.attr.value == "training"
        and type(node.value) is cst.Name
        and node.value.value == "self"
    )


def _requires_training(test: cst.BaseExpression) -> bool:
    """`self.training`, or an `and` of tests one of which is (`self.training and self.p > 0`)."""
    if _is_self_training(test):
        return True
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        return _requires_training(test.left) or _requires_training(test.right)
    return False


def _zero_when_not_training(value: cst.BaseExpression) -> bool:
    """`0.0`, `self.p if self.training else 0.0`, `0.0 if not self.training else p`,
    `self.p * self.training` (a bool is 0 or 1)."""
    constant = literal(value)
    if constant is not NOT_LITERAL:
        return constant == 0 and not isinstance(constant, bool)
    kind = type(value)
    if kind is cst.IfExp:
        if _requires_training(value.test):
            return _zero_when_not_training(value.orelse)
        if _requires_eval(value.test):
            return _zero_when_not_training(value.body)
        return _zero_when_not_training(value.body) and _zero_when_not_training(value.orelse)
    if kind is cst.BinaryOperation and type(value.operator) is cst.Multiply:
        return any(_is_self_training(side) or _zero_when_not_training(side) for side in (value.left, value.right))
    return False


def _requires_eval(test: cst.BaseExpression) -> bool:
    """`not self.training`: its `else` runs only in training mode."""
    return type(test) is cst.UnaryOperation and type(test.operator) is cst.Not and _is_self_training(test.expression)
