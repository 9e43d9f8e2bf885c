"""SARIF 2.1.0, with every rule's metadata and help text (code scanning tools)."""

from __future__ import annotations

import json
from pathlib import Path

from torchdet_lint import __version__
from torchdet_lint.checks import all_rules

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/torchdet-lint/torchdet-lint"


def _rule_descriptor(rule) -> dict:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.doc_section("Why is this bad?") or rule.summary},
        "help": {"text": rule.documentation(), "markdown": rule.documentation()},
        "helpUri": rule.url(),
        "defaultConfiguration": {"level": "error" if rule.is_default() else "warning"},
        "properties": {
            "profiles": sorted(rule.profiles),
            "fix": rule.fix_availability.value,
        },
    }


def _uri(path: str) -> str:
    return Path(path).as_posix()


def render(diagnostics, context) -> str:
    rules = all_rules()
    descriptors = [_rule_descriptor(rule) for rule in rules.values()]
    index = {rule.code: i for i, rule in enumerate(rules.values())}
    results = []
    for d in diagnostics:
        region = {"startLine": d.line, "startColumn": d.column, "endLine": d.end_line, "endColumn": d.end_column}
        result = {
            "ruleId": d.code,
            "level": "error",
            "message": {"text": d.message},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(d.path)}, "region": region}}],
        }
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        if d.cell is not None:
            result["properties"] = {"cell": d.cell}
        if d.fix is not None:
            replacements = []
            for edit in d.fix.edits:
                line, column = context.location(d.path, edit.start)
                end_line, end_column = context.location(d.path, edit.end)
                replacements.append(
                    {
                        "deletedRegion": {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column},
                        "insertedContent": {"text": edit.content},
                    }
                )
            result["fixes"] = [
                {
                    "description": {"text": d.fix.title},
                    "artifactChanges": [{"artifactLocation": {"uri": _uri(d.path)}, "replacements": replacements}],
                }
            ]
        results.append(result)
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "torchdet-lint",
                        "version": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": descriptors,
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
