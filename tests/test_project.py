"""The project phase: entry points, the first-party module graph, what an entry
point reaches, and the project-level rules over several modules."""

from __future__ import annotations

import ast
import json
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

from torchdet_lint.engine.config import Settings
from torchdet_lint.engine.discovery import discover
from torchdet_lint.engine.file_pass import check_text
from torchdet_lint.engine.project_phase import build_project
from torchdet_lint.engine.runner import first_party_names, make_options, run
from torchdet_lint.model.project import Project
from torchdet_lint.model.scan import empty_summary, function_spans
from torchdet_lint.testing import lint_sources, settings_from

PROJECT_CODES = ["TDL001", "TDL002", "TDL003", "TDL302"]

MODEL = (
    "from torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.fc = nn.Linear(4, 1)\n"
)
RESEARCH_LOOP = (
    "import torch\n\nfrom model import Net\n\nmodel = Net()\nfor step in range(3):\n    print(model(torch.ones(1, 4)))\n"
)


def _project(tmp_path: Path, sources: Dict[str, str], config=None) -> Project:
    for name, text in sources.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    settings = settings_from(config or {}, tmp_path, select=PROJECT_CODES)
    files, _ = discover([str(tmp_path)], tmp_path, cwd=tmp_path)
    options = make_options(settings, first_party_names(files))
    result = run(files, options, jobs=1, project=False)
    return build_project(result.files, files, options)


def _codes(diagnostics) -> List[str]:
    return sorted(f"{d.path}:{d.line}:{d.column} {d.code}" for d in diagnostics)


# -- entry points ----------------------------------------------------------------------------


def test_a_research_script_is_an_entry_point_and_the_same_code_imported_is_not(tmp_path: Path) -> None:
    project = _project(
        tmp_path,
        {"model.py": MODEL, "train.py": RESEARCH_LOOP, "loop.py": RESEARCH_LOOP, "runner.py": "import loop\n"},
    )
    entries = {e.path: e.reason for e in project.entry_points}
    assert entries == {"train.py": "script"}


def test_entry_point_kinds(tmp_path: Path) -> None:
    project = _project(
        tmp_path,
        {
            "guarded.py": "def main():\n    pass\n\nif __name__ == '__main__':\n    main()\n",
            "pkg/__init__.py": "",
            "pkg/__main__.py": "from .cli import run\n",
            "pkg/cli.py": "def run():\n    pass\n",
            "jobs/sweep.py": "def job():\n    pass\n",
            "library.py": (
                "import logging\nimport argparse\nimport warnings\n\nlogging.basicConfig()\n"
                "warnings.filterwarnings('ignore')\nparser = argparse.ArgumentParser()\n"
                "parser.add_argument('--x')\n"
            ),
        },
        {"entry-points": ["jobs/*.py"]},
    )
    entries = {e.path: e.reason for e in project.entry_points}
    assert entries == {"guarded.py": "main block", "pkg/__main__.py": "__main__.py", "jobs/sweep.py": "configured"}


def test_entry_point_rules_report_on_the_main_guard_line_or_line_1(tmp_path: Path) -> None:
    diagnostics = lint_sources(
        {
            "model.py": MODEL,
            "train.py": RESEARCH_LOOP,
            "evaluate.py": "import torch\nfrom model import Net\n\n\n# evaluation\nif __name__ == '__main__':\n    Net()\n",
        },
        select=["TDL001"],
    )
    assert _codes(diagnostics) == ["evaluate.py:6:1 TDL001", "train.py:1:1 TDL001"]


def test_a_library_only_project_gets_no_project_findings() -> None:
    diagnostics = lint_sources(
        {
            "lib/__init__.py": "from .model import Net\n",
            "lib/model.py": MODEL
            + (
                "\n\ndef sample():\n    import random\n    import numpy as np\n    import torch\n"
                "    return random.random(), np.random.rand(), torch.randn(2).cuda()\n"
            ),
            "lib/registry.py": (
                "from lib.model import Net\n\nREGISTRY = {}\nREGISTRY['net'] = Net\n"
                "for name in list(REGISTRY):\n    REGISTRY[name.upper()] = REGISTRY[name]\n"
            ),
            "lib/utils.py": "import lib.registry\n",
        },
        select=PROJECT_CODES,
    )
    assert diagnostics == []


# -- the module graph ---------------------------------------------------------------------------


def test_seed_two_calls_away_in_a_plain_directory_silences_tdl001() -> None:
    sources = {
        "model.py": MODEL,
        "train.py": "from model import Net\nfrom utils.setup import prepare\n\nprepare()\nfor step in range(2):\n    Net()\n",
        "utils/setup.py": "from utils.seed import seed_all\n\n\ndef prepare():\n    seed_all(0)\n",
        "utils/seed.py": "import torch\n\n\ndef seed_all(seed):\n    torch.manual_seed(seed)\n",
    }
    assert lint_sources(sources, select=["TDL001"]) == []
    sources["train.py"] = sources["train.py"].replace("prepare()\n", "")
    assert _codes(lint_sources(sources, select=["TDL001"])) == ["train.py:1:1 TDL001"]


def test_relative_imports_src_layout_and_re_exports() -> None:
    sources = {
        "src/pkg/__init__.py": "from .seeding import seed_everything as seed_all\n",
        "src/pkg/seeding.py": (
            "import random\n\nimport numpy as np\nimport torch\n\n\ndef seed_everything(seed):\n"
            "    random.seed(seed)\n    np.random.seed(seed)\n    torch.manual_seed(seed)\n"
        ),
        "src/pkg/models/__init__.py": "",
        "src/pkg/models/net.py": (
            "from ..layers import make\n\n\nclass Net:\n    def __init__(self):\n        self.layer = make()\n"
        ),
        "src/pkg/layers.py": (
            "import random\n\nfrom torch import nn\n\n\ndef make():\n    random.random()\n    return nn.Linear(2, 2)\n"
        ),
        "scripts/train.py": (
            "import pkg\nfrom pkg.models.net import Net\n\nif __name__ == '__main__':\n    pkg.seed_all(0)\n    Net()\n"
        ),
        "scripts/unseeded.py": "from pkg.models.net import Net\n\nif __name__ == '__main__':\n    Net()\n",
    }
    assert _codes(lint_sources(sources, select=PROJECT_CODES)) == [
        "scripts/unseeded.py:3:1 TDL001",
        "scripts/unseeded.py:3:1 TDL002",
    ]


def test_methods_through_local_instances_and_inherited_init() -> None:
    sources = {
        "trainer.py": (
            "import torch\nfrom torch import nn\n\n\nclass Base:\n    def "
            "__init__(self):\n        self.model = nn.Linear(2, 2)\n\n\n"
            "class Trainer(Base):\n    def fit(self):\n        self.step()\n\n    def step(self):\n"
            "        torch.randn(2).cuda().sum().backward()\n"
        ),
        "main.py": "from trainer import Trainer\n\nif __name__ == '__main__':\n    trainer = Trainer()\n    trainer.fit()\n",
    }
    messages = {d.code: d.message for d in lint_sources(sources, select=PROJECT_CODES)}
    assert "`nn.Linear(...)` at trainer.py:7" in messages["TDL001"]
    assert "`torch.randn(...)` at trainer.py:15" in messages["TDL001"]
    assert "at trainer.py:15" in messages["TDL302"]


def _registry_project(members: int) -> Dict[str, str]:
    """`members` functions registered by a decorator; only the last one draws."""
    functions = "".join(f"@register\ndef metric_{i}(x):\n    return x\n\n\n" for i in range(members - 1))
    functions += f"@register\ndef metric_{members - 1}(x):\n    return x + random.random()\n"
    return {
        "metrics.py": "import random\n\n_METRICS = {}\n\n\ndef register(fn):\n"
        f"    _METRICS[fn.__name__] = fn\n    return fn\n\n\n{functions}",
        "main.py": (
            "import sys\n\nfrom metrics import _METRICS\n\nif __name__ == '__main__':\n    print(_METRICS[sys.argv[1]](1))\n"
        ),
    }


def test_a_registry_is_followed_up_to_64_members_and_a_model_zoo_is_not() -> None:
    """docs/decisions.md, "Registries and launchers": picking from a registry reaches every member, but a
    registry past 64 members (timm's `@register_model` zoo) would make every pick reach it all."""
    assert _codes(lint_sources(_registry_project(64), select=["TDL002"])) == ["main.py:5:1 TDL002"]
    assert _codes(lint_sources(_registry_project(65), select=["TDL002"])) == []


def _command_table_project(members: int, torch_words: bool) -> Dict[str, str]:
    """A dict display of `members` commands handed to `fire.Fire`; only the last one draws."""
    functions = "".join(f"def command_{i}():\n    return {i}\n\n\n" for i in range(members - 1))
    functions += f"def command_{members - 1}():\n    return random.random()\n"
    table = ", ".join(f"'c{i}': commands.command_{i}" for i in range(members))
    header = "import torch\n" if torch_words else ""
    return {
        "commands.py": f"import random\n\n\n{functions}",
        "cli.py": f"import fire\n{header}\nimport commands\n\nif __name__ == '__main__':\n    fire.Fire({{{table}}})\n",
    }


def test_a_table_of_commands_is_followed_up_to_64_members() -> None:
    """docs/decisions.md, "Registries and launchers": a dict of commands handed to a command-line launcher
    reaches each member, within the registries' bound (collector and `ast` scan alike)."""
    for torch_words in (False, True):
        line = 6 if torch_words else 5
        assert _codes(lint_sources(_command_table_project(64, torch_words), select=["TDL002"])) == [f"cli.py:{line}:1 TDL002"]
        assert _codes(lint_sources(_command_table_project(65, torch_words), select=["TDL002"])) == []


def test_a_method_on_a_factory_result_in_a_deep_hierarchy_stays_bounded() -> None:
    """Two hundred subclasses, each overriding `step`: the factory's candidates are the classes it
    returns (two), and only those `step`s are reached."""
    classes = "".join(f"class Loop{i}(Loop{i - 1}):\n    def step(self):\n        return {i}\n\n\n" for i in range(1, 200))
    sources = {
        "loops.py": (
            "import torch\n\n\nclass Loop0:\n    def step(self):\n        return 0\n\n\n"
            + classes
            + "class Noisy(Loop0):\n    def step(self):\n        return torch.rand(1)\n\n\n"
            + "def make(name):\n    return Loop7() if name == 'seven' else Loop150()\n\n\n"
            + "def make_noisy(name):\n    return Loop3() if name else Noisy()\n"
        ),
        "quiet.py": "import sys\n\nfrom loops import make\n\nif __name__ == '__main__':\n    print(make(sys.argv[1]).step())\n",
        "noisy.py": (
            "import sys\n\nfrom loops import make_noisy\n\nif __name__ == '__main__':\n"
            "    print(make_noisy(sys.argv[1]).step())\n"
        ),
    }
    assert _codes(lint_sources(sources, select=["TDL001"])) == ["noisy.py:5:1 TDL001"]


def test_a_chain_through_a_file_the_pre_filter_skips_is_kept() -> None:
    # main.py mentions none of the pre-filter's words: it is not parsed by LibCST,
    # but its imports, calls and main block come from the cheap scan.
    sources = {
        "main.py": "from app.run import go\n\nif __name__ == '__main__':\n    go()\n",
        "app/run.py": "from app.steps import step\n\n\ndef go():\n    step()\n",
        "app/steps.py": "import torch\n\n\ndef step():\n    return torch.rand(3)\n",
    }
    diagnostics = lint_sources(sources, select=["TDL001"])
    assert _codes(diagnostics) == ["main.py:3:1 TDL001"]
    assert diagnostics[0].fix is not None
    assert [e.content for e in diagnostics[0].fix.edits] == ["import torch\n", "    torch.manual_seed(0)\n"]


def test_empty_summary_scans_imports_definitions_and_calls() -> None:
    text = (
        "from .b import helper\nimport os.path as p\n\n\nclass C:\n    def m(self):\n"
        "        self.n()\n\n    def n(self):\n        helper()\n\n\ndef f():\n    C()\n\n\n"
        "if __name__ == '__main__':\n    f()\n"
    )
    summary = empty_summary("pkg/a.py", "pkg.a", text)
    assert summary.imports == ["pkg.b.helper", "os.path"]
    assert summary.main_guard_line == 17
    assert summary.functions["C.m"].calls == [".C.n"]
    assert summary.functions["C.n"].calls == ["pkg.b.helper"]
    assert summary.functions["<main>"].calls == [".f"]
    assert summary.anchors is not None and summary.anchors.main_top_line == 18


def test_nested_classes_have_function_keys_in_both_summaries_and_spans() -> None:
    """A class nested in a class body: its methods are `Outer.Inner.m`, never import-time code,
    in the ast scan, the LibCST collector and the spans alike (tianshou's nested policies)."""
    body = (
        "class Algo:\n    class Policy:\n        def act(self, n):\n            return np.random.rand(n)\n\n"
        "        if n:\n            def other(self):\n                return np.random.rand(1)\n\n"
        "    def run(self):\n        return self.Policy().act(3)\n\n\n"
        "def f():\n    class Local:\n        def m(self):\n            return np.random.rand(2)\n    return Local\n"
    )
    scanned = empty_summary("pkg/a.py", "pkg.a", "import numpy as np\n\n\n" + body)
    collected = check_text("import numpy as np\nimport torch\n\n" + body, "a.py", make_options(Settings()), "a", False).summary
    for summary in (scanned, collected):
        assert "Algo.Policy" in summary.classes
        assert {"Algo.Policy.act", "Algo.Policy.other", "Algo.run"} <= set(summary.functions)
        assert not summary.functions["<module>"].draws
        assert summary.functions["Algo.Policy.act"].calls == ["numpy.random.rand"]
        assert ".Algo.Policy" in summary.functions["Algo.run"].calls
    # A class defined in a function stays part of that function.
    assert collected.functions["f"].draws["numpy"][0].line == 20
    spans = function_spans(ast.parse("import numpy as np\nimport torch\n\n" + body))
    assert spans["Algo.Policy.act"] == (6, 7)
    assert spans["Algo.Policy.other"] == (10, 11)
    assert set(spans) == {"Algo.Policy.act", "Algo.Policy.other", "Algo.run", "f"}


def test_summaries_are_plain_picklable_data(tmp_path: Path) -> None:
    options = make_options(Settings(root=tmp_path))
    result = check_text(MODEL + RESEARCH_LOOP, "train.py", options, "train", False)
    again = pickle.loads(pickle.dumps(result.summary))
    assert again == result.summary


def test_summary_lines_match_the_source() -> None:
    text = (
        "import torch\n\nx = (\n    torch.randn(2)\n)\ny = '''\n\n'''; z = torch.rand(\n  3)\n"
        "if x:\n    torch.cuda.ipc_collect() or x.cuda()\n"
    )
    options = make_options(Settings())
    summary = check_text(text, "s.py", options, "s", False).summary
    module = summary.functions["<module>"]
    assert [s.line for s in module.draws["torch"]] == [4, 8]
    assert [s.line for s in module.cuda] == [11]


# -- TDL201 at project level ---------------------------------------------------------------------

CONV = "import torch\n\n\ndef layer():\n    return torch.nn.Conv2d(3, 8, 3)\n"


def test_tdl201_stays_without_entry_points_and_goes_with_an_enabling_one() -> None:
    config = {"profile": "strict"}
    library = {"layers.py": CONV}
    assert [d.code for d in lint_sources(library, config, select=["TDL201"])] == ["TDL201"]
    not_enabling = dict(library, **{"train.py": "from layers import layer\n\nif __name__ == '__main__':\n    layer().cuda()\n"})
    assert [d.code for d in lint_sources(not_enabling, config, select=["TDL201"])] == ["TDL201"]
    enabling = dict(
        library,
        **{
            "train.py": (
                "import torch\nfrom layers import layer\n\nif __name__ == '__main__':\n"
                "    torch.use_deterministic_algorithms(True)\n    layer()\n"
            )
        },
    )
    assert lint_sources(enabling, config, select=["TDL201"]) == []


def test_one_enabling_entry_point_silences_tdl201_project_wide() -> None:
    """One entry point that enables the flag silences TDL201 everywhere, other entry points included (TDL201's docs)."""
    sources = {
        "layers.py": CONV,
        "train.py": (
            "import torch\nfrom layers import layer\n\nif __name__ == '__main__':\n"
            "    torch.use_deterministic_algorithms(True)\n    layer().cuda()\n"
        ),
        "probe.py": "import torch\n\nif __name__ == '__main__':\n    torch.nn.Conv2d(3, 8, 3).cuda()\n",
    }
    assert lint_sources(sources, {"profile": "strict"}, select=["TDL201"]) == []
    sources["train.py"] = sources["train.py"].replace("    torch.use_deterministic_algorithms(True)\n", "")
    assert _codes(lint_sources(sources, {"profile": "strict"}, select=["TDL201"])) == [
        "layers.py:5:12 TDL201",
        "probe.py:4:5 TDL201",
    ]


# -- TDL302 ----------------------------------------------------------------------------------------


def test_tdl302_lists_at_most_five_operations_with_locations() -> None:
    body = "".join(f"    torch.ones({i}).cuda()\n" for i in range(7)) + "    torch.ones(1).sum().backward()\n"
    diagnostics = lint_sources({"run.py": f"import torch\n\nif __name__ == '__main__':\n{body}"}, select=["TDL302"])
    assert len(diagnostics) == 1
    assert diagnostics[0].message.count(" at run.py:") == 5
    assert diagnostics[0].fix is not None and diagnostics[0].fix.applicability.value == "unsafe"


def test_tdl302_catalog_operations_and_enabling_helpers() -> None:
    ops = "import torch.nn.functional as F\n\n\ndef up(x):\n    return F.interpolate(x.cuda(), scale_factor=2, mode='bilinear')\n"
    helper = "import torch\n\n\ndef deterministic():\n    torch.use_deterministic_algorithms(True)\n"
    unprotected = {
        "ops.py": ops,
        "run.py": (
            "import torch\nfrom ops import up\n\nif __name__ == '__main__':\n"
            "    up(torch.ones(1, 1, 2, 2, requires_grad=True)).sum().backward()\n"
        ),
    }
    diagnostics = lint_sources(unprotected, select=["TDL302"])
    assert [d.code for d in diagnostics] == ["TDL302"] and "`F.interpolate` at ops.py:5" in diagnostics[0].message
    protected = dict(unprotected, **{"helpers.py": helper})
    protected["run.py"] = (
        "import torch\nfrom helpers import deterministic\nfrom ops import up\n\n"
        "if __name__ == '__main__':\n    deterministic()\n    up(torch.ones(1, 1, 2, 2, requires_grad=True)).sum().backward()\n"
    )
    assert lint_sources(protected, select=["TDL302"]) == []
    assert lint_sources(unprotected, {"assume-deterministic-mode": True}, select=["TDL302"]) == []


BICUBIC_LOSS = (
    "import torch.nn.functional as F\n\n\ndef loss_of(model, x):\n"
    '    return F.interpolate(model(x), scale_factor=2, mode="bicubic").mean()\n'
)
BICUBIC_TRAIN = (
    'import torch\n\nfrom losses import loss_of\n\nif __name__ == "__main__":\n    torch.manual_seed(0)\n'
    "    model = torch.nn.Conv2d(3, 3, 3).cuda()\n    for _ in range(3):\n"
    "        loss_of(model, torch.randn(2, 3, 8, 8).cuda()).backward()\n"
)


def test_tdl302_offers_no_fix_where_a_reached_operation_raises_under_the_flag(tmp_path: Path) -> None:
    """TDL302's "Fix safety": enabling the flag would stop the first backward at the
    bicubic upsampling (TDL202), so the JSON output has no fix and the message names the operation."""
    (tmp_path / "pyproject.toml").write_text("[tool.torchdet-lint]\n", encoding="utf-8")
    (tmp_path / "losses.py").write_text(BICUBIC_LOSS, encoding="utf-8")
    (tmp_path / "train.py").write_text(BICUBIC_TRAIN, encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, "-m", "torchdet_lint", "--no-cache", "--output-format", "json", "--select", "TDL302", "train.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    [diagnostic] = json.loads(completed.stdout)
    assert diagnostic["code"] == "TDL302" and diagnostic["fix"] is None
    assert diagnostic["message"].endswith(
        "no fix offered: `F.interpolate` raises under the flag at "
        "losses.py:5 (TDL202), so enabling the flag would stop the run there"
    )
    # The same upsampling in a bilinear mode (the flag makes it deterministic): the fix is offered.
    (tmp_path / "losses.py").write_text(BICUBIC_LOSS.replace("bicubic", "bilinear"), encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, "-m", "torchdet_lint", "--no-cache", "--output-format", "json", "--select", "TDL302", "train.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    [diagnostic] = json.loads(completed.stdout)
    assert diagnostic["fix"]["applicability"] == "unsafe" and "no fix offered" not in diagnostic["message"]


def test_tdl302_reads_the_gradient_question_as_tdl202_does() -> None:
    """A helper this file calls only under `torch.no_grad()` runs no backward: nothing raises, the fix stays."""
    helper = 'def up(x):\n    return F.interpolate(x, scale_factor=2, mode="bicubic")\n\n\n'
    main = (
        'if __name__ == "__main__":\n    with torch.no_grad():\n'
        "        print(up(torch.ones(1, 1, 2, 2, requires_grad=True).cuda()))\n"
        "    torch.ones(1).sum().backward()\n"
    )
    source = "import torch\nimport torch.nn.functional as F\n\n\n" + helper + main
    [diagnostic] = lint_sources({"run.py": source}, select=["TDL302"])
    assert diagnostic.fix is not None and "no fix offered" not in diagnostic.message
    [diagnostic] = lint_sources(
        {"run.py": source.replace("    with torch.no_grad():\n        print", "    print")}, select=["TDL302"]
    )
    assert diagnostic.fix is None and "`F.interpolate` raises under the flag at run.py:6" in diagnostic.message


def test_tdl302_withholds_its_fix_for_the_cross_entropy_losses_in_profile_strict_only() -> None:
    source = (
        'import torch\nimport torch.nn.functional as F\n\nif __name__ == "__main__":\n'
        "    logits = torch.nn.Conv2d(3, 5, 1).cuda()(torch.ones(1, 3, 4, 4).cuda())\n"
        "    F.cross_entropy(logits, torch.zeros(1, 4, 4, dtype=torch.long).cuda()).backward()\n"
    )
    [default] = lint_sources({"run.py": source}, select=["TDL302"])
    assert default.fix is not None
    [strict] = lint_sources({"run.py": source}, {"profile": "strict"}, select=["TDL302"])
    assert strict.fix is None and "`F.cross_entropy` raises under the flag at run.py:6" in strict.message


# -- fixes of the entry-point rules -------------------------------------------------------------------


def test_seeding_fix_goes_after_imports_when_module_level_code_draws() -> None:
    source = "import torch\n\nweights = torch.randn(3)\n\nif __name__ == '__main__':\n    print(weights)\n"
    (diagnostic,) = lint_sources({"run.py": source}, select=["TDL001"])
    assert [(e.start, e.content) for e in diagnostic.fix.edits] == [
        (13, "\ntorch.manual_seed(0)\n")
    ]  # a blank line after the imports, as isort wants


def test_seeding_fix_is_shared_by_tdl001_to_tdl003_and_seeds_only_what_is_reached() -> None:
    source = "import random\nimport torch\n\nif __name__ == '__main__':\n    torch.rand(1)\n    random.random()\n"
    diagnostics = lint_sources({"run.py": source}, {"seed": 5}, select=PROJECT_CODES)
    assert [d.code for d in diagnostics] == ["TDL001", "TDL002"]
    assert diagnostics[0].fix == diagnostics[1].fix
    assert [e.content for e in diagnostics[0].fix.edits] == ["    torch.manual_seed(5)\n    random.seed(5)\n"]


def test_functions_handed_to_runners_are_followed_and_stored_callbacks_are_not() -> None:
    body = (
        "import fire\nimport torch\n\n\ndef main():\n    torch.randn(2)\n\n\ndef sampler():\n"
        "    torch.randn(2)\n\n\nTABLE = dict(fn=sampler)\n"
    )
    assert _codes(lint_sources({"run.py": body + "\nif __name__ == '__main__':\n    fire.Fire(main)\n"}, select=["TDL001"])) == [
        "run.py:15:1 TDL001"
    ]
    assert lint_sources({"run.py": body + "\nif __name__ == '__main__':\n    print(TABLE)\n"}, select=["TDL001"]) == []


def test_a_lazy_import_runs_the_module_only_when_its_function_runs() -> None:
    sources = {
        "drawing.py": "import torch\n\nNOISE = torch.randn(3)\n",
        "run.py": "def later():\n    import drawing\n\n\nif __name__ == '__main__':\n    print('no call')\n",
    }
    assert lint_sources(sources, select=["TDL001"]) == []
    sources["run.py"] = sources["run.py"].replace("print('no call')", "later()")
    assert _codes(lint_sources(sources, select=["TDL001"])) == ["run.py:5:1 TDL001"]


def test_a_notebook_is_an_entry_point_with_cell_positions() -> None:
    import json

    def cell(kind, source):
        extra = {"execution_count": None, "outputs": []} if kind == "code" else {}
        return {"cell_type": kind, "metadata": {}, "source": source, **extra}

    notebook = {
        "cells": [
            cell("markdown", ["# Title"]),
            cell("code", ["import torch\n", "from torch import nn"]),
            cell("code", ["model = nn.Linear(2, 2)"]),
        ],
        "metadata": {"kernelspec": {"language": "python", "name": "python3"}, "language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (diagnostic,) = lint_sources({"analysis.ipynb": json.dumps(notebook)}, select=["TDL001"])
    assert (diagnostic.cell, diagnostic.line, diagnostic.column) == (2, 1, 1)
    assert "analysis.ipynb:cell 3:1" in diagnostic.message
    assert [e.content for e in diagnostic.fix.edits] == ["\ntorch.manual_seed(0)\n"]


def test_nested_functions_run_when_called_not_when_defined() -> None:
    source = (
        "import torch\n\n\ndef decorator(fn):\n    def wrapper(*args):\n       "
        " torch.randn(2)\n        return fn(*args)\n\n    return wrapper\n\n\n"
        "@decorator\ndef work():\n    pass\n\n\ndef main():\n    def "
        "step():\n        return torch.rand(1)\n\n    return step()\n\n\n"
        "if __name__ == '__main__':\n    {}\n"
    )
    assert lint_sources({"run.py": source.format("print(work)")}, select=["TDL001"]) == []
    (diagnostic,) = lint_sources({"run.py": source.format("main()")}, select=["TDL001"])
    assert "`torch.rand(...)` at run.py:19" in diagnostic.message and "torch.randn" not in diagnostic.message


def test_lambdas_stored_for_later_are_not_reached_and_sort_keys_are() -> None:
    stored = (
        "import random\n\nTABLE = {'pick': lambda items: random.choice(items)}\n\nif __name__ == '__main__':\n    print(TABLE)\n"
    )
    assert lint_sources({"run.py": stored}, select=["TDL002"]) == []
    sorting = "import random\n\nif __name__ == '__main__':\n    print(sorted([1, 2], key=lambda item: random.random()))\n"
    assert [d.code for d in lint_sources({"run.py": sorting}, select=["TDL002"])] == ["TDL002"]


def test_a_file_rule_settles_its_findings_over_the_project_in_its_refine_hook() -> None:
    """The engine knows no rule's data: a made-up file rule keeps a `hello()` finding only where
    another file of the project defines `hello`, and a `noqa` whose finding `refine` drops is
    unused (TDL900 judges the final findings)."""
    import libcst as cst

    from torchdet_lint.checks import extra_rules
    from torchdet_lint.core.rule import Rule

    class HelloUnlessDefined(Rule):
        code, name, summary = "TDL995", "hello-unless-defined", "`hello()` is not defined in the project"

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "hello":
                self.report(node, extra={"hello": True})

        @classmethod
        def needs_project(cls, diagnostic) -> bool:
            return bool(diagnostic.extra.get("hello"))

        @classmethod
        def refine(cls, diagnostics, project):
            defined = any("def hello" in source.text for source in project.sources.values())
            return [] if defined else diagnostics

    with extra_rules(HelloUnlessDefined):
        alone = lint_sources({"a.py": "import torch\nhello()\n"}, select=["TDL995"])
        settled = lint_sources(
            {"a.py": "import torch\nhello()\nhello()  # noqa: TDL995\n", "b.py": "def hello():\n    pass\n"},
            select=["TDL995", "TDL900"],
        )
    assert _codes(alone) == ["a.py:2:1 TDL995"]
    assert [(d.path, d.line, d.code) for d in settled] == [("a.py", 3, "TDL900")]


def _facts_walked(text: str, collectors_first: bool):
    """The summary of `text` with the rules' fact collectors walked before, or after, the
    summary collector in the shared traversal."""
    from torchdet_lint.checks import fact_collectors
    from torchdet_lint.core.context import FileContext
    from torchdet_lint.core.names import forget_keyword_dicts
    from torchdet_lint.core.traversal import BatchedWalker
    from torchdet_lint.engine.file_pass import parse
    from torchdet_lint.model.collector import SummaryCollector

    context = FileContext("t.py", text, parse(text), Settings(), (2, 13))
    collector = SummaryCollector(context)
    facts = [found for found in (kind.for_file(context, collector) for kind in fact_collectors()) if found is not None]
    forget_keyword_dicts()
    order = [*facts, collector] if collectors_first else [collector, *facts]
    BatchedWalker([context.resolver, context.scopes, *order]).walk(context.module)
    collector.finish()
    for found in facts:
        found.finish()
    return collector.summary


@pytest.mark.parametrize(
    "case", ["TDL008/dict_call.py", "TDL008/cuda_work.py", "TDL010/shapes/every_n_steps.py", "TDL010/shapes/save_helper.py"]
)
def test_fact_collectors_give_the_same_facts_in_any_order_of_the_walk(case: str) -> None:
    text = (Path(__file__).resolve().parent.parent / "fixtures" / case).read_text(encoding="utf-8")
    first, last = _facts_walked(text, True), _facts_walked(text, False)
    assert last.resume is not None or last.resume_data is not None
    assert (first.resume, first.resume_data, first.rank_order) == (last.resume, last.resume_data, last.rank_order)
