"""Hypothesis strategies and comparison helpers shared by the core tests."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import settings
from hypothesis import strategies as st

from reference import ref_adaptive_average_pool, ref_average_pool

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
FLOAT16 = np.dtype(np.float16)
FLOAT32 = np.dtype(np.float32)
FLOAT64 = np.dtype(np.float64)
DTYPES = [FLOAT32, FLOAT64, FLOAT16, BFLOAT16]
DTYPE_IDS = ["float32", "float64", "float16", "bfloat16"]
LAYOUTS = ["NCHW", "NHWC"]

# Largest spatial size per rank: keeps the brute-force reference fast.
MAX_SPATIAL = {1: 9, 2: 9, 3: 6}
MAX_WINDOW = {1: 4, 2: 4, 3: 3}


def split_bounds(draw, n: int, anchor: int = 1) -> list:
    """Bounds 0 = b0 < b1 < ... = n of up to 4 random parts of range(n), the inner bounds
    rounded down to multiples of ``anchor`` (the chunk and tile partitions of the tests)."""
    cuts = draw(st.lists(st.integers(1, max(n - 1, 1)), max_size=3)) if n > 1 else []
    return [0] + sorted({c // anchor * anchor for c in cuts} - {0}) + [n]


def scaled(fraction: float):
    """@settings with a fraction of the active profile's max_examples (for the slower tests)."""
    return settings(max_examples=max(10, int(settings().max_examples * fraction)))


def to_layout(x_nchw: np.ndarray, layout: str) -> np.ndarray:
    """A channels-first array in ``layout`` (contiguous)."""
    if layout == "NCHW":
        return np.ascontiguousarray(x_nchw)
    r = x_nchw.ndim - 2
    return np.ascontiguousarray(np.transpose(x_nchw, (0,) + tuple(range(2, r + 2)) + (1,)))


def to_nchw(x: np.ndarray, layout: str) -> np.ndarray:
    if layout == "NCHW":
        return x
    r = x.ndim - 2
    return np.transpose(x, (0, x.ndim - 1) + tuple(range(1, r + 1)))


def unaligned_empty(shape, dtype) -> np.ndarray:
    """A C-contiguous array of ``shape`` whose data starts one byte past its dtype's alignment
    (a view of a byte buffer at an odd offset, as a file or network payload gives)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    buf = np.zeros(nbytes + dtype.alignment, np.uint8)
    start = (1 - buf.ctypes.data) % dtype.alignment
    a = buf[start:start + nbytes].view(dtype).reshape(shape)
    assert a.flags.c_contiguous and (dtype.alignment == 1 or not a.flags.aligned)
    return a


def make_data(seed: int, shape, dtype) -> np.ndarray:
    """Random data of ``dtype``.

    16-bit types get values k/64 with |k| <= 255 (exact in float16 and bfloat16): every window sum
    of at most 64 of them is exact in float32, so the library's only roundings are the float32
    division and the final rounding, and 1 ulp of the dtype is a rigorous tolerance.
    """
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype in (FLOAT16, BFLOAT16):
        return (rng.integers(-255, 256, size=shape) / 64.0).astype(dtype)
    kind = seed % 3
    if kind == 0:
        v = rng.standard_normal(shape)
    elif kind == 1:
        v = rng.integers(-20, 21, size=shape).astype(np.float64)
    else:
        v = rng.uniform(-1e3, 1e3, size=shape) * 10.0 ** rng.integers(-3, 4, size=shape)
    return v.astype(dtype)


def make_desc_kwargs(draw, rank, ins, allow_explicit=True, max_window=None):
    """Per-axis window parameters valid for the spatial sizes ``ins``."""
    max_window = max_window or MAX_WINDOW[rank]
    window, strides, dil, pb, pe, outs = [], [], [], [], [], []
    explicit = allow_explicit and draw(st.integers(0, 3)) == 0
    for a in range(rank):
        n = ins[a]
        k = draw(st.integers(1, max_window))
        d = draw(st.integers(1, 3)) if k > 1 else draw(st.integers(1, 2))
        s = draw(st.integers(1, 3))
        b = draw(st.integers(0, 3))
        e = draw(st.integers(0, 3))
        ek = (k - 1) * d + 1
        if not explicit and n + b + e < ek:
            # make the floor rule valid by padding the end
            e = ek - n - b
        window.append(k)
        strides.append(s)
        dil.append(d)
        pb.append(b)
        pe.append(e)
        # largest explicit output: last window start (o-1)*s - pb < in + pe
        o_max = (n + e + b - 1) // s + 1
        outs.append(draw(st.integers(1, min(o_max, 10))))
    kwargs = dict(
        window_size=tuple(window),
        strides=tuple(strides),
        start_padding=tuple(pb),
        end_padding=tuple(pe),
        dilations=tuple(dil),
        include_padding=draw(st.booleans()),
        count_overhang=draw(st.booleans()),
        divisor_override=draw(st.one_of(
            st.none(), st.none(), st.none(), st.integers(1, 12), st.integers(-5, -1))),
    )
    if explicit:
        kwargs["output_sizes"] = tuple(outs)
    return kwargs


@st.composite
def pool_cases(draw, dtypes=tuple(DTYPES), layouts=tuple(LAYOUTS), max_batch=2):
    """(x, desc kwargs, layout) for average_pool."""
    rank = draw(st.integers(1, 3))
    ins = tuple(draw(st.integers(1, MAX_SPATIAL[rank])) for _ in range(rank))
    n = draw(st.integers(1, max_batch))
    c = draw(st.integers(1, 5))
    dtype = draw(st.sampled_from(dtypes))
    layout = draw(st.sampled_from(layouts))
    kwargs = make_desc_kwargs(draw, rank, ins)
    seed = draw(st.integers(0, 2**32 - 1))
    x = to_layout(make_data(seed, (n, c) + ins, dtype), layout)
    return x, kwargs, layout


@st.composite
def adaptive_cases(draw, dtypes=tuple(DTYPES), layouts=tuple(LAYOUTS)):
    """(x, output_sizes, layout) for adaptive_average_pool (out > in allowed)."""
    rank = draw(st.integers(1, 3))
    ins = tuple(draw(st.integers(1, MAX_SPATIAL[rank])) for _ in range(rank))
    outs = tuple(draw(st.integers(1, MAX_SPATIAL[rank] + 2)) for _ in range(rank))
    n = draw(st.integers(1, 2))
    c = draw(st.integers(1, 5))
    dtype = draw(st.sampled_from(dtypes))
    layout = draw(st.sampled_from(layouts))
    seed = draw(st.integers(0, 2**32 - 1))
    x = to_layout(make_data(seed, (n, c) + ins, dtype), layout)
    return x, outs, layout


def reference_pool(x, kwargs, layout):
    """(reference, reference of |x|) in float64; the second bounds the rounding error."""
    args = dict(kwargs)
    window = args.pop("window_size")
    x64 = np.asarray(x).astype(np.float64)
    ref = ref_average_pool(x64, window, layout=layout, **args)
    ref_abs = np.abs(ref_average_pool(np.abs(x64), window, layout=layout, **args))
    return ref, ref_abs


def reference_adaptive(x, outs, layout):
    x64 = np.asarray(x).astype(np.float64)
    return (ref_adaptive_average_pool(x64, outs, layout=layout),
            ref_adaptive_average_pool(np.abs(x64), outs, layout=layout))


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in units of the last place between two 16-bit float arrays of one dtype."""
    def ordered(v):
        bits = np.ascontiguousarray(v).view(np.uint16).astype(np.int64)
        return np.where(bits & 0x8000, -(bits & 0x7FFF), bits)

    return np.abs(ordered(a) - ordered(b))


def assert_matches(got, ref, ref_abs, dtype, rtol=None):
    """``got`` (library, dtype) against the float64 reference.

    float64: |err| <= 1e-12 * sum|x| / |divisor|; float32: 1e-5 of the same (plus a tiny atol);
    float16 / bfloat16: within 1 ulp of the reference rounded to the dtype. NaN positions must
    match exactly.
    """
    dtype = np.dtype(dtype)
    got = np.asarray(got)
    assert got.dtype == dtype, (got.dtype, dtype)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    got64 = got.astype(np.float64)
    nan_got, nan_ref = np.isnan(got64), np.isnan(ref)
    assert np.array_equal(nan_got, nan_ref), (
        f"NaN positions differ: library {np.argwhere(nan_got).tolist()}, "
        f"reference {np.argwhere(nan_ref).tolist()}")
    ok = ~nan_ref
    if dtype in (FLOAT16, BFLOAT16):
        want = ref.astype(dtype)
        dist = ulp_distance(got, want)
        bad = ok & (dist > 1)
        assert not bad.any(), (
            f"{int(bad.sum())} elements more than 1 ulp off; first at "
            f"{np.argwhere(bad)[0].tolist()}: got {got64[bad][0]!r}, "
            f"want {want.astype(np.float64)[bad][0]!r} (exact {ref[bad][0]!r})")
        return
    if rtol is None:
        rtol = 1e-12 if dtype == FLOAT64 else 1e-5
    atol = 1e-300 if dtype == FLOAT64 else 1e-30
    err = np.abs(got64 - ref)
    tol = rtol * ref_abs + atol
    bad = ok & ~(err <= tol)
    assert not bad.any(), (
        f"{int(bad.sum())} elements off; first at {np.argwhere(bad)[0].tolist()}: "
        f"got {got64[bad][0]!r}, want {ref[bad][0]!r} (tol {tol[bad][0]!r})")


def assert_same(a, b):
    """Bitwise-equal values (NaN equal to NaN, +0 equal to -0)."""
    a64 = np.asarray(a).astype(np.float64)
    b64 = np.asarray(b).astype(np.float64)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a64, b64)
