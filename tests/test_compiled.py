"""``avgpool.compile_operator``: the compiled operator returns what the plain call returns, bit
for bit (windowed and adaptive, both layouts, every dtype, 1-3-D), and the float64 reference's
values; it checks what may change between calls; several threads may call it at once; it
outlives its descriptor; it keeps the kernel path of its creation."""

import gc
import pickle
from concurrent.futures import ThreadPoolExecutor

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import avgpool
from avgpool import _core
from conftest import available_isas, using_isa
from reference import ref_adaptive_average_pool, ref_average_pool

DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16]
TOL = {np.float32: 3e-5, np.float64: 1e-12, np.float16: 2e-3, ml_dtypes.bfloat16: 1.6e-2}


@st.composite
def cases(draw):
    rank = draw(st.integers(1, 3))
    layout = draw(st.sampled_from(["NCHW", "NHWC"]))
    spatial = [draw(st.integers(1, 30 if rank == 1 else 11)) for _ in range(rank)]
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 20))
    shape = (n, c, *spatial) if layout == "NCHW" else (n, *spatial, c)
    if draw(st.booleans()):
        desc = avgpool.AdaptiveAveragePoolingDesc(
            [draw(st.integers(1, s + 2)) for s in spatial])
    else:
        pb = [draw(st.integers(0, 2)) for _ in range(rank)]
        pe = [draw(st.integers(0, 2)) for _ in range(rank)]
        k = [draw(st.integers(1, s + a + b)) for s, a, b in zip(spatial, pb, pe)]
        desc = avgpool.AveragePoolingDesc(k, [draw(st.integers(1, 3)) for _ in range(rank)],
                                          pb, pe, include_padding=draw(st.booleans()))
    return desc, shape, layout, draw(st.sampled_from(DTYPES)), draw(st.integers(0, 2**32 - 1))


def _plain(desc, x, layout, **kw):
    if isinstance(desc, avgpool.AdaptiveAveragePoolingDesc):
        return avgpool.adaptive_average_pool(x, desc, layout=layout, **kw)
    return avgpool.average_pool(x, desc, layout=layout, **kw)


def _reference(desc, x, layout):
    x = x.astype(np.float64)
    if isinstance(desc, avgpool.AdaptiveAveragePoolingDesc):
        return ref_adaptive_average_pool(x, desc.output_sizes, layout=layout)
    return ref_average_pool(x, desc.window_size, desc.strides, desc.start_padding,
                            desc.end_padding, desc.dilations, include_padding=desc.include_padding,
                            layout=layout)


@settings(max_examples=60, deadline=None)
@given(case=cases())
def test_operator_equals_the_plain_call_and_the_reference(case):
    desc, shape, layout, dtype, seed = case
    try:
        desc.output_shape(shape, layout)
    except ValueError:
        with pytest.raises(ValueError):  # the same rule, at compile time
            avgpool.compile_operator(desc, shape, dtype, layout=layout)
        return
    x = np.random.default_rng(seed).uniform(-4, 4, shape).astype(dtype)
    op = avgpool.compile_operator(desc, shape, dtype, layout=layout)
    assert op.input_shape == shape and op.layout == layout and op.dtype == np.dtype(dtype)
    want = _plain(desc, x, layout)
    assert op.output_shape == want.shape
    got = op(x)
    assert got.dtype == want.dtype
    assert got.tobytes() == want.tobytes()  # bit for bit
    out = np.full(op.output_shape, 7, dtype)
    assert op(x, out=out) is out and out.tobytes() == want.tobytes()
    np.testing.assert_allclose(got.astype(np.float64), _reference(desc, x, layout),
                               rtol=TOL[dtype], atol=TOL[dtype])


def test_sequence_of_sizes_and_repr():
    op = avgpool.compile_operator((3, 3), [2, 9, 9, 16], "float32", layout="nhwc", num_threads=1)
    assert op.output_shape == (2, 3, 3, 16) and op.layout == "NHWC" and op.num_threads == 1
    text = repr(op)
    assert "AdaptiveAveragePoolingDesc" in text and "(2, 9, 9, 16)" in text and "float32" in text
    x = np.random.default_rng(0).standard_normal((2, 9, 9, 16)).astype(np.float32)
    np.testing.assert_array_equal(op(x), avgpool.adaptive_average_pool(x, (3, 3), layout="NHWC"))
    assert op.output_layout == "NHWC" and "output_layout" not in text
    other = avgpool.compile_operator((3, 3), [2, 9, 9, 16], "float32", layout="nhwc",
                                     output_layout="nchw", num_threads=1)
    assert other.output_shape == (2, 16, 3, 3) and other.output_layout == "NCHW"
    assert "output_layout='NCHW'" in repr(other) and "-> output_shape=(2, 16, 3, 3)" in repr(other)
    np.testing.assert_array_equal(other(x), op(x).transpose(0, 3, 1, 2))


def test_call_checks():
    desc = avgpool.AveragePoolingDesc((2, 2))
    op = avgpool.compile_operator(desc, (1, 3, 6, 6), np.float32)
    x = np.ones((1, 3, 6, 6), np.float32)
    with pytest.raises(TypeError, match=r"x has dtype float64, but the operator was compiled for"):
        op(x.astype(np.float64))
    with pytest.raises(ValueError, match=r"x has shape \(1, 3, 6, 7\), but the operator"):
        op(np.ones((1, 3, 6, 7), np.float32))
    with pytest.raises(TypeError, match="x must be a numpy array or an object with"):
        op(object())
    with pytest.raises(ValueError, match=r"out has shape \(1, 3, 6, 6\), expected \(1, 3, 5, 5\)"):
        op(x, out=np.empty((1, 3, 6, 6), np.float32))
    with pytest.raises(TypeError, match="out has dtype float16, expected float32"):
        op(x, out=np.empty((1, 3, 5, 5), np.float16))
    swapped = np.dtype(np.float32).newbyteorder("S")  # the same type number as float32
    with pytest.raises(TypeError, match=f"out has dtype {swapped.str}, expected float32"):
        op(x, out=np.empty((1, 3, 5, 5), swapped))  # the plain call raises the same
    with pytest.raises(TypeError, match="out must be a numpy.ndarray, got list"):
        op(x, out=[0.0])
    with pytest.raises(ValueError, match="out must be C-contiguous"):
        op(x, out=np.empty((1, 3, 5, 10), np.float32)[..., ::2])
    ro = np.empty((1, 3, 5, 5), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="out must be writeable"):
        op(x, out=ro)
    big = np.ones(1 * 3 * 6 * 6 + 75, np.float32)
    with pytest.raises(ValueError, match="out must not overlap x"):
        op(big[:108].reshape(1, 3, 6, 6), out=big[100:175].reshape(1, 3, 5, 5))
    # a non-contiguous or byte-swapped x is copied, as the plain call does; x is never changed
    base = np.random.default_rng(1).standard_normal((1, 3, 6, 12)).astype(np.float32)
    view, before = base[..., ::2], base.copy()
    np.testing.assert_array_equal(op(view), avgpool.average_pool(view, desc))
    np.testing.assert_array_equal(base, before)
    swapped = view.astype(view.dtype.newbyteorder(">"))
    np.testing.assert_array_equal(op(swapped), avgpool.average_pool(view, desc))


def test_compile_errors():
    desc = avgpool.AveragePoolingDesc((4, 4))
    with pytest.raises(ValueError, match=r"window_size: .*spatial axis 0"):
        avgpool.compile_operator(desc, (1, 1, 3, 8), np.float32)
    with pytest.raises(ValueError, match="x/window_size: window_size has 2 entries"):
        avgpool.compile_operator(desc, (1, 1, 8), np.float32)
    with pytest.raises(TypeError, match="int32 is not supported"):
        avgpool.compile_operator(desc, (1, 1, 8, 8), np.int32)
    with pytest.raises(TypeError, match="dtype: 'nope' is not a numpy dtype"):
        avgpool.compile_operator(desc, (1, 1, 8, 8), "nope")
    with pytest.raises(TypeError, match="input_shape must hold ints"):
        avgpool.compile_operator(desc, (1, 1, 8.0, 8), np.float32)
    with pytest.raises(TypeError, match="input_shape must be a sequence of ints"):
        avgpool.compile_operator(desc, 8, np.float32)
    with pytest.raises(TypeError, match="desc must be an AveragePoolingDesc"):
        avgpool.compile_operator("2x2", (1, 1, 8, 8), np.float32)
    with pytest.raises(ValueError, match="layout must be 'NCHW'"):
        avgpool.compile_operator(desc, (1, 1, 8, 8), np.float32, layout="CHW")
    with pytest.raises(ValueError, match="output_layout must be 'NCHW'"):
        avgpool.compile_operator(desc, (1, 1, 8, 8), np.float32, output_layout="NCDHW")
    with pytest.raises(ValueError, match="output_layout must be 'NCHW'"):
        avgpool.compile_operator(desc, (1, 1, 8, 8), np.float32, output_layout=1)
    with pytest.raises(ValueError, match="num_threads"):
        avgpool.compile_operator(desc, (1, 1, 8, 8), np.float32, num_threads=0)
    with pytest.raises(TypeError, match="use avgpool.compile_operator"):
        _core.CompiledOperator()
    op = avgpool.compile_operator(desc, (1, 1, 8, 8), np.float32)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(op)


def test_threads_call_one_operator_at_once():
    desc = avgpool.AveragePoolingDesc((3, 3), (2, 2), (1, 1), (1, 1))
    op = avgpool.compile_operator(desc, (4, 32, 64, 64), np.float32, num_threads=1)
    xs = [np.random.default_rng(i).standard_normal((4, 32, 64, 64)).astype(np.float32)
          for i in range(8)]
    want = [avgpool.average_pool(x, desc, num_threads=1) for x in xs]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(op, xs * 4))
    for i, g in enumerate(got):
        assert g.tobytes() == want[i % 8].tobytes()


def test_operator_outlives_its_descriptor():
    desc = avgpool.AveragePoolingDesc((2, 2), (2, 2))
    op = avgpool.compile_operator(desc, (1, 2, 4, 4), np.float32)
    del desc
    gc.collect()
    x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    np.testing.assert_array_equal(op(x)[0, 0], [[2.5, 4.5], [10.5, 12.5]])


def test_torch_tensor_in_tensor_out():
    torch = pytest.importorskip("torch", reason="torch is a test extra")
    op = avgpool.compile_operator((2, 2), (1, 3, 8, 8), np.float32)
    t = torch.randn(1, 3, 8, 8)
    y = op(t)
    assert isinstance(y, torch.Tensor)
    torch.testing.assert_close(y, torch.nn.functional.adaptive_avg_pool2d(t, 2))


@pytest.mark.skipif(len(available_isas()) < 2, reason="one kernel path on this CPU")
def test_operator_keeps_the_path_of_its_creation():
    """Made on the scalar path, an operator gives the scalar kernels' bits after the process
    switches to SIMD (whose float32 summation order differs on this data)."""
    simd = available_isas()[-1]
    desc = avgpool.AveragePoolingDesc((5, 5))
    x = np.random.default_rng(3).uniform(-1e3, 1e3, (1, 3, 20, 23)).astype(np.float32)
    with using_isa("scalar"):
        op = avgpool.compile_operator(desc, x.shape, np.float32)
        scalar = avgpool.average_pool(x, desc)
    with using_isa(simd):
        assert op(x).tobytes() == scalar.tobytes()
        assert avgpool.average_pool(x, desc).tobytes() != scalar.tobytes()


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_backward_equals_the_plain_backward(layout):
    """op.backward is average_pool_backward / adaptive_average_pool_backward, bit for bit."""
    rng = np.random.default_rng(5)
    shape = (2, 5, 13, 11) if layout == "NCHW" else (2, 13, 11, 5)
    for desc in (avgpool.AveragePoolingDesc((3, 3), strides=(2, 1), start_padding=(1, 1),
                                            end_padding=(1, 0)),
                 avgpool.AdaptiveAveragePoolingDesc((4, 3))):
        op = avgpool.compile_operator(desc, shape, np.float32, layout=layout)
        gy = rng.standard_normal(op.output_shape).astype(np.float32)
        if isinstance(desc, avgpool.AveragePoolingDesc):
            want = avgpool.average_pool_backward(gy, desc, shape, layout=layout)
        else:
            want = avgpool.adaptive_average_pool_backward(gy, desc, shape, layout=layout)
        got = op.backward(gy)
        assert got.shape == shape and got.tobytes() == want.tobytes()
        out = np.empty(shape, np.float32)
        assert op.backward(gy, out=out) is out and out.tobytes() == want.tobytes()


def test_backward_checks_its_arguments():
    op = avgpool.compile_operator(avgpool.AveragePoolingDesc((2, 2), strides=(2, 2)),
                                  (1, 1, 4, 4), np.float32)
    with pytest.raises(ValueError, match=r"grad_out has shape \(1, 1, 4, 4\), expected the "
                                         r"operator's output_shape \(1, 1, 2, 2\)"):
        op.backward(np.zeros((1, 1, 4, 4), np.float32))
    with pytest.raises(TypeError, match="grad_out has dtype float64"):
        op.backward(np.zeros((1, 1, 2, 2)))
    with pytest.raises(ValueError, match=r"out has shape \(1, 1, 2, 2\), expected \(1, 1, 4, 4\)"):
        op.backward(np.zeros((1, 1, 2, 2), np.float32), out=np.zeros((1, 1, 2, 2), np.float32))
    buf = np.zeros(32, np.float32)
    with pytest.raises(ValueError, match="out must not overlap grad_out"):
        op.backward(buf[:4].reshape(1, 1, 2, 2), out=buf[:16].reshape(1, 1, 4, 4))
