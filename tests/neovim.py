"""Neovim for the real-editor tests: the one on PATH, else Debian's package,
installed by the test itself (apt-get, as root or through passwordless sudo)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import List, Optional, Tuple

import pytest

APT_LOCK_WAIT = "300"  # seconds: another apt run on the machine holds the lock meanwhile


def _privilege() -> Optional[List[str]]:
    """The prefix that makes apt-get run as root, or None when nothing can."""
    if os.geteuid() == 0:
        return []
    sudo = shutil.which("sudo")
    if sudo and subprocess.run([sudo, "-n", "true"], capture_output=True).returncode == 0:
        return [sudo, "-n"]
    return None


def _apt_get(prefix: List[str], *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    command = [*prefix, "apt-get", "-o", f"DPkg::Lock::Timeout={APT_LOCK_WAIT}", *args]
    return subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=900)


def ensure_neovim() -> str:
    """The path of `nvim`, installing Debian's package when it is missing (skips when it cannot be)."""
    found = shutil.which("nvim")
    if found:
        return found
    prefix = _privilege()
    if shutil.which("apt-get") is None or prefix is None:
        pytest.skip(
            "Neovim is not installed, and apt-get cannot install it here (no apt-get, or neither root nor passwordless sudo)"
        )
    install = ("install", "-y", "--no-install-recommends", "neovim")
    completed = _apt_get(prefix, *install)
    if completed.returncode != 0:  # a fresh machine has no package lists yet
        _apt_get(prefix, "update")
        completed = _apt_get(prefix, *install)
    assert completed.returncode == 0, f"apt-get install neovim failed:\n{completed.stdout}\n{completed.stderr}"
    found = shutil.which("nvim")
    assert found, "apt-get installed neovim but nvim is not on PATH"
    return found


def neovim_version(nvim: str) -> Tuple[int, int]:
    first = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=60).stdout.splitlines()[0]
    major, minor = re.search(r"v(\d+)\.(\d+)", first).groups()
    return int(major), int(minor)


def isolated_env(home, path: str) -> dict:
    """Neovim with no user configuration, state or plugins: everything under `home`."""
    env = dict(os.environ, PATH=path)
    for variable in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[variable] = str(home / variable.lower())
    env.pop("VIMINIT", None)
    env.pop("NVIM_LOG_FILE", None)
    return env
