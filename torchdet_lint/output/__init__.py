"""Output formats: one module per format, all over the same diagnostics."""

from __future__ import annotations

from typing import Callable

FORMATS = ("full", "concise", "json", "sarif", "github")


def formatter(name: str) -> Callable[..., str]:
    """The `render(diagnostics, context)` function of a format."""
    if name == "full":
        from torchdet_lint.output.full import render
    elif name == "concise":
        from torchdet_lint.output.concise import render
    elif name == "json":
        from torchdet_lint.output.json import render
    elif name == "sarif":
        from torchdet_lint.output.sarif import render
    elif name == "github":
        from torchdet_lint.output.github import render
    else:  # pragma: no cover - the CLI validates the name
        raise ValueError(name)
    return render
