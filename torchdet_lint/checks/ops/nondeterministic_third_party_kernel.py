"""TDL203 `nondeterministic-third-party-kernel`: a third-party CUDA kernel the flag does not cover."""

from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from torchdet_lint.checks.ops.op_findings import (
    FLAG_CALL,
    ReportedWhereCalled,
    quoted,
)
from torchdet_lint.core.catalog import (
    DETERMINISTIC,
    DETERMINISTIC_ALTERNATIVE,
    IGNORES_FLAG,
    RAISES,
    THIRD_PARTY_KIND,
    Catalog,
    Operation,
    load_catalog,
    version_text,
)
from torchdet_lint.core.operations import (
    match_third_party,
)

_STATUS_CODES = {IGNORES_FLAG: "TDL203", RAISES: "TDL202", DETERMINISTIC_ALTERNATIVE: "TDL201", DETERMINISTIC: "silent"}


def _behaviour(operation: Operation) -> str:
    """`<= 0.15: TDL203; >= 0.16: TDL202`, or how a follower of a torch operation behaves."""
    versions = operation.cases[0].versions
    steps = []
    for index, (since, status) in enumerate(versions):
        code = _STATUS_CODES.get(status, "silent")
        if index + 1 < len(versions):
            until = versions[index + 1][0]
            bound = f"< {version_text(until)}" if index == 0 else f"{version_text(since)} to < {version_text(until)}"
        else:
            bound = f">= {version_text(since)}" if index else "all versions"
        steps.append(f"{bound}: {code}")
    if operation.follows:
        return f"as `{operation.via}` at the target torch (" + "; ".join(steps) + ")"
    return f"{operation.library}: " + "; ".join(steps)


def _condition_text(conditions) -> str:
    """` (reduce="mul"/"min")`: the argument conditions of a form, for the table."""
    parts = []
    for condition in conditions:
        values = "/".join(repr(v).replace("'", '"') if not isinstance(v, bool) else str(v) for v in condition.values)
        if condition.kind == "in":
            parts.append(f"{condition.param}={values}")
        elif condition.kind == "not-in":
            parts.append(f"{condition.param} not {values}")
        elif condition.kind == "given":
            parts.append(f"with {condition.param}")
        elif condition.kind == "calls":
            parts.append(f"{condition.param}=" + "/".join(v.rsplit(".", 1)[-1] + "(...)" for v in condition.values[:1]))
    return f" ({', '.join(parts)})" if parts else ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def third_party_table(catalog: Catalog) -> str:
    """The libraries and versions the catalog covers, one row per entry (`rules/third_party.toml`)."""
    lines = [
        "## Libraries covered",
        "",
        "Generated from `rules/third_party.toml`; the library version is config `library-versions`, "
        "else the installed package's metadata, else the newest version checked (below).",
        "",
        "| API | behaviour by version | way out | source |",
        "|---|---|---|---|",
    ]
    for operation in catalog.operations:
        if operation.kind != THIRD_PARTY_KIND or not operation.report:
            continue
        names = []
        for form in operation.forms:
            condition = _condition_text(form.when + operation.cases[0].when)
            for name in (*form.functions, *form.modules, *(f".{m}()" for m in form.methods)):
                short = name if name.startswith(".") else ".".join(name.split(".")[:1] + name.split(".")[-1:])
                short += condition
                if short not in names:
                    names.append(short)
        api = ", ".join(f"`{n}`" for n in names[:12]) + (", ..." if len(names) > 12 else "")
        lines.append(
            f"| {api} | {_cell(_behaviour(operation))} | {_cell(operation.cases[0].remedy)} | {_cell(operation.source)} |"
        )
    checked = ", ".join(
        f"{library.name} {version_text(library.checked_through)}" for library in catalog.libraries if library.checked_through
    )
    lines += ["", f"Newest versions checked: {checked}."]
    return "\n".join(lines)


class NondeterministicThirdPartyKernel(ReportedWhereCalled):
    """
    ## Why is this bad?
    Much of a real project's nondeterminism comes from libraries: a
    detector's RoI pooling, a GNN's scatter, an LLM's flash attention. Some
    run their own CUDA kernels with atomic additions, whose order varies from
    run to run, and never look at `torch.use_deterministic_algorithms`: the
    floating-point sums differ in the last bits, the differences grow through
    training, and the flag cannot help. This rule reports those kernels
    (mmcv's and detectron2's RoI and deformable ops, `torch_scatter`'s
    `segment_coo` and `scatter_mul`/`min`/`max`, `flash_attn` without
    `deterministic=True`, DGL's sum message passing, torchvision's RoI ops up
    to 0.15). A flash-attn function is reported wherever it is called:
    directly, through a name, an attribute or a `functools.partial` it was
    stored in (`self.attn_fn = flash_attn_func`; a `deterministic=True` bound
    by the partial or passed at the call counts), as FlashAttention 3
    (`flash_attn_interface`, `flash_attn_3`), or on a kernel module fetched
    from the Hugging Face Hub at run time (`fa3 = kernels.get_kernel(...)`,
    then `fa3.flash_attn_func(...)`): none of them reads torch's flag.

    The other third-party entries are reported by the rules of the torch
    operations they behave like, at the library's target version:
    torchvision 0.16 and newer raise under the flag in the RoI pooling and
    deformable convolution backwards (TDL202) and switch `roi_align` to a
    deterministic path (TDL201); `torch_scatter` and PyG sums and means are
    wrappers over `Tensor.scatter_add_` (TDL201 from torch 1.13, TDL202
    before); MONAI's `DiceCELoss` and `NACLLoss` call `nn.CrossEntropyLoss`
    on their spatial (BNH[WD]) input, which raises under the flag (TDL202 in
    every profile). The table below lists every library, API and version.

    The library version is config `library-versions` (a table such as
    `{torchvision = "0.15"}`), else the installed package's metadata (the
    package is never imported), else the newest version checked. Messages
    name it. `torch_scatter.segment_csr`, `nms`/`batched_nms` and
    `flash_attn` calls with a literal `deterministic=True` are deterministic
    and never reported.

    ## Known problems
    The device is unknown: CPU runs are reported too. A `MessagePassing`
    subclass's own `super().__init__(aggr="add")` is not matched (the
    built-in layers are). A `deterministic` argument passed to `flash_attn`
    by position is not seen, nor FlashAttention chosen by a library setting
    (Transformers' `attn_implementation="flash_attention_2"`). xformers'
    `op=` argument (and diffusers' `attention_op=`), which can force the
    flash backward, is not read. DGL's `apply_edges` reduces nothing and is not
    listed; `update_all` is matched by method name with a visible
    `dgl.function.sum(...)` reducer. mmdetection and detectron2 mostly build
    these layers from config dicts (`dict(type="RoIAlign", ...)`), which
    static analysis cannot follow: only direct constructions are seen.

    ## Options
    `library-versions`; `torch-version` (for the entries that follow a torch
    operation).

    ## References
    - torch_scatter: <https://pytorch-scatter.readthedocs.io/> ("implemented via atomic operations on the GPU
      and is therefore non-deterministic")
    - torchvision `roi_align` deterministic path: `torchvision/ops/roi_align.py` (0.16+)
    - flash-attention `flash_attn_func(..., deterministic=False)`
    - The catalog: `rules/third_party.toml` (a `source` per entry)
    """

    @classmethod
    def prefilter_words(cls) -> Tuple[str, ...]:
        """Every library of the catalog: a file that only imports `mmcv.ops` can hold a finding,
        and a new library needs no code."""
        return tuple(library.name for library in load_catalog().libraries)

    @classmethod
    def generated_documentation(cls) -> str:
        return third_party_table(load_catalog())

    code = "TDL203"
    name = "nondeterministic-third-party-kernel"
    summary = "a third-party CUDA kernel whose atomic accumulation makes results vary between runs"
    bad = (
        'from torch_scatter import segment_coo\n\ndef pool(x, index):\n    return segment_coo(x, index, reduce="sum")\n',
        "from flash_attn import flash_attn_func\n\ndef attend(q, k, v):\n    return flash_attn_func(q, k, v, causal=True)\n",
        "from mmcv.ops import RoIAlign\n\nroi_layer = RoIAlign(7, spatial_scale=0.25)\n",
    )
    good = (
        'from torch_scatter import segment_csr\n\ndef pool(x, ptr):\n    return segment_csr(x, ptr, reduce="sum")\n',
        (
            "from flash_attn import flash_attn_func\n\ndef attend(q, k, v):\n"
            "    return flash_attn_func(q, k, v, causal=True, deterministic=True)\n"
        ),
        "from torchvision.ops import nms\n\ndef keep(boxes, scores):\n    return nms(boxes, scores, 0.5)\n",
        "from mmcv.ops import RoIAlign\n\nroi_layer = RoIAlign(7, spatial_scale=0.25, use_torchvision=True)\n",
    )

    def message_for(self, node: cst.Call, assume_no_grad: bool) -> Optional[str]:
        for match in match_third_party(self.context, node, assume_no_grad=assume_no_grad):
            return (
                f"{quoted(match.name)} {'runs' if match.certain else 'may run'} a nondeterministic CUDA kernel "
                f"({match.condition}) that {FLAG_CALL} does not cover in {match.version}; way out: {match.remedy}"
            )
        return None
