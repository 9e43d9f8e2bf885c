"""TDL406 `cudnn-benchmark-off-for-speed`: CUDA convolutions without `cudnn.benchmark` (a project rule)."""

from __future__ import annotations

from typing import Iterable, Optional

from torchdet_lint.checks.insertions import import_edit, merge_edits
from torchdet_lint.checks.performance.call_readings import (
    PERFORMANCE,
)
from torchdet_lint.core.diagnostics import Applicability, Edit, Fix
from torchdet_lint.core.rule import FixAvailability, ProjectRule

BENCHMARK_LINE = "torch.backends.cudnn.benchmark = True"


class CudnnBenchmarkOffForSpeed(ProjectRule):
    """
    ## Why is this bad?
    For every new input shape, `torch.backends.cudnn.benchmark = True` lets
    cuDNN time the convolution algorithms it has and keep the fastest for
    that shape. The default (`False`) uses a heuristic choice, which is often
    not the fastest: with fixed input shapes (image classification at a
    fixed resolution, a fixed batch size) benchmarking typically speeds up
    convolution-heavy training and inference by 10-30%, sometimes more for
    unusual layer shapes, after a few slow first iterations. The PyTorch
    performance tuning guide recommends it.

    Reported, once per entry point (at the `if __name__ == "__main__":` line,
    else line 1): an entry point that reaches both convolutions
    (`nn.Conv1d/2d/3d`, the transposed and lazy forms, `F.conv*d`,
    `torch.conv*d`, torchvision model builders) and CUDA work (`.cuda()`,
    `.to("cuda")`, `device="cuda"`, `torch.device("cuda")`, `torch.cuda.*`),
    in its own code or in the first-party code it calls, and never chooses
    the flag: no `cudnn.benchmark = ...` assignment (any value: an explicit
    `False` is a deliberate choice) and no `Trainer(benchmark=...)` or
    `cudnn.flags(benchmark=...)`.

    The advice does not apply when input shapes vary (variable image sizes,
    detection with multi-scale inputs, variable sequence lengths): each new
    shape is benchmarked again, which can make the program slower overall
    and uses extra memory for the trials. It also works against
    reproducibility: benchmarking picks algorithms by timing, so two runs
    can differ (TDL301 asks for the opposite, which is why this rule is only
    in profile `performance` and TDL301 is not; selecting both prints a
    warning).

    ## Fix safety
    Safe: inserts `torch.backends.cudnn.benchmark = True` at the top of the
    main block (for a script, right after its imports), with `import torch`
    when the file lacks it. Results keep their meaning; the convolution
    algorithm, and therefore the last bits of the results, may differ from
    run to run.

    ## Known problems
    Whether input shapes are fixed cannot be seen statically: silence the
    rule (`# noqa: TDL406` on the reported line) for programs with varying
    shapes, or write `torch.backends.cudnn.benchmark = False` to record the
    choice. Convolutions inside third-party models other than torchvision's
    (`timm.create_model(...)`) are not seen.

    ## Options
    `entry-points` (which files are entry points). Profile `performance`, or
    `--select TDL406`.

    ## References
    - PyTorch performance tuning guide, "Enable cuDNN auto-tuner":
      <https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html>
    - `torch.backends.cudnn.benchmark`:
      <https://pytorch.org/docs/stable/backends.html#torch.backends.cudnn.benchmark>
    - PyTorch, Reproducibility, "CUDA convolution benchmarking":
      <https://pytorch.org/docs/stable/notes/randomness.html>
    """

    code = "TDL406"
    name = "cudnn-benchmark-off-for-speed"
    summary = "an entry point runs CUDA convolutions without `cudnn.benchmark = True`"
    profiles = PERFORMANCE
    fix_availability = FixAvailability.SAFE
    bad = (
        "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
        "    model = nn.Conv2d(3, 8, 3).cuda()\n    print(model(torch.randn(1, 3, 32, 32).cuda()))\n",
    )
    good = (
        "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n    torch.backends.cudnn.benchmark = True\n"
        "    model = nn.Conv2d(3, 8, 3).cuda()\n    print(model(torch.randn(1, 3, 32, 32).cuda()))\n",
        "import torch\nfrom torch import nn\n\nif __name__ == '__main__':\n"
        "    model = nn.Conv2d(3, 8, 3)\n    print(model(torch.randn(1, 3, 32, 32)))\n",
        "import torch\n\nif __name__ == '__main__':\n    print(torch.nn.Linear(3, 8).cuda()(torch.randn(1, 3).cuda()))\n",
    )

    def check(self, project) -> Iterable:
        for entry in project.reported_entry_points:
            reach = project.entry_reach(entry)
            convolution = reach.covers.get("convolution")
            if convolution is None or not reach.cuda or "cudnn-benchmark" in reach.covers:
                continue
            cuda = reach.cuda[0]
            yield project.entry_diagnostic(
                entry,
                self.code,
                self.name,
                f"this entry point runs convolutions ({convolution.site.text} at {_where(entry, convolution)}) on CUDA "
                f"({cuda.site.text} at {_where(entry, cuda)}) and never sets `cudnn.benchmark = True`; "
                "with fixed input shapes, cuDNN autotuning picks faster algorithms",
                self._fix(project, entry),
            )

    def _fix(self, project, entry) -> Optional[Fix]:
        anchors = entry.summary.anchors
        if anchors is None or entry.summary.is_notebook:
            return None
        bindings = entry.summary.module_bindings
        torch_name = next((name for name, (module, _) in sorted(bindings.items()) if module == "torch"), None)
        edits = []
        if torch_name is None:
            if "torch" in bindings:
                return None  # `torch` names something else in this file
            torch_name = "torch"
            edits.append(import_edit(anchors, "import torch", "torch", project.first_party))
        line = f"{torch_name}.backends.cudnn.benchmark = True"
        if anchors.main_top is not None:
            edits.append(Edit(anchors.main_top, anchors.main_top, anchors.main_indent + line + "\n"))
        else:
            prefix = "\n\n" if anchors.after_imports_eof else "\n"  # a blank line after the imports
            edits.append(Edit(anchors.after_imports, anchors.after_imports, prefix + line + "\n"))
        return Fix("Set `torch.backends.cudnn.benchmark = True`", Applicability.SAFE, merge_edits(edits))


def _where(entry, located) -> str:
    return f"line {located.site.line}" if located.path == entry.path else located.where()
