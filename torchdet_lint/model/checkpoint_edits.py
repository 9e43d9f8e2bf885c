"""TDL008's fix planning, precomputed with the facts while the file's tree is at hand:
where `"rng_state": <call>` goes in each checkpoint dict, in the dict's own layout
(`entry_edit`), and where the pair of helpers and their imports go (`place_helpers`).
The rule applies them in the project phase, which has no tree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, List, Optional, Tuple

import libcst as cst

if TYPE_CHECKING:  # pragma: no cover
    from torchdet_lint.core.context import FileContext

KEY = "rng_state"  # the checkpoint key the fix adds
VALUE = "\x00"  # placeholder for the helper call in the precomputed edits
_NAME_BINDING_RE = re.compile(r"^[ \t]*[A-Za-z_][\w.]*[ \t]*=[ \t]*$")  # `checkpoint = ` before a dict


@dataclass
class EntryEdit:
    """How to add `"rng_state": <call>` to a checkpoint: edits whose text holds `VALUE`
    where the call goes. `wide` replaces `edits` when the inline form passes `room` columns."""

    edits: List[Tuple[int, int, str]]
    room: Optional[int] = None
    wide: Optional[List[Tuple[int, int, str]]] = None


def _code(context: "FileContext", node: cst.CSTNode) -> str:
    return context.code_of(node).strip()


def _elements(display: cst.BaseExpression) -> List[Any]:
    """A dict display's elements, a `dict(...)` call's arguments."""
    return list(display.elements) if type(display) is cst.Dict else list(display.args)


def exploded(context: "FileContext", display: cst.BaseExpression, entry: str, indent: str) -> str:
    """The dict display (or `dict(...)` call) one entry per line (with a trailing comma), `entry` last."""
    inner = indent + context.module.default_indent
    newline = context.newline
    codes = [_code(context, context.written(e).with_changes(comma=cst.MaybeSentinel.DEFAULT)) for e in _elements(display)]
    lines = [inner + code + "," + newline for code in codes]
    opening, closing = ("{", "}") if type(display) is cst.Dict else (_code(context, display.func) + "(", ")")
    return opening + newline + "".join(lines) + inner + entry + "," + newline + indent + closing


def entry_edit(
    context: "FileContext", call: cst.Call, display: cst.BaseExpression, item_name: Optional[str], quote: str
) -> Optional[EntryEdit]:
    """Where `"rng_state": <call>` goes: an item assignment before the save, or one more
    entry of the dict display (`rng_state=<call>` of a `dict(...)` call), in its own layout."""
    lines = context.lines
    newline = context.newline
    key = f"{quote}{KEY}{quote}"
    if item_name is not None:
        line, column, _, _ = context.node_range(call)
        prefix = lines.line_text(line)[:column]
        if prefix.strip():
            return None  # the save shares its line with other code
        start = lines.offset(line, 0)
        return EntryEdit([(start, start, f"{prefix}{item_name}[{key}] = {VALUE}{newline}")])
    elements = _elements(display)
    if not elements or any(type(e) is cst.Arg and e.star for e in elements):
        return None  # `dict(**base, ...)`: a `rng_state` in it is not visible
    last = elements[-1]
    entry = f"{key}: {VALUE}" if type(display) is cst.Dict else f"{KEY}={VALUE}"
    line, column, end_line, _ = context.node_range(display)
    last_line, last_column, last_end_line, last_end_column = context.node_range(last)
    value_end = lines.offset(last_end_line, last_end_column)
    trailing = type(context.written(last).comma) is cst.Comma
    if end_line == line:
        # One line: one more entry before the closing brace, or one entry per line when
        # that passes the line length (as a formatter would lay it out).
        text = lines.line_text(line)
        # Columns left for the call once `, "rng_state": ` is in (VALUE stands for the call).
        room = context.settings.line_length - len(text) - len(", ") - len(entry) + len(VALUE)
        edit = EntryEdit([(value_end, value_end, ", " + entry)], room=room)
        start, end = context.node_offsets(display)
        prefix = text[:column]
        after = text[end - lines.offset(line, 0) :].strip()
        indent = prefix[: len(prefix) - len(prefix.lstrip(" \t"))]
        if _NAME_BINDING_RE.match(prefix) and not after:
            # `checkpoint = {...}` alone on its line: one entry per line, as black and ruff
            # format lay out a dict that no longer fits (the trailing commas keep it so).
            edit.wide = [(start, end, exploded(context, display, entry, indent))]
        elif any(arg.value is display for arg in call.args) and not any(arg.star for arg in call.args):
            # `torch.save({...}, path)` alone on its lines: one argument per line, and the
            # dict one entry per line.
            call_line, call_column, call_end_line, call_end_column = context.node_range(call)
            call_prefix = lines.line_text(call_line)[:call_column]
            call_after = lines.line_text(call_end_line)[call_end_column:].strip()
            call_start, call_end = context.node_offsets(call)
            alone = not call_prefix.strip() and (not call_after or call_after.startswith("#"))
            # The call is rewritten: not when that would drop a comment inside it.
            if alone and "#" not in context.text[call_start:call_end]:
                inner = call_prefix + context.module.default_indent
                arguments = [
                    exploded(context, display, entry, inner)
                    if arg.value is display
                    else _code(context, context.written(arg).with_changes(comma=cst.MaybeSentinel.DEFAULT))
                    for arg in call.args
                ]
                opening = _code(context, call.func) + "("
                body = "".join(inner + argument + "," + newline for argument in arguments)
                edit.wide = [(call_start, call_end, opening + newline + body + call_prefix + ")")]
        return edit
    last_text = lines.line_text(last_line)
    indent = last_text[:last_column]
    if indent.strip():
        # Several entries share the last entry's line: one more after it on that line, or on a
        # line of its own below them (at the first one's column) when that passes the line length.
        first_column = min(context.node_range(e)[1] for e in elements if context.node_range(e)[0] == last_line)
        own = "".join(c if c == "\t" else " " for c in last_text[:first_column])
        room = context.settings.line_length - len(last_text) - len(", ") - len(entry) + len(VALUE)
        # Before the last entry's comma, if any: it then ends the new line.
        wide = [(value_end, value_end, "," + newline + own + entry)]
        return EntryEdit([(value_end, value_end, ", " + entry)], room=room, wide=wide)
    closing_line = end_line
    if closing_line > last_end_line:
        # The closing brace on a line of its own: a line after the last entry's.
        after_last = lines.offset(last_end_line + 1, 0)
        if trailing:
            return EntryEdit([(after_last, after_last, indent + entry + "," + newline)])
        return EntryEdit([(value_end, value_end, ","), (after_last, after_last, indent + entry + newline)])
    # The brace closes on the last entry's line (`"b": 2}`): a new line before it.
    return EntryEdit([(value_end, value_end, "," + newline + indent + entry)])


def place_helpers(context: "FileContext", facts: Any) -> None:
    """Where the fix's pair of helpers goes (after the header's imports) and the imports it
    may need, for a file that saves checkpoints."""
    offset = context.after_imports_offset()
    following = context.text[offset:]
    facts.helper_offset = offset
    facts.helper_blank_after = following[: len(following) - len(following.lstrip("\r\n"))].count("\n")
    facts.helper_at_eof = offset == len(context.text) and bool(context.text) and not context.text.endswith(("\n", "\r"))
    facts.helper_at_end = not following.strip()
    for module, alias in (("random", None), ("numpy", "np")):
        edit = context.import_edit(module, None, alias)
        if edit is not None:
            facts.import_edits[module] = (edit.start, edit.content)
