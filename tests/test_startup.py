"""The start-up cache of compiled dataclass code: same classes, never a failure."""

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchdet_lint.core import startup


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path


def _define():
    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        y: int = 2
        tags: tuple = dataclasses.field(default_factory=tuple)

    return Point


def _behaviour(cls):
    point = cls(1)
    try:
        point.x = 5
        frozen = False
    except dataclasses.FrozenInstanceError:
        frozen = True
    return (repr(point), point == cls(1), point == cls(1, 3), hash(point) == hash(cls(1)), frozen, cls.__init__.__defaults__)


def test_classes_from_cached_code_behave_like_compiled_ones(cache_home):
    plain = _behaviour(_define())
    with startup.cached_dataclass_code():
        first = _behaviour(_define())  # compiles, then stores
    assert startup._cache_file().is_file()
    assert "exec" not in vars(dataclasses), "the hook must be gone after the block"
    with startup.cached_dataclass_code():
        second = _behaviour(_define())  # from the cache
    assert plain == first == second


def test_a_corrupt_or_foreign_cache_file_is_ignored_and_rebuilt(cache_home):
    path = startup._cache_file()
    path.parent.mkdir(parents=True)
    for garbage in (b"\x00garbage", b"", b"\xe9" * 100):
        path.write_bytes(garbage)
        with startup.cached_dataclass_code():
            assert _behaviour(_define())[0].endswith("Point(x=1, y=2, tags=())")
        assert startup._load(path), "rebuilt after the bad file"


def test_an_unwritable_cache_directory_is_not_an_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    with startup.cached_dataclass_code():
        assert _behaviour(_define())[0].endswith("Point(x=1, y=2, tags=())")


def test_cli_output_is_the_same_with_and_without_the_cache(tmp_path):
    example = Path(__file__).resolve().parent.parent / "examples" / "train.py"
    env = {k: v for k, v in os.environ.items()}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    command = [sys.executable, "-m", "torchdet_lint", str(example), "--no-cache", "--output-format", "concise"]
    cold = subprocess.run(command, env=env, capture_output=True, text=True)
    assert (tmp_path / "cache" / "torchdet-lint").is_dir()
    warm = subprocess.run(command, env=env, capture_output=True, text=True)
    assert cold.returncode == warm.returncode == 1
    assert cold.stdout == warm.stdout and "TDL" in cold.stdout
    assert cold.stderr == warm.stderr == ""
