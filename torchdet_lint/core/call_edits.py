"""Edits of a call's argument list that keep its layout (keywords appended, a
first argument inserted, a call wrapped in another), shared by the rules whose
fixes edit calls. The whitespace and comments already in the call are kept
node for node, so a fix's diff shows only the lines it adds or must touch.
"""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

import libcst as cst

_NO_SPACE = cst.SimpleWhitespace("")
_ONE_SPACE = cst.SimpleWhitespace(" ")
KEYWORD_EQUAL = cst.AssignEqual(whitespace_before=_NO_SPACE, whitespace_after=_NO_SPACE)  # `name=value`, as PEP 8 writes it


def _keyword_arg(keyword: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(
        value=value,
        keyword=cst.Name(keyword),
        equal=KEYWORD_EQUAL,
    )


def _line_break(whitespace: cst.ParenthesizedWhitespace) -> cst.ParenthesizedWhitespace:
    """A line break with the same indentation, without the comment or blank lines it may carry."""
    return cst.ParenthesizedWhitespace(indent=whitespace.indent, last_line=whitespace.last_line)


def _breaks(whitespace) -> bool:
    return isinstance(whitespace, cst.ParenthesizedWhitespace)


def argument_line_break(call: cst.Call) -> Optional[cst.ParenthesizedWhitespace]:
    """The line break (with its indentation) in front of the line the call's last argument
    starts on, or None when the arguments all start on the line of the opening parenthesis.
    A call that puts one argument per line and one that packs several per line both answer
    with the indentation of their arguments."""
    for arg in reversed(call.args[:-1]):
        if isinstance(arg.comma, cst.Comma) and _breaks(arg.comma.whitespace_after):
            return _line_break(arg.comma.whitespace_after)
    if _breaks(call.whitespace_before_args):
        return _line_break(call.whitespace_before_args)
    return None


def with_keywords(call: cst.Call, keywords: Sequence[Tuple[str, cst.BaseExpression]]) -> cst.Call:
    """`call` with keyword arguments appended in its own layout: in a call whose arguments
    are spread over lines, each on a line of its own at the arguments' indentation; else on
    the same line. A trailing comma stays a trailing comma (and its absence an absence);
    comments stay on the lines they annotate; a closing parenthesis keeps its line."""
    new = [_keyword_arg(keyword, value) for keyword, value in keywords]
    if not call.args:
        return call.with_changes(args=new)
    args = list(call.args)
    last = args[-1]
    line_break = argument_line_break(call)
    separator = cst.Comma(whitespace_after=line_break) if line_break is not None else cst.Comma(whitespace_after=_ONE_SPACE)
    closing = last.comma  # a Comma when the call has a trailing comma
    if isinstance(closing, cst.Comma):
        if line_break is not None and _breaks(closing.whitespace_after):
            # `x,  # comment` + newline + `)`: the comment stays after x, the new argument takes
            # the arguments' indentation, the closing parenthesis keeps its own line.
            args[-1] = last.with_changes(
                comma=closing.with_changes(
                    whitespace_after=closing.whitespace_after.with_changes(
                        indent=line_break.indent, last_line=line_break.last_line
                    )
                )
            )
            closing = cst.Comma(whitespace_after=_line_break(closing.whitespace_after))
        else:
            args[-1] = last.with_changes(comma=closing.with_changes(whitespace_after=separator.whitespace_after))
            closing = cst.Comma(whitespace_before=closing.whitespace_before, whitespace_after=closing.whitespace_after)
        new[-1] = new[-1].with_changes(comma=closing)
    elif _breaks(last.whitespace_after_arg):
        # `x  # comment` + newline + `)`: x gets the comma and keeps its comment; the new
        # argument goes on the next line, and the closing parenthesis stays on its own.
        after = last.whitespace_after_arg
        if line_break is None:
            line_break = cst.ParenthesizedWhitespace(indent=after.indent, last_line=after.last_line)
            separator = cst.Comma(whitespace_after=line_break)
        args[-1] = last.with_changes(
            comma=cst.Comma(whitespace_after=after.with_changes(indent=line_break.indent, last_line=line_break.last_line)),
            whitespace_after_arg=_NO_SPACE,
        )
        new[-1] = new[-1].with_changes(whitespace_after_arg=_line_break(after))
    else:
        args[-1] = last.with_changes(comma=separator)
    for index in range(len(new) - 1):
        new[index] = new[index].with_changes(comma=separator)
    return call.with_changes(args=args + new)


def with_first_argument(call: cst.Call, value: cst.BaseExpression, indent: str = "    ") -> cst.Call:
    """`call` with a positional argument inserted first: on a line of its own when the
    arguments start on the line after the opening parenthesis, else before them on that line
    (`indent`: one level of the module's indentation, for a call with no arguments yet)."""
    before = call.whitespace_before_args
    if not call.args:
        if _breaks(before):
            # `Generator(` + newline + `)`: the argument on the line between, one level deeper
            # than the closing parenthesis, which keeps its line.
            deeper = before.with_changes(last_line=cst.SimpleWhitespace(before.last_line.value + indent))
            return call.with_changes(
                whitespace_before_args=deeper, args=[cst.Arg(value=value, whitespace_after_arg=_line_break(before))]
            )
        return call.with_changes(args=[cst.Arg(value=value)])
    after = _line_break(before) if _breaks(before) else _ONE_SPACE
    return call.with_changes(args=[cst.Arg(value=value, comma=cst.Comma(whitespace_after=after)), *call.args])


def wrapped_in(function: str, node: cst.BaseExpression, keywords: Sequence[Tuple[str, cst.BaseExpression]] = ()) -> cst.Call:
    """`function(node, keyword=value, ...)`: `sorted(os.listdir(root))`. The node keeps its own
    layout inside; the replacement is laid out by the file context like any edited call."""
    args = [cst.Arg(value=node)]
    if keywords:
        return with_keywords(cst.Call(func=cst.Name(function), args=args), keywords)
    return cst.Call(func=cst.Name(function), args=args)
