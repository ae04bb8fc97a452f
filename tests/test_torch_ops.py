"""avgpool.torch against torch itself: values, gradients (gradcheck, gradgradcheck, torch's own
autograd), memory formats, torch.compile, the nn modules. Needs torch (a test extra; CI installs
the CPU build)."""

import copy

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
F = torch.nn.functional

import avgpool  # noqa: E402
import avgpool.torch as apt  # noqa: E402
from strategies import scaled  # noqa: E402

POOLS = {1: (apt.avg_pool1d, F.avg_pool1d), 2: (apt.avg_pool2d, F.avg_pool2d),
         3: (apt.avg_pool3d, F.avg_pool3d)}
ADAPTIVE = {1: (apt.adaptive_avg_pool1d, F.adaptive_avg_pool1d),
            2: (apt.adaptive_avg_pool2d, F.adaptive_avg_pool2d),
            3: (apt.adaptive_avg_pool3d, F.adaptive_avg_pool3d)}


def _channels_last(t):
    """t (N, C, *spatial) stored channels last: channels_last / channels_last_3d, or for 3-D
    tensors (N, L, C) memory."""
    r = t.dim() - 2
    perm = (0,) + tuple(range(2, r + 2)) + (1,)
    back = (0, r + 1) + tuple(range(1, r + 1))
    return t.permute(perm).contiguous().permute(back)


@st.composite
def pool_configs(draw, max_size=7):
    """(rank, input shape, torch keyword arguments) torch accepts."""
    rank = draw(st.integers(1, 3))
    ins = tuple(draw(st.integers(1, max_size)) for _ in range(rank))
    k = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    if rank == 3:  # avg_pool3d needs every input size >= the kernel (ruling R2)
        ins = tuple(max(n, kk) for n, kk in zip(ins, k))
    p = tuple(draw(st.integers(0, kk // 2)) for kk in k)
    ins = tuple(max(n, kk - 2 * pp) for n, kk, pp in zip(ins, k, p))
    kw = dict(kernel_size=k, stride=tuple(draw(st.integers(1, 3)) for _ in range(rank)),
              padding=p, ceil_mode=draw(st.booleans()), count_include_pad=draw(st.booleans()))
    if rank > 1 and draw(st.integers(0, 3)) == 0:
        kw["divisor_override"] = draw(st.integers(1, 7))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 4))) + ins
    return rank, shape, kw


@st.composite
def adaptive_configs(draw, max_size=7):
    rank = draw(st.integers(1, 3))
    ins = tuple(draw(st.integers(1, max_size)) for _ in range(rank))
    outs = tuple(draw(st.integers(1, max_size + 2)) for _ in range(rank))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 4))) + ins
    return rank, shape, outs


def _pair(rank, shape, seed, dtype, channels_last):
    """The same input twice: in dtype for avgpool, in float32 for torch (whose CPU avg_pool3d
    has no bfloat16 kernel)."""
    x = torch.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=dtype)
    if channels_last:
        x = _channels_last(x)
    return x.clone().requires_grad_(), x.detach().float().requires_grad_()


def _same_layout(a, b):
    """Equal strides on every axis of size > 1 (the stride of a size-1 axis is arbitrary: torch
    itself leaves it as it comes)."""
    return a.shape == b.shape and all(sa == sb for n, sa, sb in zip(a.shape, a.stride(),
                                                                     b.stride()) if n > 1)


def _check_against_torch(ours, theirs, x_ours, x_theirs, seed, rtol, atol, terms):
    y, want = ours(x_ours), theirs(x_theirs)
    assert y.dtype == x_ours.dtype
    assert _same_layout(y, want), (y.shape, y.stride(), want.stride())
    torch.testing.assert_close(y.float(), want, rtol=rtol, atol=atol)
    # One upstream gradient for both, in avgpool's dtype (torch's float32 gets its values).
    gy = torch.tensor(np.random.default_rng(seed + 1).standard_normal(tuple(y.shape)),
                      dtype=torch.float32).to(y.dtype)
    (gx,) = torch.autograd.grad(y, x_ours, gy)
    (gw,) = torch.autograd.grad(want, x_theirs, gy.float())
    assert _same_layout(gx, gw), (gx.shape, gx.stride(), gw.stride())
    # An input's gradient sums one term per window over it (at most `terms`), in an order each
    # library picks: float32 sums of n terms differ by up to n * eps * (the sum of their
    # magnitudes) each, so windows that overlap many times (an adaptive pool that upsamples 1
    # to 8 along three axes: 512 over one input) get that much more room. The magnitudes: the
    # same backward of |gy|, in float64.
    x64 = x_theirs.detach().double().requires_grad_()
    (gabs,) = torch.autograd.grad(theirs(x64), x64, gy.abs().double())
    bound = atol + rtol * gw.abs() + 2 * terms * torch.finfo(torch.float32).eps * gabs.float()
    err = (gx.float() - gw).abs()
    assert bool((err <= bound).all()), (float((err - bound).max()), err.max(), terms)


# --------------------------------------------------------------------------------------------
# Values, gradients and memory formats equal torch's own.


@given(pool_configs(), st.integers(0, 2**31), st.booleans(),
       st.sampled_from([torch.float32, torch.bfloat16]))
def test_avg_pool_equals_torch(config, seed, channels_last, dtype):
    rank, shape, kw = config
    ours, theirs = POOLS[rank]
    xo, xt = _pair(rank, shape, seed, dtype, channels_last)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2)
    terms = int(np.prod(kw["kernel_size"]))  # windows over one input: at most one per tap
    _check_against_torch(lambda t: ours(t, **kw), lambda t: theirs(t, **kw), xo, xt, seed,
                         terms=terms, **tol)


@given(adaptive_configs(), st.integers(0, 2**31), st.booleans(),
       st.sampled_from([torch.float32, torch.bfloat16]))
def test_adaptive_avg_pool_equals_torch(config, seed, channels_last, dtype):
    rank, shape, outs = config
    ours, theirs = ADAPTIVE[rank]
    xo, xt = _pair(rank, shape, seed, dtype, channels_last)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2)
    # windows over one input index: at most ceil(out / in) + 1 along each axis
    terms = int(np.prod([-(-o // n) + 1 for o, n in zip(outs, shape[2:])]))
    _check_against_torch(lambda t: ours(t, outs), lambda t: theirs(t, outs), xo, xt, seed,
                         terms=terms, **tol)


def test_memory_formats_as_torch_2_13():
    """The rule the property tests check case by case, spelled out: channels-last input gives
    channels-last output for 1-D / 2-D, contiguous for 3-D; gradients keep the input's format."""
    x2 = torch.randn(2, 3, 8, 8).contiguous(memory_format=torch.channels_last)
    x3 = torch.randn(2, 3, 4, 4, 4).contiguous(memory_format=torch.channels_last_3d)
    assert apt.avg_pool2d(x2, 2).is_contiguous(memory_format=torch.channels_last)
    assert apt.adaptive_avg_pool2d(x2, 3).is_contiguous(memory_format=torch.channels_last)
    assert apt.avg_pool3d(x3, 2).is_contiguous()
    assert apt.adaptive_avg_pool3d(x3, 3).is_contiguous()
    x3.requires_grad_()
    apt.avg_pool3d(x3, 2).sum().backward()
    assert x3.grad.is_contiguous(memory_format=torch.channels_last_3d)


def test_channels_last_runs_on_its_own_memory():
    """A channels-last input is not copied: the NHWC kernels read it where it is (the result
    equals a call of avgpool.average_pool with layout NHWC on the same memory)."""
    x = torch.randn(2, 5, 9, 11).contiguous(memory_format=torch.channels_last)
    y = apt.avg_pool2d(x, 3, 2, 1)
    nhwc = x.permute(0, 2, 3, 1)
    assert nhwc.is_contiguous()
    desc = avgpool.AveragePoolingDesc((3, 3), strides=(2, 2), start_padding=(1, 1),
                                      end_padding=(1, 1), include_padding=True)
    want = avgpool.average_pool(nhwc.numpy(), desc, layout="NHWC")
    assert torch.equal(y.permute(0, 2, 3, 1), torch.from_numpy(want))


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("channels_last", [False, True])
def test_gradient_stored_the_other_way(rank, channels_last):
    """A gradient stored the other way from the layout its kernel reads (contiguous for a
    channels-last result and back) is moved across by ap_relayout, not copied element by
    element; the 3-D channels-last forward's result too. Values and strides equal torch's."""
    shape = (2, 5) + (9, 11, 6)[:rank]
    x = torch.randn(shape, dtype=torch.float64)
    if channels_last:
        x = _channels_last(x)
    x.requires_grad_()
    xt = x.detach().clone().requires_grad_()
    y, yt = POOLS[rank][0](x, 3, 2, 1), POOLS[rank][1](xt, 3, 2, 1)
    assert _same_layout(y, yt)
    torch.testing.assert_close(y, yt)
    g = torch.randn(y.shape, dtype=torch.float64)
    g = g if not y.is_contiguous() else _channels_last(g)  # the other way from y
    (gx,) = torch.autograd.grad(y, x, g)
    (gw,) = torch.autograd.grad(yt, xt, g)
    assert _same_layout(gx, gw)
    torch.testing.assert_close(gx, gw)


def _gradient_of_kind(y, kind):
    """A gradient for y: dense in y's own layout, dense the other way, expanded from one value
    (what y.sum() sends back), or every other element of a larger tensor."""
    g = torch.randn(y.shape, dtype=torch.float64).to(y.dtype)
    if kind == "own":
        return torch.empty_strided(y.shape, y.stride(), dtype=y.dtype).copy_(g)
    if kind == "other":
        return g if not y.is_contiguous() else _channels_last(g)
    if kind == "expanded":
        return g.flatten()[:1].reshape((1,) * y.dim()).expand(y.shape)
    return torch.cat([g, g], dim=-1)[..., ::2]


@pytest.mark.one_path  # the route is Python's; the kernels are checked elsewhere
@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("kind", ["own", "other", "expanded", "strided"])
def test_dense_gradient_route_equals_general_route(rank, channels_last, dtype, kind, monkeypatch):
    """A gradient stored densely in its result's layout (float32, float64, float16) reaches the
    backward kernel through numpy views (_run_backward's short route); every other gradient
    through _as_layout_array. Both give the same bits and strides, and torch's values."""
    torch.manual_seed(rank)  # the inputs and gradients the same on every run
    shape = (2, 5) + (9, 11, 6)[:rank]
    x = torch.randn(shape, dtype=torch.float64).to(dtype)
    if channels_last:
        x = _channels_last(x)
    x.requires_grad_()
    xt = x.detach().double().requires_grad_()
    general = []
    as_layout = apt._as_layout_array
    monkeypatch.setattr(apt, "_as_layout_array",
                        lambda *a: general.append(1) or as_layout(*a))
    for pool, ref in ((lambda t: POOLS[rank][0](t, 3, 2, 1), lambda t: POOLS[rank][1](t, 3, 2, 1)),
                      (lambda t: ADAPTIVE[rank][0](t, 4), lambda t: ADAPTIVE[rank][1](t, 4))):
        y = pool(x)
        g = _gradient_of_kind(y, kind)
        general.clear()
        (gx,) = torch.autograd.grad(y, x, g)
        short = kind == "own" and dtype != torch.bfloat16
        assert len(general) == (0 if short else 1)
        with monkeypatch.context() as m:  # the general route for the same gradient
            m.setattr(apt, "_dense_strides", lambda *a: ())
            (want,) = torch.autograd.grad(y, x, g)
        assert len(general) == (1 if short else 2)
        assert gx.stride() == want.stride() and torch.equal(gx, want)
        (gt,) = torch.autograd.grad(ref(xt), xt, g.double())
        assert _same_layout(gx, gt)
        tol = dict(rtol=1e-5, atol=1e-6) if dtype in (torch.float32, torch.float64) else \
            dict(rtol=2e-2, atol=2e-2)
        torch.testing.assert_close(gx.double(), gt, **tol)


# --------------------------------------------------------------------------------------------
# gradcheck / gradgradcheck (float64): the backward operators against finite differences, and
# the backward's own backward (double backward).


@scaled(0.2)
@given(pool_configs(max_size=5), st.integers(0, 2**31), st.booleans())
def test_avg_pool_gradcheck(config, seed, channels_last):
    rank, shape, kw = config
    ours = POOLS[rank][0]
    x, _ = _pair(rank, shape, seed, torch.float64, channels_last)
    assert torch.autograd.gradcheck(lambda t: ours(t, **kw), (x,))
    assert torch.autograd.gradgradcheck(lambda t: ours(t, **kw), (x,))


@scaled(0.2)
@given(adaptive_configs(max_size=5), st.integers(0, 2**31), st.booleans())
def test_adaptive_gradcheck(config, seed, channels_last):
    rank, shape, outs = config
    ours = ADAPTIVE[rank][0]
    x, _ = _pair(rank, shape, seed, torch.float64, channels_last)
    assert torch.autograd.gradcheck(lambda t: ours(t, outs), (x,))
    assert torch.autograd.gradgradcheck(lambda t: ours(t, outs), (x,))


# --------------------------------------------------------------------------------------------
# functorch's transforms (torch.func), against the same transform of torch's own function.

_TRANSFORMS = {
    "grad": lambda f, x, r: torch.func.grad(lambda t: f(t).square().sum())(x),
    "vjp": lambda f, x, r: torch.func.vjp(f, x)[1](r(f(x).shape))[0],
    "jvp": lambda f, x, r: torch.func.jvp(f, (x,), (r(x.shape),))[1],
    "jacrev": lambda f, x, r: torch.func.jacrev(f)(x[:1, :1]),
    "jacfwd": lambda f, x, r: torch.func.jacfwd(f)(x[:1, :1]),
    "hessian": lambda f, x, r: torch.func.hessian(lambda t: f(t).square().sum())(x[:1, :1]),
    # per-sample gradients: each sample's own, in one call
    "vmap(grad)": lambda f, x, r: torch.func.vmap(
        torch.func.grad(lambda t: f(t[None]).square().sum()))(x),
    "vmap": lambda f, x, r: torch.func.vmap(f, in_dims=1, out_dims=1)(torch.stack([x, -2 * x], 1)),
}


@scaled(0.3)
@given(st.one_of(pool_configs(max_size=5), adaptive_configs(max_size=5)), st.integers(0, 2**31),
       st.booleans(), st.sampled_from(sorted(_TRANSFORMS)))
def test_functorch_transforms_equal_torch(config, seed, channels_last, transform):
    """torch.func.grad, vjp, jvp, jacrev, jacfwd, hessian and vmap (of grad too) through
    avgpool.torch give what they give through torch.nn.functional (float64)."""
    rank, shape, kw = config
    if isinstance(kw, dict):
        ours, theirs = (lambda t, f=f: f(t, **kw) for f in POOLS[rank])
    else:
        ours, theirs = (lambda t, f=f: f(t, kw) for f in ADAPTIVE[rank])
    x, _ = _pair(rank, shape, seed, torch.float64, channels_last)
    x = x.detach()

    def rand(shape):
        return torch.tensor(np.random.default_rng(seed + 1).standard_normal(tuple(shape)))

    got, want = (_TRANSFORMS[transform](f, x, rand) for f in (ours, theirs))
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------------------------
# Properties of the calls.


def test_input_not_modified_and_unbatched():
    x = torch.randn(3, 8, 8, requires_grad=True)
    before = x.detach().clone()
    y = apt.avg_pool2d(x, 2)
    want = F.avg_pool2d(x, 2)
    assert y.shape == want.shape == (3, 4, 4)
    torch.testing.assert_close(y, want)
    y.sum().backward()
    assert torch.equal(x.detach(), before)
    torch.testing.assert_close(x.grad, torch.full((3, 8, 8), 0.25))


def test_gradients_same_bits_for_any_thread_count(monkeypatch):
    x = torch.randn(4, 16, 33, 35, requires_grad=True)
    grads = []
    for n in ("1", "2"):
        monkeypatch.setenv("AVGPOOL_NUM_THREADS", n)
        x.grad = None
        (apt.avg_pool2d(x, 3, 2, 1).square().sum() + apt.adaptive_avg_pool2d(x, 5).sum()).backward()
        grads.append(x.grad.clone())
    assert torch.equal(grads[0], grads[1])


class _Recorder(torch.utils._python_dispatch.TorchDispatchMode):
    """Records the operators dispatched under it; runs each unchanged."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func.overloadpacket))
        return func(*args, **(kwargs or {}))


def _value_and_grad(fn, x, seed):
    y = fn(x)
    g = torch.tensor(np.random.default_rng(seed).standard_normal(tuple(y.shape)), dtype=y.dtype)
    (gx,) = torch.autograd.grad(y, x, g)
    return y, gx


@scaled(0.3)
@given(st.one_of(pool_configs(), adaptive_configs()), st.integers(0, 2**31), st.booleans(),
       st.sampled_from([torch.float32, torch.bfloat16]))
def test_eager_path_equals_operators(config, seed, channels_last, dtype):
    """Plain eager calls skip the operators' dispatch (an autograd.Function on the same kernels);
    under a dispatch mode the operators run. Values, gradients and strides are bitwise the same."""
    rank, shape, kw = config
    if isinstance(kw, dict):
        fn = lambda t: POOLS[rank][0](t, **kw)  # noqa: E731
    else:
        fn = lambda t: ADAPTIVE[rank][0](t, kw)  # noqa: E731
    x, _ = _pair(rank, shape, seed, dtype, channels_last)
    y, gx = _value_and_grad(fn, x, seed)
    assert "_EagerPool" in type(y.grad_fn).__name__
    with _Recorder() as rec:
        y_op, gx_op = _value_and_grad(fn, x, seed)
    assert any(op.startswith("avgpool.") and "backward" in op for op in rec.ops), rec.ops
    assert "_EagerPool" not in type(y_op.grad_fn).__name__
    for a, b in ((y, y_op), (gx, gx_op)):
        assert a.stride() == b.stride() and torch.equal(a, b)


class _CountGeneral:
    """Counts the calls that take the general path (avgpool.torch._run) instead of a kept
    inference plan."""

    def __init__(self, monkeypatch):
        self.calls = 0
        run = apt._run

        def counted(*args, **kwargs):
            self.calls += 1
            return run(*args, **kwargs)

        monkeypatch.setattr(apt, "_run", counted)


def _call(config):
    rank, shape, kw = config
    if isinstance(kw, dict):
        return lambda mod, t: getattr(mod, f"avg_pool{rank}d")(t, **kw)
    return lambda mod, t: getattr(mod, f"adaptive_avg_pool{rank}d")(t, kw)


@scaled(0.3)
@given(st.one_of(pool_configs(), adaptive_configs()), st.integers(0, 2**31), st.booleans(),
       st.sampled_from([torch.float32, torch.float64, torch.float16]))
def test_inference_path_equals_general_path(config, seed, channels_last, dtype):
    """A call without gradient repeated on the same sizes, strides and dtype runs the operator
    kept from the first (the inference path): its values are torch's, its strides torch's
    layout, and its bits those of the general path on the same data."""
    call = _call(config)
    rank, shape, _ = config
    rng = np.random.default_rng(seed)
    for _ in range(2):  # the first call keeps the plan (when it can), the second uses it
        x = torch.tensor(rng.standard_normal(shape), dtype=dtype)
        if channels_last:
            x = _channels_last(x)
        y, want = call(apt, x), call(F, x.float())
        assert y.dtype == dtype and _same_layout(y, want), (y.stride(), want.stride())
        tol = dict(rtol=1e-5, atol=1e-6) if dtype != torch.float16 else dict(rtol=2e-3, atol=2e-3)
        torch.testing.assert_close(y.float(), want, **tol)
    apt._inference_plans.clear()
    general = call(apt, x)
    assert general.stride() == y.stride() and torch.equal(general, y)


def test_inference_path_is_taken_only_where_it_may(monkeypatch):
    """The second no-grad call on the same sizes, strides and dtype skips the general path;
    another memory format, thread setting, dtype or argument, an input that wants a gradient,
    an unbatched input, bfloat16, or a dispatch mode takes the general path again."""
    apt._inference_plans.clear()
    count = _CountGeneral(monkeypatch)
    x = torch.randn(2, 8, 9, 9)
    cl = x.contiguous(memory_format=torch.channels_last)

    def general_calls(fn):
        before = count.calls
        y = fn()
        return count.calls - before, y

    assert general_calls(lambda: apt.avg_pool2d(x, 3, 2, 1))[0] == 1
    n, y = general_calls(lambda: apt.avg_pool2d(torch.randn(2, 8, 9, 9), 3, 2, 1))
    assert n == 0 and y.is_contiguous()
    n, y = general_calls(lambda: apt.avg_pool2d(cl, 3, 2, 1))  # another key: its strides
    assert n == 1 and y.is_contiguous(memory_format=torch.channels_last)
    n, y = general_calls(lambda: apt.avg_pool2d(cl, 3, 2, 1))
    assert n == 0 and y.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(y, F.avg_pool2d(cl, 3, 2, 1))
    assert general_calls(lambda: apt.avg_pool2d(cl, 3, 2, 0))[0] == 1  # another argument
    assert general_calls(lambda: apt.adaptive_avg_pool2d(cl, 4))[0] == 1
    assert general_calls(lambda: apt.adaptive_avg_pool2d(cl, 4))[0] == 0
    monkeypatch.setenv("AVGPOOL_NUM_THREADS", "1")
    assert general_calls(lambda: apt.avg_pool2d(cl, 3, 2, 1))[0] == 1
    monkeypatch.delenv("AVGPOOL_NUM_THREADS")
    assert general_calls(lambda: apt.avg_pool2d(cl.double(), 3, 2, 1))[0] == 1
    y = apt.avg_pool2d(cl.clone().requires_grad_(), 3, 2, 1)
    assert y.grad_fn is not None  # an autograd.Function, not the plan
    for _ in range(2):
        assert general_calls(lambda: apt.avg_pool2d(cl[0], 3, 2, 1))[0] == 1  # unbatched
        assert general_calls(lambda: apt.avg_pool2d(cl.bfloat16(), 3, 2, 1))[0] == 1
    with _Recorder() as rec:
        apt.avg_pool2d(cl, 3, 2, 1)
    assert rec.ops.count("avgpool.avg_pool") == 1


@pytest.mark.parametrize("requires_grad", [False, True])
def test_cached_arguments_are_checked_by_kind(requires_grad):
    """Arguments equal to a cached call's but of another kind (2.0 for 2, 0.0 for False) get
    the same treatment as on a first call (rejected): the caches of checked arguments and of
    inference plans never serve them."""
    x = torch.randn(2, 3, 8, 8, requires_grad=requires_grad)
    calls = [
        lambda kw: apt.avg_pool2d(x, **kw),
        lambda kw: apt.adaptive_avg_pool2d(x, **kw),
    ]
    cases = [
        (0, dict(kernel_size=2), dict(kernel_size=2.0)),
        (0, dict(kernel_size=(2, 2)), dict(kernel_size=(2, 2.0))),
        (0, dict(kernel_size=2, divisor_override=2), dict(kernel_size=2, divisor_override=2.0)),
        (0, dict(kernel_size=2, ceil_mode=False), dict(kernel_size=2, ceil_mode=0.0)),
        (1, dict(output_size=4), dict(output_size=4.0)),
        (1, dict(output_size=(4, None)), dict(output_size=(4.0, None))),
    ]

    def outcome(fn, kw):
        try:
            return fn(kw).shape
        except (TypeError, ValueError) as e:
            return type(e)

    for which, good, bad in cases:
        apt._inference_plans.clear()
        apt._pool_params_cached.cache_clear()
        apt._adaptive_sizes_cached.cache_clear()
        first = outcome(calls[which], bad)
        for _ in range(2):
            outcome(calls[which], good)
            assert outcome(calls[which], bad) == first, (good, bad)
        assert first in (TypeError, ValueError), (bad, first)


def test_operators_seen_by_tracers_and_modes():
    """What watches the dispatcher still sees avgpool's operators: a dispatch mode, make_fx's
    graph (real tensors), a double backward (through the backward operator), no-grad calls."""
    from torch.fx.experimental.proxy_tensor import make_fx

    x = torch.randn(2, 3, 9, 9, requires_grad=True)
    with _Recorder() as rec, torch.no_grad():
        apt.avg_pool2d(x, 3, 2, 1)
        apt.adaptive_avg_pool2d(x, 4)
    assert rec.ops.count("avgpool.avg_pool") == 1
    assert rec.ops.count("avgpool.adaptive_avg_pool") == 1
    graph = str(make_fx(lambda t: apt.avg_pool2d(t, 2) + 1)(x.detach()).graph)
    assert "avgpool.avg_pool" in graph
    y = apt.avg_pool2d(x, 3, 2, 1)
    (gx,) = torch.autograd.grad(y.square().sum(), x, create_graph=True)
    with _Recorder() as rec:
        (ggx,) = torch.autograd.grad(gx.sum(), x)
    xt = x.detach().clone().requires_grad_()
    (gt,) = torch.autograd.grad(F.avg_pool2d(xt, 3, 2, 1).square().sum(), xt, create_graph=True)
    torch.testing.assert_close(ggx, torch.autograd.grad(gt.sum(), xt)[0])
    assert "avgpool.avg_pool" in rec.ops


def test_cached_operators_follow_the_thread_settings(monkeypatch):
    """avgpool.torch runs cached compiled operators; a change of AVGPOOL_NUM_THREADS or of
    OpenMP's thread count (torch's, when avgpool shares torch's OpenMP runtime) between calls
    gets an operator with the new count."""
    import numpy as np

    desc = apt._pool_desc((2, 2), (2, 2), (0, 0), (4, 4), True, 0)
    for n in ("1", "2", "3"):
        monkeypatch.setenv("AVGPOOL_NUM_THREADS", n)
        op = apt._operator(desc, (1, 2, 8, 8), np.dtype(np.float32), False, False)
        assert op.num_threads == int(n)
    monkeypatch.delenv("AVGPOOL_NUM_THREADS")
    before = torch.get_num_threads()
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            op = apt._operator(desc, (1, 2, 8, 8), np.dtype(np.float32), False, False)
            assert op.num_threads == avgpool.info()["max_threads"]
            assert op.num_threads == n or not apt._shares_openmp_with_torch()
    finally:
        torch.set_num_threads(before)


def test_functional_keeps_autograd():
    """avgpool.functional with torch tensors goes through the same operators."""
    from avgpool import functional

    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    y = functional.avg_pool2d(x, 3, stride=2, padding=1)
    assert y.grad_fn is not None
    y.sum().backward()
    xt = x.detach().clone().requires_grad_()
    F.avg_pool2d(xt, 3, stride=2, padding=1).sum().backward()
    torch.testing.assert_close(x.grad, xt.grad)
    z = functional.adaptive_avg_pool1d(torch.randn(2, 3, 10, requires_grad=True), 4)
    assert z.grad_fn is not None


def test_errors():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():  # a CUDA tensor without CUDA: what a trace of a CUDA model holds
        on_gpu = torch.empty(1, 1, 4, 4, device="cuda")
        with pytest.raises(ValueError, match="avgpool runs on the CPU only"):
            apt.avg_pool2d(on_gpu, 2)
        with pytest.raises(ValueError, match="avgpool runs on the CPU only"):
            apt.adaptive_avg_pool2d(on_gpu, 2)
    with pytest.raises(TypeError, match="input must be a torch.Tensor"):
        apt.avg_pool2d(np.ones((1, 1, 4, 4), np.float32), 2)
    with pytest.raises(ValueError, match="avg_pool2d: input must be 3-D"):
        apt.avg_pool2d(torch.ones(4, 4), 2)
    with pytest.raises(ValueError, match="padding should be at most half of the kernel size"):
        apt.avg_pool2d(torch.ones(1, 1, 4, 4), 2, padding=2)
    with pytest.raises(ValueError, match=r"output_size\[0\] must be >= 1, got -1"):
        apt.adaptive_avg_pool2d(torch.ones(1, 1, 4, 4), (-1, 2))
    for output_size in [(3,), [3]]:  # torch rejects a one-entry size for 2-D too
        with pytest.raises(RuntimeError, match="output_size must be 2"):
            F.adaptive_avg_pool2d(torch.ones(1, 1, 4, 4), output_size)
        with pytest.raises(ValueError, match="output_size must be an int or a sequence of 2"):
            apt.adaptive_avg_pool2d(torch.ones(1, 1, 4, 4), output_size)
    y = apt.avg_pool2d(torch.ones(1, 1, 4, 4), (2,), [1], (1,))  # windows: broadcast, as torch
    torch.testing.assert_close(y, F.avg_pool2d(torch.ones(1, 1, 4, 4), (2,), [1], (1,)))


# --------------------------------------------------------------------------------------------
# Modules and torch.compile.


MODULES = [
    (apt.AvgPool1d, torch.nn.AvgPool1d, (3,), dict(stride=2, padding=1, ceil_mode=True), 3),
    (apt.AvgPool2d, torch.nn.AvgPool2d, (3,), dict(stride=2, padding=1,
                                                   count_include_pad=False), 4),
    (apt.AvgPool2d, torch.nn.AvgPool2d, ((2, 3),), dict(divisor_override=5), 4),
    (apt.AvgPool3d, torch.nn.AvgPool3d, (2,), dict(stride=1), 5),
    (apt.AdaptiveAvgPool1d, torch.nn.AdaptiveAvgPool1d, (4,), {}, 3),
    (apt.AdaptiveAvgPool2d, torch.nn.AdaptiveAvgPool2d, ((3, None),), {}, 4),
    (apt.AdaptiveAvgPool3d, torch.nn.AdaptiveAvgPool3d, (2,), {}, 5),
]


@pytest.mark.parametrize("ours, theirs, args, kwargs, ndim", MODULES,
                         ids=[m[1].__name__ + str(i) for i, m in enumerate(MODULES)])
def test_modules_match_torch_nn(ours, theirs, args, kwargs, ndim):
    a, b = ours(*args, **kwargs), theirs(*args, **kwargs)
    assert isinstance(a, theirs)
    assert repr(a) == repr(b)
    assert a.extra_repr() == b.extra_repr()
    x = torch.randn((2, 3, 7, 6, 5)[:ndim], requires_grad=True)
    xt = x.detach().clone().requires_grad_()
    y, want = a(x), b(xt)
    torch.testing.assert_close(y, want)
    y.sum().backward()
    want.sum().backward()
    torch.testing.assert_close(x.grad, xt.grad)


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.pool = apt.AvgPool2d(3, 2, 1)
        self.adapt = apt.AdaptiveAvgPool2d((2, 2))
        self.fc = torch.nn.Linear(32, 4)

    def forward(self, x):
        x = self.adapt(self.pool(torch.relu(self.conv(x))))
        return self.fc(torch.flatten(x, 1))


def _train_step(model, x, target):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt.zero_grad()
    loss = F.cross_entropy(model(x), target)
    loss.backward()
    opt.step()
    return loss.detach()


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_torch_compile_fullgraph_trains_like_eager(backend):
    """No graph break (fullgraph=True raises on one); one SGD step gives eager's weights."""
    torch.manual_seed(0)
    eager = _Net()
    compiled = copy.deepcopy(eager)
    x = torch.randn(4, 3, 16, 16).contiguous(memory_format=torch.channels_last)
    target = torch.tensor([0, 1, 2, 3])
    loss_eager = _train_step(eager, x, target)
    torch._dynamo.reset()
    loss_compiled = _train_step(torch.compile(compiled, fullgraph=True, backend=backend), x,
                                target)
    torch.testing.assert_close(loss_compiled, loss_eager)
    for p, q in zip(compiled.parameters(), eager.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


# Each pool of ops (avgpool.torch or torch.nn.functional) on 3-D, 4-D and 5-D inputs, with
# options whose output sizes follow the input's (ceil_mode, padding, None sizes).
_EVERY_OP = (
    lambda ops, x1, x2, x3, ceil_mode: ops.avg_pool1d(x1, 4, 3, 2, ceil_mode=ceil_mode),
    lambda ops, x1, x2, x3, ceil_mode: ops.avg_pool2d(x2, 3, 2, 1, count_include_pad=False),
    lambda ops, x1, x2, x3, ceil_mode: ops.avg_pool2d(x2, (2, 3), (1, 2), ceil_mode=ceil_mode,
                                                      divisor_override=5),
    lambda ops, x1, x2, x3, ceil_mode: ops.avg_pool3d(x3, 2, (1, 2, 2), 1),
    lambda ops, x1, x2, x3, ceil_mode: ops.adaptive_avg_pool1d(x1, 5),
    lambda ops, x1, x2, x3, ceil_mode: ops.adaptive_avg_pool2d(x2, (None, 3)),
    lambda ops, x1, x2, x3, ceil_mode: ops.adaptive_avg_pool3d(x3, (2, None, 3)),
)


_EVERY_OP_RANK = (1, 2, 2, 3, 1, 2, 3)  # the spatial rank each of _EVERY_OP pools


def _every_op(ops, x1, x2, x3, ceil_mode=True):
    """The results of _EVERY_OP."""
    return tuple(op(ops, x1, x2, x3, ceil_mode) for op in _EVERY_OP)


def _every_op_inputs(seed, spatial, batch=2, dtype=torch.float32):
    """Random inputs for _every_op: (batch, 3, *s) for each spatial size s."""
    rng = np.random.default_rng(seed)
    return [torch.tensor(rng.standard_normal((batch, 3) + s), dtype=dtype) for s in spatial]


@pytest.mark.one_path  # the route is Python's; the kernels are checked elsewhere
@pytest.mark.parametrize("channels_last", [False, True])
def test_torch_compile_dynamic_shapes(channels_last):
    """Dynamic shapes (what torch.compile turns to once an input's size changes): graphs
    without breaks serve three sets of sizes (batch and spatial) with torch's values, gradients
    and memory formats, and take no more compilations than torch's own ops do on the same
    inputs (ceil_mode's last window is kept or dropped by the size: a guard for both)."""
    from torch._dynamo.testing import CompileCounterWithBackend

    counters = {}
    results = {}
    for name, ops in (("torch", F), ("avgpool", apt)):
        torch._dynamo.reset()
        # aot_eager: the fake implementations and the autograd formulas, traced symbolically
        counters[name] = CompileCounterWithBackend("aot_eager")
        compiled = torch.compile(lambda *xs, ops=ops: _every_op(ops, *xs), fullgraph=True,
                                 dynamic=True, backend=counters[name])
        results[name] = []
        for i, spatial in enumerate([((11,), (9, 12), (4, 6, 7)), ((16,), (16, 16), (5, 7, 8)),
                                     ((23,), (13, 7), (6, 5, 9))]):
            xs = [(_channels_last(x) if channels_last else x).requires_grad_()
                  for x in _every_op_inputs(i, spatial, batch=2 + i)]
            ys = compiled(*xs)
            rng = np.random.default_rng(10 + i)
            gys = [torch.tensor(rng.standard_normal(tuple(y.shape)), dtype=torch.float32)
                   for y in ys]
            results[name].append((ys, torch.autograd.grad(ys, xs, gys)))
    for (ours, ours_g), (theirs, theirs_g) in zip(results["avgpool"], results["torch"]):
        for y, w in zip(ours + ours_g, theirs + theirs_g):
            assert _same_layout(y, w), (y.shape, y.stride(), w.stride())
            torch.testing.assert_close(y, w, rtol=1e-5, atol=1e-5)
    assert counters["avgpool"].frame_count <= counters["torch"].frame_count < 3


class _EveryOp(torch.nn.Module):
    def forward(self, x1, x2, x3):
        return _every_op(apt, x1, x2, x3, ceil_mode=False)


@pytest.mark.one_path  # the route is Python's; the kernels are checked elsewhere
@pytest.mark.parametrize("strict", [False, True])
def test_torch_export_dynamic_shapes(strict):
    """torch.export with dynamic batch and spatial dimensions (unbounded above): the exported
    program gives torch's values on inputs of other sizes. Without ceil_mode, whose dropped
    last window is a guard on the size's remainder that torch.export rejects for torch's own
    pools too."""
    from torch.export import Dim

    # sizes from 8 on: an output size that may be 1 is a guard too (torch specializes 0 and 1)
    n = Dim("n")
    dims = tuple({0: n, **{2 + a: Dim(f"d{r}{a}", min=8) for a in range(r)}} for r in (1, 2, 3))
    first = tuple(_every_op_inputs(0, ((11,), (9, 12), (8, 9, 10))))
    program = torch.export.export(_EveryOp(), first, dynamic_shapes=dims, strict=strict)
    for i, spatial in enumerate((((16,), (16, 16), (9, 8, 11)), ((23,), (13, 8), (10, 12, 9))),
                                1):
        xs = _every_op_inputs(i, spatial, batch=2 + i)
        for y, w in zip(program.module()(*xs), _every_op(F, *xs, ceil_mode=False)):
            torch.testing.assert_close(y, w, rtol=1e-5, atol=1e-6)


@pytest.mark.one_path  # the route is Python's; the kernels are checked elsewhere
@pytest.mark.parametrize("channels_last", [False, True])
def test_meta_tensors_give_torchs_shapes(channels_last):
    """Tensors on the meta device (shape inference, models built on it) pass through the
    operators' fake implementations: torch's shapes and strides, forward and backward."""
    xs = [torch.empty((2, 3) + s, device="meta") for s in ((11,), (9, 12), (4, 6, 7))]
    if channels_last:
        xs = [_channels_last(x) for x in xs]
    xs = [x.requires_grad_() for x in xs]
    ys, ws = _every_op(apt, *xs), _every_op(F, *xs)
    for y, w in zip(ys, ws):
        assert y.device.type == "meta" and _same_layout(y, w), (y.shape, y.stride(), w.stride())
    for gx, gw in zip(torch.autograd.grad(ys, xs, [torch.ones_like(w) for w in ws]),
                      torch.autograd.grad(ws, xs, [torch.ones_like(w) for w in ws])):
        assert gx.device.type == "meta" and _same_layout(gx, gw), (gx.stride(), gw.stride())


@pytest.mark.one_path  # the route is Python's; the kernels are checked elsewhere
@pytest.mark.parametrize("dynamo", [False, True])
def test_onnx_export_like_torch(dynamo, tmp_path):
    """torch.onnx.export (the TorchScript exporter, and the default dynamo one) writes a model
    using avgpool.torch as it writes the same model on torch.nn's pools: the same ONNX
    operators, and onnxruntime gives torch's values."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 8, 3, padding=1)
    ours = torch.nn.Sequential(conv, apt.AvgPool2d(3, 2, 1, ceil_mode=True,
                                                   count_include_pad=False),
                               apt.AdaptiveAvgPool2d(1))
    theirs = torch.nn.Sequential(conv, torch.nn.AvgPool2d(3, 2, 1, ceil_mode=True,
                                                          count_include_pad=False),
                                 torch.nn.AdaptiveAvgPool2d(1))
    x = torch.randn(2, 3, 17, 17)
    kinds = []
    for name, model in (("ours", ours), ("theirs", theirs)):
        path = str(tmp_path / f"{name}.onnx")
        torch.onnx.export(model, (x,), path, dynamo=dynamo)
        kinds.append(sorted({n.op_type for n in onnx.load(path).graph.node}))
        session = ort.InferenceSession(path)
        (y,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
        torch.testing.assert_close(torch.from_numpy(y), theirs(x).detach(), rtol=1e-5,
                                   atol=1e-6)
    assert kinds[0] == kinds[1] and "AveragePool" in kinds[0], kinds


@pytest.mark.parametrize("channels_last", [False, True])
def test_forward_mode_ad_tangents_equal_torch(channels_last):
    """torch.autograd.forward_ad's dual tensors: each pool's tangent is torch's (a direct call
    on the primal would drop it)."""
    import torch.autograd.forward_ad as fwAD

    xs, ts = (_every_op_inputs(seed, ((11,), (9, 12), (4, 6, 7)), dtype=torch.float64)
              for seed in (0, 1))
    if channels_last:
        xs = [_channels_last(x) for x in xs]
    with fwAD.dual_level():
        duals = [fwAD.make_dual(x, t) for x, t in zip(xs, ts)]
        ours = [fwAD.unpack_dual(y) for y in _every_op(apt, *duals)]
        theirs = [fwAD.unpack_dual(y) for y in _every_op(F, *duals)]
    for (y, ty), (w, tw) in zip(ours, theirs):
        assert ty is not None
        torch.testing.assert_close(y, w, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(ty, tw, rtol=1e-12, atol=1e-12)


def _two_pools(ops, t):
    """A windowed and an adaptive pool of t, flattened into one vector."""
    return torch.cat([ops.avg_pool2d(t, 3, 2, 1, ceil_mode=True).flatten(),
                      ops.adaptive_avg_pool2d(t, (2, 3)).flatten()])


def _backward_grad(loss, x):
    """x's gradient through loss.backward() (which reentrant checkpointing needs)."""
    x.grad = None
    loss.backward()
    return x.grad


_AUTOGRAD_APIS = {
    "checkpoint": lambda f, x: torch.autograd.grad(torch.utils.checkpoint.checkpoint(
        lambda t: f(t).sin(), x, use_reentrant=False).sum(), x)[0],
    "checkpoint-reentrant": lambda f, x: _backward_grad(torch.utils.checkpoint.checkpoint(
        lambda t: f(t).sin(), x, use_reentrant=True).sum(), x),
    # legacy-vmap batched gradients, not a functorch transform
    "is_grads_batched": lambda f, x: torch.autograd.grad(
        f(x), x, torch.linspace(-1, 1, 4 * f(x).numel(), dtype=x.dtype).reshape(4, -1),
        is_grads_batched=True)[0],
    "jacobian-vectorize": lambda f, x: torch.autograd.functional.jacobian(f, x, vectorize=True),
}


@pytest.mark.parametrize("api", sorted(_AUTOGRAD_APIS))
@pytest.mark.parametrize("channels_last", [False, True])
def test_autograd_apis_equal_torch(api, channels_last):
    """Activation checkpointing, batched gradients and the vectorized Jacobian give torch's
    gradients (float64)."""
    x = torch.tensor(np.random.default_rng(0).standard_normal((2, 3, 9, 8)))
    if channels_last:
        x = _channels_last(x)
    x.requires_grad_()
    got, want = (_AUTOGRAD_APIS[api](lambda t, ops=ops: _two_pools(ops, t), x)
                 for ops in (apt, F))
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def _outcome(f):
    """f()'s result, or the type and message of what it raised."""
    try:
        return f()
    except Exception as e:  # noqa: BLE001 (the outcome compared is any exception)
        return type(e), str(e)


@pytest.mark.one_path  # the route is Python's; the kernels are checked elsewhere
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.bool,
                                   torch.complex64])
def test_dtypes_without_kernels_as_torch(dtype):
    """Tensors of dtypes the kernels lack get torch's own outcome: int64 windowed pools (torch
    divides as integers) torch's values, the rest torch's error."""
    xs = [(t * 50).to(dtype) for t in _every_op_inputs(3, ((11,), (9, 12), (4, 6, 7)))]
    for op in _EVERY_OP:
        ours = _outcome(lambda: op(apt, *xs, True))
        want = _outcome(lambda: op(F, *xs, True))
        if isinstance(want, torch.Tensor):
            assert ours.dtype == want.dtype and torch.equal(ours, want)
        else:
            assert ours == want
    assert isinstance(_outcome(lambda: apt.avg_pool2d(xs[1].to(torch.int64), 3)), torch.Tensor)


def _same_outcome(ours, want):
    """Equal results (values, shape, strides, dtype) or the same error."""
    if isinstance(want, torch.Tensor):
        assert isinstance(ours, torch.Tensor), ours
        assert (ours.shape, ours.stride(), ours.dtype) == (want.shape, want.stride(), want.dtype)
        torch.testing.assert_close(ours, want, rtol=0, atol=0)
    else:
        assert ours == want


@pytest.mark.one_path  # the route is Python's; the kernels are checked elsewhere
@pytest.mark.parametrize("channels_last", [False, True])
def test_empty_tensors_as_torch(channels_last):
    """A zero in any axis of the input, and an adaptive output size of 0, get torch's own
    outcome: its result (shape and strides) where it has one, its error where it raises (a zero
    batch passes every op; zero channels only the 1-D and 2-D adaptive pools; a zero spatial
    size none), batched and unbatched, and for the gradient of an empty result."""
    fmt = {4: torch.channels_last, 5: torch.channels_last_3d}
    checked = 0
    for rank, spatial in enumerate(((11,), (9, 12), (4, 6, 7)), start=1):
        for axis in range(rank + 2):
            shape = [2, 3, *spatial]
            shape[axis] = 0
            x = torch.zeros(shape)
            if channels_last:
                x = x.to(memory_format=fmt.get(x.dim(), torch.contiguous_format))
            forms = [x] if axis == 0 else [x, x[0]]  # batched, and unbatched (C, ...)
            for op, op_rank in zip(_EVERY_OP, _EVERY_OP_RANK):
                for form in forms if op_rank == rank else ():
                    xs = [form if r == rank else None for r in (1, 2, 3)]
                    _same_outcome(_outcome(lambda: op(apt, *xs, True)),
                                  _outcome(lambda: op(F, *xs, True)))
                    checked += 1
    assert checked == 2 * 5 + 3 * 7 + 2 * 9  # every op on each axis, batched and unbatched
    x = torch.randn(2, 3, 9, 12, requires_grad=True)
    for sizes in (0, (0, 3), (4, 0), (0, None)):
        y, want = apt.adaptive_avg_pool2d(x, sizes), F.adaptive_avg_pool2d(x, sizes)
        _same_outcome(y, want)
        _same_outcome(_outcome(lambda: torch.autograd.grad(y.sum(), x)[0]),
                      _outcome(lambda: torch.autograd.grad(want.sum(), x)[0]))


@pytest.mark.one_path  # the route is Python's; the kernels are checked elsewhere
@pytest.mark.parametrize("kind", ["quantized", "mkldnn", "sparse"])
def test_tensors_the_kernels_cannot_take_as_torch(kind):
    """Quantized tensors and layouts other than strided get torch's own outcome (quantized
    and mkldnn pools are torch's; a sparse tensor its error), on a first and a repeated call."""
    make = {"quantized": lambda t: torch.quantize_per_tensor(t, 0.05, 0, torch.quint8),
            "mkldnn": lambda t: t.to_mkldnn(), "sparse": lambda t: t.to_sparse()}[kind]
    x2 = make(_every_op_inputs(4, ((9, 12),))[0])
    for call in (lambda m: m.avg_pool2d(x2, 3, 2, 1), lambda m: m.adaptive_avg_pool2d(x2, 3)):
        want = _outcome(lambda: call(F))
        for _ in range(2):
            ours = _outcome(lambda: call(apt))
            if isinstance(want, torch.Tensor):
                assert ours.dtype == want.dtype and ours.layout == want.layout
                torch.testing.assert_close(ours.dequantize() if ours.is_quantized
                                           else ours.to_dense(),
                                           want.dequantize() if want.is_quantized
                                           else want.to_dense())
            else:
                assert ours == want


@pytest.mark.parametrize("grad", [False, True])
def test_negative_views_pooled_as_their_values(grad):
    """Negative views (the imaginary part of a conjugate: values negated lazily) are pooled as
    the values they show, by avgpool.torch's first call and by a repeated inference call on a
    dense one (whose cached operator a plain tensor of the same strides set up), and by
    avgpool.average_pool; a negative view as the gradient gives torch's gradient."""
    z = torch.complex(*_every_op_inputs(5, ((9, 12), (9, 12))))
    dense = z.real.contiguous()
    apt.avg_pool2d(dense.clone(), 3, 2, 1)  # the same strides, not a negative view
    desc = avgpool.AveragePoolingDesc((3, 3), (2, 2), (1, 1), (1, 1), include_padding=True)
    for x in (z.conj().imag, torch._neg_view(dense)):
        assert x.is_neg()
        want = F.avg_pool2d(x.resolve_neg(), 3, 2, 1)
        for _ in range(2):
            torch.testing.assert_close(apt.avg_pool2d(x, 3, 2, 1), want)
        torch.testing.assert_close(avgpool.average_pool(x, desc), want)
    if grad:
        g = torch._neg_view(_every_op_inputs(6, ((5, 6),))[0])
        xg = dense.clone().requires_grad_()
        (ours,) = torch.autograd.grad(apt.avg_pool2d(xg, 3, 2, 1), xg, g)
        (theirs,) = torch.autograd.grad(F.avg_pool2d(xg, 3, 2, 1), xg, g)
        torch.testing.assert_close(ours, theirs)


@pytest.mark.filterwarnings("ignore:`torch.jit.*is deprecated")
@pytest.mark.one_path  # the route is Python's; the kernels are checked elsewhere
@pytest.mark.parametrize("channels_last", [False, True])
def test_jit_trace_serves_other_sizes_like_torch(channels_last):
    """A TorchScript trace records torch's pools, whose output sizes follow the input's: the
    traced function gives torch's values on other sizes too (avgpool's operators, given output
    sizes, would keep the traced ones)."""
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    traced = torch.jit.trace(lambda a, b, c: _every_op(apt, a, b, c),
                             tuple(_every_op_inputs(0, ((11,), (9, 12), (4, 6, 7)))),
                             check_trace=False)
    kinds = {n.kind() for n in traced.graph.nodes()}
    assert "aten::avg_pool2d" in kinds and not any(k.startswith("avgpool::") for k in kinds)
    x1, x2, x3 = _every_op_inputs(1, ((16,), (16, 13), (5, 7, 8)), batch=3)
    x2 = x2.contiguous(memory_format=fmt)
    for y, want in zip(traced(x1, x2, x3), _every_op(F, x1, x2, x3)):
        torch.testing.assert_close(y, want)


@pytest.mark.filterwarnings("ignore:`torch.jit.*is deprecated")
@pytest.mark.one_path  # the route is Python's; the kernels are checked elsewhere
def test_jit_script_of_modules_like_torch():
    """torch.jit.script of a model holding the modules compiles torch's pools in their place
    (the model itself keeps avgpool's): torch's values on a size the script never saw, and
    through torch.jit.save and load."""
    import io

    for ours, theirs, args, kwargs, ndim in MODULES:
        if isinstance(args[0], tuple) and None in args[0]:
            continue  # a None output size: torch cannot script its own module either
        model = torch.nn.Sequential(ours(*args, **kwargs), torch.nn.ReLU())
        scripted = torch.jit.script(model)
        assert type(model[0]) is ours
        buffer = io.BytesIO()
        torch.jit.save(scripted, buffer)
        buffer.seek(0)
        loaded = torch.jit.load(buffer)
        x = torch.randn((2, 3, 9, 8, 7)[:ndim])
        want = torch.relu(theirs(*args, **kwargs)(x))
        torch.testing.assert_close(scripted(x), want)
        torch.testing.assert_close(loaded(x), want)
        torch.testing.assert_close(model(x), want)


class _OwnPool(torch.nn.AvgPool2d):
    """A subclass with a forward of its own, which swap_modules must leave alone."""

    def forward(self, input):
        return super().forward(input) * 2


class _Pools(torch.nn.Module):
    """torch.nn's pools as a model built elsewhere holds them: nested, one shared, one in a
    ModuleDict, beside a subclass of torch's."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.shared = torch.nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False)
        self.block = torch.nn.Sequential(torch.nn.Conv2d(8, 8, 1), self.shared,
                                         torch.nn.AvgPool2d(2))
        self.heads = torch.nn.ModuleDict({"own": _OwnPool(2, 1),
                                          "adaptive": torch.nn.AdaptiveAvgPool2d((3, 2))})

    def forward(self, x):
        x = self.block(self.shared(self.conv(x)))
        return self.heads["adaptive"](self.heads["own"](x))


@pytest.mark.one_path  # the route is Python's; the kernels are checked elsewhere
def test_swap_modules_keeps_the_model_but_its_kernels():
    """swap_modules makes every pool of torch.nn's class avgpool.torch's in place, with the
    same identity, repr, hooks and state_dict, and leaves a subclass of torch's alone; the
    model gives what it gave before, gradients included. A pool alone swaps too."""
    torch.manual_seed(0)
    model = _Pools()
    before = copy.deepcopy(model)
    calls = []
    model.shared.register_forward_hook(lambda *args: calls.append(1))
    reprs, keys = repr(model), list(model.state_dict())
    shared = model.shared
    assert apt.swap_modules(model) is model
    assert model.shared is shared and model.block[1] is shared
    assert type(shared) is apt.AvgPool2d and type(model.block[2]) is apt.AvgPool2d
    assert type(model.heads["adaptive"]) is apt.AdaptiveAvgPool2d
    assert type(model.heads["own"]) is _OwnPool
    assert repr(model) == reprs and list(model.state_dict()) == keys
    x = torch.randn(2, 3, 17, 15).contiguous(memory_format=torch.channels_last)
    xs = [x.clone().requires_grad_() for _ in range(2)]
    y, want = model(xs[0]), before(xs[1])
    assert calls == [1, 1]  # the hook on the shared pool, once per use
    torch.testing.assert_close(y, want)
    y.square().sum().backward()
    want.square().sum().backward()
    torch.testing.assert_close(xs[0].grad, xs[1].grad)
    for p, q in zip(model.parameters(), before.parameters()):
        torch.testing.assert_close(p.grad, q.grad)
    alone = torch.nn.AvgPool3d(2)
    assert apt.swap_modules(alone) is alone and type(alone) is apt.AvgPool3d
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        apt.swap_modules(lambda t: t)
