"""The README is a page, the manual in ``docs/`` holds the rest, every make target they
show exists, the package tree there is the package, and every link between them lands.

Nothing here imports tray: the files are read as text, so these run in ``make check``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.manual import DOCS, REPO, manual_texts

TEXTS = manual_texts()
MAKEFILE = (REPO / "Makefile").read_text(encoding="utf-8")
README_LINES_AT_MOST = 200

_MAKE = re.compile(r"(?<![\w/.-])make ([a-z]+)")
_FENCED = re.compile(r"^```.*?^```", re.S | re.M)
_CODE_SPAN = re.compile(r"`[^`]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^(#{1,6}) +(.+?) *#*$", re.M)


def test_the_readme_is_a_page() -> None:
    lines = len(TEXTS["README.md"].splitlines())
    assert lines <= README_LINES_AT_MOST, f"README.md has {lines} lines"


def _make_targets() -> list[tuple[str, str]]:
    """Each make target shown, with the first file that shows it."""
    where: dict[str, str] = {}
    for name, text in TEXTS.items():
        for target in sorted(set(_MAKE.findall(text))):
            where.setdefault(target, name)
    return sorted(where.items())


def test_the_readme_shows_the_commands_of_its_quick_start_and_development() -> None:
    assert {"demo", "test", "check"} <= set(_MAKE.findall(TEXTS["README.md"]))


@pytest.mark.parametrize(("target", "where"), _make_targets())
def test_each_make_target_exists(target: str, where: str) -> None:
    assert re.search(rf"^{target}:", MAKEFILE, re.M), f"{where} shows `make {target}`"


def _fenced_blocks(text: str) -> list[list[str]]:
    blocks: list[list[str]] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("```"):
            inside = not inside
            if inside:
                blocks.append([])
        elif inside:
            blocks[-1].append(line)
    return blocks


def _package_tree() -> str:
    """The one tree of the code: the fenced block that starts ``tray/``, in
    docs/architecture.md and nowhere else."""
    trees = {
        name: "\n".join(block)
        for name, text in TEXTS.items()
        for block in _fenced_blocks(text)
        if block[:1] == ["tray/"]
    }
    assert list(trees) == ["docs/architecture.md"], "the tree is shown once, in the architecture"
    return trees["docs/architecture.md"]


def test_the_tree_names_every_folder_and_top_module_of_the_package() -> None:
    package = REPO / "tray"
    tree = _package_tree()
    folders = sorted(
        path.parent.relative_to(package).as_posix()
        for path in package.rglob("__init__.py")
        if path.parent != package
    )
    loose = sorted(
        path.name
        for path in package.glob("*.py")
        if path.name not in {"__init__.py", "__main__.py"}
    )
    missing = [f"{name}/" for name in folders if f"{Path(name).name}/" not in tree]
    missing += [name for name in loose if name not in tree]
    assert missing == []


def _tree_sections(tree: str) -> dict[str, str]:
    """The tree's entries by what heads each (``commands/``, ``cli.py``): an entry is a
    line indented by two spaces, with the lines indented deeper that follow it."""
    sections: dict[str, str] = {}
    head = ""
    for line in tree.splitlines()[1:]:
        if line.startswith("  ") and not line.startswith("   "):
            head = line.split()[0].rstrip(",")
            sections[head] = line
        else:
            sections[head] += "\n" + line
    return sections


def test_the_tree_names_each_module_in_the_folder_it_is_in() -> None:
    package = REPO / "tray"
    misplaced = []
    for head, text in _tree_sections(_package_tree()).items():
        if head.endswith("/"):
            present = {path.name for path in (package / head).rglob("*.py")}
        else:
            present = {path.name for path in package.glob("*.py")}
        named = set(re.findall(r"\b([a-z_]+\.py)\b", text))
        misplaced += [f"{head} {name}" for name in sorted(named - present)]
    assert misplaced == []


def _prose(text: str) -> str:
    """``text`` without its fenced blocks and code spans, where brackets are code."""
    return _CODE_SPAN.sub("", _FENCED.sub("", text))


def slug(heading: str) -> str:
    """A heading's anchor, as GitHub makes it: lower case, punctuation dropped (markup
    included), spaces to hyphens."""
    words = re.sub(r"[^\w\- ]", "", heading.lower())
    return words.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor in ``text``; a repeated one gets ``-1``, ``-2``... as on
    GitHub."""
    found: set[str] = set()
    for _, heading in _HEADING.findall(_FENCED.sub("", text)):
        base = slug(heading)
        anchor, count = base, 0
        while anchor in found:
            count += 1
            anchor = f"{base}-{count}"
        found.add(anchor)
    return found


def _links() -> list[tuple[str, str]]:
    return sorted(
        (name, target)
        for name, text in TEXTS.items()
        for target in _LINK.findall(_prose(text))
        if not re.match(r"[a-z]+:", target)
    )


LINKS = _links()


def test_the_readme_and_the_manual_link_each_other() -> None:
    targets = {target.split("#")[0] for name, target in LINKS if name == "README.md"}
    assert "docs/README.md" in targets
    index = {target.split("#")[0] for name, target in LINKS if name == "docs/README.md"}
    pages = {path.name for path in DOCS.glob("*.md")} - {"README.md"}
    assert pages - index == set(), "docs/README.md lists every page"


@pytest.mark.parametrize(("where", "target"), LINKS)
def test_each_relative_link_lands(where: str, target: str) -> None:
    path, _, anchor = target.partition("#")
    page = (REPO / where).parent / path if path else REPO / where
    assert page.exists(), f"{where} links to {target}, which does not exist"
    if anchor:
        assert page.suffix == ".md", f"{where} links to an anchor in {path}"
        headings = anchors(page.read_text(encoding="utf-8"))
        assert anchor in headings, f"{where} links to #{anchor}, which {page.name} lacks"


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Focus: back to the session's own tab", "focus-back-to-the-sessions-own-tab"),
        ("Agents' own hooks", "agents-own-hooks"),
        ("The `tray/` tree", "the-tray-tree"),
    ],
)
def test_an_anchor_is_the_heading_as_github_makes_it(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_anchors_leave_out_code_and_number_a_repeated_heading() -> None:
    text = "# One\n\n## Two\n\n```sh\n# not a heading\n```\n\n## Two\n"
    assert anchors(text) == {"one", "two", "two-1"}
