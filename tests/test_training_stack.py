"""The training stack users run (docs/decisions.md, "Libraries as data"): xformers by version, FlashAttention
behind names, Accelerate, MONAI, Hugging Face datasets, SpeechBrain, RAFT, and the library loops that
train; the facts behind them are cited in rules/, version by version."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from conftest import FIXTURES, cli_in_process, run_cli

from torchdet_lint.core.catalog import load_catalog
from torchdet_lint.core.data import load_toml, rules_directory
from torchdet_lint.testing import lint_sources


def _found(sources: Dict[str, str], config: Dict[str, object] = None, select: List[str] = None) -> List[Tuple[str, int, str]]:
    return [(d.path, d.line, d.code) for d in lint_sources(sources, config or {}, select=select)]


def _messages(sources: Dict[str, str], config: Dict[str, object] = None, select: List[str] = None) -> List[str]:
    return [f"{d.code} {d.message}" + (" [fix]" if d.fix else "") for d in lint_sources(sources, config or {}, select=select)]


# -- every new fact cites its source -----------------------------------------------------------------

# The libraries this stack added; each of their rows in rules/ must say where its facts were read.
NEW_LIBRARIES = ("xformers", "flash_attn_3", "kernels", "monai", "accelerate", "datasets", "speechbrain")
_VERSION_RE = re.compile(r"\b\d+\.\d+(?:\.\d+)?\b")
_FILE_RE = re.compile(r"[\w/.-]+\.(?:py|cu|cuh|cpp|h)\b|[\w-]+/[\w/.-]+")


def _rows() -> List[Tuple[str, str, dict]]:
    """(file, where, row) for every table row of rules/ that belongs to a library."""
    rows = []
    for path in sorted(rules_directory().glob("*.toml")):
        data = load_toml(path)
        for name, table in data.get("library", {}).items():
            rows.append((path.name, f"[library.{name}]", {**table, "library": name}))
        for key, value in data.items():
            if isinstance(value, list):
                for index, row in enumerate(value):
                    if isinstance(row, dict) and row.get("library"):
                        rows.append((path.name, f"[[{key}]] #{index + 1}", row))
    return rows


def test_every_new_row_cites_its_source_file_and_versions() -> None:
    rows = [(file, where, row) for file, where, row in _rows() if row["library"] in NEW_LIBRARIES]
    assert {row["library"] for _, _, row in rows} == set(NEW_LIBRARIES)  # each library has rows
    for file, where, row in rows:
        source = row.get("source", "")
        assert _FILE_RE.search(source), f"{file} {where}: `source` names no file: {source!r}"
        assert _VERSION_RE.search(source), f"{file} {where}: `source` names no version: {source!r}"


def test_the_citation_test_would_catch_a_row_without_a_source() -> None:
    assert not _FILE_RE.search("") and not _VERSION_RE.search("read somewhere")
    assert _FILE_RE.search("monai/utils/misc.py") and _VERSION_RE.search("(0.6.0 to 1.5.0)")


def test_every_library_of_the_new_rows_is_known_to_the_catalog() -> None:
    known = {library.name for library in load_catalog().libraries}
    assert {row["library"] for _, _, row in _rows()} <= known


# -- library versions --------------------------------------------------------------------------------

XFORMERS = textwrap.dedent(
    """\
    import xformers.ops


    def attend(q, k, v):
        return xformers.ops.memory_efficient_attention(q, k, v)
    """
)


@pytest.mark.parametrize(
    "version, expected",
    [("0.0.16", "TDL202"), ("0.0.21", "TDL202"), ("0.0.21.post1", "TDL202"), ("0.0.22", "TDL201"), ("0.0.35", "TDL201")],
)
def test_xformers_raises_under_the_flag_up_to_0_0_21_and_is_made_deterministic_from_0_0_22(version, expected) -> None:
    found = lint_sources({"attend.py": XFORMERS}, {"library-versions": {"xformers": version}, "profile": "strict"})
    assert [d.code for d in found if d.code.startswith("TDL20")] == [expected]
    assert f"xformers {'.'.join(version.split('.')[:3]).replace('.post1', '')}" in found[0].message


def test_xformers_forward_raises_up_to_0_0_18_only() -> None:
    source = "import torch\nimport xformers.ops\n\n\n@torch.no_grad()\ndef infer(q, k, v):\n"
    source += "    return xformers.ops.memory_efficient_attention(q, k, v)\n"
    assert [c for _, _, c in _found({"a.py": source}, {"library-versions": {"xformers": "0.0.18"}})] == ["TDL202"]
    assert _found({"a.py": source}, {"library-versions": {"xformers": "0.0.19"}}, select=["TDL2"]) == []


def test_the_installed_xformers_version_is_read_with_three_parts(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "attend.py").write_text(XFORMERS, encoding="utf-8")
    site = tmp_path / "site" / "xformers-0.0.21.post1.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: xformers\nVersion: 0.0.21.post1\n\n", encoding="utf-8")
    env = {"PYTHONPATH": str(tmp_path / "site") + ":" + str(Path(__file__).resolve().parents[1])}
    code, out, err = run_cli("--no-cache", "--select", "TDL2", "--output-format", "concise", "attend.py", cwd=project, env=env)
    assert code == 1, err
    assert " TDL202 " in out and "in xformers 0.0.21:" in out


def test_a_library_the_catalog_does_not_know_is_a_warning_once_not_an_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.torchdet-lint]\nlibrary-versions = { xformers = "0.0.21", unknownlib = "1.2", torchvison = "0.18" }\n',
        encoding="utf-8",
    )
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(XFORMERS, encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.py").write_text(XFORMERS, encoding="utf-8")
    code, out, err = cli_in_process("--no-cache", "--select", "TDL2", "--output-format", "concise", ".", cwd=tmp_path)
    assert code == 1, err  # the run went on: diagnostics, not a usage error (2)
    assert out.count(" TDL202 ") == 3 and "xformers 0.0.21" in out  # the known pin still applies
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len([w for w in warnings if "`library-versions.unknownlib`" in w]) == 1, err
    assert len([w for w in warnings if "`library-versions.torchvison`" in w]) == 1, err
    assert "the catalog describes no library 'unknownlib'" in err and "pyproject.toml" in err
    assert "warning" not in out


def test_a_malformed_version_of_an_unknown_library_is_still_an_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.torchdet-lint]\nlibrary-versions = { unknownlib = 3 }\n", encoding="utf-8")
    (tmp_path / "a.py").write_text(XFORMERS, encoding="utf-8")
    code, _, err = cli_in_process("--no-cache", "a.py", cwd=tmp_path)
    assert code == 2 and "`library-versions.unknownlib` must be a version string" in err


# -- TDL302's fix and the raising library kernels ---------------------------------------------------

TRAIN_WITH = textwrap.dedent(
    """\
    import torch
    {imports}


    def main():
        torch.manual_seed(0)
        model = {model}
        model.cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        {switch}
        loss = model(torch.ones(2, 4, device="cuda")).sum()
        loss.backward()
        optimizer.step()


    if __name__ == "__main__":
        main()
    """
)


def _train(imports: str, model: str, switch: str) -> str:
    return TRAIN_WITH.format(imports=imports, model=model, switch=switch)


def test_tdl302_withholds_its_fix_where_the_run_reaches_xformers_that_raises() -> None:
    source = _train(
        "from diffusers import UNet2DModel",
        'UNet2DModel.from_pretrained("unet")',
        "model.enable_xformers_memory_efficient_attention()",
    )
    old = _messages({"train.py": source}, {"library-versions": {"xformers": "0.0.21"}}, select=["TDL302"])
    assert len(old) == 1 and not old[0].endswith("[fix]")
    assert "no fix offered: `model.enable_xformers_memory_efficient_attention` raises under the flag at train.py:10" in old[0]
    new = _messages({"train.py": source}, {"library-versions": {"xformers": "0.0.22"}}, select=["TDL302"])
    assert len(new) == 1 and new[0].endswith("[fix]") and "`model.enable_xformers_memory_efficient_attention` at" in new[0]


def test_tdl302_withholds_its_fix_for_another_raising_library_kernel() -> None:
    source = _train("from torchvision.ops import DeformConv2d", "DeformConv2d(4, 4, 3)", "pass")
    old = _messages({"train.py": source}, {"library-versions": {"torchvision": "0.15"}}, select=["TDL302"])
    new = _messages({"train.py": source}, {"library-versions": {"torchvision": "0.18"}}, select=["TDL302"])
    assert old[0].endswith("[fix]")  # 0.15: the kernel ignores the flag (TDL203), which does not stop the run
    assert not new[0].endswith("[fix]") and "no fix offered: `DeformConv2d` raises under the flag" in new[0]


# -- FlashAttention behind names -------------------------------------------------------------------------


def test_a_local_name_bound_to_flash_attention_is_the_kernel() -> None:
    source = textwrap.dedent(
        """\
        from flash_attn import flash_attn_func


        def attend(q, k, v, exact):
            fn = flash_attn_func
            a = fn(q, k, v)
            b = fn(q, k, v, deterministic=True)
            return a, b
        """
    )
    assert _found({"a.py": source}, select=["TDL203"]) == [("a.py", 6, "TDL203")]


def test_names_bound_to_other_callables_are_not_kernels() -> None:
    source = textwrap.dedent(
        """\
        import torch
        from functools import partial


        class Block(torch.nn.Module):
            def __init__(self, fn):
                super().__init__()
                self.attn_fn = fn
                self.act = partial(torch.nn.functional.gelu, approximate="tanh")

            def forward(self, q, k, v, get_kernel):
                return self.attn_fn(q, k, v) + self.act(q) + get_kernel("x").flash_attn_func(q, k, v)
        """
    )
    assert _found({"a.py": source}, select=["TDL2"]) == []


# -- Accelerate ---------------------------------------------------------------------------------------


def _report(root: Path) -> dict:
    code, out, err = cli_in_process("report", "--no-cache", "--output-format", "json", cwd=root)
    assert code in (0, 1), err
    return json.loads(out)


def test_an_accelerate_example_needs_the_flag_and_is_ok_after_the_fix(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "TDL302" / "accelerate", tmp_path / "project")
    root = tmp_path / "project"
    (root / "nlp_example_cpu.py").unlink()
    report = _report(root)["entry_points"][0]["checks"]["deterministic-mode"]
    assert report["status"] == "missing" and "accelerator.prepare" in report["evidence"][0]["message"]
    code, out, err = cli_in_process("check", "--no-cache", "--select", "TDL302", "--fix", "--unsafe-fixes", ".", cwd=root)
    assert code == 0, out + err
    assert "torch.use_deterministic_algorithms(True)" in (root / "nlp_example.py").read_text(encoding="utf-8")
    assert _report(root)["entry_points"][0]["checks"]["deterministic-mode"]["status"] == "ok"
    code, out, _ = cli_in_process("check", "--no-cache", "--select", "TDL302", ".", cwd=root)
    assert code == 0, out


ACCELERATE = textwrap.dedent(
    """\
    import torch
    from accelerate import Accelerator


    def train(accelerator, model, optimizer):
        model, optimizer = accelerator.prepare(model, optimizer)
        loss = model(torch.ones(4)).sum()
        accelerator.backward(loss)


    if __name__ == "__main__":
        torch.manual_seed(0)
        accelerator = Accelerator({arguments})
        model = torch.nn.Linear(4, 4)
        train(accelerator, model, torch.optim.SGD(model.parameters(), lr=0.1))
    """
)


@pytest.mark.parametrize(
    "arguments, cuda",
    [("", True), ("cpu=args.cpu", True), ("cpu=False", True), ("cpu=True", False), ('mixed_precision="fp16"', True)],
)
def test_accelerator_prepare_is_cuda_work_unless_the_accelerator_is_kept_on_the_cpu(arguments: str, cuda: bool) -> None:
    # The accelerator handed to `train` is a parameter there: spelled `accelerator`, it counts.
    messages = _messages({"train.py": ACCELERATE.format(arguments=arguments)}, select=["TDL302"])
    assert bool(messages) is cuda, messages
    if cuda:
        assert "reaches CUDA work (`accelerator.prepare(...)` at train.py:6)" in messages[0]


def test_accelerate_checkpoints_cover_the_global_states_but_not_a_torch_save_beside_them() -> None:
    source = textwrap.dedent(
        """\
        import random

        import torch
        from accelerate import Accelerator


        def main(resume):
            accelerator = Accelerator()
            model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            model, optimizer = accelerator.prepare(model, optimizer)
            if resume:
                accelerator.load_state(resume)
            for epoch in range(3):
                accelerator.backward(model(torch.ones(4) * random.random()).sum())
                accelerator.save_state(f"epoch_{epoch}")
                torch.save({"optimizer": optimizer.state_dict()}, "optimizer.pt")


        if __name__ == "__main__":
            main(None)
        """
    )
    messages = _messages({"train.py": source}, select=["TDL008"])
    # The plain checkpoint misses every state the run draws from; Accelerate's misses none.
    assert len(messages) == 1 and messages[0].startswith("TDL008 checkpoint with the optimizer state but not the state of")
    assert "(`accelerator.load_state` at train.py:13)" in messages[0]
    for words in ("torch's CPU generator", "the CUDA generators", "Python's `random`"):
        assert words in messages[0]


# -- MONAI -------------------------------------------------------------------------------------------

MONAI_LOADER = textwrap.dedent(
    """\
    import numpy as np
    import torch
    from monai.data import DataLoader, ThreadDataLoader


    class Patches(torch.utils.data.Dataset):
        def __init__(self):
            self.rng = np.random.default_rng(0)

        def __getitem__(self, index):
            return self.rng.random(3)

        def __len__(self):
            return 8


    def loaders(generator):
        a = DataLoader(Patches(), batch_size=2, shuffle=True, num_workers=4)
        b = ThreadDataLoader(Patches(), batch_size=2, shuffle=True, num_workers=2)
        c = DataLoader(Patches(), batch_size=2, shuffle=True, num_workers=4, generator=generator)
        d = torch.utils.data.DataLoader(Patches(), batch_size=2, num_workers=4)
        return a, b, c, d
    """
)


@pytest.mark.parametrize("profile", ["reproducible", "strict"])
def test_monai_loaders_shuffle_as_dataloaders_and_give_their_workers_a_worker_init_fn(profile: str) -> None:
    found = _found({"loaders.py": MONAI_LOADER}, {"profile": profile}, select=["TDL101", "TDL102"])
    # TDL101 as for torch's DataLoader; TDL102 only for torch's own loader, which installs no worker_init_fn.
    assert found == [("loaders.py", 18, "TDL101"), ("loaders.py", 19, "TDL101"), ("loaders.py", 21, "TDL102")]


SET_DETERMINISM = textwrap.dedent(
    """\
    import torch
    from monai.utils import set_determinism

    if __name__ == "__main__":
        set_determinism({arguments})
        model = torch.nn.Conv2d(1, 1, 3).cuda()
        model(torch.ones(1, 1, 4, 4, device="cuda")).sum().backward()
    """
)


@pytest.mark.parametrize(
    "arguments, codes",
    [
        ("seed=0", ["TDL302"]),
        ("", ["TDL302"]),  # the default seed, np.iinfo(np.uint32).max
        ("0, use_deterministic_algorithms=True", ["TDL303"]),
        ("seed=0, use_deterministic_algorithms=False", ["TDL302"]),
        ("seed=None", ["TDL001", "TDL302"]),
        ("None, use_deterministic_algorithms=True", ["TDL001", "TDL303"]),
    ],
)
def test_set_determinism_seeds_unless_seed_is_none_and_enables_the_flag_only_when_asked(arguments: str, codes) -> None:
    found = _found({"train.py": SET_DETERMINISM.format(arguments=arguments)}, {"torch-version": "2.4"})
    assert [code for _, _, code in found] == codes


def test_the_tdl304_cudnn_settings_of_set_determinism_are_credited() -> None:
    # set_determinism sets cudnn.deterministic = True, cudnn.benchmark = False: TDL301 has nothing to say after it.
    source = SET_DETERMINISM.format(arguments="seed=0") + "    torch.backends.cudnn.benchmark = False\n"
    assert _found({"train.py": source}, select=["TDL301", "TDL304"]) == []


# -- SpeechBrain, Hugging Face datasets ---------------------------------------------------------------

SPEECHBRAIN = textwrap.dedent(
    """\
    import random

    import numpy as np
    import torch
    {import_line}

    if __name__ == "__main__":
        {call}
        model = torch.nn.Linear(4, 4).cuda()
        print(random.random(), np.random.rand())
        model(torch.ones(4, device="cuda")).sum().backward()
    """
)


@pytest.mark.parametrize(
    "import_line, call, codes",
    [
        ("import speechbrain as sb", "sb.utils.seed_everything(1234)", ["TDL302"]),
        ("from speechbrain.utils.seed import seed_everything", "seed_everything(1234, deterministic=True)", []),
        ("from speechbrain.utils import seed_everything", "seed_everything(seed=1234)", ["TDL302"]),
        ("import speechbrain as sb", "pass", ["TDL001", "TDL002", "TDL003", "TDL302"]),
    ],
)
def test_speechbrain_seed_everything_seeds_torch_random_and_numpy(import_line: str, call: str, codes) -> None:
    source = SPEECHBRAIN.format(import_line=import_line, call=call)
    assert [code for _, _, code in _found({"train.py": source}, {"torch-version": "2.12"})] == codes


def test_hugging_face_methods_draw_only_in_files_that_import_datasets() -> None:
    split = 'if __name__ == "__main__":\n    parts = records.train_test_split(test_size=0.1)\n    order = records.shuffle()\n'
    with_datasets = "from datasets import load_dataset\n\nrecords = load_dataset('imdb')['train']\n" + split
    without = "import numpy as np\nfrom webdataset import WebDataset\n\nrecords = WebDataset('shards.tar')\n" + split
    assert _found({"a.py": with_datasets}, select=["TDL003"]) == [("a.py", 4, "TDL003")]
    assert _found({"a.py": without}, select=["TDL003"]) == []
    seeded = with_datasets.replace("test_size=0.1)", "test_size=0.1, generator=g)").replace("shuffle()", "shuffle(42)")
    assert _found({"a.py": seeded}, select=["TDL003"]) == []


# -- library loops that train -------------------------------------------------------------------------

EMBEDDING = "from torch import nn\n\n\nclass Tagger(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
EMBEDDING += (
    "        self.embed = nn.Embedding(100, 8)\n\n    def forward(self, tokens):\n        return self.embed(tokens).sum()\n"
)


@pytest.mark.parametrize(
    "imports, run, trains",
    [
        ("import pytorch_lightning as pl", "pl.Trainer(max_epochs=1).fit(Tagger())", True),
        ("from lightning.pytorch import Trainer", "trainer = Trainer()\n    trainer.fit(Tagger())", True),
        ("import lightning as L", "trainer = L.Trainer()\n    trainer.validate(Tagger())", False),
        ("from transformers import Trainer", "Trainer(model=Tagger()).train()", True),
        ("from transformers import Seq2SeqTrainer", "trainer = Seq2SeqTrainer(model=Tagger())\n    trainer.train()", True),
        ("from transformers import Trainer", "trainer = Trainer(model=Tagger())\n    trainer.evaluate()", False),
        (
            "from transformers import Trainer\n\n\nclass MyTrainer(Trainer):\n    pass",
            "MyTrainer(model=Tagger()).train()",
            True,
        ),
    ],
)
def test_library_loops_that_train_make_backward_only_conditions_count(imports: str, run: str, trains: bool) -> None:
    # The embedding's nondeterminism is in its backward: only a run that trains needs the flag for it.
    main = f"{imports}\nfrom model import Tagger\n\nif __name__ == '__main__':\n    {run}\n"
    found = _found({"model.py": EMBEDDING, "main.py": main}, select=["TDL302"])
    assert bool(found) is trains, found


def test_lightning_and_transformers_determinism_switches_are_credited_as_before() -> None:
    lightning = "import lightning as L\nfrom model import Tagger\n\nif __name__ == '__main__':\n"
    lightning += "    L.seed_everything(0, workers=True)\n    L.Trainer(deterministic=True).fit(Tagger())\n"
    transformers = "import transformers\nfrom model import Tagger\n\nif __name__ == '__main__':\n"
    transformers += "    transformers.enable_full_determinism(0)\n    transformers.Trainer(model=Tagger()).train()\n"
    for main in (lightning, transformers):
        assert _found({"model.py": EMBEDDING, "main.py": main}, {"torch-version": "2.12"}) == []


def test_a_project_package_named_datasets_is_not_hugging_face() -> None:
    main = 'from datasets import build\n\nif __name__ == "__main__":\n    build().shuffle()\n    build().train_test_split()\n'
    package = "def build():\n    return None\n"
    assert _found({"main.py": main, "datasets/__init__.py": package}, select=["TDL003"]) == []


def test_monai_transforms_draw_when_applied_so_a_seed_after_them_is_not_late() -> None:
    source = textwrap.dedent(
        """\
        import monai
        from monai.transforms import Compose, RandFlipd
        from monai.utils import set_determinism


        def loader(files):
            transforms = Compose([RandFlipd(keys="img", prob=0.5)])
            set_determinism(seed=0)
            return monai.data.DataLoader(monai.data.Dataset(files, transforms), batch_size=2)


        def network():
            model = monai.networks.nets.UNet(2, 1, 1, (4, 8), (2,))
            set_determinism(seed=0)
            return model
        """
    )
    # The transform is seeded by the loader built after the seed; the network's weights are drawn
    # when it is built: that seed is late.
    assert _found({"train.py": source}, select=["TDL004"]) == [("train.py", 14, "TDL004")]
