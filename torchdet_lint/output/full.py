"""The default format: each diagnostic with a source excerpt and its fix title."""

from __future__ import annotations

from torchdet_lint.output.render_context import fixable, location_prefix

_CONTEXT_LINES = 1


def render(diagnostics, context) -> str:
    out = []
    for d in diagnostics:
        marker = "[*] " if fixable(d, context.unsafe_fixes) else ""
        out.append(f"{context.style(location_prefix(d), '1')}: {context.style(d.code, '1', '31')} {marker}{d.message}\n")
        out.append(_excerpt(d, context))
        if d.fix is not None:
            kind = "" if d.fix.applicability.value == "safe" else " (unsafe)"
            out.append(f"  = {context.style('help', '1', '36')}: {d.fix.title}{kind}\n")
        out.append("\n")
    return "".join(out)


def _excerpt(d, context) -> str:
    index = context.line_index(d.path)
    if index is None:
        return ""
    first_line, _ = index.position(d.start_offset)
    last_line, _ = index.position(max(d.start_offset, d.end_offset))
    start = max(1, first_line - _CONTEXT_LINES)
    end = min(len(index.starts), last_line + _CONTEXT_LINES)
    notebook = getattr(context.sources.get(d.path), "notebook", None)
    if notebook is not None and d.cell is not None:  # context lines from the same cell only
        cell_first, cell_last = notebook.cell_lines(d.cell)
        start, end = max(start, cell_first), min(end, max(cell_last, last_line))
    # Notebook diagnostics show cell-relative line numbers.
    shift = d.line - first_line
    width = len(str(end + shift))
    gutter = " " * width
    out = [f"{gutter} |\n"]
    for number in range(start, end + 1):
        text = index.line_text(number).expandtabs(4)
        out.append(f"{str(number + shift).rjust(width)} | {text}\n")
        if first_line <= number <= last_line:
            raw = index.line_text(number)
            line_start = index.starts[number - 1]
            begin = d.start_offset - line_start if number == first_line else len(raw) - len(raw.lstrip())
            finish = d.end_offset - line_start if number == last_line else len(raw)
            begin_col = len(raw[:begin].expandtabs(4))
            finish_col = max(begin_col + 1, len(raw[:finish].expandtabs(4)))
            carets = "^" * (finish_col - begin_col)
            label = f" {d.code}" if number == last_line else ""
            out.append(f"{gutter} | {' ' * begin_col}{context.style(carets + label, '1', '31')}\n")
    out.append(f"{gutter} |\n")
    return "".join(out)
