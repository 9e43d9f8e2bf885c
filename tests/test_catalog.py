"""The operation catalog: loading and validation, argument conditions, the
public matcher, and that every call form of every entry is exercised by a
fixture (flagged there)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Dict, List, Set, Tuple

import libcst as cst
import pytest
from conftest import FIXTURES
from libcst.metadata import MetadataWrapper

from torchdet_lint.core.catalog import (
    DETERMINISTIC_ALTERNATIVE,
    IGNORES_FLAG,
    NOT_LITERAL,
    RAISES,
    UNKNOWN,
    Calls,
    CatalogError,
    Condition,
    Pattern,
    Symbol,
    Truth,
    load_catalog,
    load_catalog_files,
    newest_version,
    rules_directory,
)
from torchdet_lint.core.context import FileContext
from torchdet_lint.core.operations import match_operations, match_third_party
from torchdet_lint.engine.config import Settings
from torchdet_lint.testing import lint_sources

MINIMAL_OP = """
[catalog]
kind = "torch"
checked-through = "2.14"

[[op]]
id = "frobnicate"
name = "frobnicate"
device = "CUDA"
phase = "forward"
versions = { "2.3" = "raises", "2.9" = "deterministic-alternative" }
when = { mode = { not-in = ["safe"] } }
source = "a test"

[[op.form]]
functions = ["torch.frobnicate"]
methods = ["frobnicate_"]
signature = ["input", "dim", "mode='fast'"]
"""


def _load(tmp_path: Path, text: str, name: str = "ops.toml"):
    (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return load_catalog_files(sorted(tmp_path.glob("*.toml")))


# -- loading -------------------------------------------------------------------------


def test_the_shipped_catalog_loads_once() -> None:
    catalog = load_catalog()
    assert load_catalog() is catalog
    assert set(catalog.files) == {"ops.toml", "third_party.toml"}
    assert len(catalog.operations) > 35
    assert (rules_directory() / "ops.toml").is_file()


def test_newest_version_is_the_newest_the_catalog_describes() -> None:
    assert newest_version() == (2, 14)


def test_a_minimal_entry_loads(tmp_path: Path) -> None:
    catalog = _load(tmp_path, MINIMAL_OP)
    op = catalog.by_id("frobnicate")
    (case,) = op.cases
    assert case.status_at((2, 2)) is None
    assert case.status_at((2, 3)) == RAISES
    assert case.status_at((2, 10)) == DETERMINISTIC_ALTERNATIVE
    assert case.remedy == "run it on the CPU"


@pytest.mark.parametrize(
    "change, message",
    [
        (('device = "CUDA"', 'device = "CUDA"\ncolour = "red"'), "unknown key `colour`"),
        (("signature = ", "typo = 1\nsignature = "), "unknown key `typo` in a form"),
        (('"2.3" = "raises"', '"2.3" = "explodes"'), "unknown status 'explodes'"),
        (('"2.3" = "raises"', '"2.x" = "raises"'), "not a version"),
        (('{ not-in = ["safe"] }', '{ unlike = ["safe"] }'), "unknown condition `unlike`"),
        (("when = { mode", "when = { colour"), "condition on `colour`"),
        (
            ('signature = ["input", "dim", "mode=\'fast\'"]', 'signature = ["input", "dim", "mode=fast()"]'),
            "not a Python literal",
        ),
        (('signature = ["input", "dim", "mode=\'fast\'"]\n', ""), "needs a `signature`"),
        (('source = "a test"', 'source = "a test"\nreport = false'), "needs `not-reported-because`"),
        (('id = "frobnicate"', 'id = "frobnicate"\nlibrary = "frob"'), "belong to third-party"),
        (('versions = { "2.3" = "raises", "2.9" = "deterministic-alternative" }\n', ""), "`versions` is required"),
    ],
)
def test_validation_rejects_mistakes(tmp_path: Path, change: Tuple[str, str], message: str) -> None:
    old, new = change
    assert old in MINIMAL_OP
    with pytest.raises(CatalogError) as error:
        _load(tmp_path, MINIMAL_OP.replace(old, new))
    assert message in str(error.value)
    assert "ops.toml" in str(error.value)


def test_a_form_can_only_name_existing_cases(tmp_path: Path) -> None:
    text = MINIMAL_OP + 'cases = ["nope"]\n'
    with pytest.raises(CatalogError, match="no case 'nope'"):
        _load(tmp_path, text)


def test_duplicate_ids_across_files_are_rejected(tmp_path: Path) -> None:
    (tmp_path / "more.toml").write_text(textwrap.dedent(MINIMAL_OP), encoding="utf-8")
    with pytest.raises(CatalogError, match="also defined"):
        _load(tmp_path, MINIMAL_OP)


def test_third_party_entries_name_their_library_or_the_torch_operation_they_follow(tmp_path: Path) -> None:
    text = MINIMAL_OP.replace('kind = "torch"', 'kind = "third-party"')
    with pytest.raises(CatalogError, match="needs either `library`"):
        _load(tmp_path, text)
    with pytest.raises(CatalogError, match=r"no \[library.frob\] table"):
        _load(_fresh(tmp_path, "a"), text.replace('id = "frobnicate"', 'id = "frobnicate"\nlibrary = "frob"'))
    follower = text.replace('id = "frobnicate"', 'id = "frob_sum"\nfollows = "scatter_add"\nvia = "Tensor.scatter_add_"')
    with pytest.raises(CatalogError, match="takes its `versions` from it"):
        _load(_fresh(tmp_path, "b"), follower, name="frob.toml")


def _fresh(tmp_path: Path, name: str) -> Path:
    directory = tmp_path / name
    directory.mkdir()
    return directory


THIRD_PARTY_LIBRARY = """
[catalog]
kind = "third-party"

[library.frob]
distributions = ["frob-lib"]
checked-through = "1.4"

[[op]]
id = "frob_pool"
library = "frob"
name = "frob pool"
device = "CUDA"
phase = "backward"
versions = { "0.0" = "ignores-flag", "1.2" = "raises", "1.4" = "deterministic-alternative" }
source = "a test"

[[op.form]]
functions = ["frob.pool"]
modules = ["frob.Pool"]
"""


def test_a_new_library_is_one_toml_entry_with_versions_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "ops.toml").write_text((rules_directory() / "ops.toml").read_text(encoding="utf-8"), encoding="utf-8")
    catalog = _load(tmp_path, THIRD_PARTY_LIBRARY, name="frob.toml")
    assert catalog.library("frob").distributions == ("frob-lib",)
    assert catalog.newest_library_version("frob") == (1, 4)
    assert catalog.newest_version() == load_catalog().newest_version()  # torch's versions only
    source = "import frob\na = frob.pool(x)\nb = frob.Pool(7)\n"
    at = {version: _matches(source, catalog=catalog, libraries={"frob": version}) for version in ((1, 0), (1, 2), (1, 5))}
    assert at[(1, 0)] == [(2, "frob_pool", IGNORES_FLAG, True), (3, "frob_pool", IGNORES_FLAG, True)]
    assert [m[2] for m in at[(1, 2)]] == [RAISES, RAISES]
    assert [m[2] for m in at[(1, 5)]] == [DETERMINISTIC_ALTERNATIVE, DETERMINISTIC_ALTERNATIVE]


def test_library_tables_are_validated(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match=r"unknown key `colour` in \[library.frob\]"):
        _load(tmp_path, THIRD_PARTY_LIBRARY.replace('checked-through = "1.4"', 'colour = "red"'), name="frob.toml")
    with pytest.raises(CatalogError, match="library.frob.checked-through"):
        _load(
            _fresh(tmp_path, "b"),
            THIRD_PARTY_LIBRARY.replace('checked-through = "1.4"', 'checked-through = "one"'),
            name="frob.toml",
        )


def test_other_data_files_in_rules_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "seed_helpers.toml").write_text('[helpers]\nnames = ["a.b"]\n', encoding="utf-8")
    catalog = _load(tmp_path, MINIMAL_OP)
    assert catalog.files == ("ops.toml",)


# -- conditions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "condition, value, expected",
    [
        (Condition("mode", "in", ("bilinear",)), "bilinear", Truth.YES),
        (Condition("mode", "in", ("bilinear",)), "nearest", Truth.NO),
        (Condition("mode", "in", ("bilinear",)), NOT_LITERAL, Truth.MAYBE),
        (Condition("mode", "in", ("bilinear",)), Symbol("config.MODE"), Truth.MAYBE),
        (Condition("mode", "in", ("bilinear",)), UNKNOWN, Truth.YES),
        (Condition("size", "not-in", (1, (1, 1))), 1, Truth.NO),
        (Condition("size", "not-in", (1, (1, 1))), (1, 1), Truth.NO),
        (Condition("size", "not-in", (1, (1, 1))), [1, 1], Truth.NO),
        (Condition("size", "not-in", (1, (1, 1))), (None, 1), Truth.YES),
        (Condition("size", "not-in", (1,)), True, Truth.YES),  # True is not the integer 1
        (Condition("weights", "given"), None, Truth.NO),
        (Condition("weights", "given"), NOT_LITERAL, Truth.YES),
        (Condition("reduce", "absent"), None, Truth.YES),
        (Condition("reduce", "absent"), "add", Truth.NO),
        (Condition("src", "tensor"), 1.0, Truth.NO),
        (Condition("src", "tensor"), NOT_LITERAL, Truth.YES),
        (Condition("pad", "length", (2,)), (1, 1), Truth.YES),
        (Condition("pad", "length", (2,)), (1, 1, 1, 1), Truth.NO),
        (Condition("pad", "length", (2,)), NOT_LITERAL, Truth.MAYBE),
        (Condition("dtype", "not-names", ("torch.int64",)), Symbol("torch.int64"), Truth.NO),
        (Condition("dtype", "not-names", ("torch.int64",)), Symbol("torch.float32"), Truth.YES),
        (Condition("reduce_func", "calls", ("dgl.function.sum",)), Calls(frozenset({"dgl.function.sum"})), Truth.YES),
        (Condition("reduce_func", "calls", ("dgl.function.sum",)), Calls(frozenset({"dgl.function.max"})), Truth.NO),
        (Condition("reduce_func", "calls", ("dgl.function.sum",)), "sum", Truth.YES),
        (Condition("reduce_func", "calls", ("dgl.function.sum",)), NOT_LITERAL, Truth.NO),  # only what is visible
        (Condition("mode", "in", ("bilinear",)), Calls(frozenset({"f"})), Truth.MAYBE),
        # An f-string known by its literal ends (`f"a{reduce[-3:]}"`): ruled out when no value fits.
        (Condition("reduce", "in", ("prod",)), Pattern("a", ""), Truth.NO),
        (Condition("reduce", "in", ("prod", "amax")), Pattern("a", ""), Truth.MAYBE),
        (Condition("reduce", "in", ("prod",)), Pattern("", "d"), Truth.MAYBE),
        (Condition("reduce", "in", ("prod",)), Pattern("pr", "rod"), Truth.NO),  # too short to fit both ends
        (Condition("reduce", "not-in", ("sum", "mean")), Pattern("a", ""), Truth.YES),
        (Condition("reduce", "not-in", ("sum", "mean")), Pattern("s", ""), Truth.MAYBE),
        (Condition("reduce", "absent"), Pattern("a", ""), Truth.NO),
        (Condition("src", "tensor"), Pattern("a", ""), Truth.NO),
    ],
)
def test_condition_evaluation(condition: Condition, value, expected: Truth) -> None:
    assert condition.evaluate(value) is expected


# -- the public matcher ------------------------------------------------------------------


class _Recorder(cst.BatchableCSTVisitor):
    def __init__(self, context: FileContext, catalog=None) -> None:
        super().__init__()
        self.context = context
        self.catalog = catalog
        self.found: List[Tuple[int, str, str, bool]] = []

    def visit_Call(self, node: cst.Call) -> None:
        for match in match_operations(self.context, node, self.catalog) + match_third_party(self.context, node, self.catalog):
            self.found.append((self.context.node_range(node)[0], match.op_id, match.behavior, match.certain))


def _matches(source: str, version=(2, 13), catalog=None, libraries=None) -> List[Tuple[int, str, str, bool]]:
    """match_operations (and the TDL203 kernels) in a traversal of its own: no TDL2xx rule is selected."""
    source = textwrap.dedent(source)
    context = FileContext(
        "t.py", source, cst.parse_module(source), Settings(select=("TDL301",)), version, library_versions=libraries
    )
    recorder = _Recorder(context, catalog)
    MetadataWrapper(context.module, unsafe_skip_copy=True).visit_batched([context.resolver, context.scopes, recorder])
    return recorder.found


def test_match_operations_reports_both_classes_with_their_behaviour() -> None:
    found = _matches(
        """\
        import torch.nn as nn
        import torch.nn.functional as F
        conv = nn.Conv2d(3, 8, 3)
        up = F.interpolate(x, mode="bicubic")
        loss = nn.CrossEntropyLoss()
        up2 = F.interpolate(x, mode=m)
        nearest = F.interpolate(x)
        """
    )
    assert found == [
        (3, "conv_cudnn", DETERMINISTIC_ALTERNATIVE, True),
        (4, "interpolate_backward", RAISES, True),
        (5, "nll_loss2d", RAISES, True),  # strict-only for TDL202, still a catalog operation
        (6, "interpolate_backward", RAISES, False),
    ]


def test_match_operations_follows_the_target_version() -> None:
    source = "import torch\ny = torch.kthvalue(x, 2, 0)\nz = x.index_add_(0, i, s)\n"
    assert _matches(source, (1, 8)) == [(2, "kthvalue", RAISES, True), (3, "index_add", RAISES, True)]
    assert _matches(source, (2, 13)) == [(3, "index_add", DETERMINISTIC_ALTERNATIVE, True)]


def test_third_party_functions_over_a_torch_operation_behave_as_it_does() -> None:
    source = """\
        from torch_scatter import scatter, segment_coo, segment_csr
        a = scatter(x, i, dim=0)
        b = segment_coo(x, i)
        c = segment_csr(x, ptr)
        """
    assert _matches(source) == [
        (2, "torch_scatter_scatter_sum", DETERMINISTIC_ALTERNATIVE, True),
        (3, "torch_scatter_segment_coo", IGNORES_FLAG, True),
    ]
    assert _matches(source, (1, 12))[0] == (2, "torch_scatter_scatter_sum", RAISES, True)


def test_quantized_resize_is_matched_only_on_a_visibly_quantized_receiver() -> None:
    source = """\
        import torch
        def f(x):
            q = torch.quantize_per_tensor(x, 0.1, 0, torch.quint8)
            q.resize_(3, 4)
            x.resize_(3, 4)
            torch.quantize_per_channel(x, s, z, 0, torch.qint8).resize_(2)
        """
    assert _matches(source) == [(4, "resize_quantized", RAISES, True), (6, "resize_quantized", RAISES, True)]


def test_an_operation_is_a_toml_entry_and_nothing_else(tmp_path: Path) -> None:
    catalog = _load(tmp_path, MINIMAL_OP)
    source = """\
        import torch
        a = torch.frobnicate(x, 0)
        x.frobnicate_(0, mode="safe")
        x.frobnicate_(0)
        """
    assert _matches(source, (2, 5), catalog) == [(2, "frobnicate", RAISES, True), (4, "frobnicate", RAISES, True)]
    assert _matches(source, (2, 9), catalog)[0][2] == DETERMINISTIC_ALTERNATIVE


# -- acceptance: methods need a torch import, settings silence TDL201 -----------------------


def test_method_names_are_not_reported_without_a_torch_import() -> None:
    body = "def f(x, i, s, df):\n    x.put_(i, s)\n    x.index_add_(0, i, s)\n    return df.median(1), x.kthvalue(2, 0)\n"
    config = {"torch-version": "2.0"}
    without = lint_sources({"a.py": "import pandas as pd\n" + body}, config, select=["TDL201", "TDL202"])
    assert without == []
    with_torch = lint_sources({"a.py": "import torch\n" + body}, config, select=["TDL201", "TDL202"])
    assert [d.line for d in with_torch] == [3, 4, 5, 5]


def test_assume_deterministic_mode_silences_what_the_flag_fixes() -> None:
    source = textwrap.dedent(
        """\
        import torch.nn as nn
        from torch_scatter import scatter, segment_coo
        conv = nn.Conv2d(3, 8, 3)
        pool = nn.AdaptiveAvgPool2d(7)
        a = scatter(x, i, dim=0)
        b = segment_coo(x, i)
        """
    )
    codes = ["TDL201", "TDL202", "TDL203"]
    loud = lint_sources({"a.py": source}, {}, select=codes)
    assert [(d.line, d.code) for d in loud] == [(3, "TDL201"), (4, "TDL202"), (5, "TDL201"), (6, "TDL203")]
    quiet = lint_sources({"a.py": source}, {"assume-deterministic-mode": True}, select=codes)
    assert [(d.line, d.code) for d in quiet] == [(4, "TDL202"), (6, "TDL203")]


# -- every call form of every entry has a flagged fixture line -------------------------------

_DIAGNOSTIC_RE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):\d+: (?P<code>TDL20[123]) ")


def _flagged_fixture_lines() -> Set[str]:
    lines: Set[str] = set()
    for code in ("TDL201", "TDL202", "TDL203"):
        for expected in (FIXTURES / code).glob("*.txt"):
            case = expected.with_suffix("")
            for entry in expected.read_text(encoding="utf-8").splitlines():
                match = _DIAGNOSTIC_RE.match(entry)
                assert match, entry
                source = case / match["path"] if case.is_dir() else expected.with_suffix(".py")
                lines.add(source.read_text(encoding="utf-8").splitlines()[int(match["line"]) - 1])
    return lines


def _call_forms() -> Dict[str, List[str]]:
    forms: Dict[str, List[str]] = {}
    for op in load_catalog().operations:
        if not op.report:
            continue
        names = forms.setdefault(op.id, [])
        for form in op.forms:
            names.extend(name.rsplit(".", 1)[-1] + "(" for name in (*form.functions, *form.modules))
            names.extend("." + name + "(" for name in form.methods)
    return forms


def test_every_call_form_is_flagged_in_a_fixture() -> None:
    flagged = _flagged_fixture_lines()
    missing = [
        f"{op_id}: {spelling}"
        for op_id, spellings in _call_forms().items()
        for spelling in spellings
        if not any(spelling in line for line in flagged)
    ]
    assert not missing, "call forms no fixture shows flagged:\n" + "\n".join(missing)


def test_every_reported_case_is_flagged_at_some_version() -> None:
    """Each case label (mode='bicubic', 1-d, accumulate=True, ...) appears in some fixture message."""
    messages = set()
    for code in ("TDL201", "TDL202", "TDL203"):
        for expected in (FIXTURES / code).glob("*.txt"):
            messages.update(expected.read_text(encoding="utf-8").splitlines())
    text = "\n".join(messages)
    missing = [
        f"{op.id}/{case.id} ({case.label})"
        for op in load_catalog().operations
        if op.report and len(op.cases) > 1
        for case in op.cases
        if case.label and case.label not in text
    ]
    assert not missing, missing
