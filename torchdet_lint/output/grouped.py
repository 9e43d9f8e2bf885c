"""Diagnostics grouped by file: the path once, then `line:col CODE message` indented (Ruff's `grouped`)."""

from __future__ import annotations

from itertools import groupby

from torchdet_lint.output.render_context import fixable


def render(diagnostics, context) -> str:
    out = []
    for path, group in groupby(diagnostics, key=lambda d: d.path):
        rows = list(group)
        places = [f"{'cell ' + str(d.cell) + ':' if d.cell is not None else ''}{d.line}:{d.column}" for d in rows]
        width = max(len(place) for place in places)
        out.append(f"{context.style(path, '1', '4')}:\n")
        for place, d in zip(places, rows):
            marker = "[*] " if fixable(d, context.unsafe_fixes) else ""
            out.append(f"  {place.ljust(width)} {context.style(d.code, '1', '31')} {marker}{d.message}\n")
        out.append("\n")
    return "".join(out)
