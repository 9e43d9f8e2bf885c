"""`path:line: [CODE] message`, one line a diagnostic (pylint's parseable format, as Ruff's `pylint`)."""

from __future__ import annotations


def render(diagnostics, context) -> str:
    lines = []
    for d in diagnostics:
        where = f"{d.path}:cell {d.cell}:{d.line}" if d.cell is not None else f"{d.path}:{d.line}"
        lines.append(f"{where}: [{d.code}] {d.message}")
    return "".join(line + "\n" for line in lines)
