"""A similarity report across one lesson's submissions: answer cells only, given code excluded, one HTML page.

For each submission, the code of its answer cells (the release's `solution` cells, by grade_id) is
fingerprinted with copydetect's winnowing (`copydetect.CodeFingerprint`, identifiers and literals
normalised, so that renaming variables does not hide a copy). Fingerprints of code the students
were given are boilerplate and never count: every code cell of the lesson's release (the answer
cells' starter code included), which holds the working versions of earlier lessons' functions
that the lesson hands out. Each pair whose share of matching code reaches `threshold` in either direction
is listed, most similar first, with the two students' answers side by side and the matching code
marked.

A pair is a lead for a person to read, not a verdict: the report never changes a grade, and the
page says so. Student code and ids on the page are escaped by its autoescaping template; the page carries a
policy that allows no script and no request.
"""

from __future__ import annotations

import io
import itertools
from dataclasses import dataclass
from pathlib import Path

import nbformat
from copydetect import CodeFingerprint, compare_files
from traitlets import Float, Integer
from traitlets.config import Configurable

from grader import cell_roles
from grader.grading.outputs import pages


class SimilarityReport(Configurable):
    """Which pairs of submissions the similarity report lists (c.SimilarityReport)."""

    threshold = Float(0.8, help="Share of one submission's answer tokens that must match the other's for the pair "
                                "to be listed.").tag(config=True)
    min_tokens = Integer(80, help="Matching tokens a listed pair needs besides the share: fewer are the seams "
                                  "around given code, not anyone's work.").tag(config=True)

# copydetect's fingerprint sizes, in tokens: shorter matches are never reported (its noise threshold
# k); matches of GUARANTEE tokens are always found (the winnowing window is GUARANTEE - NOISE + 1).
# They shape the fingerprints, not what is reported: SimilarityReport's options decide that.
NOISE = 12
GUARANTEE = 16
# Characters of one submission's answer code compared: a bound on the cost of a huge submission, for
# hostile input, not a setting (no honest answer comes near it).
MAX_CODE = 20_000


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    similarity: tuple[float, float]  # share of a's answer tokens that match b's, and of b's that match a's
    code: tuple[str, str]  # each one's answer code
    slices: tuple[list[tuple[int, int]], list[tuple[int, int]]]  # matching character ranges in each code

    @property
    def score(self) -> float:
        return max(self.similarity)


def answer_code(nb: nbformat.NotebookNode, answer_ids: list[str]) -> str:
    """The code of `nb`'s answer cells, in the release's order, one cell after another."""
    cells = cell_roles.cells_by_id(nb)
    return "\n\n".join(str(cells[i].source) for i in answer_ids if i in cells and cells[i].cell_type == "code")


def given_code(release: Path) -> list[str]:
    """The code students were given: every code cell of the lesson's release (which holds the working
    versions of earlier lessons' functions that the lesson hands out), and its answer cells joined as
    `answer_code` joins a submission's, so that the seams between starter cells count as given too."""
    released = nbformat.read(release, as_version=4)
    return [answer_code(released, cell_roles.solution_ids(released)),
            *(str(c.source) for c in released.cells if c.cell_type == "code")]


def _fingerprint(code: str, boilerplate) -> CodeFingerprint:
    return CodeFingerprint("answers.py", NOISE, GUARANTEE - NOISE + 1, boilerplate=boilerplate,
                           fp=io.StringIO(code), language="python")


def compare(submissions: dict[str, Path], release: Path, *,
            threshold: float = SimilarityReport.threshold.default_value,
            min_tokens: int = SimilarityReport.min_tokens.default_value) -> list[Pair]:
    """The pairs of `submissions` (student -> notebook) whose answers match at `threshold` or more,
    in at least `min_tokens` tokens (fewer are the seams around given code, not anyone's work)."""
    released = nbformat.read(release, as_version=4)
    answer_ids = cell_roles.solution_ids(released)
    boilerplate = sorted({int(h) for h in _fingerprint("\n\n".join(given_code(release)), []).hashes})
    prints = {}
    for student, path in sorted(submissions.items()):
        try:
            code = answer_code(nbformat.read(path, as_version=4), answer_ids)[:MAX_CODE]
        except Exception:  # an unreadable notebook has no answers to compare
            continue
        if code.strip():
            prints[student] = (code, _fingerprint(code, boilerplate))
    pairs = []
    for (a, (code_a, fa)), (b, (code_b, fb)) in itertools.combinations(prints.items(), 2):
        overlap, similarity, (slices_a, slices_b) = compare_files(fa, fb)
        if overlap >= min_tokens and max(similarity) >= threshold:
            pairs.append(Pair(a, b, (float(similarity[0]), float(similarity[1])), (code_a, code_b),
                              (_ranges(slices_a), _ranges(slices_b))))
    return sorted(pairs, key=lambda p: (-p.score, p.a, p.b))


def _ranges(slices) -> list[tuple[int, int]]:
    if len(slices) == 0 or len(slices[0]) == 0:
        return []
    return [(int(start), int(end)) for start, end in zip(slices[0], slices[1], strict=True)]


def _pieces(code: str, ranges: list[tuple[int, int]]) -> list[tuple[str, bool]]:
    """`code` cut into (text, whether it is in a matching range)."""
    out, at = [], 0
    for start, end in sorted(ranges):
        start = max(start, at)
        if end <= start:
            continue
        out += [(code[at:start], False), (code[start:end], True)]
        at = end
    out.append((code[at:], False))
    return [(text, matched) for text, matched in out if text]


def write_html(path: Path, lesson: str, pairs: list[Pair], *, compared: int,
               threshold: float = SimilarityReport.threshold.default_value) -> Path:
    """The report: one section per pair, the two answers side by side, matching code marked."""
    shown = [{"a": p.a, "b": p.b, "similarity": p.similarity,
              "sides": [(who, _pieces(code, ranges))
                        for who, code, ranges in zip((p.a, p.b), p.code, p.slices, strict=True)]} for p in pairs]
    return pages.write("similarity.html.j2", path, lesson=lesson, pairs=shown, compared=compared, threshold=threshold)
