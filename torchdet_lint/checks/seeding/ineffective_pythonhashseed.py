"""TDL006 `ineffective-pythonhashseed`: `PYTHONHASHSEED` set inside the program."""

from __future__ import annotations

import libcst as cst

from torchdet_lint.core.names import arg_value, literal
from torchdet_lint.core.rule import Rule


class IneffectivePythonHashSeed(Rule):
    """
    ## Why is this bad?
    Python reads `PYTHONHASHSEED` once, when the interpreter starts. Setting
    `os.environ["PYTHONHASHSEED"]` inside the program (a common line in
    seeding helpers) does not change the hash seed of the running
    interpreter: `hash()` of strings, and the iteration order of sets of
    strings, still change from run to run. It only affects child processes
    started later with a fresh interpreter.

    Reported for `os.environ["PYTHONHASHSEED"] = ...`,
    `os.environ.setdefault(...)`, `os.environ.update(...)` and `os.putenv(...)`.

    ## Known problems
    Setting it on purpose for subprocesses (`subprocess`, `spawn` workers) is
    legitimate: use `# noqa: TDL006` there.

    ## Options
    None.

    ## References
    - Python, `PYTHONHASHSEED`: <https://docs.python.org/3/using/cmdline.html#envvar-PYTHONHASHSEED>
    """

    code = "TDL006"
    name = "ineffective-pythonhashseed"
    summary = "`PYTHONHASHSEED` set inside the program does not change the running interpreter"
    trigger_words = ("PYTHONHASHSEED",)
    bad = (
        'import os\nos.environ["PYTHONHASHSEED"] = str(0)\n',
        'import os\nos.environ.setdefault("PYTHONHASHSEED", "0")\n',
    )
    good = (
        'import os\nseed = os.environ.get("PYTHONHASHSEED")\n',
        'import os\nos.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"\n',
    )

    MESSAGE = (
        "`PYTHONHASHSEED` set inside the program does not change this interpreter's hash seed (read at start-up); "
        "set it in the shell or launcher"
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            subscript = target.target
            if isinstance(subscript, cst.Subscript) and len(subscript.slice) == 1:
                element = subscript.slice[0].slice
                if isinstance(element, cst.Index) and literal(element.value) == "PYTHONHASHSEED":
                    if self.context.qualified_name(subscript.value) == "os.environ":
                        self.report(node, self.MESSAGE)
                        return

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("setdefault", "update", "putenv", "__setitem__"):
            return
        name = self.context.call_name(node)
        if name in ("os.environ.setdefault", "os.putenv", "os.environ.__setitem__"):
            if literal(arg_value(node, position=0)) == "PYTHONHASHSEED":
                self.report(node, self.MESSAGE)
        elif name == "os.environ.update":
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "PYTHONHASHSEED":
                    self.report(node, self.MESSAGE)
                    return
                if isinstance(arg.value, cst.Dict) and any(
                    isinstance(e, cst.DictElement) and literal(e.key) == "PYTHONHASHSEED" for e in arg.value.elements
                ):
                    self.report(node, self.MESSAGE)
                    return
