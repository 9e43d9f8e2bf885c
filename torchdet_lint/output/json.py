"""`--output-format json`: one array, exactly the interface contract's schema."""

from __future__ import annotations

import json

from torchdet_lint.checks import get_rule


def diagnostic_to_dict(d, context) -> dict:
    element = {
        "path": d.path,
        "line": d.line,
        "column": d.column,
        "end_line": d.end_line,
        "end_column": d.end_column,
        "code": d.code,
        "name": d.name,
        "message": d.message,
        "fix": fix_to_dict(d, context),
        "url": rule_url(d.code),
    }
    if d.cell is not None:
        element["cell"] = d.cell
    return element


def rule_url(code: str):
    """The rule's documentation page (None for TDL000, which is no rule)."""
    rule = get_rule(code)
    return rule.url() if rule is not None else None


def fix_to_dict(d, context):
    if d.fix is None:
        return None
    edits = []
    for edit in d.fix.edits:
        line, column = context.location(d.path, edit.start)
        end_line, end_column = context.location(d.path, edit.end)
        edits.append(
            {
                "content": edit.content,
                "location": {"line": line, "column": column},
                "end_location": {"line": end_line, "column": end_column},
            }
        )
    return {"applicability": d.fix.applicability.value, "title": d.fix.title, "edits": edits}


def render(diagnostics, context) -> str:
    return json.dumps([diagnostic_to_dict(d, context) for d in diagnostics], indent=2, ensure_ascii=False) + "\n"
