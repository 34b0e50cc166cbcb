"""The docs stay usable: every relative link in the project's Markdown resolves, and the
README stays short enough to be read (its details live in docs/).

A link resolves when its file exists in the tree (a folder counts) and, when it names an
anchor, the target Markdown file has a heading with that anchor as GitHub spells it.
Links to web addresses are not followed: the tests run without the internet.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: GitHub shows a long README whole; past this the manual belongs in docs/.
README_MAX_LINES = 300
_SKIPPED_DIRS = {".git", ".venv", "node_modules", "build", "dist"}
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,}).*?^\1\2[ \t]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
#: [text](target) and ![alt](target); the target may carry a "title" after a blank
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _markdown_files() -> list[Path]:
    return sorted(
        path for path in ROOT.rglob("*.md")
        if not _SKIPPED_DIRS.intersection(path.relative_to(ROOT).parts[:-1])
        and not any(part.endswith(".egg-info") for part in path.relative_to(ROOT).parts)
    )


def _prose(text: str) -> str:
    """``text`` without fenced code blocks and code spans, where brackets are not links."""
    return _CODE_SPAN.sub("", _FENCE.sub("", text))


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: inline markup dropped, lower case, punctuation
    but ``-`` and ``_`` removed, blanks made ``-``."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"[`*]", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def _anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for heading in _HEADING.findall(_FENCE.sub("", path.read_text(encoding="utf-8"))):
        slug = _slug(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return frozenset(anchors)


def _broken_links(path: Path, root: Path = ROOT) -> list[str]:
    broken = []
    for target in _LINK.findall(_prose(path.read_text(encoding="utf-8"))):
        if _SCHEME.match(target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / unquote(file_part)).resolve() if file_part else path
        where = f"{path.relative_to(root)}: ({target})"
        if not dest.exists():
            broken.append(f"{where}: no such file")
        elif anchor and dest.suffix == ".md" and unquote(anchor).lower() not in _anchors(dest):
            broken.append(f"{where}: no heading with anchor #{anchor} in {dest.relative_to(root)}")
    return broken


def test_the_markdown_files_are_found() -> None:
    names = {str(path.relative_to(ROOT)) for path in _markdown_files()}
    assert {"README.md", "CHANGELOG.md", "docs/namesrv.md", "docs/benchmarks/README.md"} <= names


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    assert _broken_links(path) == []


def test_the_readme_stays_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move details to docs/"


def test_a_broken_link_and_a_missing_anchor_are_caught(tmp_path: Path) -> None:
    """The checker itself can fail: a dead link and a dead anchor are named, while links
    that resolve, code, and a repeated heading's second anchor pass."""
    (tmp_path / "other.md").write_text("# Two words\n\n## Two words\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("# Top `x`\n\n[ok](#top-x) [ok](other.md#two-words-1) [gone](no-such-file.md)\n"
                    "[anchor](other.md#no-such-heading) `[code](nowhere.md)`\n\n"
                    "```\n[fenced](nowhere.md)\n```\n", encoding="utf-8")
    assert _broken_links(page, tmp_path) == [
        "page.md: (no-such-file.md): no such file",
        "page.md: (other.md#no-such-heading): no heading with anchor #no-such-heading in other.md",
    ]
