"""The gates run by the README's test command: ruff and mypy, from this venv, over the tree.

Both are pinned in the ``test`` extra and configured in pyproject.toml, so a clean tree
stays clean until someone changes the code or the pins. Each test prints what the tool
said, so a red gate reads like the tool's own output.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    exe = BIN / tool
    if not exe.exists():
        pytest.fail(f"{tool} is not installed in this venv: pip install -e '.[test]'")
    return subprocess.run([str(exe), *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing() -> None:
    done = _run("ruff", "check", "--no-cache", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_checks_the_tests_and_benchmarks_too() -> None:
    """The product is not all that must type-check: a test can pass for the wrong types.
    The benchmarks live in ``mqadmin/bench/``, inside the product's tree."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert {"mqadmin", "nameserver/mqnamesrv", "tests"} <= set(config["files"])
    assert (ROOT / "mqadmin" / "bench" / "route_path.py").is_file()


def test_mypy_finds_nothing() -> None:
    # The files to check and the flags live in pyproject.toml ([tool.mypy]).
    done = _run("mypy")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success: no issues found")
