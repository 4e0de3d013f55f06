"""`make test` of the student distribution: this copy of the course is intact and its self-check runs.

Standard library `unittest` only, so that the students' environment needs no test framework. The
lesson notebooks in lessons/ are the student's work and may have changed; the pristine releases in
.course/releases/ and the code must be exactly as shipped (their checksums are in
.course/manifest.json).
"""

from __future__ import annotations

import shutil
import tempfile
import unittest
from pathlib import Path

import nbformat

from grader.student import check, layout, originals

RELEASES = layout.RELEASES


class TheDistributionIsIntact(unittest.TestCase):
    def test_it_is_a_distribution(self):
        self.assertTrue(layout.is_distribution(), "this copy has solutions/: not a student distribution")
        self.assertTrue(layout.MANIFEST.is_file(), f"{layout.MANIFEST} is missing")

    def test_every_shipped_file_has_its_checksum(self):
        shipped = layout.manifest()
        files = {path: layout.ROOT / path for path in shipped["files"]}
        changed = [path for path, file in files.items()
                   if not file.is_file() or originals.sha256(file.read_bytes()) != shipped["files"][path]]
        self.assertEqual(changed, [], "changed or missing since the course was downloaded")

    def test_every_pristine_release_matches_its_checksum_and_is_a_notebook(self):
        for lesson in layout.lesson_ids():
            with self.subTest(lesson=lesson):
                nb = originals.pristine(lesson)
                nbformat.validate(nb)
                self.assertTrue(originals.original_notebook(lesson).cells)


class TheNotebooksAreReadable(unittest.TestCase):
    def test_every_lesson_notebook_is_a_valid_notebook(self):
        for lesson in layout.lesson_ids():
            with self.subTest(lesson=lesson):
                path = layout.student_notebook(lesson)
                self.assertTrue(path.is_file(), f"{path} is missing")
                nbformat.validate(nbformat.read(path, as_version=4))


class TheSelfCheckRuns(unittest.TestCase):
    LESSON = "04-output-projection"  # the quickest lesson to run untouched (measured); else the first

    def test_an_untouched_notebook_is_not_attempted(self):
        lesson = self.LESSON if self.LESSON in layout.lesson_ids() else layout.lesson_ids()[0]
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"{lesson}.ipynb"
            shutil.copyfile(RELEASES / f"{lesson}.ipynb", path)
            [result] = check.main(lessons=[lesson], notebook=path, quiet=True)
        report = check.report(result)
        self.assertEqual(result.problem, "", report)
        self.assertTrue(result.exercises, report)
        self.assertEqual({e.status for e in result.exercises}, {check.NOT_ATTEMPTED}, report)
        self.assertFalse(result.deleted or result.edited or result.ok, report)


if __name__ == "__main__":
    unittest.main()
