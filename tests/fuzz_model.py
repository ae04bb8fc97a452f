"""Hypothesis fuzzing of the whole Python API: the model, the references, the input strategies
and the check shared by the tests/test_fuzz_*.py files (one per subject).

Every public entry point (the core ``AveragePoolingDesc`` / ``AdaptiveAveragePoolingDesc`` with
``average_pool`` / ``adaptive_average_pool`` and ``output_shape``, ``avgpool.onnx``,
``avgpool.openvino``, ``avgpool.directml`` and ``avgpool.functional``) is called with random
shapes (zero batch / channels, size 1, vector tails, large-but-cheap sizes, zero-batch arrays with
huge spatial sizes), ranks 1-3, dtypes (supported and not), layouts, non-contiguous / byte-swapped
/ unaligned / read-only / wrapped / torch inputs, ``out=`` buffers (valid, with guard bytes around
them, and invalid), ``num_threads`` and every attribute valid or invalid (wrong length, zero,
negative, float, bool, string, None, 2**62, 2**63, 2**64, -2**63 ...).

Each call has exactly two allowed outcomes, decided by an independent model of
docs/semantics.md (``model_*``: the core's here, each front end's in its test file):

- the call is valid: it returns an array of the model's shape and of x's dtype whose values match
  the float64 reference (``tests/reference.py`` where its brute force is cheap, else the separable
  reference below, which is checked against it); functional calls are also compared with
  ``torch.nn.functional`` and ONNX calls with ``onnx.reference``;
- the call is invalid: it raises ValueError or TypeError whose message names one of the arguments
  that break a rule.

Any other exception, a crash or hang (``faulthandler`` aborts a call that runs past
``AVGPOOL_FUZZ_HANG_S`` seconds), a modified input, bytes written next to ``out``, or a result of
the wrong type, shape, dtype or value fails. A valid call whose output would exceed
``MAX_OUT_ELEMS`` elements is not run (for the core, its ``output_shape`` is checked instead).

The bugs found so far are fixed and pinned by regression tests in tests/test_fuzz_regressions.py
(a bug found but not yet fixed goes there as a strict xfail, and the model tolerates exactly that
behaviour, saying which test pins it, so that a new bug is not hidden behind a known one).

Examples per test: ``AVGPOOL_FUZZ_EXAMPLES`` (default 150; the test ids run once per kernel
path). A long fuzz by hand, one kernel path at a time::

    AVGPOOL_FUZZ_EXAMPLES=20000 AVGPOOL_ISA=avx512 python -m pytest tests/test_fuzz_*.py -q
    AVGPOOL_FUZZ_EXAMPLES=20000 AVGPOOL_ISA=scalar python -m pytest tests/test_fuzz_core.py \\
        tests/test_fuzz_functional.py -q -p no:cacheprovider

Add ``--hypothesis-show-statistics`` for the example counts, ``--hypothesis-seed=N`` to vary
the run.
"""

from __future__ import annotations

import faulthandler
import functools
import math
import operator
import os
import re
from dataclasses import dataclass, field
from typing import Optional

import ml_dtypes
import numpy as np
from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st

from reference import ref_adaptive_average_pool, ref_average_pool
from strategies import unaligned_empty, ulp_distance

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


EXAMPLES = int(os.environ.get("AVGPOOL_FUZZ_EXAMPLES", "150"))
HANG_S = float(os.environ.get("AVGPOOL_FUZZ_HANG_S", "60"))
fuzz = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])

INT64_MAX = 2**63 - 1
BF16 = np.dtype(ml_dtypes.bfloat16)
SUPPORTED = [np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16), BF16]
UNSUPPORTED = [np.dtype(t) for t in (np.int32, np.int64, np.uint8, np.bool_, np.complex64,
                                     np.complex128, object, np.longdouble, "U2", "M8[s]")]
# A valid call whose output (or reference work) is larger than this is not run.
MAX_OUT_ELEMS = 200_000
MAX_REF_OUTPUTS = 4000  # sum over axes of the output sizes the separable reference loops over
# A valid call whose output is at least this many bytes may raise MemoryError instead.
OOM_BYTES = 2**34


# =============================================================================================
# The model: which calls are valid, and what they compute
# =============================================================================================


class Invalid(Exception):
    """The model's verdict: the call must raise ValueError / TypeError naming one of ``names``
    (every argument that breaks a rule; the library may report any of them first)."""

    def __init__(self, *names):
        super().__init__(", ".join(sorted(names)))
        self.names = set(names)


class Viol:
    """Collects the offending arguments of one call."""

    def __init__(self):
        self.names = set()

    def add(self, *names):
        self.names.update(names)

    def __bool__(self):
        return bool(self.names)

    def attempt(self, fn, *args):
        """``fn(*args)``, or None after recording its Invalid."""
        try:
            return fn(*args)
        except Invalid as e:
            self.names |= e.names
            return None


def m_int(v, name):
    """docs/semantics.md section 4 (errors): integer attributes; bools and non-integers are invalid."""
    if isinstance(v, (bool, np.bool_)):
        raise Invalid(name)
    try:
        return operator.index(v)
    except TypeError:
        raise Invalid(name) from None


def m_ints(value, name, rank=None):
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise Invalid(name)
    out = tuple(m_int(v, name) for v in value)
    if rank is not None and len(out) != rank:
        raise Invalid(name)
    return out


def m_flag(value, name):
    """A bool, or the integer 0 / 1."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    v = m_int(value, name)
    if v not in (0, 1):
        raise Invalid(name)
    return bool(v)


def m_choice(value, name, choices):
    if isinstance(value, bytes):
        value = value.decode("ascii", "replace")
    if not isinstance(value, str) or value.lower() not in choices:
        raise Invalid(name)
    return value.lower()


def cdiv(a, b):
    return -(-a // b)


@dataclass
class Axis:
    """One spatial axis of the core model (section 1), channels-first."""

    n: int
    k: int = 1
    s: int = 1
    d: int = 1
    pb: int = 0
    pe: int = 0
    out: int = 0
    include: bool = False
    overhang: bool = False
    adaptive: bool = False

    def windows(self):
        """[(valid input positions, divisor count)] per output, without looping over taps."""
        res = []
        if self.adaptive:
            for o in range(self.out):
                a, b = (o * self.n) // self.out, cdiv((o + 1) * self.n, self.out)
                res.append((np.arange(a, b), b - a))
            return res
        k, s, d, n = self.k, self.s, self.d, self.n
        # negative pads (ONNX SAME, ruling R3) crop the input: valid positions are [lo, hi)
        lo, hi = max(0, -self.pb), n + min(0, self.pe)
        for o in range(self.out):
            start = o * s - self.pb
            jlo = max(0, cdiv(lo - start, d))
            jhi = min(k - 1, (hi - 1 - start) // d)
            idx = np.arange(start + jlo * d, start + jhi * d + 1, d) if jhi >= jlo else \
                np.arange(0)
            if not self.include and self.overhang and start >= n:
                count = n - start  # OpenVINO's divisor: 0 at the input's end, negative past it
            elif not self.include:
                count = len(idx)
            elif self.overhang:
                count = k
            else:
                count = max(0, min(k, cdiv(n + self.pe - start, d)))
            res.append((idx, count))
        return res


@dataclass
class Expect:
    """A valid call: output shape (in ``layout``), the per-axis model and what to compare."""

    axes: list
    n: int
    c: int
    layout: str = "NCHW"
    override: Optional[int] = None
    may_fail: bool = False  # a product past int64 (the divisor): ValueError allowed too
    unbatched: bool = False
    numpy_too_big: bool = False  # an empty output numpy cannot represent: ValueError allowed

    @property
    def spatial_out(self):
        return tuple(a.out for a in self.axes)

    @property
    def shape(self):
        sp = self.spatial_out
        if self.layout == "NCHW":
            shape = (self.n, self.c) + sp
        else:
            shape = (self.n,) + sp + (self.c,)
        return shape[1:] if self.unbatched else shape

    @property
    def out_elems(self):
        return self.n * self.c * math.prod(self.spatial_out)

    def too_big(self):
        return (self.out_elems > MAX_OUT_ELEMS
                or (self.n * self.c > 0 and sum(self.spatial_out) > MAX_REF_OUTPUTS))

    def oom_possible(self, itemsize):
        return self.out_elems * itemsize >= OOM_BYTES

    def flag_numpy_limit(self):
        """An empty output whose other sizes overflow numpy's byte count (which depends on the
        dtype) cannot exist: a ValueError naming x (test_empty_output_numpy_cannot_hold)."""
        if self.out_elems == 0 and math.prod(e for e in self.shape if e) * 8 > INT64_MAX:
            self.numpy_too_big = True


def verdict(v: Viol, exp):
    return Invalid(*v.names) if v else exp


CORE_FIELDS = ("window_size", "strides", "start_padding", "end_padding", "dilations",
               "output_sizes")


def split_shape(v: Viol, shape, layout, rank, rank_names):
    """(n, c, spatial sizes) of an input shape, or None after recording the violation."""
    if len(shape) != rank + 2:
        v.add("x", *rank_names)
        return None
    n, c = shape[0], (shape[1] if layout == "NCHW" else shape[-1])
    sizes = tuple(shape[2:] if layout == "NCHW" else shape[1:-1])
    if any(s < 1 for s in sizes):
        v.add("x")
        return None
    return n, c, sizes


def check_counts(v: Viol, n, c, in_sizes, out_sizes, out_names, in_names=("x",)):
    """docs/semantics.md section 4 / avgpool.h: the spatial size products, and every element count times 8,
    must fit in int64."""
    def overflows(p):  # multiplied in this order (plan.c): an intermediate may overflow
        return p > INT64_MAX or p * n > INT64_MAX or p * n * c * 8 > INT64_MAX

    if overflows(math.prod(in_sizes)):
        v.add(*in_names)
    if overflows(math.prod(out_sizes)):
        v.add("x", *out_names)


def m_layout(layout):
    """The layout a ``layout`` argument names (letter case aside: docs/semantics.md), or None."""
    if isinstance(layout, str) and layout.upper() in ("NCHW", "NHWC"):
        return layout.upper()
    return None


def model_core_pool(v: Viol, shape, layout, d, names=None):
    """The core model (section 1) for the validated descriptor fields ``d`` on an input of
    ``shape``; records violations in ``v``. ``names`` maps the core fields to the caller's
    argument names (front ends)."""
    nm = {f: (f,) for f in CORE_FIELDS}
    nm.update(names or {})
    layout = m_layout(layout)
    if layout is None:
        v.add("layout")
        return None
    if d is None:
        return None
    rank = len(d["window"])
    split = split_shape(v, shape, layout, rank, nm["window_size"])
    if split is None:
        return None
    n, c, sizes = split
    check_counts(v, n, c, sizes, (), ())
    axes = []
    outs = d["outs"]
    for a in range(rank):
        k, s, dil, pb, pe = (d["window"][a], d["strides"][a], d["dil"][a], d["pb"][a],
                             d["pe"][a])
        ek = (k - 1) * dil + 1
        if sizes[a] + pb + pe > INT64_MAX:
            v.add(*nm["start_padding"], *nm["end_padding"])
            continue
        if outs is None:
            if sizes[a] + pb + pe < ek:
                v.add(*nm["window_size"], *nm["dilations"], *nm["start_padding"],
                      *nm["end_padding"])
                continue
            out = (sizes[a] + pb + pe - ek) // s + 1
        else:
            out = outs[a]
            if not d["overhang"] and (out - 1) * s - pb >= sizes[a] + pe:
                v.add(*nm["output_sizes"], *nm["strides"])
                continue
            if (out - 1) * s + ek > INT64_MAX:
                v.add(*nm["output_sizes"], *nm["strides"], *nm["window_size"])
                continue
        axes.append(Axis(sizes[a], k, s, dil, pb, pe, out, d["include"], d["overhang"]))
    if math.prod(d["window"]) > INT64_MAX:
        # the window's size (the largest divisor) must fit in int64
        v.add(*nm["window_size"])
    if v:
        return None
    exp = Expect(axes, n, c, layout, d["override"])
    check_counts(v, n, c, sizes, exp.spatial_out, CORE_FIELDS)
    exp.flag_numpy_limit()
    return None if v else exp


def model_core_adaptive(v: Viol, shape, layout, outs, rank_names=("output_sizes",)):
    layout = m_layout(layout)
    if layout is None:
        v.add("layout")
        return None
    if outs is None:
        return None
    split = split_shape(v, shape, layout, len(outs), rank_names)
    if split is None:
        return None
    n, c, sizes = split
    exp = Expect([Axis(sizes[a], out=outs[a], adaptive=True) for a in range(len(outs))], n, c,
                 layout)
    check_counts(v, n, c, sizes, outs, ("output_sizes",) + tuple(rank_names))
    exp.flag_numpy_limit()
    # window bounds are computed as ((i + 1) * in + out - 1) // out in int64, i < out: the
    # core requires out * in + out to fit
    if any(a.out * a.n + a.out > INT64_MAX for a in exp.axes):
        v.add("output_sizes", *rank_names)
    return None if v else exp


def model_desc(v: Viol, window, strides=None, start_padding=None, end_padding=None,
               dilations=None, include_padding=False, output_sizes=None, count_overhang=False,
               divisor_override=None):
    """AveragePoolingDesc(...): the validated fields, or None after recording violations."""
    start = set(v.names)
    w = v.attempt(m_ints, window, "window_size")
    if w is not None and not 1 <= len(w) <= 3:
        v.add("window_size")
        w = None
    rank = len(w) if w is not None else None

    def per_axis(value, name, default, low):
        if value is None:
            return (default,) * rank if rank else None
        vals = v.attempt(m_ints, value, name, rank)
        if vals is not None and any(e < low or e > INT64_MAX for e in vals):
            v.add(name)
            return None
        return vals

    if w is not None and any(e < 1 or e > INT64_MAX for e in w):
        v.add("window_size")
    elif w is not None and math.prod(w) > INT64_MAX:
        v.add("window_size")  # the window's size must fit in int64
    s = per_axis(strides, "strides", 1, 1)
    pb = per_axis(start_padding, "start_padding", 0, 0)
    pe = per_axis(end_padding, "end_padding", 0, 0)
    d = per_axis(dilations, "dilations", 1, 1)
    outs = None if output_sizes is None else per_axis(output_sizes, "output_sizes", 1, 1)
    override = None
    if divisor_override is not None:
        override = v.attempt(m_int, divisor_override, "divisor_override")
        if override is not None and (override == 0 or abs(override) > INT64_MAX):
            v.add("divisor_override")
    include = v.attempt(m_flag, include_padding, "include_padding")
    overhang = v.attempt(m_flag, count_overhang, "count_overhang")
    if w is not None and d is not None and len(d) == len(w):
        if any((k - 1) * dd + 1 > INT64_MAX for k, dd in zip(w, d)):
            v.add("window_size", "dilations")
    if v.names != start:
        return None
    return dict(window=w, strides=s, pb=pb, pe=pe, dil=d, include=include, outs=outs,
                overhang=overhang, override=override)


def hash_equal_to_int(e):
    """A non-integer that equals (and hashes like) an int: 2.0, True, 1+0j, numpy.float64(1)"""
    if isinstance(e, (int, np.integer)) and not isinstance(e, (bool, np.bool_)):
        return False
    try:
        i = int(getattr(e, "real", e))
        return bool(e == i) and hash(e) == hash(i)
    except (TypeError, ValueError, OverflowError):
        return False


def model_adaptive_desc(v: Viol, sizes, name="output_sizes"):
    vals = v.attempt(m_ints, sizes, name)
    if vals is None:
        return None
    if not 1 <= len(vals) <= 3 or any(e < 1 or e > INT64_MAX for e in vals):
        v.add(name)
        return None
    return vals


def model_threads(v: Viol, num_threads):
    if num_threads is None:
        return
    n = v.attempt(m_int, num_threads, "num_threads")
    if n is not None and not 1 <= n <= 65536:
        v.add("num_threads")


# =============================================================================================
# References
# =============================================================================================


def quiet(fn):
    """No numpy warnings for the inf - inf and 0 / 0 that references compute on purpose."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            return fn(*args, **kwargs)
    return wrapper


@quiet
def separable_reference(xc, exp: Expect):
    """(result, result of |x|) in float64 for a channels-first float64 ``xc``: per axis, the sum
    over each window's valid positions, then the divisor (a product of per-axis counts, or the
    override; 0 gives NaN). Exact tap arithmetic, so huge windows cost nothing."""
    results = []
    wins = [a.windows() for a in exp.axes]
    for data in (xc, np.abs(xc)):
        y = data
        for a, w in enumerate(wins):
            ax = 2 + a
            shape = list(y.shape)
            shape[ax] = len(w)
            acc = np.zeros(shape)
            for o, (idx, _) in enumerate(w):
                if len(idx):
                    sl = [slice(None)] * y.ndim
                    sl[ax] = o
                    acc[tuple(sl)] = np.take(y, idx, axis=ax).sum(axis=ax)
            y = acc
        if exp.override is not None:
            y = y / exp.override
        else:
            div = np.ones(())
            for w in wins:
                div = np.multiply.outer(div, np.array([float(cnt) for _, cnt in w]))
            with np.errstate(divide="ignore", invalid="ignore"):
                y = np.where(div == 0, np.nan, y / np.where(div == 0, 1, div))
        results.append(y)
    return results


def brute_cost(exp: Expect):
    if any(a.adaptive for a in exp.axes):
        return math.prod(cdiv(a.n, a.out) + 1 for a in exp.axes) * math.prod(exp.spatial_out)
    return math.prod(a.k for a in exp.axes) * math.prod(exp.spatial_out)


@quiet
def reference(values, exp: Expect):
    """Float64 (reference, reference of |x|) in the call's layout (and unbatched form)."""
    x64 = np.asarray(values).astype(np.float64)
    if exp.unbatched:
        x64 = x64[None]
    layout = exp.layout
    xc = x64 if layout == "NCHW" else np.moveaxis(x64, -1, 1)
    if brute_cost(exp) <= 3000 and all(a.k < 10**6 and a.s < 10**6 and 0 <= a.pb < 10**6
                                       and 0 <= a.pe < 10**6 for a in exp.axes):
        # tests/reference.py, the brute force from the definition
        if exp.axes[0].adaptive:
            outs = exp.spatial_out
            res = [ref_adaptive_average_pool(v, outs) for v in (xc, np.abs(xc))]
        else:
            kw = dict(strides=[a.s for a in exp.axes], start_padding=[a.pb for a in exp.axes],
                      end_padding=[a.pe for a in exp.axes], dilations=[a.d for a in exp.axes],
                      include_padding=exp.axes[0].include, output_sizes=exp.spatial_out,
                      count_overhang=exp.axes[0].overhang, divisor_override=exp.override)
            res = [ref_average_pool(v, [a.k for a in exp.axes], **kw) for v in (xc, np.abs(xc))]
    else:
        res = separable_reference(xc, exp)
    if layout == "NHWC":
        res = [np.moveaxis(r, 1, -1) for r in res]
    if exp.unbatched:
        res = [r[0] for r in res]
    return res


@quiet
def assert_close(got, ref, ref_abs, dtype):
    """Library result (of ``dtype``) against the float64 reference: NaN and inf where the
    reference has them; 16-bit types within 1 ulp of the rounded reference; float32 1e-5 and
    float64 1e-12 of the window's mean |x|."""
    assert got.shape == ref.shape, (got.shape, ref.shape)
    got64 = got.astype(np.float64)
    nan_g, nan_r = np.isnan(got64), np.isnan(ref)
    assert np.array_equal(nan_g, nan_r), (
        f"NaN positions differ: library {np.argwhere(nan_g).tolist()[:5]}, "
        f"reference {np.argwhere(nan_r).tolist()[:5]}")
    inf_r = np.isinf(ref)
    assert np.array_equal(got64[inf_r], ref[inf_r]), "inf positions or signs differ"
    ok = ~nan_r & ~inf_r
    if dtype in (np.dtype(np.float16), BF16):
        want = ref.astype(dtype)
        dist = ulp_distance(np.ascontiguousarray(got), want)
        bad = ok & (dist > 1)
        assert not bad.any(), (
            f"{int(bad.sum())} elements more than 1 ulp off; first at "
            f"{np.argwhere(bad)[0].tolist()}: got {got64[bad][0]!r}, want {ref[bad][0]!r}")
        return
    rtol = 1e-12 if dtype == np.dtype(np.float64) else 1e-5
    atol = 1e-300 if dtype == np.dtype(np.float64) else 1e-30
    tol = rtol * np.abs(ref_abs) + atol
    bad = ok & ~(np.abs(got64 - ref) <= tol)
    assert not bad.any(), (
        f"{int(bad.sum())} elements off; first at {np.argwhere(bad)[0].tolist()}: "
        f"got {got64[bad][0]!r}, want {ref[bad][0]!r} (tol {tol[bad][0]!r})")


# =============================================================================================
# Inputs
# =============================================================================================


class Wrapped:
    """Not an ndarray: only __array__."""

    def __init__(self, a):
        self._a = a

    def __array__(self, dtype=None, copy=None):
        return self._a if dtype is None else self._a.astype(dtype)


class DLPackOnly:
    """Not an ndarray: only __dlpack__ / __dlpack_device__."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, *args, **kwargs):
        return self._a.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class SubArray(np.ndarray):
    pass


@dataclass
class XCase:
    x: object              # what the call gets
    values: np.ndarray     # its logical values (contiguous)
    dtype: Optional[np.dtype]  # native dtype of the result, None when unsupported
    kind: str
    owners: list = field(default_factory=list)  # buffers that must stay bytewise unchanged
    snapshots: list = field(default_factory=list)
    is_torch: bool = False
    arraylike: bool = True

    def __post_init__(self):
        self.snapshots = [o.tobytes() if o.dtype != object else o.copy() for o in self.owners]

    @property
    def shape(self):
        return self.values.shape

    def assert_unchanged(self):
        for o, snap in zip(self.owners, self.snapshots):
            if o.dtype == object:
                assert all(a is b for a, b in zip(o.ravel(), snap.ravel())), "input modified"
            else:
                assert o.tobytes() == snap, "the input (or the buffer around it) was modified"


TAIL_SIZES = list(range(1, 18)) + [31, 33, 63, 65]


@st.composite
def spatial_sizes(draw, rank):
    kind = draw(st.sampled_from(["small"] * 6 + ["tail"] * 2 + ["large", "zero"]))
    if kind == "small":
        hi = {1: 12, 2: 9, 3: 6}.get(rank, 3)
        return tuple(draw(st.integers(1, hi)) for _ in range(rank))
    if kind == "tail":
        return tuple(draw(st.sampled_from(TAIL_SIZES)) if a == rank - 1 else
                     draw(st.integers(1, 4)) for a in range(rank))
    if kind == "large":  # one long axis, the others short
        big = draw(st.sampled_from([100, 257, 1000, 3001] if rank == 1 else [70, 129, 300]))
        axis = draw(st.integers(0, rank - 1))
        return tuple(big if a == axis else draw(st.integers(1, 3)) for a in range(rank))
    sizes = [draw(st.integers(1, 5)) for _ in range(rank)]
    sizes[draw(st.integers(0, rank - 1))] = 0
    return tuple(sizes)


def fill(shape, dtype, seed, specials):
    """Random values of ``dtype``; 16-bit types get k/64 (window sums exact in float32)."""
    rng = np.random.default_rng(seed)
    if dtype in (np.dtype(np.float16), BF16):
        v = rng.integers(-255, 256, size=shape) / 64.0
    else:
        kind = seed % 3
        v = (rng.standard_normal(shape) if kind == 0 else
             rng.integers(-20, 21, size=shape).astype(np.float64) if kind == 1 else
             rng.uniform(-1e3, 1e3, size=shape) * 10.0 ** rng.integers(-3, 4, size=shape))
    v = np.array(v, dtype=np.float64)
    if specials and v.size:
        flat = v.reshape(-1)
        for _ in range(int(rng.integers(1, 4))):
            flat[rng.integers(0, flat.size)] = rng.choice([np.nan, np.inf, -np.inf])
    v = np.asarray(v, dtype=np.float64)
    if dtype == np.dtype(object):
        return v.astype(object)
    if dtype.kind in "UM":
        return np.zeros(shape, dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        return v.astype(dtype)


def _perm_view(a, rng_perm):
    inv = np.argsort(rng_perm)
    return np.ascontiguousarray(a.transpose(rng_perm)).transpose(inv)


@st.composite
def x_cases(draw, rank, layout="NCHW", unbatched=False, allow_torch=True, ndim_ok=True):
    """An input for ``rank`` spatial axes (sometimes of the wrong rank / dtype / kind)."""
    ndim = rank + (1 if unbatched else 2)
    if not ndim_ok or draw(st.integers(0, 29)) == 0:
        ndim = draw(st.sampled_from([0, 1, 2, 3, 4, 5, 6]))
    sp_rank = max(0, ndim - (1 if unbatched else 2))
    hugezero = sp_rank >= 1 and draw(st.integers(0, 24)) == 0
    if hugezero:
        # zero batch with huge spatial sizes: no memory, every size check still applies
        sizes = tuple(draw(st.sampled_from([1, 7, 2**20, 2**31, 2**40])) for _ in range(sp_rank))
        c = 0 if unbatched else draw(st.sampled_from([1, 3]))  # unbatched: C is the zero
        n = 0
    else:
        sizes = draw(spatial_sizes(sp_rank)) if sp_rank >= 1 else ()
        n = draw(st.sampled_from([0, 1, 1, 1, 2, 3]))
        c = draw(st.sampled_from([0, 1, 1, 2, 3, 5, 8, 16, 17, 33]))
        while n * c * max(1, math.prod(sizes)) > 40_000 and c > 1:
            c //= 2
        while n * c * max(1, math.prod(sizes)) > 40_000 and n > 1:
            n -= 1
    if layout == "NHWC":
        full = (n,) + sizes + (c,)
    else:
        full = (n, c) + sizes
    if unbatched:
        full = full[1:]
    full = full[:ndim] if ndim < len(full) else full + (2,) * (ndim - len(full))
    bad_dtype = draw(st.integers(0, 19)) == 0
    dtype = draw(st.sampled_from(UNSUPPORTED if bad_dtype else SUPPORTED))
    if hugezero:
        try:
            values = np.empty(full, dtype)
        except (ValueError, MemoryError):
            values = np.empty((0,) * len(full), dtype)
        assert values.size == 0
        return XCase(values, values, None if bad_dtype else dtype, "hugezero", [values])
    specials = dtype.kind == "f" or dtype == BF16
    specials = specials and draw(st.integers(0, 7)) == 0
    values = fill(full, dtype, draw(st.integers(0, 2**32 - 1)), specials)
    res_dtype = None if bad_dtype else dtype
    kinds = ["contig"] * 6 + ["step", "neg", "transpose", "fortran", "readonly", "unaligned",
                              "swapped", "subclass", "wrapped", "dlpack", "list"]
    if torch is not None and allow_torch and not bad_dtype:
        kinds += ["torch", "torch_perm"]
    kind = draw(st.sampled_from(kinds))
    a = values
    if kind == "list" and values.size > 200:
        kind = "contig"
    if kind in ("swapped", "unaligned") and (dtype == object or dtype == BF16 or
                                            dtype.kind in "UM"):
        kind = "contig"
    if kind == "contig":
        x = a.copy()
        return XCase(x, values, res_dtype, kind, [x])
    if kind == "step" and a.ndim:
        ax = draw(st.integers(0, a.ndim - 1))
        shape = list(a.shape)
        shape[ax] = 2 * shape[ax] + 1
        base = fill(tuple(shape), dtype, 1, False)
        sl = [slice(None)] * a.ndim
        sl[ax] = slice(1, None, 2)
        base[tuple(sl)] = a
        return XCase(base[tuple(sl)], values, res_dtype, kind, [base])
    if kind == "neg" and a.ndim:
        ax = draw(st.integers(0, a.ndim - 1))
        base = np.flip(a, ax).copy()
        return XCase(np.flip(base, ax), values, res_dtype, kind, [base])
    if kind == "transpose" and a.ndim > 1:
        perm = tuple(draw(st.permutations(range(a.ndim))))
        x = _perm_view(a, perm)
        return XCase(x, values, res_dtype, kind, [x])
    if kind == "fortran":
        x = np.asfortranarray(a)
        return XCase(x, values, res_dtype, kind, [x])
    if kind == "readonly":
        x = a.copy()
        x.flags.writeable = False
        return XCase(x, values, res_dtype, kind, [x])
    if kind == "unaligned":
        buf = np.zeros(a.nbytes + 2, np.uint8)
        x = buf[1:1 + a.nbytes].view(a.dtype).reshape(a.shape)
        x[...] = a
        return XCase(x, values, res_dtype, kind, [buf])
    if kind == "swapped":
        x = a.astype(a.dtype.newbyteorder("S"))
        return XCase(x, values, res_dtype, kind, [x])
    if kind == "subclass":
        x = a.copy().view(SubArray)
        return XCase(x, values, res_dtype, kind, [x.view(np.ndarray)])
    if kind == "wrapped":
        x = a.copy()
        return XCase(Wrapped(x), values, res_dtype, kind, [x])
    if kind == "dlpack" and dtype in SUPPORTED[:3]:
        x = a.copy()
        return XCase(DLPackOnly(x), values, res_dtype, kind, [x])
    if kind == "list":
        return XCase(a.tolist(), values, res_dtype, kind, [], arraylike=False)
    if kind in ("torch", "torch_perm"):
        base = a.copy() if kind == "torch" or a.ndim < 2 else None
        if base is None:
            perm = tuple(draw(st.permutations(range(a.ndim))))
            base = np.ascontiguousarray(a.transpose(perm))
        t = torch.from_numpy(base.view(np.int16)).view(torch.bfloat16) if dtype == BF16 \
            else torch.from_numpy(base)
        if kind == "torch_perm" and a.ndim >= 2:
            t = t.permute(*np.argsort(perm).tolist())
        return XCase(t, values, res_dtype, kind, [base], is_torch=True)
    x = a.copy()
    return XCase(x, values, res_dtype, "contig", [x])


# ---- attribute values -------------------------------------------------------------------------

HUGE = [2**31, 2**32 + 1, 2**62, 2**63 - 1, 2**63, 2**64, 10**30]
NEGATIVE = [-1, -2, -(2**63), -(2**64)]
NOT_INT = [1.0, 2.5, float("nan"), True, False, "2", b"2", None, 1 + 0j, np.float32(2.0),
           np.array([2]), [2], object()]


@st.composite
def bool_attr(draw):
    """A flag: bool, numpy.bool_ or the integer 0 / 1; rarely anything else."""
    r = draw(st.integers(0, 99))
    if r < 5:
        return draw(st.sampled_from([2, -1, 0.5, 1.0, 0.0, np.float64(1.0), "True", None, b"1",
                                     np.array([1]), np.array([0, 1])]))
    return draw(st.sampled_from([False, True, 0, 1, np.int64(0), np.bool_(True)]))


@st.composite
def threads_attr(draw):
    r = draw(st.integers(0, 99))
    if r < 60:
        return None
    if r < 94:
        return draw(st.sampled_from([1, 2, 3, 8, np.int32(2)]))
    return draw(st.sampled_from([0, -1, 65537, 2**63, 1.5, True, "2"]))


@st.composite
def layout_attr(draw):
    r = draw(st.integers(0, 99))
    if r < 95:
        return draw(st.sampled_from(["NCHW", "NHWC", np.str_("NHWC"), "nchw", "Nhwc"]))
    return draw(st.sampled_from(["NCW", "", None, 0, b"NCHW", "NHWC ", "NDHWC"]))


def window_params(draw, sizes, allow_out=True, allow_dilation=True):
    """Mostly valid per-axis window parameters for spatial ``sizes`` (plain ints)."""
    ks, ss, ds, pbs, pes = [], [], [], [], []
    for n in sizes:
        n = max(n, 1)
        r = draw(st.integers(0, 9))
        if r < 6:
            k = draw(st.integers(1, min(4, n + 2)))
        elif r < 8:
            k = draw(st.integers(1, n))  # up to the whole axis (running sums)
        elif r < 9:
            k = draw(st.sampled_from([16, 17, 33, 64, 65])) if n >= 16 else n
        else:
            k = draw(st.sampled_from([n, n + 1, 2**40, 2**62]))
        s = draw(st.sampled_from([1, 1, 1, 2, 2, 3, 4] + ([n, 2**40] if n > 1 else [])))
        d = draw(st.sampled_from([1, 1, 1, 2, 3])) if allow_dilation and k > 1 and k < 64 else 1
        if allow_dilation and k == 1 and draw(st.integers(0, 9)) == 0:
            d = 2**62
        pb = draw(st.sampled_from([0, 0, 0, 1, 2, 3]))
        pe = draw(st.sampled_from([0, 0, 0, 1, 2, 3]))
        if k > n + 1 and draw(st.booleans()):
            pb = (k - n) // 2 if k < 2**40 else k - 1  # huge window made valid by huge padding
        ks.append(k)
        ss.append(s)
        ds.append(d)
        pbs.append(pb)
        pes.append(pe)
    return ks, ss, ds, pbs, pes


def seq_of(draw, values, p_bad=4, optional=False):
    """``values`` as a per-axis attribute, occasionally corrupted."""
    rank = len(values)
    r = draw(st.integers(0, 99))
    if r < p_bad:
        return draw(st.sampled_from([3, "11", None, 1.5, np.float64(2.0),
                                     np.ones((1, rank), np.int64)]))
    vals = list(values)
    if r < 2 * p_bad:
        choice = draw(st.integers(0, 2))
        vals = vals[:-1] if choice == 0 else vals + [1] if choice == 1 else []
    elif r < 4 * p_bad and vals:
        i = draw(st.integers(0, len(vals) - 1))
        vals[i] = draw(st.sampled_from([0] + NEGATIVE + HUGE + NOT_INT))
    elif r < 5 * p_bad and vals:
        i = draw(st.integers(0, len(vals) - 1))
        if type(vals[i]) is int and 0 <= vals[i] < 2**15:
            vals[i] = draw(st.sampled_from([np.int64, np.int32, np.uint16]))(vals[i])
    container = draw(st.sampled_from(["tuple", "tuple", "list", "array"]))
    if container == "array" and all(type(e) is int and -2**63 <= e <= INT64_MAX for e in vals):
        return np.array(vals, dtype=np.int64)
    return vals if container == "list" else tuple(vals)


# =============================================================================================
# The check
# =============================================================================================

NAME_RE = {}


def names_one_of(message, names):
    for name in names:
        pat = NAME_RE.get(name)
        if pat is None:
            pat = NAME_RE[name] = re.compile(
                rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")
        if pat.search(message):
            return True
    return False


def to_numpy(y):
    if torch is not None and isinstance(y, torch.Tensor):
        if y.dtype == torch.bfloat16:
            return y.view(torch.int16).numpy().view(BF16)
        return y.numpy()
    return y


def run_case(call, xcase: XCase, expect, extra_owners=(), out=None, out_guard=None):
    """Run ``call`` and check that its outcome is the one allowed by ``expect`` (an Expect, or
    an Invalid). Returns the result (as numpy) or None."""
    extra = [(o, o.tobytes()) for o in extra_owners]
    note(f"x: {xcase.kind} {type(xcase.x).__name__} shape {xcase.shape} dtype "
         f"{xcase.values.dtype}; model: {expect!r}")
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    try:
        got = call()
    except (ValueError, TypeError) as e:
        faulthandler.cancel_dump_traceback_later()
        xcase.assert_unchanged()
        if isinstance(expect, Invalid):
            assert names_one_of(str(e), expect.names), (
                f"{type(e).__name__} {e!r} names none of the offending arguments "
                f"{sorted(expect.names)}")
            return None
        if expect.may_fail and isinstance(e, ValueError):
            return None
        if expect.numpy_too_big and isinstance(e, ValueError):
            assert names_one_of(str(e), ["x"]), f"{e!r} does not name x"
            return None
        raise AssertionError(f"valid call raised {type(e).__name__}: {e}") from e
    except MemoryError as e:
        faulthandler.cancel_dump_traceback_later()
        xcase.assert_unchanged()
        if isinstance(expect, Expect) and expect.oom_possible(8):
            return None
        raise AssertionError(f"MemoryError: {e}") from e
    faulthandler.cancel_dump_traceback_later()
    xcase.assert_unchanged()
    for o, snap in extra:
        assert o.tobytes() == snap, "buffer modified"
    if out_guard is not None:
        buf, lo, hi, pattern = out_guard
        raw = buf.view(np.uint8)
        assert (raw[:lo] == pattern).all() and (raw[hi:] == pattern).all(), \
            "bytes written outside out"
    assert not isinstance(expect, Invalid), (
        f"invalid call (offending: {sorted(expect.names)}) returned "
        f"{type(got).__name__} {getattr(got, 'shape', '')}")
    if out is not None:
        assert got is out, "with out=, the result must be out itself"
    elif xcase.is_torch:
        assert isinstance(got, torch.Tensor), type(got)
    else:
        assert type(got) is np.ndarray, type(got)
    y = to_numpy(got)
    assert y.dtype == xcase.dtype, (y.dtype, xcase.dtype)
    assert y.shape == expect.shape, (y.shape, expect.shape)
    if not y.size:  # nothing to compare (and the windows may be astronomically many)
        return y
    # numpy results are C-contiguous; torch ones take the memory format torch gives the same
    # call (a channels-last input's pool is channels last: tests/test_torch_ops.py)
    assert xcase.is_torch or y.flags.c_contiguous
    ref, ref_abs = reference(xcase.values, expect)
    assert_close(y, ref, ref_abs, xcase.dtype)
    return y


def out_variants(draw, exp, xcase):
    """(out, guard, owners) for a valid call: None, a fresh or guarded buffer, or an invalid
    one (then ``Invalid('out')`` is the verdict); returns (out, guard, invalid)."""
    r = draw(st.integers(0, 99))
    if r < 55 or xcase.dtype is None or exp.out_elems > MAX_OUT_ELEMS or exp.numpy_too_big:
        return None, None, False
    dtype = xcase.dtype
    shape = exp.shape
    size = exp.out_elems
    if r < 80:
        pad = draw(st.sampled_from([0, 1, 7, 64]))
        buf = np.empty(size + 2 * pad, dtype)
        buf.view(np.uint8)[...] = 0xA5
        out = buf[pad:pad + size].reshape(shape)
        lo, hi = pad * dtype.itemsize, (pad + size) * dtype.itemsize
        return out, (buf, lo, hi, 0xA5), False
    bad = draw(st.sampled_from(["shape", "dtype", "fortran", "step", "readonly", "list", "x",
                                "torch", "unaligned"]))
    if bad == "shape":
        return np.empty(shape[:-1] + (shape[-1] + 1,), dtype), None, True
    if bad == "dtype":
        other = np.float64 if dtype != np.dtype(np.float64) else np.float32
        return np.empty(shape, other), None, True
    if bad == "fortran" and sum(s > 1 for s in shape) >= 2 and size:
        return np.asfortranarray(np.empty(shape, dtype)), None, True
    if bad == "step" and size > 1:
        big = np.empty(shape[:-1] + (2 * shape[-1],), dtype)
        if shape[-1] > 1:
            return big[..., ::2], None, True
    if bad == "unaligned" and dtype.alignment > 1 and size:
        return unaligned_empty(shape, dtype), None, True
    if bad == "readonly":
        out = np.empty(shape, dtype)
        out.flags.writeable = False
        return out, None, True
    if bad == "list":
        return [0.0] * size, None, True
    if bad == "torch" and torch is not None and dtype in SUPPORTED[:3]:
        return torch.from_numpy(np.empty(shape, dtype)), None, True
    if bad == "x" and isinstance(xcase.x, np.ndarray) and size:
        # a C-contiguous view of the memory x lies in (x itself, or the array a strided,
        # transposed or reversed x views): overlaps the input
        root = xcase.x
        while isinstance(root.base, np.ndarray):
            root = root.base
        if root.flags.c_contiguous and root.dtype == dtype and root.size >= size:
            out = root.reshape(-1)[:size].reshape(shape)
            if np.shares_memory(out, xcase.x):
                return out, None, True
    return None, None, False




def x_violations(v: Viol, xcase: XCase):
    """x not array-like, or of an unsupported dtype."""
    if not xcase.arraylike or xcase.dtype is None:
        v.add("x")



def spatial_of(shape, layout, rank, lead=2):
    """The spatial sizes of a shape if it has the right rank, else a stand-in."""
    if len(shape) != rank + lead:
        return (5,) * rank
    sizes = shape[lead:] if layout != "NHWC" else shape[1:-1]
    return tuple(sizes)


# Front-end argument names of the core fields (errors the core raises for a front-end call must
# name the front end's arguments: test_frontend_errors_name_core_arguments).
def front_names(mapping):
    return {core: (front,) for core, front in mapping.items()}




def small_cfg(exp):
    return all(a.k <= 64 and a.s <= 64 and a.d <= 8 and a.pb <= 64 and a.pe <= 64
               for a in exp.axes)
