"""`--output-format json-lines`: one JSON object a line, each as an element of the `json` format."""

from __future__ import annotations

import json

from torchdet_lint.output.json import diagnostic_to_dict


def render(diagnostics, context) -> str:
    return "".join(json.dumps(diagnostic_to_dict(d, context), ensure_ascii=False) + "\n" for d in diagnostics)
