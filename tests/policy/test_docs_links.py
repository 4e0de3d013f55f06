"""Every relative link of the README and docs/ reaches a file, and every #anchor a heading of it; every
file of the repository they, or the grader's docstrings and comments, name by its path exists."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the course root, found without importing the grader
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
# A file of the repository named in prose, by its path from the root; one with a placeholder
# (`solutions/<id>.py`) or a wildcard is not a path.
NAMED = re.compile(r"(?<![\w/.<-])((?:grader|tests|solutions|benchmarks|lessons|docs)/[\w./-]*"
                   r"\.(?:py|toml|mk|cfg|json|md|txt))(?![\w<*/])")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found, seen = set(), {}
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*$", FENCE.sub("", path.read_text()), re.M):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(path: Path) -> list[str]:
    """The links of a Markdown file that lead nowhere, each as `target: why`."""
    broken = []
    for target in LINK.findall(FENCE.sub("", path.read_text())):
        if re.match(r"[a-z]+:", target):  # https:, mailto: ... are not checked here
            continue
        file, _, anchor = target.partition("#")
        goal = (path.parent / file).resolve() if file else path
        if not goal.exists():
            broken.append(f"{target}: no such file")
        elif anchor and goal.suffix == ".md" and anchor not in anchors(goal):
            broken.append(f"{target}: no heading #{anchor} in {goal.name}")
    return broken


def missing_paths(path: Path, root: Path = ROOT) -> list[str]:
    """The repository paths a Markdown file names that no file has, state that git ignores (written
    while grading) aside."""
    named = sorted(set(NAMED.findall(path.read_text())))
    missing = [name for name in named if not (root / name).exists()]
    if not missing:
        return []
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], input="\n".join(missing), cwd=root,
                             capture_output=True, text=True, check=False).stdout.split()
    return [name for name in missing if name not in ignored]


def test_every_file_named_in_the_docs_and_the_grader_exists():
    named_in = [*DOCUMENTS, *sorted((ROOT / "grader").rglob("*.py"))]  # the grader's docstrings and comments
    missing = {str(path.relative_to(ROOT)): found for path in named_in if (found := missing_paths(path))}
    assert not missing, f"files named that do not exist: {missing}"


def test_a_named_file_that_does_not_exist_is_found(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("grader/state/*\n")
    for name in ("grader/course.py", "tests/unit/test_ids.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    page = tmp_path / "page.md"
    page.write_text("`grader/course.py` and grader/client.py, `tests/submissions.py`; tests/unit/test_ids.py:12.\n"
                    "`solutions/<id>.checks.py`, `grader/*.py`, `grader/state/people.json` (written while grading)\n")
    assert missing_paths(page, tmp_path) == ["grader/client.py", "tests/submissions.py"]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_link_leads_somewhere(document):
    assert not broken_links(document), broken_links(document)


def test_every_document_in_docs_is_linked_from_the_readme():
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in LINK.findall((ROOT / "README.md").read_text())}
    assert not [path.name for path in DOCUMENTS[1:] if path.resolve() not in linked]


def test_a_broken_link_and_a_missing_anchor_are_found(tmp_path):
    (tmp_path / "other.md").write_text("# A heading: with `code`\n\n## Twice\n\n## Twice\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](other.md#a-heading-with-code) [ok](other.md#twice-1) [ok](#here)\n# Here\n"
                    "[gone](missing.md) [no anchor](other.md#nowhere) ![image](ignored.png)\n"
                    "```\n[in code](not-checked.md)\n```\n")
    assert broken_links(page) == ["missing.md: no such file", "other.md#nowhere: no heading #nowhere in other.md"]
