"""GitHub Actions workflow commands: annotations on the pull request."""

from __future__ import annotations


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def render(diagnostics, context) -> str:
    lines = []
    for d in diagnostics:
        lines.append(
            f"::error title={_escape_property('torchdet-lint (' + d.code + ')')},"
            f"file={_escape_property(d.path)},line={d.line},col={d.column},"
            f"endLine={d.end_line},endColumn={d.end_column}::{_escape(d.code + ' ' + d.message)}"
        )
    return "".join(line + "\n" for line in lines)
