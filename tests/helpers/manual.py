"""The README and the manual in ``docs/``, as the tests read them: the words a user reads
there are checked against what exists (commands, make targets, the tree, links)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"


def manual_files() -> tuple[Path, ...]:
    """README.md, then every page of ``docs/`` by name."""
    return (README, *sorted(DOCS.glob("*.md")))


def manual_texts() -> dict[str, str]:
    """Each file's text, by its path from the repository's root (``docs/usage.md``)."""
    return {
        path.relative_to(REPO).as_posix(): path.read_text(encoding="utf-8")
        for path in manual_files()
    }
