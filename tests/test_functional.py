"""avgpool.functional against torch.nn.functional (CPU): avg_pool1d/2d/3d and
adaptive_avg_pool1d/2d/3d, numpy and torch inputs, float32 / float64 / bfloat16."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hypothesis import given, note  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import avgpool.functional as AF  # noqa: E402
import peers  # noqa: E402
from reference import ref_average_pool  # noqa: E402

TF = torch.nn.functional
TOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}
MAX_SIZE = {1: 10, 2: 7, 3: 5}
MAX_KERNEL = {1: 5, 2: 4, 3: 3}
POOL = {1: AF.avg_pool1d, 2: AF.avg_pool2d, 3: AF.avg_pool3d}
ADAPTIVE = {1: AF.adaptive_avg_pool1d, 2: AF.adaptive_avg_pool2d, 3: AF.adaptive_avg_pool3d}


@pytest.fixture(scope="session", autouse=True)
def _peer_report():
    yield
    peers.print_report_once()


def assert_close(got, expected, what=""):
    got = got.numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
    expected = expected.numpy() if isinstance(expected, torch.Tensor) else np.asarray(expected)
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype} != {expected.dtype}"
    tol = TOL[got.dtype]
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, equal_nan=True, err_msg=what)


def torch_pool(x, rank, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """torch's avg_pool{rank}d; avg_pool1d has no divisor_override: 2-D with a 1-row kernel then."""
    t = torch.from_numpy(np.ascontiguousarray(x))
    peers.COUNTS["torch runs"] += 1
    if rank == 1 and divisor_override is not None:
        one = lambda v: (1, v if isinstance(v, int) else v[0])  # noqa: E731
        y = TF.avg_pool2d(t.unsqueeze(-2), one(kernel),
                          None if stride is None else one(stride), (0, padding if
                          isinstance(padding, int) else padding[0]), ceil_mode,
                          count_include_pad, divisor_override)
        return y.squeeze(-2)
    kw = dict(kernel_size=kernel, stride=stride, padding=padding, ceil_mode=ceil_mode,
              count_include_pad=count_include_pad)
    if rank > 1:
        kw["divisor_override"] = divisor_override
    return getattr(TF, f"avg_pool{rank}d")(t, **kw)


def _int_or_tuple(draw, values):
    """An int or a 1-tuple (avgpool broadcasts both) when every entry is equal, else a tuple."""
    if len(set(values)) == 1:
        form = draw(st.sampled_from(["int", "tuple", "one"]))
        if form == "int":
            return values[0]
        if form == "one":
            return (values[0],)
    return tuple(values)


@st.composite
def pool_configs(draw, dtypes=(np.float32, np.float64)):
    rank = draw(st.integers(1, 3))
    kernel, stride, pad, sizes = [], [], [], []
    for _ in range(rank):
        k = draw(st.integers(1, MAX_KERNEL[rank]))
        p = draw(st.integers(0, k // 2))
        s = draw(st.integers(1, 4))
        # torch's avg_pool3d wants in >= k even with padding (test_3d_window_larger_than_input)
        n = draw(st.integers(k if rank == 3 else max(1, k - 2 * p), max(MAX_SIZE[rank], k)))
        kernel.append(k), stride.append(s), pad.append(p), sizes.append(n)
    kernel_arg = _int_or_tuple(draw, kernel)
    stride_arg = None if draw(st.integers(0, 3)) == 0 else _int_or_tuple(draw, stride)
    pad_arg = _int_or_tuple(draw, pad)
    ceil_mode = draw(st.booleans())
    cip = draw(st.booleans())
    divisor = draw(st.sampled_from([None, None, None, 1, 2, 3, 7]))
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    batched = draw(st.booleans())
    shape = ((draw(st.integers(1, 2)),) if batched else ()) + (draw(st.integers(1, 3)),) + \
        tuple(sizes)
    seed = draw(st.integers(0, 2 ** 32 - 1))
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return x, rank, kernel_arg, stride_arg, pad_arg, ceil_mode, cip, divisor


def _as_tuple(v, rank):
    if isinstance(v, int):
        return (v,) * rank
    return tuple(v) * rank if len(v) == 1 else tuple(v)


@given(pool_configs())
def test_avg_pool_vs_torch(cfg):
    x, rank, kernel, stride, padding, ceil_mode, cip, divisor = cfg
    note(f"shape={x.shape} {x.dtype} rank={rank} k={kernel} s={stride} p={padding} "
         f"ceil={ceil_mode} cip={cip} div={divisor}")
    # torch gets full-length tuples
    tk, tp = _as_tuple(kernel, rank), _as_tuple(padding, rank)
    ts = None if stride is None else _as_tuple(stride, rank)
    expected = torch_pool(x, rank, tk, ts, tp, ceil_mode, cip, divisor)
    got = POOL[rank](x, kernel, stride, padding, ceil_mode, cip, divisor)
    assert isinstance(got, np.ndarray)
    peers.COUNTS["compared: torch avg_pool (hypothesis, numpy in)"] += 1
    assert_close(got, expected)


@given(pool_configs())
def test_avg_pool_torch_tensor_in_out(cfg):
    """A torch tensor in gives a torch tensor out, equal to torch's own result."""
    x, rank, kernel, stride, padding, ceil_mode, cip, divisor = cfg
    tk, tp = _as_tuple(kernel, rank), _as_tuple(padding, rank)
    ts = None if stride is None else _as_tuple(stride, rank)
    t = torch.from_numpy(x)
    got = POOL[rank](t, kernel, stride, padding, ceil_mode, cip, divisor)
    assert isinstance(got, torch.Tensor) and got.dtype == t.dtype
    peers.COUNTS["compared: torch avg_pool (hypothesis, tensor in)"] += 1
    assert_close(got, torch_pool(x, rank, tk, ts, tp, ceil_mode, cip, divisor))


def _bf16_close(got, expected, exact, scale):
    """bfloat16 results: ``got`` (avgpool) is ``exact`` (float64 on the same bfloat16 inputs)
    rounded once, up to float32 accumulation error; torch's ``expected`` is within a bfloat16
    tolerance of it, measured against ``scale`` (the window mean of |x|: a sum that cancels makes a
    small result whose relative error is large)."""
    g = got.float().numpy().astype(np.float64)
    e = expected.float().numpy().astype(np.float64)
    exact = exact.numpy()
    scale = scale.numpy().astype(np.float64)
    assert np.all(np.abs(g - exact) <= 2 ** -8 * np.abs(exact) + 2 ** -18 * scale), (g, exact)
    assert np.all(np.abs(g - e) <= 2 ** -7 * (np.abs(e) + scale)), (g, e)


@given(pool_configs(dtypes=(np.float32,)))
def test_avg_pool_bfloat16_tensor_vs_torch(cfg):
    x, rank, kernel, stride, padding, ceil_mode, cip, divisor = cfg
    tk, tp = _as_tuple(kernel, rank), _as_tuple(padding, rank)
    ts = None if stride is None else _as_tuple(stride, rank)
    t = torch.from_numpy(x).to(torch.bfloat16)
    got = POOL[rank](t, kernel, stride, padding, ceil_mode, cip, divisor)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.bfloat16
    if rank == 1 and divisor is not None:
        expected = TF.avg_pool2d(t.unsqueeze(-2), (1, tk[0]),
                                 None if ts is None else (1, ts[0]), (0, tp[0]), ceil_mode, cip,
                                 divisor).squeeze(-2)
    elif rank == 3:
        # torch's CPU avg_pool3d has no bfloat16 kernel for this layout: its float32 result on
        # the same bfloat16 values, rounded once to bfloat16
        expected = TF.avg_pool3d(t.float(), tk, ts, tp, ceil_mode, cip,
                                 divisor_override=divisor).to(torch.bfloat16)
    else:
        kw = {} if rank == 1 else {"divisor_override": divisor}
        expected = getattr(TF, f"avg_pool{rank}d")(t, tk, ts, tp, ceil_mode, cip, **kw)
    peers.COUNTS["torch runs"] += 1
    peers.COUNTS["compared: torch avg_pool bfloat16 (hypothesis)"] += 1
    assert got.shape == expected.shape
    exact = torch_pool(t.double().numpy(), rank, tk, ts, tp, ceil_mode, cip, divisor)
    scale = POOL[rank](t.float().abs(), kernel, stride, padding, ceil_mode, cip, divisor).abs()
    _bf16_close(got, expected, exact, scale)


@st.composite
def adaptive_configs(draw, dtypes=(np.float32, np.float64)):
    rank = draw(st.integers(1, 3))
    sizes = [draw(st.integers(1, MAX_SIZE[rank])) for _ in range(rank)]
    outs = [draw(st.integers(1, MAX_SIZE[rank] + 3)) for _ in range(rank)]
    if rank > 1 and draw(st.booleans()):
        outs = [None if draw(st.booleans()) else o for o in outs]  # None keeps that size
    if len(set(outs)) == 1 and outs[0] is not None and draw(st.booleans()):
        out_arg = outs[0]
    else:
        out_arg = tuple(outs)
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    batched = draw(st.booleans())
    shape = ((draw(st.integers(1, 2)),) if batched else ()) + (draw(st.integers(1, 3)),) + \
        tuple(sizes)
    seed = draw(st.integers(0, 2 ** 32 - 1))
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return x, rank, out_arg


@given(adaptive_configs())
def test_adaptive_avg_pool_vs_torch(cfg):
    x, rank, out = cfg
    note(f"shape={x.shape} {x.dtype} out={out}")
    t = torch.from_numpy(x)
    expected = getattr(TF, f"adaptive_avg_pool{rank}d")(t, out)
    peers.COUNTS["torch runs"] += 1
    got = ADAPTIVE[rank](x, out)
    assert isinstance(got, np.ndarray)
    assert_close(got, expected)
    got_t = ADAPTIVE[rank](t, out)
    assert isinstance(got_t, torch.Tensor)
    assert_close(got_t, expected)
    peers.COUNTS["compared: torch adaptive_avg_pool (hypothesis, numpy + tensor in)"] += 1


@given(adaptive_configs(dtypes=(np.float32,)))
def test_adaptive_avg_pool_bfloat16_tensor_vs_torch(cfg):
    x, rank, out = cfg
    t = torch.from_numpy(x).to(torch.bfloat16)
    got = ADAPTIVE[rank](t, out)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.bfloat16
    expected = getattr(TF, f"adaptive_avg_pool{rank}d")(t, out)
    peers.COUNTS["torch runs"] += 1
    peers.COUNTS["compared: torch adaptive_avg_pool bfloat16 (hypothesis)"] += 1
    assert got.shape == expected.shape
    exact = getattr(TF, f"adaptive_avg_pool{rank}d")(t.double(), out)
    scale = ADAPTIVE[rank](t.float().abs(), out)
    _bf16_close(got, expected, exact, scale)


# ---------------------------------------------------------------------------------------------
# explicit cases


def seq(*shape, dtype=np.float32):
    return np.arange(1, int(np.prod(shape)) + 1, dtype=dtype).reshape(shape)


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("cip", [True, False])
def test_ceil_mode_window_starting_in_right_pad_dropped(rank, cip):
    """in 5, k 2, s 2, p 1, ceil_mode: torch drops the window that starts in the right padding."""
    x = seq(1, 1, *([5] * rank))
    got = POOL[rank](x, 2, 2, 1, True, cip)
    expected = torch_pool(x, rank, (2,) * rank, (2,) * rank, (1,) * rank, True, cip, None)
    assert got.shape == (1, 1) + (3,) * rank
    assert_close(got, expected)


def test_overhang_not_counted():
    """in 6, k 3, s 3, p 1, ceil_mode, count_include_pad: [1, 4, 3] (torch, docs/semantics.md 3b)."""
    x = seq(1, 1, 6)
    got = AF.avg_pool1d(x, 3, 3, 1, ceil_mode=True, count_include_pad=True)
    assert_close(got, np.array([[[1, 4, 3]]], np.float32))
    assert_close(got, torch_pool(x, 1, 3, 3, 1, True, True, None))


def test_stride_default_and_empty_list():
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 9)).astype(np.float32)
    expected = TF.avg_pool2d(torch.from_numpy(x), (3, 2))
    assert_close(AF.avg_pool2d(x, (3, 2)), expected)
    assert_close(AF.avg_pool2d(x, (3, 2), stride=None), expected)
    assert_close(AF.avg_pool2d(x, (3, 2), stride=[]), TF.avg_pool2d(torch.from_numpy(x), (3, 2),
                                                                   stride=[]))


def test_divisor_override_matches_reference():
    x = seq(2, 2, 5, 6, dtype=np.float64)
    got = AF.avg_pool2d(x, 3, 2, 1, True, True, divisor_override=5)
    expected = ref_average_pool(x, (3, 3), (2, 2), (1, 1), (1, 1), include_padding=True,
                                output_sizes=got.shape[2:], divisor_override=5)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert_close(got, torch_pool(x, 2, 3, 2, 1, True, True, 5))


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_unbatched_and_batched_agree(rank):
    x = np.random.default_rng(5).standard_normal((3,) + (6,) * rank).astype(np.float32)
    y = POOL[rank](x, 3, 2, 1, True, False)
    assert y.shape[0] == 3 and y.ndim == rank + 1
    assert_close(y, POOL[rank](x[None], 3, 2, 1, True, False)[0])
    assert_close(y, torch_pool(x, rank, (3,) * rank, (2,) * rank, (1,) * rank, True, False, None))
    t = torch.from_numpy(x)
    yt = POOL[rank](t, 3, 2, 1, True, False)
    assert isinstance(yt, torch.Tensor) and tuple(yt.shape) == y.shape
    a = ADAPTIVE[rank](x, 4)
    assert_close(a, getattr(TF, f"adaptive_avg_pool{rank}d")(t, 4))


@pytest.mark.parametrize("n_in,n_out", [(10, 3), (7, 7), (5, 8), (13, 1)])
def test_adaptive_section4_case11(n_in, n_out):
    x = seq(2, 3, n_in)
    assert_close(AF.adaptive_avg_pool1d(x, n_out),
                 TF.adaptive_avg_pool1d(torch.from_numpy(x), n_out))
    x2 = seq(1, 2, n_in, n_in + 1)
    assert_close(AF.adaptive_avg_pool2d(x2, (n_out, None)),
                 TF.adaptive_avg_pool2d(torch.from_numpy(x2), (n_out, None)))


def test_bfloat16_sum_differs_from_running_sum():
    """Values whose bfloat16 running sum would lose the small terms: torch and avgpool both
    accumulate in float32 and round once."""
    x = np.full((1, 1, 16), 1.0, np.float32)
    x[0, 0, 0] = 256.0
    t = torch.from_numpy(x).to(torch.bfloat16)
    got = AF.avg_pool1d(t, 16)
    expected = TF.avg_pool1d(t, 16)
    assert got.dtype == torch.bfloat16
    assert got.float().item() == expected.float().item() == pytest.approx(271 / 16, rel=2 ** -8)


# ---------------------------------------------------------------------------------------------
# errors


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_padding_larger_than_half_kernel(rank):
    x = np.zeros((1, 1) + (6,) * rank, np.float32)
    with pytest.raises(ValueError, match="padding"):
        POOL[rank](x, 3, padding=2)
    with pytest.raises(ValueError, match="padding"):
        POOL[rank](x, 2, padding=2)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        getattr(TF, f"avg_pool{rank}d")(torch.from_numpy(x), 3, padding=2)
    POOL[rank](x, 3, padding=1)  # k // 2 is allowed
    POOL[rank](x, 4, padding=2)


@pytest.mark.parametrize("rank", [2, 3])
def test_divisor_override_zero(rank):
    x = np.zeros((1, 1) + (4,) * rank, np.float32)
    with pytest.raises(ValueError, match="divisor_override"):
        POOL[rank](x, 2, divisor_override=0)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        getattr(TF, f"avg_pool{rank}d")(torch.from_numpy(x), 2, divisor_override=0)
    with pytest.raises(ValueError, match="divisor_override"):
        AF.avg_pool1d(np.zeros((1, 1, 4), np.float32), 2, divisor_override=0)


def test_tensor_requiring_grad_is_read_not_changed_and_differentiated():
    """Torch tensors go through avgpool.torch's operators: the result carries autograd (it was
    once silently detached) and the input is unchanged."""
    t = torch.arange(32, dtype=torch.float32).reshape(1, 2, 4, 4).requires_grad_()
    before = t.detach().clone()
    y = AF.avg_pool2d(t, 2)
    want = torch.nn.functional.avg_pool2d(before, 2)
    assert isinstance(y, torch.Tensor) and y.requires_grad and y.grad_fn is not None
    assert torch.equal(y, want)
    y.sum().backward()
    assert torch.equal(t.grad, torch.full((1, 2, 4, 4), 0.25))
    assert torch.equal(t.detach(), before) and t.requires_grad
