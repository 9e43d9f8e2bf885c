"""TDL900: `noqa` directives that suppress nothing (Ruff's RUF100). The engine's
suppressions step finds them (`engine/suppressions.py`), once a file's final
diagnostics are known; this class is the rule's metadata and documentation.
"""

from __future__ import annotations

from torchdet_lint.core.rule import BaseRule, FixAvailability


class UnusedNoqa(BaseRule):
    """
    ## Why is this bad?
    A `# noqa: TDL301` that no longer suppresses anything hides the next real
    finding on its line, and a misspelt code (`# noqa: TDL31`, `# noqa: TDL999`)
    never suppressed anything: the comment reads as a decision that was never
    made. The same holds for a file-level `# torchdet-lint: noqa: TDL301`.

    A code counts as used when a diagnostic with that code, on that line (for a
    file-level directive: anywhere in the file), is suppressed by the directive
    in the final result of the file: after the project phase, which may drop a
    file finding (an entry point elsewhere that enables deterministic mode
    silences TDL201) or add one (TDL001 is found over the whole project). So a
    `noqa` is judged on exactly what a run over the project would report
    without it. A code that `per-file-ignores` ignores for the file counts as
    used, as in Ruff.

    Reported, with the codes named in the message:
    - unused: a selected rule's code that suppresses nothing there;
    - unknown: a `TDL` code that is no rule of torchdet-lint.

    Not reported:
    - codes of other tools (`E501`, `F401`): the comment is shared with them;
    - a bare `# noqa` (any tool's findings on the line) and a bare
      `# torchdet-lint: noqa` (the file is skipped whole, so nothing is known
      about it);
    - codes of rules that are not selected in this run. Ruff reports these as
      "non-enabled"; here the profiles select different rules
      (`--profile performance` selects TDL4xx only), so a directive written for
      another profile's run is not stale. This rule itself (`# noqa: TDL900`
      keeps a directive as it is).

    ## Fix safety
    Safe: removes the unused and unknown codes from the directive, or the
    whole `# noqa: ...` comment (a file-level directive: its whole line) when no
    code is left. Only the directive goes: a comment after it on the line stays.

    ## Known problems
    A `noqa` inside a string literal is not a comment and is not read (only
    comments are). A directive is judged in the run that reports the file: a
    file linted with `--select TDL1` does not judge its `# noqa: TDL301`.

    ## Options
    Deselect it like any rule (`ignore = ["TDL900"]`), or keep a directive with
    `# noqa: TDL301, TDL900`.

    ## References
    - Ruff's `unused-noqa` (RUF100) and flake8's `noqa` comments.
    """

    code = "TDL900"
    name = "unused-noqa"
    summary = "a `noqa` directive suppresses nothing (unused, or an unknown code)"
    fix_availability = FixAvailability.SAFE
    bad = (
        "import torch\n\ntorch.manual_seed(0)  # noqa: TDL301\n",
        "# torchdet-lint: noqa: TDL999\nimport torch\n",
    )
    example_config = {"extend-select": ["TDL301"]}  # the codes the examples suppress must be selected
    good = (
        "import torch\n\ntorch.backends.cudnn.benchmark = True  # noqa: TDL301\n",
        "import os  # noqa: F401\n",
    )
