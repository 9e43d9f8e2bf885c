"""TDL302: an entry point that reaches CUDA work or a catalog operation and never
enables deterministic mode (a project rule over the module graph).
"""

from __future__ import annotations

from typing import Iterable, List

from torchdet_lint.checks.insertions import Insertion
from torchdet_lint.checks.seeding.unseeded_global_rng import spawned_guard, spawned_message
from torchdet_lint.core.diagnostics import Diagnostic
from torchdet_lint.core.rule import FixAvailability, ProjectRule
from torchdet_lint.model.project import Located, Project, Reach
from torchdet_lint.model.summary import RAISING_ALWAYS, RAISING_STRICT


class DeterministicModeNotEnabled(ProjectRule):
    """
    ## Why is this bad?
    On CUDA, many kernels (atomic adds in `index_add_`, scatter, pooling and
    interpolation backward passes, cuDNN algorithm choice, ...) give slightly
    different results on every run unless
    `torch.use_deterministic_algorithms(True)` selects deterministic
    implementations (or raises where there is none). Seeding alone does not
    make a CUDA program reproducible.

    The rule follows each entry point (as TDL001 does) through the functions
    it reaches, in every first-party module, and reports it when it reaches
    CUDA work (`.cuda()`, `.to("cuda")`, `device="cuda"`, `torch.device("cuda")`,
    `torch.cuda.*` calls other than `is_available`, `device_count`,
    `get_device_name` and `manual_seed*`; this linter also leaves out the
    queries `current_device`, `get_device_properties`, `get_device_capability`,
    `is_bf16_supported`, the memory statistics and private `torch.cuda._*`
    helpers, which library code calls to pick a code path) or an operation of the catalog
    (TDL201/TDL202 operations at the target version) and never enables the
    flag. Enabling it: `use_deterministic_algorithms` with `True` or a
    non-literal (also `warn_only=True`, which TDL305 reports),
    `set_deterministic_debug_mode("warn"|"error"|1|2)`,
    `Trainer(deterministic=True)`, `transformers.set_seed(..., deterministic=True)`,
    `enable_full_determinism`, `accelerate.utils.set_seed(..., deterministic=True)`,
    MONAI's `set_determinism(..., use_deterministic_algorithms=True)`,
    SpeechBrain's `seed_everything(..., deterministic=True)`,
    or a first-party helper doing one of these. A helper that does it only
    under `if <flag>:` on a parameter defaulting to a false value
    (`def seed_everything(seed, deterministic=False)`) enables the flag only
    where a call passes that parameter a value that may be true
    (`seed_everything(0, deterministic=True)`, or a non-literal); a call that
    leaves it out, or a YAML config that applies the helper with its
    defaults, does not. The message lists up to five
    of the operations reached, with their locations. Reported on the
    `if __name__` line (line 1, column 1 for other entry points).

    A function started in a new process (`mp.spawn`, `start_processes`, a
    `"spawn"`/`"forkserver"` `Process`, `Pool` or `ProcessPoolExecutor`; see
    TDL001) starts with PyTorch's default flags: the parent's
    `use_deterministic_algorithms(True)` and `cudnn.deterministic = True` stay
    in the parent. Such a function is checked as an entry point of its own,
    reported at the call that starts it, and the message cites the parent's
    setting that does not carry over.

    ## Fix safety
    Unsafe: inserts `torch.use_deterministic_algorithms(True)` at the top of
    the main block (after the imports for a script, at the top of a notebook's
    first code cell; for a spawned function, at the top of its body), with
    `import torch` when needed. As for TDL001, a file with a main block gets
    the line after its imports instead only when its own module-level code
    does the CUDA work and no first-party file imports it; and at the top of
    a block, the line goes above the comment lines that describe the first
    statement (right under the `if __name__` line when only blank lines
    separate them). Operations without a
    deterministic implementation then raise on CUDA (see TDL202), and before
    torch 2.10 cuBLAS needs `CUBLAS_WORKSPACE_CONFIG` (TDL303).

    When the main block only hands the work to a job that runs in a process
    of its own (a submitit executor's `submit(trainer)` or `submit(fn)`: a
    SLURM job unpickles the object and runs it, never the main block), the
    line goes at the top of what the job runs (`Trainer.__call__`, `fn`),
    after its docstring; when that is defined in another file, no fix is
    offered and the message names it. A thread pool's `submit` runs in this
    process: the main block keeps the line. Lines inserted at the top of a
    block go after the block's leading string, never above it.

    In a spawned function the line goes under the same test as the seeding
    the fix of TDL001 puts there: when the parent seeds only on request
    (`if args.seed is not None:`), so does the worker, and it enables the
    flag under that test too, since a run started without a seed asked for
    no reproducibility and need not pay for it; a parent that enables the
    flag itself, unconditionally, gets a worker that does too.

    So the fix is withheld where the entry point reaches such an operation
    (one TDL202 reports in the profile in force, e.g. a bicubic
    `F.interpolate` in training on CUDA; the 3-d cross-entropy losses in
    profile `strict`): enabling the flag would stop the run there, at the
    first backward. The message then names that operation and its location;
    deal with it first (another mode, the CPU, a `warn_only=True` scope).
    Library kernels count at the library's version: xformers' memory-efficient
    attention up to 0.0.21 (and the diffusers switches that select it,
    `enable_xformers_memory_efficient_attention()`, usually behind a
    `--enable_xformers_memory_efficient_attention` or `--xformers` option),
    torchvision's RoI pooling and deformable convolution from 0.16, RAFT's
    `grid_sample`.

    "CUDA work" excludes housekeeping that runs no kernel
    (`torch.cuda.synchronize`, `empty_cache`, `memory_allocated`,
    `max_memory_allocated`, `memory_reserved`, `reset_peak_memory_stats`,
    `current_device`, `get_device_properties`, `get_device_capability`,
    `set_device`, `current_stream`, `Stream`, `Event`, `torch.cuda.stream`,
    `torch.cuda.device`), and a `torch.device("cuda")` object alone is not work
    either: what uses it is. Accelerate's `accelerator.prepare(...)` (and
    `prepare_model`, `prepare_data_loader`) is CUDA work: it puts the model
    and the batches on the accelerator's device, a GPU unless the accelerator
    is built with a literal `cpu=True` (`rules/runs.toml`). An accelerator
    whose construction the function does not show (a parameter named
    `accelerator`) counts as one on a GPU, unless every accelerator its file
    builds is kept on the CPU. A device value chosen by `"cuda" if
    torch.cuda.is_available() else "cpu"` (or `torch.device(...)` of it) and
    bound to a name, a `self.<attr>` or an attribute chain is a CUDA device
    wherever that binding is visible: `.to(device)` and `device=device` are
    CUDA work. The message names the real CUDA work or catalog operation it
    found, as written (`.to(device)` at train.py:40).

    What counts depends on whether the run trains. A run trains when the code
    it reaches calls `.backward(...)` on anything (a loss, `accelerator.backward`,
    `fabric.backward`, Lightning's `manual_backward`), `torch.autograd.grad` or
    `torch.autograd.backward`, or hands its model to a library loop that trains
    (Lightning's `Trainer.fit`, `LightningCLI` unless `run=False`, the
    Transformers and TRL `Trainer.train`). What shows a backward that sits
    where the analysis cannot follow counts too: zeroing gradients, building a
    `torch.optim` optimizer or a gradient scaler, an mmcv or mmengine runner,
    and `.train()` on an object that is not visibly a network (a trainer
    built elsewhere, `trainer.train()`). `model.train()` on a network built
    in the same file (a torch or library module class or model builder, or a
    module class of that file) only sets its mode, as Monte Carlo dropout
    does at inference: it is no sign of training. A network of a class from
    another first-party file is not told apart from a trainer there, so its
    `.train()` still counts. In a run that never trains (an
    evaluation, a benchmark, an export) no backward pass runs, so neither CUDA
    work alone nor an operation whose nondeterminism is in its backward pass
    (`nn.Embedding`, a bilinear `interpolate`, `index_select`) changes its
    numbers: such a run is reported only when it reaches an operation whose
    forward pass the flag governs (a convolution, `index_add_`,
    `scatter_add_`, ...). The same holds for the operations that withhold the
    fix: one that raises only in its backward pass stops only a run that
    trains. Such an operation counts only where a gradient can reach it, as
    TDL202 decides: not on values without gradient, and not in a helper
    whose tensors get a gradient only from its parameters when every call of
    it in the project passes none (a `resize_pos_embed(posemb, ...)` called
    by a checkpoint filter on a state dict's items is no evidence, and
    withholds no fix). A run whose reach passes through code the analysis cannot follow
    (a class named by a string from configuration) may train there: it is
    never concluded not to train. But when nothing it was seen to reach
    trains and what it reaches matters only in a run that trains (CUDA work
    alone, operations whose nondeterminism is in the backward pass: an
    inference or sampling script whose model class comes from a registry),
    the finding would rest on a guess: the default profile does not report
    it, profile `strict` does (the message names the sites the analysis
    could not follow), and `report` shows the cell as `unknown`. A function
    started in new processes (`mp.spawn`, a launcher) is not judged so: such
    a worker is there to train, and what it runs is often a function handed
    to it (`distributed_main(rank, main, cfg)`), which the analysis cannot
    follow. In the
    same way, a run that never leaves the CPU (no CUDA work, and no move to a
    device that is not visibly the CPU: `.to(device)`, `device=...`,
    `device_map=`, DDP, Accelerate, a Lightning or Transformers trainer) is
    judged by the operations whose condition holds on the CPU.

    ## Known problems
    A device handed in as a parameter (`def train(model, device)`) is not
    followed into the function: the work is seen where the caller binds the
    device and uses it (`model.to(device)`), which a training script does.
    Config `assume-deterministic-mode` silences the rule for programs that
    enable the flag where the linter cannot see it (a launcher).

    ## Options
    `assume-deterministic-mode`, `torch-version`, `entry-points`.

    ## References
    - `torch.use_deterministic_algorithms`: <https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html>
    - PyTorch, Reproducibility: <https://pytorch.org/docs/stable/notes/randomness.html>
    """

    code = "TDL302"
    name = "deterministic-mode-not-enabled"
    summary = "an entry point reaches CUDA work or nondeterministic operations and never enables deterministic mode"
    fix_availability = FixAvailability.UNSAFE
    bad = (
        'import torch\n\nif __name__ == "__main__":\n    x = torch.ones(3, requires_grad=True).cuda()\n    x.sum().backward()\n',
        (
            'import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "for step in range(3):\n    torch.ones(2, device=device, requires_grad=True).sum().backward()\n"
        ),
        (
            'import torch\n\nif __name__ == "__main__":\n    counts = torch.zeros(3, device="cuda")\n'
            "    print(counts.index_add_(0, labels, weights))\n"
        ),
    )
    good = (
        (
            'import torch\n\nif __name__ == "__main__":\n    torch.use_deterministic_algorithms(True)\n'
            "    x = torch.ones(3).cuda()\n"
        ),
        "import torch\n\n\ndef to_gpu(x):\n    return x.cuda()\n",
        'import torch\n\nif __name__ == "__main__":\n    print(torch.nn.Linear(4, 2).cuda()(torch.ones(4, device="cuda")))\n',
        'import torch\n\nif __name__ == "__main__":\n    print(torch.cuda.is_available())\n',
    )

    def check(self, project: Project) -> Iterable[Diagnostic]:
        if project.settings.assume_deterministic_mode:
            return
        for entry in project.reported_runs:
            reach = project.entry_reach(entry)
            if "deterministic" in reach.covers:
                continue
            trains, on_cuda = project.trains(entry), project.uses_cuda(entry)
            cuda, ops = reach.governed(trains, on_cuda)
            if not (cuda or ops):
                continue
            found = sorted(ops + cuda, key=lambda item: (item.path, item.site.line))[:5]
            what = " and ".join(
                part
                for part, present in (
                    ("CUDA work", bool(cuda)),
                    ("operations that deterministic mode governs", bool(ops)),
                )
                if present
            )
            listing = ", ".join(f"{item.site.text} at {project.where(item)}" for item in found)
            message = f"reaches {what} ({listing}) and never enables `torch.use_deterministic_algorithms(True)`"
            supplier = project.unreached_supplier(entry, "deterministic")
            if supplier is not None:
                if project.settings.profile != "strict":
                    continue  # the flag may be enabled behind what the analysis could not follow
                message += project.open_world_note(entry, supplier, "enables the flag")
            elif project.training_assumed(entry) and not any(reach.governed(False, on_cuda)):
                # What is cited matters only in a run that trains, and this one is only assumed to
                # train because it passes through code the analysis cannot follow: unknown.
                if project.settings.profile != "strict":
                    continue
                message += project.unknown_training_note(entry)
            where = "at the start of the entry point"
            if entry.spawn is not None:
                message = spawned_message(project, entry, message, "deterministic")
                cudnn = project.parent_only(entry, "cudnn")
                if cudnn is not None and project.parent_only(entry, "deterministic") is None:
                    message += f"; {cudnn.site.text} at {project.where(cudnn)} runs in the parent only"
                where = f"at the start of `{entry.spawn.function}`, in the new process"
            raising = _raising(project, reach, trains, on_cuda)
            if raising:
                first = raising[0]
                more = f" (and {len(raising) - 1} more)" if len(raising) > 1 else ""
                message += (
                    f"; no fix offered: {first.site.text} under the flag at {project.where(first)}{more} (TDL202), "
                    "so enabling the flag would stop the run there"
                )
            insertion = Insertion(project, entry, ["cuda"])
            if insertion.elsewhere is not None and not raising:
                message += f"; no fix offered: enable it at the start of {insertion.elsewhere}"
            elif insertion.names is not None and entry.spawn is None:
                where = "at the start of the function the job runs, in its own process"
            fix = None
            if insertion.valid and not raising:
                torch = insertion.module("torch")
                if torch is not None:
                    lines = [f"{torch}.use_deterministic_algorithms(True)"]
                    guard = spawned_guard(project, entry, insertion, "deterministic")
                    if guard:
                        lines = [f"if {guard}:", (insertion.indent or "    ") + lines[0]]
                        where += f", under `if {guard}:` as its seeding"
                    fix = insertion.fix(f"Enable deterministic mode {where}", lines)
            yield project.entry_diagnostic(entry, self.code, self.name, message, fix)


def _raising(project: Project, reach: Reach, trains: bool, on_cuda: bool) -> List[Located]:
    """The reached operations that raise under the flag, as TDL202 reports them in the profile in
    force (those that raise only in a backward pass, only in a run that trains; those that raise
    only on CUDA, only in a run that may use it)."""
    profiles = (RAISING_ALWAYS, RAISING_STRICT) if project.settings.profile == "strict" else (RAISING_ALWAYS,)
    found = [
        item
        for profile in profiles
        for item in reach.raising.get(profile, [])
        if (trains or not item.site.backward) and (on_cuda or not item.site.cuda_only)
    ]
    return sorted(found, key=lambda item: (item.path, item.site.line))
