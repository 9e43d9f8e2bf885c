"""The report's three forms: a terminal table (coloured as the diagnostics are),
a Markdown table for `$GITHUB_STEP_SUMMARY` and pull-request comments, and
JSON for tools (the same checks, statuses and evidence as the table).
"""

from __future__ import annotations

import json
import textwrap
from typing import Callable, Dict, List, Sequence

from torchdet_lint.report.scorecard import CHECKS, IGNORED, MISSING, NOT_NEEDED, OK, OPT_IN, UNKNOWN, Scorecard

FORMATS = ("full", "markdown", "json")
# Two-line column headings for the terminal table.
_HEADINGS = {
    "torch-seed": ("torch", "seed"),
    "random-seed": ("random", "seed"),
    "numpy-seed": ("numpy", "seed"),
    "deterministic-mode": ("determ.", "mode"),
    "cudnn-benchmark-off": ("cudnn", "bench off"),
    "cublas-workspace": ("cublas", "workspace"),
    "dataloaders": ("data", "loaders"),
    "raising-ops": ("raising", "ops"),
    "third-party-kernels": ("3rd-party", "kernels"),
    "resume-rng-state": ("resume", "rng state"),
    "hidden-order": ("hidden", "order"),
    "compiled-code": ("compiled", "code"),
    "eval-dropout": ("eval", "dropout"),
    "resume-data-position": ("resume", "data pos."),
    "rank-order": ("rank", "order"),
}
_CELL = {OK: "ok", MISSING: "missing", NOT_NEEDED: "-", UNKNOWN: "unknown", IGNORED: "ignored", OPT_IN: "opt-in"}
# Green, bold red, dim (as the diagnostics' output); yellow for what needs a look.
_STYLE = {OK: ("32",), MISSING: ("1", "31"), NOT_NEEDED: ("2",), UNKNOWN: ("33",), IGNORED: ("2",), OPT_IN: ("33",)}
_MARK = {OK: "✅", MISSING: "❌", NOT_NEEDED: "➖", UNKNOWN: "❔", IGNORED: "🔇", OPT_IN: "⚠️"}
LEGEND = (
    "ok: checked and right (the evidence says where); missing: `torchdet-lint check` reports it for "
    "this entry point; -/not-needed: nothing the entry point reaches needs it; unknown: the run passes "
    "through code the analysis cannot follow (the evidence names it); ignored: the rule is deselected or "
    "suppressed; opt-in: it runs only when an option asks for it (the default run lacks it)."
)


def _entry(card: Scorecard) -> str:
    where = f"{card.path} (cell {card.cell}, line {card.line})" if card.cell is not None else f"{card.path}:{card.line}"
    return f"{where} -> {card.function}" if card.function else where


def _summary(cards: Sequence[Scorecard]) -> str:
    good = sum(1 for card in cards if card.reproducible)
    if not cards:
        return "No entry point found (a main block, `__main__.py`, a notebook, a script, or config `entry-points`)."
    noun = "entry point" if len(cards) == 1 else "entry points"
    return f"{len(cards)} {noun}, {good} fully reproducible, {len(cards) - good} with something missing."


def _column_groups(first: int, width: int) -> List[Sequence[str]]:
    """The checks in tables that fit `width` columns beside the entry point column (a
    wide table wraps into several, each repeating the entry points)."""
    groups: List[List[str]] = [[]]
    used = first
    for check in CHECKS:
        cell = 2 + max(len(_HEADINGS[check][0]), len(_HEADINGS[check][1]), len("missing"))
        if groups[-1] and used + cell > width:
            groups.append([])
            used = first
        groups[-1].append(check)
        used += cell
    return groups


def render_full(cards: Sequence[Scorecard], style: Callable[..., str], width: int = 100) -> str:
    """A table with one row per entry point, then the evidence of what is missing and what is
    right, wrapped to `width` columns."""
    lines = [style("Reproducibility report", "1"), ""]
    if cards:
        first = max([len("entry point")] + [len(_entry(card)) for card in cards])
        for group in _column_groups(first, width):
            widths = [max(len(_HEADINGS[c][0]), len(_HEADINGS[c][1]), len("missing")) for c in group]
            for row in (0, 1):
                heading = ("entry point" if row == 0 else "").ljust(first)
                lines.append(
                    style("  ".join([heading] + [_HEADINGS[c][row].ljust(w) for c, w in zip(group, widths)]).rstrip(), "1")
                )
            for card in cards:
                cells = []
                for check, cell_width in zip(group, widths):
                    status = card.checks[check].status
                    cells.append(style(_CELL[status].ljust(cell_width), *_STYLE[status]))
                lines.append("  ".join([_entry(card).ljust(first)] + cells).rstrip())
            lines.append("")
        labels = [f"{check}: {card.checks[check].status}" for card in cards for check in CHECKS]
        column = 2 + max(len(label) for label in labels) + 2
        for card in cards:
            reason = f"spawned by `{card.launcher}` in the program that starts at {card.parent}" if card.function else card.reason
            lines.append(style(f"{_entry(card)} ({reason})", "1"))
            for check in CHECKS:
                result = card.checks[check]
                if result.status == NOT_NEEDED:
                    continue
                for index, evidence in enumerate(result.evidence):
                    label = f"{check}: {result.status}" if index == 0 else ""
                    text = textwrap.wrap(f"{evidence.where()}: {evidence.message}", max(width - column, 40)) or [""]
                    lines.append(f"  {style(label, *_STYLE[result.status])}{' ' * (column - 2 - len(label))}{text[0]}")
                    lines.extend(" " * column + rest for rest in text[1:])
            lines.append("")
    lines.append(_summary(cards))
    lines.extend(style(line, "2") for line in textwrap.wrap(LEGEND, width))
    return "\n".join(lines) + "\n"


def _markdown_text(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(cards: Sequence[Scorecard]) -> str:
    """A Markdown table, a legend, and the details of what is missing."""
    lines = ["## Reproducibility report", "", _summary(cards), ""]
    if cards:
        lines.append("| entry point | " + " | ".join(CHECKS) + " |")
        lines.append("|---|" + "---|" * len(CHECKS))
        for card in cards:
            cells = [f"{_MARK[card.checks[c].status]} {card.checks[c].status}" for c in CHECKS]
            lines.append(f"| `{_markdown_text(_entry(card))}` | " + " | ".join(cells) + " |")
        lines.append("")
        lines.append(
            f"{_MARK[OK]} ok: checked and right; {_MARK[MISSING]} missing: `torchdet-lint check` reports it "
            f"for this entry point; {_MARK[NOT_NEEDED]} not-needed: nothing the entry point reaches needs it; "
            f"{_MARK[UNKNOWN]} unknown: the run passes through code the analysis cannot follow; "
            f"{_MARK[IGNORED]} ignored: the rule is deselected or suppressed; "
            f"{_MARK[OPT_IN]} opt-in: it runs only when an option asks for it."
        )
        missing = [(card, check) for card in cards for check in CHECKS if card.checks[check].status in (MISSING, UNKNOWN, OPT_IN)]
        if missing:
            lines += ["", "### What is missing or unknown", ""]
            for card, check in missing:
                for evidence in card.checks[check].evidence:
                    lines.append(
                        f"- `{_markdown_text(_entry(card))}` {check}: "
                        f"`{_markdown_text(evidence.where())}` {_markdown_text(evidence.message)}"
                    )
    return "\n".join(lines) + "\n"


def render_json(cards: Sequence[Scorecard]) -> str:
    entries: List[Dict[str, object]] = []
    for card in cards:
        checks = {}
        for check in CHECKS:
            result = card.checks[check]
            evidence = []
            for item in result.evidence:
                element: Dict[str, object] = {"path": item.path, "line": item.line, "message": item.message}
                if item.cell is not None:
                    element["cell"] = item.cell
                evidence.append(element)
            checks[check] = {"status": result.status, "evidence": evidence}
        entry: Dict[str, object] = {"path": card.path, "line": card.line, "reason": card.reason, "checks": checks}
        if card.cell is not None:
            entry["cell"] = card.cell
        if card.function:
            entry["spawned"] = {"function": card.function, "launcher": card.launcher, "parent": card.parent}
        entries.append(entry)
    return json.dumps({"entry_points": entries}, indent=2) + "\n"
