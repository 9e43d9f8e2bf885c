"""What the performance rules share: the profile, and cheap readings of calls
(device arguments, the name bound to `torch`, literal strings).
"""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from torchdet_lint.core.names import NOT_LITERAL, arg_value, literal
from torchdet_lint.core.rule import Rule
from torchdet_lint.core.traversal import sub_nodes

PERFORMANCE = frozenset({"performance"})


def string_value(node: Optional[cst.CSTNode]) -> Optional[str]:
    value = literal(node)
    return value if isinstance(value, str) else None


def strings_in(node: cst.CSTNode) -> Iterator[str]:
    """The literal strings inside an expression (device choices such as `"cuda" if ok else "cpu"`)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.SimpleString, cst.ConcatenatedString)):
            value = string_value(current)
            if value is not None:
                yield value
            continue
        stack.extend(sub_nodes(current))


def last_name(node: cst.CSTNode) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return ""


def is_device_name(node: cst.CSTNode) -> bool:
    name = last_name(node).lower()
    return "device" in name or name in ("dev", "gpu")


def device_like(rule: Rule, node: cst.BaseExpression) -> bool:
    """A `.to(...)` argument that names an accelerator: a device string other than
    "cpu", `torch.device(...)`, an int index, or a variable named like a device.
    A dtype (`torch.float16`) or another tensor is not."""
    value = literal(node)
    if isinstance(value, str):
        return not value.startswith("cpu")
    if isinstance(value, int) and not isinstance(value, bool):
        return True
    if value is not NOT_LITERAL:
        return False
    if isinstance(node, cst.Call):
        if rule.context.call_name(node) != "torch.device":
            return False
        return string_value(arg_value(node, "type", 0)) not in ("cpu",)
    if isinstance(node, cst.IfExp):
        return device_like(rule, node.body) or device_like(rule, node.orelse)
    return isinstance(node, (cst.Name, cst.Attribute)) and is_device_name(node)


def torch_module_name(rule: Rule) -> Optional[str]:
    """The module-level name bound to the `torch` module (`torch`, or `T` after `import torch as T`)."""
    final = rule.context.resolver.module_final
    if final.get("torch") == "torch":
        return "torch"
    for name, qualified in final.items():
        if qualified == "torch":
            return name
    return None if "torch" in final else ""  # "": free, an `import torch` can be added


def may_name(call: cst.Call, names) -> bool:
    """Cheap pre-check before resolving: an attribute call must spell one of `names`
    (`torch.nn.DataParallel(...)`); a plain name may be an alias (`DP(...)`)."""
    func = call.func  # exact type tests: a failing isinstance() against LibCST's ABCs is slow
    return type(func) is cst.Name or (type(func) is cst.Attribute and func.attr.value in names)


def call_attr(node: cst.Call) -> str:
    """The method or function name of a call (`cuda` in `x.cuda()`), cheap, unresolved."""
    func = node.func
    if type(func) is cst.Attribute:
        return func.attr.value
    if type(func) is cst.Name:
        return func.value
    return ""
