"""The distribution installs exactly two top-level import names, both ours and neither
a PyPI project's.

``fixtures`` was a third until the broker simulator moved to ``mqadmin.fixture``: it is
testing-cabal's package on PyPI, and installing both broke one of them. The YAML
fixtures stay in ``fixtures/`` as data. The name server's package was ``nameserver``,
also a PyPI project's name: it is ``mqnamesrv`` now, in the folder nameserver/mqnamesrv.
"""

from __future__ import annotations

import tomllib
from importlib.metadata import distribution
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[2]
#: Each import name and the folder that holds it.
EXPECTED = {"mqadmin": "mqadmin", "mqnamesrv": "nameserver/mqnamesrv"}


def _discovered() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    find = config["tool"]["setuptools"]["packages"]["find"]
    return [name for where in find["where"] for name in find_packages(where=str(ROOT / where), include=find["include"])]


def test_pyproject_discovers_our_two_import_names_and_every_package_under_them() -> None:
    packages = _discovered()
    assert {name.split(".")[0] for name in packages} == set(EXPECTED)
    on_disk = {
        ".".join((top, *init.parent.relative_to(ROOT / folder).parts))
        for top, folder in EXPECTED.items() for init in (ROOT / folder).rglob("__init__.py")
    }
    assert set(packages) == on_disk  # no package left out of the wheel
    assert {"mqadmin.fixture", "mqnamesrv.remoting"} <= set(packages)
    assert not (ROOT / "nameserver" / "__init__.py").exists()  # a folder, not a package of its own


def test_installed_distribution_declares_the_same_names() -> None:
    top_level = distribution("mqadmin").read_text("top_level.txt")
    assert top_level is not None, "reinstall: pip install -e '.[test]'"
    assert set(top_level.split()) == set(EXPECTED)


def test_the_installed_names_import_from_their_folders() -> None:
    import mqadmin
    import mqnamesrv

    assert Path(mqadmin.__file__).resolve().parent == ROOT / "mqadmin"
    assert Path(str(mqnamesrv.__file__)).resolve().parent == ROOT / "nameserver" / "mqnamesrv"


def test_the_fixtures_folder_holds_data_only() -> None:
    folder = ROOT / "fixtures"
    assert sorted(p.suffix for p in folder.iterdir() if p.is_file()) and not list(folder.glob("*.py"))
    assert len(list(folder.glob("*.yaml"))) >= 4
