"""`torchdet-lint report`: one scorecard per entry point, agreeing with `check`.

For every fixture project the report's columns are compared with `check`'s
diagnostics of the same run settings: a seed column is `missing` exactly when
`check` reports TDL001/TDL002/TDL003 on that entry point; `dataloaders`,
`raising-ops`, `third-party-kernels` (and the cuDNN and cuBLAS columns) are
`missing` exactly when a TDL101-105 / TDL202 / TDL203 (TDL301 / TDL303) finding
lies in code the entry point reaches, and then list every such finding.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Dict, List, Set, Tuple

import jsonschema
import pytest
from conftest import cli_in_process
from markdown_it import MarkdownIt
from test_partial_runs import SEED_CODES, TRAIN, UNSEEDED, _copy_project, _projects, helper_seeded_project

from torchdet_lint.report.render import _HEADINGS
from torchdet_lint.report.scorecard import CHECKS, FINDING_CHECKS, REPORT_CODES, SEED_CHECKS

SCHEMA = json.loads((Path(__file__).parent / "data" / "report-schema.json").read_text(encoding="utf-8"))
EXTEND = ["--extend-select", ",".join(sorted(REPORT_CODES))]  # check with the report's selection


def _report(*args: str, cwd: Path) -> Tuple[int, dict]:
    code, out, err = cli_in_process("report", "--output-format", "json", *args, cwd=cwd)
    assert code in (0, 1), err
    data = json.loads(out)
    jsonschema.validate(data, SCHEMA)
    return code, data


def _check(*args: str, cwd: Path) -> List[dict]:
    code, out, err = cli_in_process("check", "--output-format", "json", *EXTEND, *args, cwd=cwd)
    assert code in (0, 1), err
    return json.loads(out)


@pytest.mark.parametrize("name, source, config", _projects(), ids=[p[0] for p in _projects()])
def test_the_report_agrees_with_check_on_every_fixture_project(name, source, config, tmp_path: Path) -> None:
    _copy_project(source, tmp_path, config)
    code, report = _report(cwd=tmp_path)
    diagnostics = _check(cwd=tmp_path)
    entries = report["entry_points"]
    cited: Set[Tuple[str, int, str]] = set()
    for entry in entries:
        checks = entry["checks"]
        for check, (seed_code, _) in SEED_CHECKS.items():
            reported = any(
                d["code"] == seed_code and (d["path"], d["line"]) == (entry["path"], entry["line"]) for d in diagnostics
            )
            assert (checks[check]["status"] == "missing") == reported, (name, entry["path"], check)
        flag_reported = any(
            d["code"] == "TDL302" and (d["path"], d["line"]) == (entry["path"], entry["line"]) for d in diagnostics
        )
        assert (checks["deterministic-mode"]["status"] == "missing") == flag_reported, (name, entry["path"])
        for check, codes in FINDING_CHECKS.items():
            result = checks[check]
            if result["status"] != "missing":
                continue
            for evidence in result["evidence"]:
                finding_code = evidence["message"].split(":", 1)[0]
                assert finding_code in codes, (name, check, evidence)
                match = [
                    d
                    for d in diagnostics
                    if (d["path"], d["line"], d["code"]) == (evidence["path"], evidence["line"], finding_code)
                ]
                assert match, f"{name}: {check} cites {evidence}, which check does not report"
                cited.add((evidence["path"], evidence["line"], finding_code))
        assert set(checks) == set(CHECKS)
        for check, result in checks.items():
            _assert_status_explained(name, entry, check, result, diagnostics)
    # Every finding of those codes is cited by an entry point that reaches it, unless none does.
    reaching = _reaching_entry_points(tmp_path, config)
    for d in diagnostics:
        if any(d["code"] in codes for codes in FINDING_CHECKS.values()):
            key = (d["path"], d["line"], d["code"])
            assert (key in cited) == bool(reaching(d)), f"{name}: {key} cited {key in cited}, reached {reaching(d)}"
    passing = ("ok", "not-needed", "ignored")
    expected_exit = 0 if all(all(c["status"] in passing for c in e["checks"].values()) for e in entries) else 1
    assert code == expected_exit


def _assert_status_explained(name: str, entry: dict, check: str, result: dict, diagnostics: List[dict]) -> None:
    """What each status says must hold in the evidence it shows: `unknown` names a site the
    analysis cannot follow, `ignored` a deselection or suppression, `opt-in` the guard or the
    drawn seed; `ok`, `not-needed`, `ignored`, `unknown` and `opt-in` are never reported by
    check (that is `missing`, asserted above)."""
    messages = " ".join(e["message"] for e in result["evidence"])
    status = result["status"]
    where = (name, entry["path"], check, messages)
    if status == "unknown":
        assert "cannot follow" in messages, where
    elif status == "ignored":
        assert "deselected" in messages or "suppressed" in messages, where
    elif status == "opt-in":
        assert "runs only under `if " in messages or "TDL007" in messages, where
    if check in SEED_CHECKS and status in ("ok", "opt-in"):
        # A seed the report names is a seeding call `check` sees: no TDL001-003 there.
        code = SEED_CHECKS[check][0]
        assert not any(d["code"] == code and d["path"] == entry["path"] and d["line"] == entry["line"] for d in diagnostics), (
            where
        )


def _reaching_entry_points(root: Path, config: Dict[str, object]):
    """Which reported entry points reach a finding, from the project model (the library API)."""
    from torchdet_lint.engine.runner import run_scopes
    from torchdet_lint.engine.workspace import Workspace
    from torchdet_lint.report.scorecard import _Findings

    scopes, _ = Workspace(root).scopes(["."])
    run = run_scopes(scopes, use_cache=False, extra_codes=REPORT_CODES)
    models = [p.model for p in run.projects if p.model is not None]

    def reaching(diagnostic: dict) -> List[str]:
        found = []
        for model in models:
            placed = _Findings(
                model,
                [
                    d
                    for d in run.diagnostics
                    if (d.path, d.line, d.code) == (diagnostic["path"], diagnostic["line"], diagnostic["code"])
                ],
            )
            for entry in model.reported_runs:
                if placed.reached(frozenset({diagnostic["code"]}), model.reached_nodes(entry)):
                    found.append(entry.path)
        return found

    return reaching


def test_seed_helper_evidence_and_exit_status(tmp_path: Path) -> None:
    project = helper_seeded_project(tmp_path / "p")
    code, report = _report(cwd=project)
    assert code == 1
    rows = {entry["path"]: entry["checks"] for entry in report["entry_points"]}
    assert set(rows) == {"train.py", "train2.py"}
    for check in ("torch-seed", "random-seed", "numpy-seed"):
        assert rows["train.py"][check]["status"] == "ok"
        assert rows["train.py"][check]["evidence"][0]["path"] == "utils/seed.py"
        assert rows["train2.py"][check]["status"] == "missing"
    # A named file gets its own row, the same as in the whole run.
    code, named = _report("train.py", cwd=project)
    assert [e["path"] for e in named["entry_points"]] == ["train.py"] and named["entry_points"][0] == report["entry_points"][0]

    # Seeded, deterministic, nothing else wrong: every check ok or not-needed, exit 0.
    (project / "train2.py").unlink()
    (project / "train.py").write_text(
        TRAIN.replace("    fix_seed(0)\n", "    fix_seed(0)\n    torch.use_deterministic_algorithms(True)\n"), encoding="utf-8"
    )
    code, report = _report("--torch-version", "2.13", cwd=project)
    statuses = {check: result["status"] for check, result in report["entry_points"][0]["checks"].items()}
    assert code == 0 and set(statuses.values()) <= {"ok", "not-needed"}, statuses
    assert statuses["deterministic-mode"] == "ok"
    # Before torch 2.10 the flag needs CUBLAS_WORKSPACE_CONFIG set first (TDL303).
    code, report = _report("--torch-version", "2.3", cwd=project)
    assert code == 1 and report["entry_points"][0]["checks"]["cublas-workspace"]["status"] == "missing"


def test_markdown_renders_as_a_table_with_a_legend(tmp_path: Path) -> None:
    project = helper_seeded_project(tmp_path / "p")
    code, out, err = cli_in_process("report", "--output-format", "markdown", cwd=project)
    assert code == 1, err
    tokens = MarkdownIt("commonmark").enable("table").parse(out)
    types = [token.type for token in tokens]
    assert "table_open" in types
    cells = [tokens[i + 1].content for i, token in enumerate(tokens) if token.type in ("th_open", "td_open")]
    header, rows = cells[: len(CHECKS) + 1], cells[len(CHECKS) + 1 :]
    assert header == ["entry point", *CHECKS]
    assert len(rows) == 2 * (len(CHECKS) + 1)
    assert rows[0] == "`train.py:16`" and rows[len(CHECKS) + 1] == "`train2.py:15`"
    assert "missing" in rows[len(CHECKS) + 2] and "ok" in rows[1]
    assert "not-needed" in out and "### What is missing" in out


def test_full_output_is_a_table_coloured_only_on_request(tmp_path: Path) -> None:
    project = helper_seeded_project(tmp_path / "p")
    code, out, _ = cli_in_process("report", cwd=project)
    assert code == 1 and "\x1b[" not in out
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("entry point"))
    assert lines[header + 2].startswith("train.py:16") and lines[header + 3].startswith("train2.py:15")
    assert lines[header + 3].split()[1:4] == ["missing", "missing", "missing"]
    code, coloured, _ = cli_in_process("report", "--color", "always", cwd=project)
    assert "\x1b[1;31mmissing" in coloured


def test_third_party_kernels_reached_through_a_helper_module(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "attention.py").write_text(
        "from flash_attn import flash_attn_func\n\n\ndef attend(q, k, v):\n    return flash_attn_func(q, k, v, causal=True)\n\n\n"
        "def attend_deterministically(q, k, v):\n    return flash_attn_func(q, k, v, deterministic=True)\n",
        encoding="utf-8",
    )
    (tmp_path / "train.py").write_text(
        "import torch\n\nfrom attention import attend\n\nif __name__ == '__main__':\n"
        "    q = torch.ones(2, requires_grad=True).cuda()\n    attend(q, q, q).sum().backward()\n",
        encoding="utf-8",
    )
    (tmp_path / "serve.py").write_text(
        "from attention import attend_deterministically\n\nif __name__ == '__main__':\n    attend_deterministically(1, 2, 3)\n",
        encoding="utf-8",
    )
    _, report = _report(cwd=tmp_path)
    kernels = {entry["path"]: entry["checks"]["third-party-kernels"] for entry in report["entry_points"]}
    assert kernels["train.py"]["status"] == "missing"
    assert [(e["path"], e["line"]) for e in kernels["train.py"]["evidence"]] == [("attention.py", 5)]
    assert kernels["serve.py"]["status"] == "not-needed"


def test_report_usage_errors(tmp_path: Path) -> None:
    code, _, err = cli_in_process("report", "nothere.py", cwd=tmp_path)
    assert code == 2 and "nothere.py" in err
    code, _, err = cli_in_process("report", "--output-format", "sarif", cwd=tmp_path)
    assert code == 2
    code, out, _ = cli_in_process("report", "--output-format", "json", cwd=tmp_path)
    assert code == 0 and json.loads(out) == {"entry_points": []}


def test_unseeded_script_is_missing_in_the_report_too(tmp_path: Path) -> None:
    project = helper_seeded_project(tmp_path / "p")
    _, report = _report("train2.py", cwd=project)
    assert [e["path"] for e in report["entry_points"]] == ["train2.py"]
    diagnostics = _check("train2.py", cwd=project)
    assert sorted(d["code"] for d in diagnostics if d["code"] in SEED_CODES) == SEED_CODES
    assert UNSEEDED  # the file the report and check read


SPAWNING = """import argparse
import random

import torch
import torch.multiprocessing as mp
from torch import nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    mp.spawn(main_worker, nprocs=2, args=(args,))


def main_worker(rank, args):
    model = nn.Linear(4, 2)
    print(model(torch.randn(2, 4)), random.random())


if __name__ == "__main__":
    main()
"""


def test_a_spawned_worker_has_a_row_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "main.py").write_text(SPAWNING, encoding="utf-8")
    code, report = _report(cwd=tmp_path)
    assert code == 1
    rows = {(entry["path"], entry["line"]): entry for entry in report["entry_points"]}
    assert set(rows) == {("main.py", 15), ("main.py", 23)}
    worker, parent = rows[("main.py", 15)], rows[("main.py", 23)]
    assert worker["reason"] == "spawned" and worker["spawned"] == {
        "function": "main_worker",
        "launcher": "mp.spawn(...)",
        "parent": "main.py:23",
    }
    assert parent["reason"] == "main block" and "spawned" not in parent
    # The parent's seeds count for the parent only; the worker's draws are the worker's.
    for check, lines in (("torch-seed", {19, 20}), ("random-seed", {20})):
        assert parent["checks"][check]["status"] == "ok"
        assert worker["checks"][check]["status"] == "missing"
        assert {e["line"] for e in worker["checks"][check]["evidence"]} == lines
    # Nothing reaches CUDA work or a catalog operation: no deterministic mode needed.
    assert worker["checks"]["deterministic-mode"]["status"] == "not-needed"
    code, out, _ = cli_in_process("report", "--color", "never", cwd=tmp_path)
    assert "main.py:15 -> main_worker" in out and "spawned by `mp.spawn(...)` in the program that starts at main.py:23" in out
    # Every check has a column, and the table wraps into blocks that fit 100 columns.
    table = out.split("\n\n(")[0].split("\n\nmain.py:15 -> main_worker (")[0]
    assert all(len(line) <= 100 for line in table.splitlines()), table
    assert table.count("entry point") >= 2 and all(_HEADINGS[check][0] in table for check in CHECKS), table


def test_functional_dropout_left_on_is_missing_in_eval_dropout(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "model.py").write_text(
        "import torch.nn.functional as F\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        return F.dropout(x, 0.5)\n",
        encoding="utf-8",
    )
    (tmp_path / "evaluate.py").write_text(
        'import torch\n\nfrom model import Net\n\nif __name__ == "__main__":\n    torch.manual_seed(0)\n'
        "    net = Net()\n    net.eval()\n    print(net(torch.ones(3)))\n",
        encoding="utf-8",
    )
    code, report = _report(cwd=tmp_path)
    result = report["entry_points"][0]["checks"]["eval-dropout"]
    assert code == 1 and result["status"] == "missing", result
    assert [(e["path"], e["line"]) for e in result["evidence"]] == [("model.py", 7)]
    (tmp_path / "model.py").write_text((tmp_path / "model.py").read_text().replace("0.5)", "0.5, training=self.training)"))
    code, report = _report(cwd=tmp_path)
    assert report["entry_points"][0]["checks"]["eval-dropout"]["status"] == "ok"


def test_resume_rng_state_follows_tdl008(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    source = (Path(__file__).parents[1] / "fixtures" / "TDL008" / "main_block.py").read_text(encoding="utf-8")
    (tmp_path / "train.py").write_text(source, encoding="utf-8")
    code, report = _report(cwd=tmp_path)
    result = report["entry_points"][0]["checks"]["resume-rng-state"]
    assert result["status"] == "missing" and result["evidence"][0]["message"].startswith("TDL008"), result
    # With the states saved, the check is ok and cites where the run resumes.
    cli_in_process("--fix", "--unsafe-fixes", "--select", "TDL008", "--no-cache", ".", cwd=tmp_path)
    code, report = _report(cwd=tmp_path)
    result = report["entry_points"][0]["checks"]["resume-rng-state"]
    assert result["status"] == "ok" and (result["evidence"][0]["path"], result["evidence"][0]["line"]) == ("train.py", 25), result
    # A run that never loads an optimizer's state does not resume.
    (tmp_path / "train.py").write_text(
        source.replace('        optimizer.load_state_dict(checkpoint["optimizer"])\n', ""), encoding="utf-8"
    )
    code, report = _report(cwd=tmp_path)
    assert report["entry_points"][0]["checks"]["resume-rng-state"]["status"] == "not-needed"


def test_autotuning_is_missing_in_compiled_code(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    source = (
        'import torch\nfrom torch import nn\n\nif __name__ == "__main__":\n    torch.manual_seed(0)\n'
        '    model = torch.compile(nn.Linear(2, 2), mode="max-autotune")\n    print(model(torch.ones(2)))\n'
    )
    (tmp_path / "train.py").write_text(source, encoding="utf-8")
    code, report = _report("--torch-version", "2.13", cwd=tmp_path)
    result = report["entry_points"][0]["checks"]["compiled-code"]
    assert result["status"] == "missing" and (result["evidence"][0]["path"], result["evidence"][0]["line"]) == ("train.py", 6), (
        result
    )
    (tmp_path / "train.py").write_text(source.replace(', mode="max-autotune"', ""), encoding="utf-8")
    code, report = _report("--torch-version", "2.13", cwd=tmp_path)
    assert report["entry_points"][0]["checks"]["compiled-code"]["status"] == "ok"


def test_resume_rng_state_sees_an_optimizer_loaded_by_a_helper(tmp_path: Path) -> None:
    """swav/dino: `restart_from_checkpoint(path, optimizer=optimizer)` loads each keyword's state."""
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "TDL008" / "helper_load", tmp_path / "project")
    project = tmp_path / "project"
    (project / "pyproject.toml").write_text("", encoding="utf-8")
    code, report = _report(cwd=project)
    result = report["entry_points"][0]["checks"]["resume-rng-state"]
    assert result["status"] == "missing" and result["evidence"][0]["message"].startswith("TDL008"), result
    # No fix where the load is in another module (it would save what nothing restores): the state
    # saved by hand, and restored where the helper loads it.
    assert "no fix offered" in result["evidence"][0]["message"], result
    main = project / "main_swav.py"
    main.write_text(
        main.read_text().replace('"epoch": epoch + 1,', '"epoch": epoch + 1,\n            "rng": torch.get_rng_state(),')
    )
    utils = project / "src" / "utils.py"
    utils.write_text(
        utils.read_text().replace("    if run_variables", '    torch.set_rng_state(checkpoint["rng"])\n    if run_variables')
    )
    code, report = _report(cwd=project)
    result = report["entry_points"][0]["checks"]["resume-rng-state"]
    assert result["status"] == "ok" and (result["evidence"][0]["path"], result["evidence"][0]["line"]) == ("src/utils.py", 13), (
        result
    )


def test_a_label_map_in_hash_order_is_missing_in_hidden_order(tmp_path: Path) -> None:
    """A helper the entry point reaches builds its label map from a set of strings."""
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "data.py").write_text(
        "def label_map(rows):\n    labels = {row.strip() for row in rows}\n"
        "    return {name: i for i, name in enumerate(labels)}\n",
        encoding="utf-8",
    )
    (tmp_path / "train.py").write_text(
        'import torch\n\nfrom data import label_map\n\nif __name__ == "__main__":\n    torch.manual_seed(0)\n'
        '    print(label_map(open("labels.txt")))\n',
        encoding="utf-8",
    )
    code, report = _report(cwd=tmp_path)
    result = report["entry_points"][0]["checks"]["hidden-order"]
    assert code == 1 and result["status"] == "missing", result
    assert [(e["path"], e["line"]) for e in result["evidence"]] == [("data.py", 3)]
    cli_in_process("--fix", "--select", "TDL107", "--no-cache", ".", cwd=tmp_path)
    assert "enumerate(sorted(labels))" in (tmp_path / "data.py").read_text(encoding="utf-8")
    code, report = _report(cwd=tmp_path)
    assert code == 0 and report["entry_points"][0]["checks"]["hidden-order"]["status"] == "ok"


CONVERT = """import torch
import torch.nn.functional as F

if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.cuda.set_device(0)
    checkpoint = torch.load("in.pth", map_location="cpu")
    state = checkpoint["model"]
    pos = state["pos_embed"].float()[None]
    state["pos_embed"] = F.interpolate(pos, size=(14, 14), mode="bicubic")[0]
    torch.cuda.synchronize()
    torch.save(state, "out.pth")
"""
TRAIN_ON_DEVICE = """import torch
from torch import nn

if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = nn.Linear(2, 2).to(device)
    model(torch.ones(2)).sum().backward()
"""


def test_a_checkpoint_conversion_script_needs_no_deterministic_mode(tmp_path: Path) -> None:
    # docs/decisions.md, "CUDA work, devices and gradients": device objects and housekeeping alone are no CUDA work, and
    # tensors read from a checkpoint loaded onto the CPU run no CUDA kernel; a device name chosen
    # as "cuda" is CUDA work where it is used.
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "convert.py").write_text(CONVERT, encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN_ON_DEVICE, encoding="utf-8")
    _, report = _report(cwd=tmp_path)
    modes = {e["path"]: e["checks"]["deterministic-mode"] for e in report["entry_points"]}
    assert modes["convert.py"]["status"] == "not-needed"
    assert modes["train.py"]["status"] == "missing"
    assert [e["message"] for e in modes["train.py"]["evidence"]] == ["reaches `.to(device)`"]
    flagged = {d["path"] for d in _check(cwd=tmp_path) if d["code"] == "TDL302"}
    assert flagged == {"train.py"}


E2E_PROGRAMS = Path(__file__).parent / "e2e" / "programs"


def _only_row(report: dict, check: str) -> dict:
    rows = [row for row in report["entry_points"] if row["reason"] != "spawned"] or report["entry_points"]
    return rows[0]["checks"][check]


def test_resume_data_position_missing_then_the_documented_form_is_ok(tmp_path: Path) -> None:
    """TDL010: a mid-epoch checkpoint resumed from the epoch's start is `missing` at the resume;
    the documented `StatefulDataLoader` form of the same program is `ok`; a run that never
    resumes is `not-needed`."""
    for name in ("mid_epoch", "mid_epoch_stateful"):
        shutil.copytree(E2E_PROGRAMS / name, tmp_path / name)
        (tmp_path / name / "pyproject.toml").write_text("", encoding="utf-8")
    _, report = _report(cwd=tmp_path / "mid_epoch")
    result = _only_row(report, "resume-data-position")
    assert result["status"] == "missing" and result["evidence"][0]["message"].startswith("TDL010"), result
    _, report = _report(cwd=tmp_path / "mid_epoch_stateful")
    result = _only_row(report, "resume-data-position")
    assert result["status"] == "ok" and result["evidence"][0]["line"] > 1, result

    train = tmp_path / "mid_epoch" / "train.py"
    train.write_text(train.read_text().replace('optimizer.load_state_dict(checkpoint["optimizer"])', "pass"))
    _, report = _report(cwd=tmp_path / "mid_epoch")
    assert _only_row(report, "resume-data-position")["status"] == "not-needed"


def test_rank_order_missing_then_fixed_then_ok(tmp_path: Path) -> None:
    """TDL011: per-process sampler seeds are `missing` on the spawned worker's row, `ok` after the
    fix; the parent, which starts the processes but is no rank, and a run that is not distributed
    show `not-needed`."""
    project = tmp_path / "rank_seeds"
    shutil.copytree(E2E_PROGRAMS / "rank_seeds", project)
    (project / "pyproject.toml").write_text("", encoding="utf-8")
    _, report = _report(cwd=project)
    rows = {row["reason"]: row["checks"]["rank-order"] for row in report["entry_points"]}
    assert rows["spawned"]["status"] == "missing" and rows["spawned"]["evidence"][0]["message"].startswith("TDL011"), rows
    assert rows["main block"]["status"] == "not-needed", rows
    cli_in_process("--fix", "--unsafe-fixes", "--select", "TDL011", "--no-cache", ".", cwd=project)
    _, report = _report(cwd=project)
    rows = {row["reason"]: row["checks"]["rank-order"] for row in report["entry_points"]}
    assert rows["spawned"]["status"] == "ok" and "distributed" in rows["spawned"]["evidence"][0]["message"], rows


def test_a_draw_its_calls_rule_out_is_named_in_the_not_needed_cell(tmp_path: Path) -> None:
    """A run whose only NumPy draw sits under `if not memory_map:` while its one construction passes
    `memory_map=True`: the seed is not needed, and the cell says which test rules the draw out; a
    construction that passes a variable keeps the draw (missing, as TDL003 reports)."""
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "data.py").write_text(
        "import numpy as np\n\n\n"
        "class Criteo:\n"
        "    def __init__(self, n, memory_map):\n"
        "        self.idx = np.arange(n)\n"
        "        if not memory_map:\n"
        "            self.idx = np.random.permutation(self.idx)\n",
        encoding="utf-8",
    )
    (tmp_path / "selftest.py").write_text(
        "from data import Criteo\n\nif __name__ == '__main__':\n    print(Criteo(100, memory_map=True).idx)\n", encoding="utf-8"
    )
    (tmp_path / "train.py").write_text(
        "import sys\n\nfrom data import Criteo\n\n"
        "if __name__ == '__main__':\n    print(Criteo(100, memory_map=sys.argv[1] == 'm').idx)\n",
        encoding="utf-8",
    )
    _, report = _report(cwd=tmp_path)
    cells = {e["path"]: e["checks"]["numpy-seed"] for e in report["entry_points"]}
    assert cells["selftest.py"]["status"] == "not-needed"
    assert [e["message"] for e in cells["selftest.py"]["evidence"]] == [
        "its only draws (`np.random.permutation(...)` at data.py:8) run under `if not memory_map:`, which its calls rule out"
    ]
    assert cells["train.py"]["status"] == "missing"
    assert {d["path"] for d in _check(cwd=tmp_path) if d["code"] == "TDL003"} == {"train.py"}
