"""The lessons speak to the student, in the course's own voice.

A lesson never refers to a document the student does not have ("the source text", "the seed" or
"the text" as a document, "as printed") or to the tooling behind the course (nbval, nbgrader, CI,
"automated checks", "the course's checks"). Where a widely copied example is wrong, the lesson shows
it as a common mistake; it does not cite where it came from.

The scan is static (no kernel): every student notebook in lessons/ (markdown, code and outputs),
and the markdown and outputs of every reference notebook in solutions/<id>/, whose outputs are what
the student's own run prints. Code cells of the reference notebooks are not scanned: they hold the
solutions and nbval's markers, which the release removes, and their student-facing part is the
released code, which is scanned.

"seed" in the sense of a random generator's seed is fine ("with this seed", `default_rng(seed=seed)`,
"seed 1"); only the document sense is banned, and "(seed)" too, which reads as a citation of one: code
names its seeds (`layer_seed`) or passes them by keyword. In code, the hidden-test block that ends every test
cell (`grader.trusted.HIDDEN_BLOCK`, which names NBGRADER_EXECUTION and the trusted grader) is
allowed, exactly as written. Anything else about grading (a switch, a sentence about graded copies)
is test_grading_out_of_sight.py's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grader.course import ROOT, lesson_ids, reference_notebook, student_notebook
from grader.trusted import HIDDEN_BLOCK

_APOSTROPHE = "['\u2019]"
_SAYS = r"(?:says|said|writes|wrote|adds|added|prints|printed|shows|showed|describes|claims|uses|code|notebook)"

# (compiled pattern, what it refers to). Case-insensitive unless the flags say otherwise.
EVERYWHERE = [
    (re.compile(r"\bsource[ -]texts?\b", re.I), "a source document"),
    (re.compile(rf"\bthe source(?:{_APOSTROPHE}s\b|\s+{_SAYS}\b)", re.I), "a source document"),
    (re.compile(r"\bas in the source\b", re.I), "a source document"),
    (re.compile(rf"\bthe seed{_APOSTROPHE}s\b", re.I), "a seed document"),
    (re.compile(r"\bseed[ -]texts?\b", re.I), "a seed document"),
    (re.compile(rf"\bthe seed\s+{_SAYS}\b", re.I), "a seed document"),
    (re.compile(r"\bas in the seed\b", re.I), "a seed document"),
    (re.compile(r"\(seed\)", re.I), "a seed document, cited"),
    (re.compile(rf"\bthe text{_APOSTROPHE}s\b", re.I), "a text the student does not have"),
    (re.compile(rf"\b(?:in|from|as|by) the text\b|\bthe text\s+{_SAYS}\b", re.I), "a text the student does not have"),
    (re.compile(r"\bas printed\b", re.I), "a printed document"),
    (re.compile(r"\bautomated checks?\b", re.I), "the course's tooling"),
    (re.compile(rf"\bcourse{_APOSTROPHE}s (?:own )?checks?\b", re.I), "the course's tooling"),
    (re.compile(r"nbval", re.I), "the course's tooling"),
    (re.compile(r"\bCI\b"), "the course's tooling"),
]
# nbgrader: any mention in prose; in code and outputs, the word (so NBGRADER_EXECUTION, a name, is not one).
MARKDOWN_ONLY = [(re.compile(r"nbgrader", re.I), "the course's tooling")]
CODE_AND_OUTPUTS = [(re.compile(r"\bnbgrader\b", re.I), "the course's tooling")]


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


def _output_texts(cell: dict) -> list[str]:
    """The text a code cell's outputs show: streams, and the plain text of results and displays."""
    texts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            texts.append(_text(output.get("text")))
        elif output.get("output_type") in ("execute_result", "display_data"):
            texts.append(_text(output.get("data", {}).get("text/plain")))
        elif output.get("output_type") == "error":
            texts.append(f"{output.get('ename', '')}: {output.get('evalue', '')}")
    return texts


def _matches(text: str, patterns) -> list[str]:
    found = []
    for pattern, meaning in patterns:
        for match in pattern.finditer(text):
            start, end = max(match.start() - 40, 0), min(match.end() + 40, len(text))
            context = " ".join(text[start:end].split())
            found.append(f"{match.group(0)!r} ({meaning}) in \u201c\u2026{context}\u2026\u201d")
    return found


def voice_problems(notebook: dict, name: str, *, code: bool = True) -> list[str]:
    """Every banned phrase in `notebook` (nbformat JSON as a dict), as 'name: cell N (kind): phrase in context'.

    `code=False` scans markdown and outputs only (the reference notebooks, whose code is the solution).
    """
    problems = []
    for index, cell in enumerate(notebook.get("cells", [])):
        where = f"{name}: cell {index}"
        source = _text(cell.get("source"))
        if cell.get("cell_type") == "markdown":
            problems += [f"{where} (markdown): {m}" for m in _matches(source, EVERYWHERE + MARKDOWN_ONLY)]
        elif cell.get("cell_type") == "code":
            if code:
                student_code = source.replace(HIDDEN_BLOCK, "")  # the standard block, exactly as written, is allowed
                problems += [f"{where} (code): {m}" for m in _matches(student_code, EVERYWHERE + CODE_AND_OUTPUTS)]
            for text in _output_texts(cell):
                problems += [f"{where} (output): {m}" for m in _matches(text, EVERYWHERE + CODE_AND_OUTPUTS)]
    return problems


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


# Parametrized by the notebooks' paths, with the lesson id as the test id (`-k 02-scaling` selects a
# lesson): a static scan needs no optional extra, so it must not be skipped where torch is missing.
@pytest.mark.parametrize("notebooks", [pytest.param((student_notebook(lesson), reference_notebook(lesson)), id=lesson)
                                       for lesson in lesson_ids()])
def test_lesson_speaks_in_the_course_voice(notebooks):
    assert_course_voice(*notebooks)


def assert_course_voice(released: Path, reference: Path) -> None:
    """A lesson's released notebook (code and outputs) and reference notebook (outputs) in the course's voice."""
    problems = []
    for path, code in ((released, True), (reference, False)):
        assert path.is_file(), f"{path} is missing"
        where = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
        problems += voice_problems(_load(path), where, code=code)
    assert not problems, ("the lesson mentions documents the student does not have, or the course's tooling; "
                          "say it in the course's own voice:\n" + "\n".join(problems))


def _notebook(*cells: dict) -> dict:
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _markdown(source) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def _code(source, *outputs: dict) -> dict:
    return {"cell_type": "code", "metadata": {}, "source": source, "outputs": list(outputs), "execution_count": 1}


def test_the_scan_names_the_file_the_cell_and_the_phrase():
    fake = _notebook(
        _markdown("# A lesson\n\nAll fine here."),
        _markdown(["The source text this lesson follows ", "writes it differently."]),
        _code("print(1)", {"output_type": "stream", "name": "stdout",
                           "text": "SDPA module equals the seed's module\n"}),
        _code("# run as printed\nx = 1"),
        _markdown("The course's checks (nbval, in CI) compare this; nbgrader grades it."),
        _code("y = 2", {"output_type": "execute_result", "execution_count": 1, "metadata": {},
                        "data": {"text/plain": "'the text\u2019s example'"}}),
    )
    problems = voice_problems(fake, "lessons/99-fake/99-fake.ipynb")
    expected = [("cell 1 (markdown)", "'source text'"), ("cell 2 (output)", "\"the seed's\""),
                ("cell 3 (code)", "'as printed'"), ("cell 4 (markdown)", "\"course's checks\""),
                ("cell 4 (markdown)", "'nbval'"), ("cell 4 (markdown)", "'CI'"), ("cell 4 (markdown)", "'nbgrader'"),
                ("cell 5 (output)", "'the text\u2019s'")]
    for cell, phrase in expected:
        assert any(p.startswith(f"lessons/99-fake/99-fake.ipynb: {cell}: {phrase}") for p in problems), (
            f"{cell}: {phrase} not reported; got:\n" + "\n".join(problems))
    assert len(problems) == len(expected), "\n".join(problems)
    assert not any(": cell 0 " in p for p in problems)


def test_the_scan_fails_the_lesson_test_on_a_banned_phrase(tmp_path):
    released, reference = tmp_path / "released.ipynb", tmp_path / "reference.ipynb"
    released.write_text(json.dumps(_notebook(_markdown("Fine."))))
    reference.write_text(json.dumps(_notebook(_markdown("As the seed text says, divide by sqrt(d_k)."))))
    with pytest.raises(AssertionError, match=r"reference.ipynb: cell 0 \(markdown\): 'seed text'"):
        assert_course_voice(released, reference)


def test_random_seeds_the_hidden_block_and_reference_code_are_allowed():
    fine = _notebook(
        _markdown("With this seed the scores reach 943. Seed 1 draws the weights; change the seed to see others."),
        _code(f"rng = np.random.default_rng(seed=seed)\ntorch.manual_seed(layer_seed)\nprint('ok')\n{HIDDEN_BLOCK}",
              {"output_type": "stream", "name": "stdout", "text": "with this seed: 0.460\n"}),
        _code('if os.environ.get("NBGRADER_EXECUTION") == "autograde":\n    n = 10'),
        _markdown("The textbook softmax; the text colour in each cell; a sourced claim."),
    )
    assert voice_problems(fine, "fine.ipynb") == []
    cited = _notebook(_markdown("Unscaled scores saturate (seed)."), _code("rng = np.random.default_rng(seed)"))
    assert [p.split(": ")[1] for p in voice_problems(cited, "cited.ipynb")] == ["cell 0 (markdown)", "cell 1 (code)"]
    # A reference notebook's code (solutions, nbval markers) is not scanned, its outputs are.
    reference = _notebook(_code("# NBVAL_IGNORE_OUTPUT\nt = 1", {"output_type": "stream", "name": "stdout",
                                                                  "text": "nbval would compare this\n"}))
    assert [p.split(": ")[1] for p in voice_problems(reference, "ref.ipynb", code=False)] == ["cell 0 (output)"]
    # Anything added to the hidden-test block is scanned like any other code.
    edited = HIDDEN_BLOCK.replace("### END", "# checked by nbgrader\n### END")
    assert voice_problems(_notebook(_code(edited)), "edited.ipynb")
