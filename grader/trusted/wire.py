"""The strict data format between the grading process and the student's kernel.

Values cross the kernel boundary as JSON objects tagged with their type, never as pickles or
code. Arrays travel as raw little-endian bytes (base64) with a dtype from a short allowlist and
their shape; Python floats travel as `float.hex()` strings, so every value, NaN included, arrives
bit for bit. The grading process decodes what the kernel sends with `decode` and
`decode_results`, which check every field and raise `Malformed` on anything unexpected: a wrong
tag, an extra key, a dtype outside the allowlist, a byte count that does not match the shape.

    {"t": "none"}                              None
    {"t": "bool", "v": true}                   bool
    {"t": "int", "v": "-12"}                   int, as a decimal string
    {"t": "float", "v": "0x1.8p+1"}            float, as float.hex()
    {"t": "complex", "re": "...", "im": "..."} complex
    {"t": "str", "v": "..."}                   str
    {"t": "list" | "tuple", "v": [value, ...]} list or tuple
    {"t": "dict", "v": [["key", value], ...]}  dict with str keys
    {"t": "array", "dtype": "<f8", "shape": [2, 3], "data": "<base64>"}   numpy.ndarray
    {"t": "scalar", "dtype": "<f8", "data": "<base64>"}                   numpy scalar
    {"t": "rng", "seed": "42"}                 numpy.random.default_rng(seed), made anew on each side (`Rng`)
    {"t": "unsupported", "type": "Foo"}        (kernel to grader only) a value of another type
    {"t": "raised", "types": ["ValueError", "Exception", ...]}  (results only) the call raised

For a check that wants its arguments left unchanged, the harness sends back, after each call, not
the arguments but each one's `digest`: the SHA-256 of its tagged value as canonical JSON text
(keys sorted, no spaces), 64 hex digits. The grader compares it with the digest of what it sent,
so a large argument costs the cell's output 64 characters.

A NumPy Generator cannot travel as data, but its seed can: the grader sends `Rng(seed)`, the
harness hands the function `default_rng(seed)` and, after the call, reports the state of every
generator it made (a results case's "rngs": the PCG64 state dicts, in the order the generators
appear in the call's arguments), and sends such a generator back as the same `rng` value.

The kernel side of this format lives in `harness.py`, which must not import this module: it
runs inside the student's kernel, from source text the grader injects.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

MIME = "application/vnd.attention-from-scratch.trusted-results+json"
FORMAT = "attention-from-scratch/trusted-results/1"

# Numeric and boolean dtypes only, in the byte order the kernel sends (little-endian).
DTYPES = frozenset({"|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8",
                    "<f2", "<f4", "<f8", "<c8", "<c16"})

# Bounds of the wire format, against a hostile kernel: part of the format, not settings (every
# trusted spec's values are far below them).
MAX_DEPTH = 32  # nesting of lists, tuples and dicts
MAX_NODES = 200_000  # tagged values in one set of results
MAX_BYTES = 256 * 2**20  # array bytes in one set of results
MAX_TEXT = 10_000  # characters of one string
MAX_NAME = 200  # characters of a type name
MAX_DIGITS = 400  # digits of one int
_INT = re.compile(rf"-?[0-9]{{1,{MAX_DIGITS}}}")
_DIGEST = re.compile(r"[0-9a-f]{64}")


class Malformed(ValueError):
    """What the kernel sent does not follow the format."""


@dataclass(frozen=True)
class Raised:
    """The student's function raised: the exception's class name and its bases', most derived first."""

    types: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.types[0]


@dataclass(frozen=True)
class Unsupported:
    """The student's function returned a value of a type the format does not carry."""

    type_name: str


@dataclass(frozen=True)
class Rng:
    """An argument that the function receives as `np.random.default_rng(seed)`, a fresh NumPy Generator.

    The grading process gives its reference a generator made from the same seed, and compares the
    state each generator is left in after the call (see `Check`), so a check also sees how much the
    function drew. An `Rng` can stand anywhere in a call's arguments.
    """

    seed: int

    def __post_init__(self) -> None:
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise TypeError(f"an Rng seed is an int >= 0, got {self.seed!r}")

    def generator(self) -> np.random.Generator:
        return np.random.default_rng(self.seed)


@dataclass(frozen=True)
class Outcome:
    """One call of the student's function: what it returned (or raised), and its arguments afterwards."""

    result: Any
    args: tuple | None  # each argument's `digest` after the call; None unless the check asked for them
    rngs: tuple = ()  # the state of each generator made from an Rng argument, after the call


# ---------------------------------------------------------------- grading process -> kernel

def encode(value: Any) -> dict:
    """A value as tagged JSON data (the grader encodes the inputs it sends to the kernel)."""
    if value is None:
        return {"t": "none"}
    if isinstance(value, bool):
        return {"t": "bool", "v": value}
    if isinstance(value, Rng):
        return {"t": "rng", "seed": str(value.seed)}
    if isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        code = _wire_dtype(array.dtype)
        return {"t": "array", "dtype": code, "shape": [int(n) for n in array.shape],
                "data": base64.b64encode(array.astype(code, copy=False).tobytes()).decode("ascii")}
    if isinstance(value, np.generic):
        code = _wire_dtype(value.dtype)
        return {"t": "scalar", "dtype": code,
                "data": base64.b64encode(np.asarray(value).astype(code).tobytes()).decode("ascii")}
    if isinstance(value, int):
        return {"t": "int", "v": str(int(value))}
    if isinstance(value, float):
        return {"t": "float", "v": float(value).hex()}
    if isinstance(value, complex):
        return {"t": "complex", "re": value.real.hex(), "im": value.imag.hex()}
    if isinstance(value, str):
        return {"t": "str", "v": str(value)}
    if isinstance(value, (list, tuple)):
        return {"t": "tuple" if isinstance(value, tuple) else "list", "v": [encode(item) for item in value]}
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TypeError("only dicts with str keys can be sent")
        return {"t": "dict", "v": [[key, encode(item)] for key, item in value.items()]}
    raise TypeError(f"cannot send a {type(value).__name__} to the kernel")


def digest(encoded: dict) -> str:
    """The SHA-256 of a tagged value (`encode`'s) as canonical JSON text: how an argument comes back."""
    return hashlib.sha256(json.dumps(encoded, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _wire_dtype(dtype: np.dtype) -> str:
    code = dtype.str if dtype.byteorder == "|" else dtype.newbyteorder("<").str
    if code not in DTYPES:
        raise TypeError(f"dtype {dtype} is not in the allowlist")
    return code


# ---------------------------------------------------------------- kernel -> grading process

class _Budget:
    def __init__(self) -> None:
        self.nodes = 0
        self.bytes = 0

    def node(self) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise Malformed("too many values")

    def spend(self, n: int) -> None:
        self.bytes += n
        if self.bytes > MAX_BYTES:
            raise Malformed("too much data")


def _keys(obj: Any, *keys: str) -> dict:
    if not isinstance(obj, dict) or set(obj) != {"t", *keys}:
        raise Malformed(f"a value must be an object with exactly the keys t, {', '.join(keys) or '-'}")
    return obj


def _text(obj: Any, limit: int) -> str:
    if not isinstance(obj, str) or len(obj) > limit:
        raise Malformed("expected a string")
    return obj


def _float(obj: Any) -> float:
    try:
        return float.fromhex(_text(obj, 40))
    except ValueError as error:
        raise Malformed("a float must be float.hex() text") from error


def _bytes(obj: Any, dtype_code: Any, count: int, budget: _Budget) -> np.ndarray:
    if dtype_code not in DTYPES:
        raise Malformed("dtype outside the allowlist")
    dtype = np.dtype(dtype_code)
    if not isinstance(obj, str):
        raise Malformed("array data must be base64 text")
    budget.spend(len(obj))
    try:
        raw = base64.b64decode(obj.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as error:
        raise Malformed("array data is not base64") from error
    if len(raw) != count * dtype.itemsize:
        raise Malformed("array data does not match its shape and dtype")
    return np.frombuffer(raw, dtype=dtype)


def decode(obj: Any, *, _budget: _Budget | None = None, _depth: int = 0) -> Any:
    """A tagged value from the kernel as a Python or NumPy value, checked field by field."""
    budget = _budget or _Budget()
    budget.node()
    if _depth > MAX_DEPTH:
        raise Malformed("too deeply nested")
    tag = obj.get("t") if isinstance(obj, dict) else None
    if tag == "none":
        _keys(obj)
        return None
    if tag == "bool":
        value = _keys(obj, "v")["v"]
        if not isinstance(value, bool):
            raise Malformed("a bool must be true or false")
        return value
    if tag == "int":
        text = _text(_keys(obj, "v")["v"], MAX_DIGITS + 1)
        if not _INT.fullmatch(text):
            raise Malformed("an int must be decimal text")
        return int(text)
    if tag == "float":
        return _float(_keys(obj, "v")["v"])
    if tag == "complex":
        _keys(obj, "re", "im")
        return complex(_float(obj["re"]), _float(obj["im"]))
    if tag == "str":
        return _text(_keys(obj, "v")["v"], MAX_TEXT)
    if tag in ("list", "tuple"):
        items = _keys(obj, "v")["v"]
        if not isinstance(items, list):
            raise Malformed("list items must be a JSON array")
        decoded = [decode(item, _budget=budget, _depth=_depth + 1) for item in items]
        return tuple(decoded) if tag == "tuple" else decoded
    if tag == "dict":
        pairs = _keys(obj, "v")["v"]
        if not isinstance(pairs, list):
            raise Malformed("dict items must be a JSON array")
        result = {}
        for pair in pairs:
            if not isinstance(pair, list) or len(pair) != 2:
                raise Malformed("dict items must be [key, value] pairs")
            key = _text(pair[0], MAX_TEXT)
            if key in result:
                raise Malformed("duplicate dict key")
            result[key] = decode(pair[1], _budget=budget, _depth=_depth + 1)
        return result
    if tag == "array":
        _keys(obj, "dtype", "shape", "data")
        shape = obj["shape"]
        if (not isinstance(shape, list) or len(shape) > 32
                or not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**40 for n in shape)):
            raise Malformed("an array shape must be a list of non-negative ints")
        count = math.prod(shape)
        if count > MAX_BYTES:
            raise Malformed("too much data")
        return _bytes(obj["data"], obj["dtype"], count, budget).reshape(shape).copy()
    if tag == "scalar":
        _keys(obj, "dtype", "data")
        return _bytes(obj["data"], obj["dtype"], 1, budget)[0]
    if tag == "unsupported":
        return Unsupported(_text(_keys(obj, "type")["type"], MAX_NAME))
    if tag == "rng":
        text = _text(_keys(obj, "seed")["seed"], MAX_DIGITS)
        if not text.isascii() or not text.isdigit():
            raise Malformed("an rng seed must be decimal text")
        return Rng(int(text))
    raise Malformed(f"unknown tag {str(tag)[:40]!r}")


def decode_outcome(obj: Any, *, n_args: int | None, budget: _Budget, n_rngs: int = 0) -> Outcome:
    expected_keys = ({"result"} if n_args is None else {"result", "args"}) | ({"rngs"} if n_rngs else set())
    if not isinstance(obj, dict) or set(obj) != expected_keys:
        raise Malformed(f"each case must have exactly the keys {sorted(expected_keys)}")
    result = obj["result"]
    if isinstance(result, dict) and result.get("t") == "raised":
        types = _keys(result, "types")["types"]
        if not isinstance(types, list) or not 1 <= len(types) <= 64:
            raise Malformed("raised types must be a non-empty list")
        decoded = Raised(tuple(_text(name, MAX_NAME) for name in types))
    else:
        decoded = decode(result, _budget=budget)
    args = None
    if n_args is not None:
        items = obj["args"]
        if not isinstance(items, list) or len(items) != n_args:
            raise Malformed("the arguments after the call do not match the call")
        if not all(isinstance(item, str) and _DIGEST.fullmatch(item) for item in items):
            raise Malformed("the arguments after the call must be digests")
        args = tuple(items)
    rngs = ()
    if n_rngs:
        items = obj["rngs"]
        if not isinstance(items, list) or len(items) != n_rngs:
            raise Malformed("the generators' states do not match the call")
        rngs = tuple(decode(item, _budget=budget) for item in items)
    return Outcome(decoded, args, rngs)


def decode_results(bundle: Any, *, token: str, check: str, n_args: Sequence[int | None],
                   n_rngs: Sequence[int] | None = None) -> list[Outcome]:
    """The outcomes of one check's calls, from the one results bundle its test cell displayed.

    `n_args[i]` is the number of positional arguments of call i when the check asked for the
    arguments' digests after the call, else None; `n_rngs[i]` the number of `Rng` in call i's arguments
    (none by default). Anything that does not match exactly is `Malformed`.
    """
    if not isinstance(bundle, dict) or set(bundle) != {"format", "token", "check", "cases"}:
        raise Malformed("a results bundle has exactly the keys format, token, check, cases")
    if bundle["format"] != FORMAT:
        raise Malformed("unknown results format")
    if bundle["token"] != token:
        raise Malformed("results from another grading run")
    if bundle["check"] != check:
        raise Malformed("results of another check")
    cases = bundle["cases"]
    if not isinstance(cases, list) or len(cases) != len(n_args):
        raise Malformed("wrong number of results")
    budget = _Budget()
    n_rngs = [0] * len(n_args) if n_rngs is None else n_rngs
    return [decode_outcome(case, n_args=n, budget=budget, n_rngs=r)
            for case, n, r in zip(cases, n_args, n_rngs, strict=True)]


def encode_calls(calls: Iterable[tuple[tuple, dict]], keep_args: bool) -> dict:
    """The payload of one check: every call's arguments, and whether to send their digests back afterwards."""
    return {"keep_args": keep_args,
            "cases": [{"args": [encode(a) for a in args], "kwargs": [[k, encode(v)] for k, v in kwargs.items()]}
                      for args, kwargs in calls]}
