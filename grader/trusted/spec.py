"""What a lesson's trusted spec declares: for each graded test cell, a `Check`.

A spec is a lesson's hidden checks, the module `solutions/<lesson>.checks.py` (grader.course.checks_file), that
defines `CHECKS`, a dict from the
grade_id of a locked test cell to a `Check`: the name of the student's function, a trusted
reference implementation of it, and a generator of fresh inputs. See docs/lesson-style.md.
"""

from __future__ import annotations

import builtins
import dis
import functools
import importlib.util
import inspect
import re
import sys
import textwrap
import types
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from grader import markers
from grader.course import checks_file, lesson_ids
from grader.trusted.wire import Raised, Rng, Unsupported

# The hidden-test block of every test cell that a Check grades, verbatim. When the notebook is not
# being autograded (nbval, `make reference`, `nbgrader validate`) it does nothing. When it is, the
# grader replaces it with the call that reports results; if the grader's preprocessors are not in
# the pipeline, it fails the cell rather than letting the visible checks alone award the points.
_BEGIN, _END = markers.hidden_tests()
HIDDEN_BLOCK = (
    f"### {_BEGIN}\n"
    "# Graded outside this kernel: the grader calls the function on fresh inputs and checks the results itself.\n"
    'assert __import__("os").environ.get("NBGRADER_EXECUTION") != "autograde", '
    '"these hidden tests need the course\'s trusted grader (grader/trusted)"\n'
    f"### {_END}"
)


class SpecError(Exception):
    """A trusted spec is wrong: an instructor's mistake, never a student's."""


@dataclass(frozen=True)
class Case:
    """One call of the student's function: positional and keyword arguments, and the expected exception."""

    args: tuple
    kwargs: dict = field(default_factory=dict)
    expect_raise: type[Exception] | None = None

    def raises(self, error: type[Exception]) -> Case:
        """The same call, which must raise `error` (the reference must raise it too)."""
        return replace(self, expect_raise=error)


def call(*args: Any, **kwargs: Any) -> Case:
    """A call of the student's function with these arguments."""
    return Case(args, kwargs)


def describe(value: Any) -> str:
    """A short description of a decoded value's type, for messages."""
    if isinstance(value, Raised):
        return f"an exception ({value.name})"
    if isinstance(value, Unsupported):
        return f"an object of type {value.type_name}, which the grader cannot read"
    if isinstance(value, np.ndarray):
        return f"a NumPy array of shape {value.shape}" if value.ndim else "a NumPy scalar"
    if isinstance(value, np.generic):
        return "a NumPy scalar"
    if value is None:
        return "None"
    return {bool: "a bool", int: "an int", float: "a float", complex: "a complex number", str: "a string",
            list: "a list", tuple: "a tuple", dict: "a dict"}.get(type(value), type(value).__name__)


def _is_bool(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return value.ndim == 0 and value.dtype.kind == "b"
    return isinstance(value, (bool, np.bool_))


def _is_number(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return value.ndim == 0 and value.dtype.kind in "iufc"
    return isinstance(value, (int, float, complex, np.number)) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) or (isinstance(value, np.ndarray) and value.dtype.kind in "iu")


@dataclass(frozen=True)
class Same:
    """The default comparison: the student's result must equal the reference's.

    Arrays: same shape, numbers where numbers are expected (booleans where booleans are), values
    within `np.allclose(rtol, atol)`. Numbers: ints exactly, floats within tolerance. Lists and
    tuples are interchangeable (a 1-D array is accepted as a sequence); dicts need the same keys.
    `array_like=True` also accepts a list, tuple or scalar where the reference returns an array.
    """

    rtol: float = 1e-5
    atol: float = 1e-8
    array_like: bool = False

    def __call__(self, expected: Any, got: Any) -> str | None:
        """None when `got` matches `expected`, else what is wrong, in one line."""
        return self.diff(expected, got, "")

    def diff(self, expected: Any, got: Any, where: str) -> str | None:
        at = f" ({where.strip(', ')})" if where else ""
        if isinstance(expected, Raised):
            if isinstance(got, Raised):
                return None if expected.name in got.types else f"raised {got.name}, expected {expected.name}"
            return f"returned {describe(got)}{at}, expected it to raise {expected.name}"
        if isinstance(got, Raised):
            return f"raised {got.name}"
        if isinstance(got, Unsupported):
            return f"returned {describe(got)}{at}"
        if isinstance(expected, np.ndarray) and expected.ndim:
            return self._diff_array(expected, got, at)
        if _is_bool(expected):
            if not _is_bool(got):
                return f"returned {describe(got)}{at}, expected a bool"
            return None if bool(got) == bool(expected) else f"wrong truth value{at}"
        if _is_number(expected):
            if not _is_number(got):
                return f"returned {describe(got)}{at}, expected a number"
            if _is_integer(expected) and _is_integer(got):
                return None if int(got) == int(expected) else f"wrong number{at}"
            same = np.isclose(got, expected, rtol=self.rtol, atol=self.atol, equal_nan=True)
            return None if same else f"wrong number{at}"
        if expected is None:
            return None if got is None else f"returned {describe(got)}{at}, expected None"
        if isinstance(expected, str):
            if not isinstance(got, str):
                return f"returned {describe(got)}{at}, expected a string"
            return None if got == expected else f"wrong string{at}"
        if isinstance(expected, (list, tuple)):
            if isinstance(got, np.ndarray) and got.ndim == 1:
                got = got.tolist()
            if not isinstance(got, (list, tuple)):
                return f"returned {describe(got)}{at}, expected a sequence of {len(expected)} items"
            if len(got) != len(expected):
                return f"returned {len(got)} items{at}, expected {len(expected)}"
            for i, (e, g) in enumerate(zip(expected, got, strict=True)):
                if (problem := self.diff(e, g, f"{where}, item {i}")) is not None:
                    return problem
            return None
        if isinstance(expected, dict):
            if not isinstance(got, dict):
                return f"returned {describe(got)}{at}, expected a dict"
            if set(got) != set(expected):
                return f"the keys{at} are {sorted(got)}, expected {sorted(expected)}"
            for key, e in expected.items():
                if (problem := self.diff(e, got[key], f"{where}, key {key!r}")) is not None:
                    return problem
            return None
        raise SpecError(f"the reference returned {describe(expected)}, which Same cannot compare")

    def _diff_array(self, expected: np.ndarray, got: Any, at: str) -> str | None:
        if not isinstance(got, np.ndarray) or got.ndim == 0:
            if not (self.array_like and (isinstance(got, (list, tuple)) or _is_number(got) or _is_bool(got))):
                return f"returned {describe(got)}{at}, expected a NumPy array"
            try:
                got = np.asarray(got)
            except (ValueError, TypeError):
                return f"returned {describe(got)}{at} that is not a rectangular array of numbers"
        if got.dtype.kind not in "biufc":
            return f"returned an array of {got.dtype} values{at}, expected numbers"
        if got.shape != expected.shape:
            return f"returned an array of shape {got.shape}{at}, expected shape {expected.shape}"
        if expected.dtype.kind == "b":
            if got.dtype.kind != "b":
                return f"returned an array of {got.dtype} values{at}, expected booleans"
            return None if np.array_equal(got, expected) else f"wrong values{at} (the shape is right)"
        if got.dtype.kind == "b":
            return f"returned an array of booleans{at}, expected numbers"
        if np.allclose(got, expected, rtol=self.rtol, atol=self.atol, equal_nan=True):
            return None
        return f"wrong values{at} (the shape is right)"


@dataclass(frozen=True)
class Check:
    """The hidden, trusted test of one graded test cell.

    function: the name of the student's function, as defined in the notebook.
    reference: the trusted implementation, called in the grading process with the same arguments.
    cases: `cases(rng)` yields the calls (`call(...)`) for one grading run, drawn from `rng`. An
        argument that must be a NumPy Generator is `Rng(seed)` (a seed drawn from `rng`): both sides
        call with `np.random.default_rng(seed)`, and the generator's state after the call must match.
    unchanged_args: the student's function must leave its arguments exactly as they were. The harness
        judges the argument objects it passed (kept in a tuple the function cannot rebind), not whatever
        its argument list holds after the call, and sends back each one's digest (`wire.digest`), so that
        a large argument costs the cell's output nothing.
    written_args: the positions (from 0) of the arguments the function must write in place, as an
        exercise that fills a cache asks: after the call, each of those argument objects must hold
        exactly what the reference left in its own copy (compared by digest, as `unchanged_args`
        compares); a function that writes into a copy, or does not write, fails. With `unchanged_args`,
        every other argument must be left as it was.
    compare: `compare(expected, got)` returns None when they match, else a one-line message.
    replace_globals: {name: function} for an exercise whose function calls another graded function
        of the notebook (attention calling softmax). During each hidden call, the global `name` that
        the student's function sees (for a function defined in the notebook, the notebook's) is this
        trusted function, and afterwards it is put back as it was, so that a mistake in the other
        exercise costs only that exercise's points. The function's source is sent to the kernel and
        defined there with only `np` (NumPy) and the builtins in scope: a plain module-level `def`.
    tensors: the student's function takes and returns PyTorch tensors (an optional lesson's exercise).
        The grading process stays NumPy-only: `cases` draws NumPy arrays and `reference` is NumPy
        code. In the kernel, the harness passes each array argument as a tensor (`torch.from_numpy`,
        same dtype and shape), and sends back each tensor in the result, and in the arguments after
        the call, as a NumPy array; a NumPy array returned where a tensor belongs is not accepted.
        torch is imported in the kernel only when a check of the run sets this.
    strict_floats: the exercise forbids floating-point warnings (log(0), overflow, 0 * inf), as visible
        checks do with `np.errstate(...="raise")`. The harness calls the student's function under
        `numpy.errstate(divide="raise", over="raise", invalid="raise")` as captured before any student
        code ran, so such a warning fails the call (raised FloatingPointError) instead of reaching
        stderr, where the course's IgnorePattern would drop it. Underflow is not an error. A call that
        changes NumPy's error settings itself (`errstate`, `seterr`, `seterrcall`, however referenced,
        NumPy's context variable, a saved context), starts a thread or forks fails too; NumPy's own
        functions that use `errstate` inside (`np.ma`, `np.isclose`) are allowed.
    fixed_inputs: `cases` draws nothing from rng because the calls cannot change from run to run: a
        quiz, whose function reports the student's answers and whose reference holds the key. Every
        other check must send fresh inputs in every run (the trusted checks' unit tests check both).
    """

    function: str
    reference: Callable[..., Any]
    cases: Callable[[np.random.Generator], Iterable[Case]]
    unchanged_args: bool = False
    written_args: tuple[int, ...] = ()
    compare: Callable[[Any, Any], str | None] = Same()
    replace_globals: dict[str, Callable[..., Any]] = field(default_factory=dict, hash=False)
    tensors: bool = False
    strict_floats: bool = False
    fixed_inputs: bool = False

    def __post_init__(self) -> None:
        if not self.function.isidentifier():
            raise SpecError(f"Check.function must be a Python name, got {self.function!r}")
        for name, definition in self.replace_globals.items():
            _kernel_source(name, definition)  # a SpecError now, when the spec loads, rather than at grading
        if any(not isinstance(k, int) or k < 0 for k in self.written_args):
            raise SpecError(f"Check.written_args must be argument positions (ints >= 0), got {self.written_args!r}")

    @property
    def keeps_args(self) -> bool:
        """Whether the kernel sends back each argument's digest after the call (unchanged or written args)."""
        return self.unchanged_args or bool(self.written_args)

    def expected(self, case: Case) -> Any:
        """The reference's outcome for `case`: its result, or `Raised` for a case that must raise."""
        return self.outcome(case)[0]

    def outcome(self, case: Case) -> tuple[Any, tuple[dict, ...]]:
        """The reference's outcome for `case`, and the state it left each `Rng` argument's generator in.

        Each `Rng(seed)` in the arguments reaches the reference as `np.random.default_rng(seed)`,
        as it reaches the student's function in the kernel; the states, in the order the `Rng`
        appear in the arguments (positional, then keyword; nested ones depth first), are what the
        student's generators must be left in too.
        """
        generators: list[np.random.Generator] = []
        args, kwargs = _with_generators((case.args, case.kwargs), generators)
        if case.expect_raise is None:
            result = self.reference(*args, **kwargs)
        else:
            try:
                self.reference(*args, **kwargs)
            except case.expect_raise:
                result = Raised((case.expect_raise.__name__,))
            else:
                raise SpecError(f"the reference {self.function} did not raise {case.expect_raise.__name__}")
        return result, tuple(g.bit_generator.state for g in generators)

    def kernel_globals(self) -> list[list[str]]:
        """`replace_globals` as the kernel receives it: [name, the defined function's name, its source]."""
        return [[name, definition.__name__, _kernel_source(name, definition)]
                for name, definition in self.replace_globals.items()]


_KERNEL_SCOPE = frozenset({"np", "numpy", *dir(builtins)})


def _global_names(code: types.CodeType) -> set[str]:
    names = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _kernel_source(name: str, definition: Any) -> str:
    """The source that defines `definition` in the kernel, checked to need nothing but NumPy."""
    if not isinstance(name, str) or not name.isidentifier():
        raise SpecError(f"replace_globals: {name!r} is not a Python name")
    if not isinstance(definition, types.FunctionType) or definition.__closure__ is not None:
        raise SpecError(f"replace_globals[{name!r}] must be a function defined at the top of the spec")
    try:
        source = textwrap.dedent(inspect.getsource(definition))
    except (OSError, TypeError) as error:
        raise SpecError(f"replace_globals[{name!r}]: its source cannot be read ({error})") from error
    if not source.startswith("def "):
        raise SpecError(f"replace_globals[{name!r}] must be a plain `def`, without decorators")
    outside = sorted(_global_names(definition.__code__) - _KERNEL_SCOPE)
    if outside:
        raise SpecError(f"replace_globals[{name!r}] uses {', '.join(outside)}: in the kernel it sees only np")
    return source


def _with_generators(value: Any, made: list[np.random.Generator]) -> Any:
    """`value` with each `Rng` in it replaced by its generator, appended to `made` in the harness's order."""
    if isinstance(value, Rng):
        made.append(value.generator())
        return made[-1]
    if isinstance(value, tuple):
        return tuple(_with_generators(item, made) for item in value)
    if isinstance(value, list):
        return [_with_generators(item, made) for item in value]
    if isinstance(value, dict):
        return {key: _with_generators(item, made) for key, item in value.items()}
    return value


@dataclass(frozen=True)
class LessonSpec:
    lesson: str
    checks: dict[str, Check]


@functools.cache
def load_spec(lesson: str) -> LessonSpec | None:
    """The trusted spec of `lesson`, or None if the lesson has none."""
    path = checks_file(lesson)
    if not path.is_file():
        return None
    name = "lesson_checks_" + re.sub(r"\W", "_", lesson)  # a top-level name: pickling finds it in sys.modules
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # so that dataclasses and pickling in the spec find their module
    module_spec.loader.exec_module(module)
    checks = getattr(module, "CHECKS", None)
    if not isinstance(checks, dict) or not all(isinstance(c, Check) for c in checks.values()) or not checks:
        raise SpecError(f"{path} must define CHECKS, a dict from test cell grade_id to Check")
    return LessonSpec(lesson, dict(checks))


def spec_lessons() -> list[str]:
    """Every lesson that has a trusted spec."""
    return [lesson for lesson in lesson_ids() if checks_file(lesson).is_file()]


def seeded(seed: int, grade_id: str) -> np.random.Generator:
    """The generator one check draws its inputs from in one grading run."""
    return np.random.default_rng([seed, zlib.crc32(grade_id.encode())])


