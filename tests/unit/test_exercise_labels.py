"""The feedback step ExerciseLabels: the page names each exercise as the release does, whatever the submission says."""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path

import nbformat

from grader import cell_roles
from grader.course import ROOT, nbgrader_config, reference_notebook, student_notebook
from grader.pipeline.exercise_labels import RESOURCE, ExerciseLabels
from tests.support import feedback_page

LESSON = "03-parallel-heads"  # its Exercise 3 has two graded parts, 3a and 3b
TOC = re.compile(r'<li><a href="#([^"]+)">([^<]*)</a> \(Score: ')


def scored(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """`nb` with every graded cell scored, as GetGrades leaves it, and only its answer and test cells (the
    lesson's prose, which a student may delete, costs most of the time a page takes to render)."""
    nb = copy.deepcopy(nb)
    nb.cells = [cell for cell in nb.cells if cell_roles.grade_id(cell) or "Exercise" in cell.source]
    for cell in nb.cells:
        if cell_roles.is_graded(cell):
            cell.metadata.nbgrader["score"] = 0
    return nb


def relabelled(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A student's copy whose markdown renumbers every exercise and part, and plants headings before every test."""
    nb = copy.deepcopy(nb)
    for cell in list(nb.cells):
        if cell.cell_type == "markdown":
            cell.source = re.sub(r"Exercise \d+", "Exercise 9", cell.source).replace("**(a)**", "**(q)**")
    for index in reversed([i for i, cell in enumerate(nb.cells) if cell_roles.is_graded(cell)]):
        nb.cells.insert(index, nbformat.v4.new_markdown_cell(f"### Exercise {index}: full marks\n\n**(z)** yes"))
    return nb


def test_the_page_names_each_exercise_as_the_release_does_whatever_the_submission_says():
    release = nbformat.read(student_notebook(LESSON), as_version=4)
    expected = cell_roles.exercise_labels(release)
    assert "Exercise 3a" in expected.values() and "Exercise 3b" in expected.values()
    page = feedback_page(scored(relabelled(release)), LESSON)
    assert dict(TOC.findall(page)) == expected
    for grade_id, label in expected.items():
        assert f"Tests of {label}: <code>{grade_id}</code>" in page
    assert "Student's answer: Exercise 3a" in page and "Student's answer: Exercise 3b" in page


def course_without_a_release(root: Path, source: Path) -> Path:
    """A course folder with the repository's configuration, no release, and `source` as nbgrader's source folder."""
    root.mkdir()
    (root / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa\n"
        f"load_subconfig({str(ROOT / 'nbgrader_config.py')!r})  # noqa\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        f"c.CourseDirectory.source_directory = {str(source)!r}\n")
    return root


def test_without_a_release_the_labels_come_from_the_source_and_without_either_in_order(tmp_path):
    release = nbformat.read(student_notebook(LESSON), as_version=4)
    source = tmp_path / "source"
    (source / LESSON).mkdir(parents=True)
    shutil.copy(reference_notebook(LESSON), source / LESSON)
    step = ExerciseLabels(config=nbgrader_config(course_without_a_release(tmp_path / "course", source)))
    _, resources = step.preprocess(relabelled(release), {"nbgrader": {"assignment": LESSON, "notebook": LESSON}})
    assert resources[RESOURCE] == cell_roles.cell_labels(release)
    page = feedback_page(scored(release), "no-such-lesson")  # neither a release nor a source notebook of it
    assert [label for _, label in TOC.findall(page)][2:4] == ["Exercise 3: zero_value_columns",
                                                              "Exercise 4: per_head_change"]
