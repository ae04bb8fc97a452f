"""avgpool.directml (AVERAGE_POOLING / AVERAGE_POOLING1) against the float64 brute-force reference
of tests/reference.py, and its equivalence with avgpool.onnx for matching attributes.

No DirectML runtime runs here (Windows / D3D12 only): the reference implements docs/semantics.md
section 1, which DirectML's descriptor maps onto field for field.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import avgpool.directml as D
import avgpool.onnx as A
import peers
from reference import ref_average_pool

TOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 2e-3, np.dtype(np.float64): 1e-12}
MAX_SIZE = {1: 10, 2: 7, 3: 5}
MAX_KERNEL = {1: 4, 2: 3, 3: 3}


@pytest.fixture(scope="session", autouse=True)
def _peer_report():
    yield
    peers.print_report_once()


def assert_matches_reference(got, x, *args, **kw):
    expected = ref_average_pool(x, *args, **kw)
    got = np.asarray(got)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == x.dtype
    tol = TOL[got.dtype]
    # float16: the inputs are exact, the result is rounded once
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=tol, atol=tol,
                               equal_nan=True)


@st.composite
def dml_configs(draw, dtypes=(np.float32, np.float16), explicit_sizes=True):
    rank = draw(st.integers(1, 3))
    use_dil = draw(st.booleans())  # AVERAGE_POOLING1
    sizes, k, s, d, pb, pe = [], [], [], [], [], []
    for _ in range(rank):
        n = draw(st.integers(1, MAX_SIZE[rank]))
        dd = draw(st.integers(1, 3)) if use_dil else 1
        b, e = draw(st.integers(0, 3)), draw(st.integers(0, 3))
        kk = draw(st.integers(1, max(1, min(MAX_KERNEL[rank], (n + b + e - 1) // dd + 1))))
        sizes.append(n), k.append(kk), s.append(draw(st.integers(1, 4))), d.append(dd)
        pb.append(b), pe.append(e)
    include = draw(st.booleans())
    outs = None
    if explicit_sizes and draw(st.booleans()):
        # any size whose windows all start before the padded end
        outs = [draw(st.integers(1, (n + b + e - 1) // ss + 1))
                for n, b, e, ss in zip(sizes, pb, pe, s)]
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 3))) + tuple(sizes)
    seed = draw(st.integers(0, 2 ** 32 - 1))
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return x, k, s, pb, pe, include, (d if use_dil else None), outs


@given(dml_configs())
def test_average_pooling_vs_reference(cfg):
    x, k, s, pb, pe, include, dil, outs = cfg
    note(f"shape={x.shape} {x.dtype} k={k} s={s} pads={pb}/{pe} include={include} dil={dil} "
         f"outs={outs}")
    got = D.average_pooling(x, k, s, pb, pe, include, dilations=dil, output_sizes=outs)
    peers.COUNTS["compared: directml vs float64 reference (hypothesis)"] += 1
    assert_matches_reference(got, x, k, s, pb, pe, dil, include_padding=include,
                             output_sizes=outs)


@given(dml_configs(dtypes=(np.float32,), explicit_sizes=False), st.booleans())
def test_average_pooling_equals_onnx(cfg, ceil):
    """DirectML fields == ONNX NOTSET attributes (floor); with ceil_mode=1, DirectML given the
    output sizes ONNX computes gives the same result (no overhang counted in either)."""
    x, k, s, pb, pe, include, dil, _ = cfg
    onnx_y = A.average_pool(x, k, strides=s, pads=pb + pe, ceil_mode=int(ceil),
                            count_include_pad=int(include), dilations=dil)
    outs = onnx_y.shape[2:] if ceil else None
    dml_y = D.average_pooling(x, k, s, pb, pe, include, dilations=dil, output_sizes=outs)
    peers.COUNTS["compared: directml vs avgpool.onnx (hypothesis)"] += 1
    assert dml_y.shape == onnx_y.shape
    np.testing.assert_array_equal(dml_y, onnx_y)  # same core, same descriptor: bit-identical


# ---------------------------------------------------------------------------------------------
# explicit cases


def seq(*shape, dtype=np.float32):
    return np.arange(1, int(np.prod(shape)) + 1, dtype=dtype).reshape(shape)


def test_docstring_example():
    x = np.ones((1, 1, 3, 3), np.float32)
    y = D.average_pooling(x, [2, 2], [1, 1], [1, 1], [0, 0], include_padding=True)
    np.testing.assert_allclose(y[0, 0], [[0.25, 0.5, 0.5], [0.5, 1, 1], [0.5, 1, 1]])


@pytest.mark.parametrize("include", [False, True])
def test_case2_corners(include):
    """1x1x5x5, k 3, s 1, pads 1: the corner divides by 4 (exclude) or 9 (include)."""
    x = seq(1, 1, 5, 5)
    y = D.average_pooling(x, [3, 3], [1, 1], [1, 1], [1, 1], include)
    assert y.shape == (1, 1, 5, 5)
    corner = (1 + 2 + 6 + 7) / (9 if include else 4)
    assert y[0, 0, 0, 0] == pytest.approx(corner, rel=1e-6)
    assert_matches_reference(y, x, [3, 3], [1, 1], [1, 1], [1, 1], include_padding=include)


@pytest.mark.parametrize("include", [False, True])
def test_case8_dilation_2_padding_1(include):
    """AVERAGE_POOLING1, 1-D and 2-D; the 1-D row of docs/semantics.md 3b: [1, 2, 3, 4, 5, 2.5]."""
    x = seq(1, 1, 6)
    y = D.average_pooling(x, [2], [1], [1], [1], include, dilations=[2])
    expected = [1, 2, 3, 4, 5, 2.5] if include else [2, 2, 3, 4, 5, 5]
    np.testing.assert_allclose(y[0, 0], expected, rtol=1e-6)
    x2 = seq(2, 3, 6, 7)
    y2 = D.average_pooling(x2, [2, 3], [1, 2], [1, 1], [1, 0], include, dilations=[2, 2])
    assert_matches_reference(y2, x2, [2, 3], [1, 2], [1, 1], [1, 0], [2, 2],
                             include_padding=include)
    np.testing.assert_array_equal(
        y2, A.average_pool(x2, [2, 3], strides=[1, 2], pads=[1, 1, 1, 0], dilations=[2, 2],
                           count_include_pad=int(include)))


def test_explicit_output_sizes_with_overhang():
    """Output sizes larger than the floor rule (a ceil rule): the overhang never counts, even
    with include_padding: in 6, k 3, s 3, pads 1/1, 3 outputs -> [1, 4, 3] (as ONNX, PyTorch)."""
    x = seq(1, 1, 6)
    y = D.average_pooling(x, [3], [3], [1], [1], True, output_sizes=[3])
    np.testing.assert_allclose(y[0, 0], [1, 4, 3], rtol=1e-6)
    assert D.average_pooling(x, [3], [3], [1], [1], True).shape == (1, 1, 2)  # floor rule
    # fewer outputs than the floor rule: a prefix of the floor result
    full = D.average_pooling(seq(1, 2, 9, 8), [2, 2], [1, 2], [0, 1], [1, 0], False)
    part = D.average_pooling(seq(1, 2, 9, 8), [2, 2], [1, 2], [0, 1], [1, 0], False,
                             output_sizes=[3, 2])
    np.testing.assert_array_equal(part, full[..., :3, :2])


def test_explicit_output_sizes_window_start_rule():
    """Every window must start before the padded end: in 5, s 2, pads 1/1 -> at most 4 outputs
    (the 4th starts at 5 = in, inside the end padding: 0 with include_padding, NaN without)."""
    x = seq(1, 1, 5)
    y = D.average_pooling(x, [2], [2], [1], [1], True, output_sizes=[4])
    np.testing.assert_allclose(y[0, 0], [0.5, 2.5, 4.5, 0], rtol=1e-6)
    y = D.average_pooling(x, [2], [2], [1], [1], False, output_sizes=[4])
    assert np.isnan(y[0, 0, 3]) and np.allclose(y[0, 0, :3], [1, 2.5, 4.5])
    with pytest.raises(ValueError):
        D.average_pooling(x, [2], [2], [1], [1], True, output_sizes=[5])  # starts at 7 >= 6
    with pytest.raises(ValueError):
        D.average_pooling(x, [2], [2], [1], [1], True, output_sizes=[0])


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_ranks_3d_4d_5d(rank):
    """DirectML takes 4-D and 5-D tensors; avgpool also 3-D."""
    x = np.random.default_rng(rank).standard_normal((2, 3) + (6,) * rank).astype(np.float32)
    k, s, p = [3] * rank, [2] * rank, [1] * rank
    for include in (False, True):
        y = D.average_pooling(x, k, s, p, p, include)
        assert y.shape == (2, 3) + (3,) * rank
        assert_matches_reference(y, x, k, s, p, p, include_padding=include)


def test_float16():
    x = (np.random.default_rng(9).standard_normal((1, 2, 7, 7)) * 8).astype(np.float16)
    y = D.average_pooling(x, [3, 3], [2, 2], [1, 1], [1, 1], True)
    assert y.dtype == np.float16
    assert_matches_reference(y, x, [3, 3], [2, 2], [1, 1], [1, 1], include_padding=True)


def test_errors():
    x = np.zeros((1, 1, 4, 4), np.float32)
    with pytest.raises(ValueError):
        D.average_pooling(x, [5, 5], [1, 1], [0, 0], [0, 0], False)  # window > padded input
    with pytest.raises(ValueError):
        D.average_pooling(x, [2], [1], [0], [0], False)  # wrong number of axes
    with pytest.raises(ValueError):
        D.average_pooling(x, [2, 2], [0, 1], [0, 0], [0, 0], False)  # stride 0
    with pytest.raises(ValueError):
        D.average_pooling(x, [2, 2], [1, 1], [0, 0], [0, 0], False, dilations=[0, 1])
