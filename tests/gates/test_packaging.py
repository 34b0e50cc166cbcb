"""The distribution installs exactly two top-level import names, both ours.

``fixtures`` was a third until the broker simulator moved to ``mqadmin.fixture``: it is
testing-cabal's package on PyPI, and installing both broke one of them. The YAML
fixtures stay in ``fixtures/`` as data.
"""

from __future__ import annotations

import tomllib
from importlib.metadata import distribution
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = {"mqadmin", "nameserver"}


def _discovered() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    return find_packages(where=str(ROOT), include=include)


def test_pyproject_discovers_our_two_import_names_and_every_package_under_them() -> None:
    packages = _discovered()
    assert {name.split(".")[0] for name in packages} == EXPECTED
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in EXPECTED for init in (ROOT / top).rglob("__init__.py")
    }
    assert set(packages) == on_disk  # no package left out of the wheel
    assert {"mqadmin.fixture", "nameserver.remoting"} <= set(packages)


def test_installed_distribution_declares_the_same_names() -> None:
    top_level = distribution("mqadmin").read_text("top_level.txt")
    assert top_level is not None, "reinstall: pip install -e '.[test]'"
    assert set(top_level.split()) == EXPECTED


def test_the_fixtures_folder_holds_data_only() -> None:
    folder = ROOT / "fixtures"
    assert sorted(p.suffix for p in folder.iterdir() if p.is_file()) and not list(folder.glob("*.py"))
    assert len(list(folder.glob("*.yaml"))) >= 4
