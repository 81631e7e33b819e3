"""The documentation lives in the repository: every relative link in docs/ and README.md resolves
(to a file inside the repository, and to a heading when it names one), and no text refers to a path
outside the repository — no spec files of the development setup, no `../shared` tree — so a user
who clones the repository has everything the text points at.

`../` inside the repository (docs/howto/ linking to docs/) is fine; only what escapes it is not."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
# Spelled in pieces so that this file does not match itself.
OUTSIDE = [
    re.compile(re.escape(name))
    for name in (
        "AGENT" + ".md",
        "ARCHITECTURE" + ".md",
        "shared" + "/spec",
        "shared" + "/reference",
        "SERVING" + "-NOTES",
        "INSTALL" + "-NOTES",
        "PEERS" + ".md",
        "protocols" + ".md",  # the development setup's protocol notes
    )
] + [re.compile(r"\.\./+" + "shared"), re.compile(r"(?<![\w/])" + "shared" + r"/(?=[\w.-])")]


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text())
    found: set[str] = set()
    for heading in HEADING.findall(text):
        base = slug(heading)
        name, n = base, 1
        while name in found:  # repeated headings get -1, -2 ...
            name, n = f"{base}-{n}", n + 1
        found.add(name)
    return found


def links(path: Path) -> list[str]:
    return LINK.findall(FENCE.sub("", path.read_text()))


@pytest.mark.parametrize("doc", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc: Path) -> None:
    broken = []
    for target in links(doc):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        where, _, anchor = target.partition("#")
        path = (doc.parent / where).resolve() if where else doc
        if not path.is_relative_to(ROOT):
            broken.append(f"{target}: outside the repository")
        elif not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target}: no heading #{anchor} in {path.relative_to(ROOT)}")
    assert not broken, f"{doc.relative_to(ROOT)}:\n" + "\n".join(broken)


def test_the_documentation_covers_the_users_jobs() -> None:
    for page in ("protocol", "controller", "logs", "verifier", "safety", "architecture"):
        assert (ROOT / "docs" / f"{page}.md").is_file(), page
    for job in ("jetson", "fleet", "hil", "calibrate"):
        assert (ROOT / "docs" / "howto" / f"{job}.md").is_file(), job
    readme = (ROOT / "README.md").read_text()
    assert "bash scripts/demo.sh" in readme and "bash scripts/test.sh" in readme


def _outside_references(paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue  # binary files (images, PDFs) hold no references
        for n, line in enumerate(text.splitlines(), 1):
            if any(p.search(line) for p in OUTSIDE):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    return found


def test_docs_and_readme_name_no_path_outside_the_repository() -> None:
    found = _outside_references(doc_files())
    assert not found, "\n".join(found)


def _tracked_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
        check=False,
    )
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    here = Path(__file__).resolve()
    return [ROOT / name for name in listed.stdout.splitlines() if (ROOT / name).resolve() != here]


def test_no_text_in_the_repository_names_a_path_outside_it() -> None:
    """Code, help texts, package READMEs, docs: nothing cites a file that is not in the repository."""
    found = _outside_references([p for p in _tracked_files() if p.is_file()])
    assert not found, f"{len(found)} references:\n" + "\n".join(found)
