"""Edits of a call's argument list that keep its layout (keywords appended, a
first argument inserted), shared by the rules whose fixes add arguments.
"""

from __future__ import annotations

from typing import Sequence, Tuple

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


def _separator(call: cst.Call) -> cst.Comma:
    """The comma (with the whitespace after it) that separates arguments in this call's layout."""
    for arg in call.args[:-1]:
        if isinstance(arg.comma, cst.Comma):
            if isinstance(arg.comma.whitespace_after, cst.ParenthesizedWhitespace):
                return arg.comma.with_changes(whitespace_after=_line_break(arg.comma.whitespace_after))
            return arg.comma
    if isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        return cst.Comma(whitespace_after=_line_break(call.whitespace_before_args))  # one argument per line
    return cst.Comma(whitespace_after=_ONE_SPACE)


def with_keywords(call: cst.Call, keywords: Sequence[Tuple[str, cst.BaseExpression]]) -> cst.Call:
    """`call` with keyword arguments appended, keeping its layout (one per line, trailing
    comma) and leaving comments on the lines they annotate."""
    new = [_keyword_arg(keyword, value) for keyword, value in keywords]
    args = list(call.args)
    if not args:
        return call.with_changes(args=new)
    separator = _separator(call)
    last = args[-1]
    closing = last.comma  # a real Comma when the call has a trailing comma
    if (
        isinstance(closing, cst.Comma)
        and isinstance(closing.whitespace_after, cst.ParenthesizedWhitespace)
        and isinstance(separator.whitespace_after, cst.ParenthesizedWhitespace)
    ):
        # `x,  # comment` + newline + `)`: the comment stays after x, the new last argument closes the call
        args[-1] = last.with_changes(
            comma=closing.with_changes(
                whitespace_after=closing.whitespace_after.with_changes(
                    indent=separator.whitespace_after.indent, last_line=separator.whitespace_after.last_line
                )
            )
        )
        closing = cst.Comma(whitespace_after=_line_break(closing.whitespace_after))
    elif isinstance(last.whitespace_after_arg, cst.ParenthesizedWhitespace):
        # `x  # comment` + newline + `)` without a trailing comma: the line break moves after the new argument
        new[-1] = new[-1].with_changes(whitespace_after_arg=last.whitespace_after_arg)
        args[-1] = last.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace(""))
    else:
        args[-1] = last.with_changes(comma=separator)
    for index in range(len(new) - 1):
        new[index] = new[index].with_changes(comma=separator)
    new[-1] = new[-1].with_changes(comma=closing)
    return call.with_changes(args=args + new)


def with_first_argument(call: cst.Call, value: cst.BaseExpression) -> cst.Call:
    """`call` with a positional argument inserted first."""
    if not call.args:
        return call.with_changes(args=[cst.Arg(value=value)])
    return call.with_changes(args=[cst.Arg(value=value, comma=_separator(call)), *call.args])
