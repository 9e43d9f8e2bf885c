"""`path:line:col: CODE message`, one line a diagnostic (Ruff's concise format)."""

from __future__ import annotations

from torchdet_lint.output.render_context import fixable, location_prefix


def render(diagnostics, context) -> str:
    lines = []
    for d in diagnostics:
        marker = "[*] " if fixable(d, context.unsafe_fixes) else ""
        lines.append(f"{context.style(location_prefix(d), '1')}: {context.style(d.code, '1', '31')} {marker}{d.message}")
    return "".join(line + "\n" for line in lines)
