"""The output cache (pyx/output_cache.h): outputs of 4 MiB and more live on 64-byte aligned
blocks that are kept for reuse after their array dies, up to AVGPOOL_OUTPUT_CACHE_BYTES.

Expected values come from the float64 references; a reused block is first filled with NaN by
the test, so an output element that a kernel left unwritten shows."""

import functools
import gc
import pickle
from concurrent.futures import ThreadPoolExecutor

import ml_dtypes
import numpy as np
import pytest

import avgpool
from avgpool import _core
from reference import ref_adaptive_average_pool, ref_average_pool, ref_scatter_backward

MIB = 1 << 20
RNG = np.random.default_rng(7)
# 3x3 s1 p1 on 2x16x256x256: an 8 MiB float32 output
X = RNG.standard_normal((2, 16, 256, 256)).astype(np.float32)
DESC = avgpool.AveragePoolingDesc((3, 3), (1, 1), (1, 1), (1, 1))


@pytest.fixture(autouse=True)
def empty_cache(monkeypatch):
    """Each test starts with nothing kept and the default limit, and leaves nothing kept."""
    monkeypatch.delenv("AVGPOOL_OUTPUT_CACHE_BYTES", raising=False)
    gc.collect()
    _core.output_cache_clear()
    yield
    gc.collect()
    _core.output_cache_clear()


def kept():
    """(blocks, bytes) kept now."""
    blocks, nbytes, _ = _core.output_cache_info()
    return blocks, nbytes


def pool(x=X, layout="NCHW"):
    return avgpool.average_pool(x, DESC, layout=layout)


def ref_pool(x=X, layout="NCHW"):
    return ref_average_pool(x, (3, 3), (1, 1), (1, 1), (1, 1), layout=layout)


@pytest.mark.one_path
def test_large_output_is_aligned_and_its_block_reused():
    y = pool()
    assert y.nbytes == 8 * MIB and y.ctypes.data % 64 == 0
    assert y.flags.c_contiguous and y.flags.writeable and not y.flags.owndata
    address = y.ctypes.data
    np.testing.assert_allclose(y, ref_pool(), rtol=1e-6, atol=1e-6)
    del y
    assert kept() == (1, 8 * MIB) and avgpool.info()["output_cache_bytes"] == 8 * MIB
    assert avgpool.info()["output_cache_limit"] == 256 * MIB  # the default
    y = pool()
    assert y.ctypes.data == address and kept() == (0, 0)


@pytest.mark.one_path
def test_small_output_is_a_plain_numpy_array():
    y = pool(X[:1, :7])  # 1.75 MiB
    assert y.flags.owndata and y.base is None
    del y
    assert kept() == (0, 0)


@pytest.mark.one_path
def test_live_array_keeps_its_block():
    y = pool()
    before = y.copy()
    z = pool(X[::-1].copy())
    assert z.ctypes.data != y.ctypes.data
    view = y[1, 3:5]
    del y
    gc.collect()
    w = pool(X[::-1].copy())  # the view holds y's block: not handed out again
    assert not np.shares_memory(w, view)
    np.testing.assert_array_equal(view, before[1, 3:5])
    assert z is not None


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_reused_block_shows_no_stale_values_windowed(layout):
    """On every kernel path: a block full of NaN from the last output, then the same call."""
    x = X if layout == "NCHW" else np.ascontiguousarray(X.transpose(0, 2, 3, 1))
    y = pool(x, layout)
    address = y.ctypes.data
    y.fill(np.nan)
    del y
    y = pool(x, layout)
    assert y.ctypes.data == address
    np.testing.assert_allclose(y, ref_pool(x, layout), rtol=1e-6, atol=1e-6)


def test_reused_block_shows_no_stale_values_adaptive_and_backward():
    y = avgpool.adaptive_average_pool(X, (100, 100))  # 2x16x100x100: below 4 MiB
    assert y.flags.owndata
    x = RNG.standard_normal((4, 64, 96, 96)).astype(np.float32)  # 9 MiB in, 4.9 MiB out
    for _ in range(2):
        y = avgpool.adaptive_average_pool(x, (70, 70))
        assert not y.flags.owndata
        np.testing.assert_allclose(y, ref_adaptive_average_pool(x, (70, 70)), rtol=1e-6,
                                   atol=1e-6)
        y.fill(np.nan)
        del y
    gy = RNG.standard_normal((1, 4, 512, 512)).astype(np.float32)
    desc = avgpool.AveragePoolingDesc((2, 2), (2, 2), (0, 0), (0, 0))
    for _ in range(2):
        gx = avgpool.average_pool_backward(gy, desc, (1, 4, 1024, 1024))  # 16 MiB
        assert not gx.flags.owndata
        np.testing.assert_allclose(gx, ref_scatter_backward(gy, (1, 4, 1024, 1024), (2, 2),
                                                            (2, 2), (0, 0)), rtol=1e-6)
        gx.fill(np.nan)
        del gx


@functools.lru_cache(maxsize=None)
def x_and_ref(dtype):
    """X in dtype and its float64 reference, once for every kernel path."""
    x = X.astype(dtype)
    return x, ref_pool(x.astype(np.float64))


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float64])
def test_other_dtypes_on_cached_blocks(dtype):
    x, ref = x_and_ref(dtype)
    tol = 1e-12 if dtype == np.float64 else 1e-2
    for _ in range(2):
        y = pool(x)
        assert y.dtype == dtype and not y.flags.owndata and y.ctypes.data % 64 == 0
        np.testing.assert_allclose(y.astype(np.float64), ref, rtol=tol, atol=tol)
        y.fill(np.nan)
        del y


@pytest.mark.one_path
def test_compiled_operator_outputs_use_the_cache():
    op = avgpool.compile_operator(DESC, X.shape, np.float32)
    y = op(X)
    address = y.ctypes.data
    del y
    assert op(X).ctypes.data == address
    g = op.backward(np.ones(op.output_shape, np.float32))
    assert not g.flags.owndata and g.ctypes.data % 64 == 0


@pytest.mark.one_path
def test_limit_bounds_what_is_kept(monkeypatch):
    ys = [pool() for _ in range(3)]
    del ys
    assert kept() == (3, 24 * MIB)
    monkeypatch.setenv("AVGPOOL_OUTPUT_CACHE_BYTES", str(20 * MIB))
    ys = [pool() for _ in range(3)]  # take all three, then give them back under 20 MiB
    del ys
    assert kept() == (2, 16 * MIB)
    monkeypatch.setenv("AVGPOOL_OUTPUT_CACHE_BYTES", str(5 * MIB))  # less than one output
    pool()  # takes one kept block; the rest, and then it, are dropped
    assert kept() == (0, 0)


@pytest.mark.one_path
def test_limit_zero_keeps_nothing(monkeypatch):
    monkeypatch.setenv("AVGPOOL_OUTPUT_CACHE_BYTES", "0")
    y = pool()
    assert y.ctypes.data % 64 == 0
    del y
    assert kept() == (0, 0)
    assert avgpool.info()["output_cache_limit"] == 0


@pytest.mark.one_path
def test_kept_block_fits_a_somewhat_smaller_output_only():
    pool()  # an 8 MiB block kept
    y = pool(X[:, :15])  # 7.5 MiB: within 1/8 of the block
    assert kept() == (0, 0)
    del y
    y = pool(X[:, :9])  # 4.5 MiB: takes a block of its own, leaves the 8 MiB one kept
    assert kept() == (1, 8 * MIB)
    del y


@pytest.mark.one_path
def test_array_on_a_cached_block_behaves_as_any_array():
    y = pool()
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(y)), y)
    with pytest.raises(ValueError, match="own its data"):
        y.resize((10,))
    np.testing.assert_array_equal(y.reshape(-1)[:5], y[0, 0, 0, :5])


@pytest.mark.one_path
def test_concurrent_callers_share_the_cache():
    xs = [X[:1], X[1:]]  # two inputs, threads 0 and 2 on one, 1 and 3 on the other
    refs = [ref_pool(x) for x in xs]

    def work(i):
        for _ in range(5):
            y = pool(xs[i % 2])
            np.testing.assert_allclose(y, refs[i % 2], rtol=1e-6, atol=1e-6)
            y.fill(np.nan)
        return True

    with ThreadPoolExecutor(4) as ex:
        assert all(ex.map(work, range(4)))
    assert kept()[0] <= 8  # at most two outputs alive per thread (the last, the next)


@pytest.mark.one_path
def test_torch_tensor_keeps_its_block():
    torch = pytest.importorskip("torch")  # a torch test: CI installs torch
    t = avgpool.average_pool(torch.from_numpy(X), DESC)
    before = t.clone()
    gc.collect()
    other = pool(X[::-1].copy())
    assert other.ctypes.data != t.data_ptr()
    torch.testing.assert_close(t, before, rtol=0, atol=0)
    del t
    gc.collect()
    assert kept() == (1, 8 * MIB)


@pytest.mark.one_path
def test_tile_outputs_are_not_cached():
    """avgpool.pool_tile (what avgpool.dask runs per chunk) hands its result to a scheduler: a
    kept block would only add to a worker's peak memory."""
    expected = pool()
    y = avgpool.pool_tile(X, DESC, X.shape, [slice(0, 256), slice(0, 256)])  # all of it
    assert y.nbytes == 8 * MIB and y.flags.owndata
    np.testing.assert_array_equal(y, expected)
    del y
    assert kept() == (0, 0)
