"""PyTorch operators, functions and modules on avgpool's kernels, with autograd.

A drop-in for the average pooling of ``torch.nn.functional`` and ``torch.nn``: the same names,
arguments, results and output memory formats, so swapping ``torch.nn.AvgPool2d`` for
``avgpool.torch.AvgPool2d`` in a model changes nothing but speed::

    import avgpool.torch as apt
    y = apt.avg_pool2d(x, 3, stride=2, padding=1)      # as torch.nn.functional.avg_pool2d
    pool = apt.AdaptiveAvgPool2d((7, 7))               # a torch.nn.AdaptiveAvgPool2d

The work is done by four operators registered with ``torch.library`` (``avgpool::avg_pool``,
``avgpool::adaptive_avg_pool`` and their ``_backward``), each with a fake (meta)
implementation and a registered autograd formula: gradients flow (the backward operators are
differentiable too, so double backward works) and ``torch.compile(fullgraph=True)`` traces them
without graph breaks. Plain eager calls, which nothing traces or intercepts, run the same
kernels without the operators' Python dispatch, with the same results and gradients. Importing
this module runs avgpool's threads on torch's OpenMP team (``avgpool.set_thread_pool``).
Channels-last tensors (``torch.channels_last``, ``channels_last_3d``, and
(N, C, L) tensors whose channels are the fastest axis) run the channels-last kernels on their own
memory; any other strides are made contiguous first. The output's memory format is the one torch
gives for the same call: channels last for the 1-D and 2-D functions on channels-last input,
contiguous for ``avg_pool3d`` and ``adaptive_avg_pool3d`` (torch 2.13); gradients too take the
format torch's own backward gives them (the same rule, and contiguous for adaptive pooling to
size 1, which torch computes as a mean). The kernels take CPU tensors of float32, float64,
float16 and bfloat16; other dtypes (int64) go to torch.nn.functional, as do TorchScript traces
and ONNX exports, which must record torch's own operators, and scripted modules.
``swap_modules(model)`` makes the torch.nn pooling modules of a model built elsewhere these.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from torch import Tensor

from . import _api, _core
from . import functional as _functional
from ._desc import AveragePoolingDesc
from ._frontend import adaptive_desc

__all__ = ["avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "swap_modules"]

_Size = Union[int, Sequence[int]]
# the windowed operators' parameters after the input: kernel, stride, padding, output sizes,
# count_include_pad, divisor_override (0: none)
_PoolParams = Tuple[List[int], List[int], List[int], List[int], bool, int]

# Threads: torch runs its operators on an OpenMP team, whose workers spin for a while after each
# one. avgpool's own pool would add a second set of threads competing with them for the cores
# (a global pool of 32x2048x7x7 between torch operators, 2 threads on 2 cores: 382 us on the own
# pool, 226 us on torch's team), so calls run on that team when avgpool's OpenMP is torch's and
# AVGPOOL_THREAD_POOL is unset. A wheel's own copy of libgomp would be a second team: no gain.
def _shares_openmp_with_torch() -> bool:
    """Whether avgpool's OpenMP runtime is torch's: one libgomp in the process (a build from
    source linking the system's libgomp.so.1, which torch's has already claimed), not the
    renamed copy a manylinux wheel carries. Probed by the thread count: two settings of torch's
    must both show in avgpool's (one could match avgpool's own by chance); set back at once."""
    if not _core.openmp_enabled() or "parallel backend: OpenMP" not in \
            torch.__config__.parallel_info():
        return False
    before = torch.get_num_threads()
    try:
        shared = True
        for probe in (1, 3):
            torch.set_num_threads(probe)
            shared = shared and _core.max_threads() == probe
        return shared
    finally:
        torch.set_num_threads(before)


def _torch_thread_pool() -> Optional[str]:
    """The pool importing this module chooses: torch's OpenMP team when avgpool shares torch's
    OpenMP runtime and AVGPOOL_THREAD_POOL is unset, else None (no change)."""
    if "AVGPOOL_THREAD_POOL" not in os.environ and _shares_openmp_with_torch():
        return "openmp"
    return None


if _torch_thread_pool() is not None:
    _core.set_thread_pool("openmp")


# ---------------------------------------------------------------------------------- layouts

@lru_cache(maxsize=None)
def _to_nhwc(rank: int) -> Tuple[int, ...]:
    return (0,) + tuple(range(2, rank + 2)) + (1,)


@lru_cache(maxsize=None)
def _from_nhwc(rank: int) -> Tuple[int, ...]:
    return (0, rank + 1) + tuple(range(1, rank + 1))


def _strides_like_channels_last(x: Tensor) -> bool:
    """torch's ``suggest_memory_format(x) != contiguous_format`` for a 4-D or 5-D x (c10's
    is_channels_last_strides_2d / _3d): the format torch's pooling kernels give their results.
    Strides are visited from the channel axis outwards; each must be at least the extent of
    the axes before it, and a batch stride equal to the channel one is the ambiguous N111 case,
    which counts as contiguous."""
    if x.dim() not in (4, 5):
        return False
    sizes, strides = x.shape, x.stride()
    if strides[1] == 0:
        return False
    order = (1, 3, 2, 0) if x.dim() == 4 else (1, 4, 3, 2, 0)
    least = 0
    for d in order:
        if sizes[d] == 0 or strides[d] < least:
            return False
        if d == 0 and least == strides[1]:
            return False
        least = strides[d] * (sizes[d] if sizes[d] > 1 else 1)
    return True


def _result_channels_last(x: Tensor) -> bool:
    """The memory format torch 2.13 gives the output of a pool of x and the gradient with
    respect to x (the same rule for both): that suggested by x's strides for the 1-D (through
    a 4-D view, as torch pools 1-D inputs as 2-D) and 2-D pools, contiguous for 3-D ones."""
    if x.dim() == 3:
        return _strides_like_channels_last(x.unsqueeze(-2))
    return x.dim() == 4 and _strides_like_channels_last(x)


def _layout_strides(shape: Sequence[int], nhwc: bool) -> Tuple[int, ...]:
    """The strides of a dense (N, C, *spatial) tensor stored NCHW or NHWC (symbolic where the
    sizes are: torch.sym_max keeps a traced size an expression, not one value)."""
    order = _to_nhwc(len(shape) - 2) if nhwc else tuple(range(len(shape)))
    strides = [0] * len(shape)
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= torch.sym_max(shape[d], 1)
    return tuple(strides)


def _in_layout(y: np.ndarray, y_nhwc: bool, nhwc: bool) -> Tensor:
    """The result y, an ndarray stored channels last when y_nhwc, as an (N, C, *spatial) tensor
    with exactly the strides _layout_strides gives for nhwc (as the fake implementations'
    results have): a view when the layouts differ only in the strides of size-1 axes, else
    copied across by ap_relayout (a strided copy is several times slower)."""
    rank = y.ndim - 2
    t = _api.numpy_to_torch(y)
    if y_nhwc:
        t = t.permute(_from_nhwc(rank))
    if y_nhwc == nhwc and y.size and y.flags.c_contiguous:
        return t  # a fresh result: numpy's C-order strides are those (3-4 us saved a call)
    want = _layout_strides(t.shape, nhwc)
    if t.stride() == want:
        return t
    if all(n == 1 or a == b for n, a, b in zip(t.shape, t.stride(), want)):
        return t.as_strided(t.shape, want)
    if y_nhwc == nhwc or t.numel() == 0:  # strides of empty axes: nothing to move
        return torch.empty_strided(t.shape, want, dtype=t.dtype).copy_(t)
    other = _api.numpy_to_torch(_core.relayout(y, "NHWC" if y_nhwc else "NCHW", None, None))
    return other.permute(_from_nhwc(rank)) if nhwc else other


def _empty_in_layout(x: Tensor, shape: Sequence[int], nhwc: bool) -> Tensor:
    return x.new_empty_strided(tuple(shape), _layout_strides(shape, nhwc))


def _settings() -> Tuple[Optional[str], int, str]:
    """What a compiled operator fixes that a plain call reads anew each time: the
    AVGPOOL_NUM_THREADS setting, the thread count and the kernels."""
    return os.environ.get("AVGPOOL_NUM_THREADS"), _core.max_threads(), _core.isa()


def _operator(desc: Any, shape: Tuple[int, ...], dtype: np.dtype, nhwc: bool,
              nhwc_out: bool) -> Any:
    """A compiled operator (avgpool.compile_operator) for desc on arrays of this shape, dtype
    and layout (nhwc), its result in the layout nhwc_out asks for, with the thread count and
    kernels a plain call would take now. Cached, as a model calls the same pools on the same
    shapes every step: a call then checks only the array (the plain call's checks and plan
    measured 20-60 us more between other operators)."""
    return _operator_for(desc, shape, dtype, nhwc, nhwc_out, *_settings())


@lru_cache(maxsize=256)
def _operator_for(desc: Any, shape: Tuple[int, ...], dtype: np.dtype, nhwc: bool,
                  nhwc_out: bool, env_threads: Optional[str], max_threads: int,
                  isa: str) -> Any:
    return _api.compile_operator(desc, shape, dtype, layout="NHWC" if nhwc else "NCHW",
                                 output_layout="NHWC" if nhwc_out else "NCHW")


def _run(x: Tensor, desc: Any, nhwc_out: bool,
         inference_key: Optional[Tuple[Any, ...]] = None) -> Tensor:
    """desc's pool on x's own memory when it is stored channels last or contiguous (else on a
    contiguous copy), the result in the layout nhwc_out asks for. A tensor both contiguous and
    channels last (sizes of 1) takes the NCHW kernels. With an inference_key
    (_inference_key), a call that the fast path can repeat is kept in _inference_plans."""
    if x.is_contiguous():
        nhwc, a = False, _api.as_array(x)
    else:
        cl = x.permute(_to_nhwc(x.dim() - 2))
        nhwc = cl.is_contiguous()
        a = _api.as_array(cl if nhwc else x.contiguous())
    # channels-last input, result wanted channels first (3-D pools): written so by the
    # operator, in one pass; the other way round moves less, after the kernel (_in_layout)
    y_nhwc = nhwc and nhwc_out
    op = _operator(desc, a.shape, a.dtype, nhwc, y_nhwc)
    y = op(a)
    if (inference_key is not None and y.size and (nhwc or x.is_contiguous()) and
            x.dtype in _INFERENCE_DTYPES):
        rank = x.dim() - 2
        _keep_inference_plan(inference_key, (op, _to_nhwc(rank), _from_nhwc(rank), nhwc_out)
                             if nhwc else (op, None, None, nhwc_out))
    return _in_layout(y, y_nhwc, nhwc_out)


# ------------------------------------------------------------------------ inference fast path
# A model's pools see the same arguments, sizes, strides and dtype every step. Once a call
# without gradient has run on x's own memory, later such calls skip the checks, the parameter
# and layout decisions, and most of the conversions: measured 45 us of a 340 us pool after
# another operator had flushed the caches (12 us when warm), where the plain call on the same
# memory takes 285. The key holds what decides the call; dtypes that numpy holds natively only
# (bfloat16 takes the general path). A plan: the operator, the permutations to and from its
# channels-last layout (None: it runs channels first), and the layout of the result.

_Plan = Tuple[Any, Optional[Tuple[int, ...]], Optional[Tuple[int, ...]], bool]
_INFERENCE_DTYPES = (torch.float32, torch.float64, torch.float16)
_inference_plans: Dict[Tuple[Any, ...], _Plan] = {}


def _inference_key(x: Any, args: Tuple[Any, ...]) -> Optional[Tuple[Any, ...]]:
    """The key of a call on x with args in _inference_plans: its arguments, x's sizes, strides
    and dtype, and the thread settings; None unless x is a plain CPU tensor that wants no
    gradient with nothing watching the dispatcher (the rest take the general path)."""
    if type(x) is not Tensor or x.requires_grad or not x.is_cpu or not _eager_direct(x):
        return None
    try:
        strides = x.stride()
    except RuntimeError:  # sparse and mkldnn layouts have none (the general path takes them)
        return None
    return (args, x.shape, strides, x.dtype) + _settings()


def _keep_inference_plan(key: Tuple[Any, ...], plan: _Plan) -> None:
    """Keep plan for key, at most 512."""
    if len(_inference_plans) >= 512:
        _inference_plans.clear()
    _inference_plans[key] = plan


def _inference_run(key: Optional[Tuple[Any, ...]], x: Tensor) -> Optional[Tensor]:
    """The call of key on x through its kept operator, or None when none is kept."""
    plan = None if key is None else _inference_plans.get(key)
    if plan is None:
        return None
    op, to_nhwc, from_nhwc, nhwc_out = plan
    try:
        a = x.numpy()
    except RuntimeError:  # a negative view, which the general path resolves (asking costs more)
        return None
    if to_nhwc is None:
        y = op(a)
        return _in_layout(y, False, True) if nhwc_out else torch.from_numpy(y)
    # numpy's transposes: a torch permute of a tuple costs twice as much; the operator
    # writes a channels-first result itself (_run)
    y = op(a.transpose(to_nhwc))
    return torch.from_numpy(y.transpose(from_nhwc) if nhwc_out else y)


def _as_layout_array(t: Tensor, nhwc: bool) -> np.ndarray:
    """t's elements as an ndarray stored channels last when nhwc, else channels first: a view
    when t is stored so, copied across by ap_relayout when stored the other way, else a copy."""
    cl = t.permute(_to_nhwc(t.dim() - 2))
    want, other = (cl, t) if nhwc else (t, cl)
    if want.is_contiguous():
        return _api.as_array(want)
    if other.is_contiguous():
        return _core.relayout(_api.as_array(other), "NCHW" if nhwc else "NHWC", None, None)
    return _api.as_array(want.contiguous())


@lru_cache(maxsize=256)
def _dense_strides(shape: Tuple[int, ...], nhwc: bool) -> Tuple[int, ...]:
    """_layout_strides for the concrete shapes of real tensors (symbolic sizes do not hash)."""
    return _layout_strides(shape, nhwc)


def _run_backward(grad: Tensor, input_size: Sequence[int], nhwc: bool, desc: Any) -> Tensor:
    """desc's backward: the gradient with respect to an input of input_size, computed and
    returned in the layout nhwc asks for."""
    shape = tuple(input_size)
    if nhwc:
        shape = (shape[0],) + shape[2:] + (shape[1],)
    if (type(grad) is Tensor and grad.dtype in _INFERENCE_DTYPES and not grad.requires_grad
            and grad.numel() and grad.layout is torch.strided and not grad.is_neg()
            and grad.stride() == _dense_strides(grad.shape, nhwc)):
        # the usual gradient, dense in the layout: numpy views and transposes on both sides,
        # one torch call each, as a torch call after the kernel has streamed megabytes through
        # the caches costs some 20 us (adaptive 14 -> 7 on 32x512x14x14 channels last, 2
        # threads: 45 us of a 620 us torch.autograd.grad)
        rank = grad.dim() - 2
        g = grad.numpy()
        if nhwc:
            g = g.transpose(_to_nhwc(rank))
        y = _operator(desc, shape, g.dtype, nhwc, nhwc).backward(g)
        return torch.from_numpy(y.transpose(_from_nhwc(rank)) if nhwc else y)
    g = _as_layout_array(grad, nhwc)
    return _in_layout(_operator(desc, shape, g.dtype, nhwc, nhwc).backward(g), nhwc, nhwc)


def _check_tensor(x: Any, fname: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}: input must be a torch.Tensor, got {type(x).__name__}")
    if x.device.type not in ("cpu", "meta"):  # meta: shapes only, from the operators' fakes
        raise ValueError(f"{fname}: input is on device {x.device}; avgpool runs on the CPU only "
                         f"(move it with .cpu(), or use torch.nn.functional on that device)")


# --------------------------------------------------------------------------------- operators
# `channels_last`: the layout of the result (the forward's output, the backward's gradient),
# decided by the caller from the input's strides (_result_channels_last).

@lru_cache(maxsize=256)
def _pool_desc(kernel: Tuple[int, ...], stride: Tuple[int, ...], padding: Tuple[int, ...],
               output_size: Tuple[int, ...], count_include_pad: bool,
               divisor_override: int) -> AveragePoolingDesc:
    return AveragePoolingDesc(kernel, stride, padding, padding, include_padding=count_include_pad,
                              output_sizes=output_size,
                              divisor_override=divisor_override or None)


# The kernel calls behind the operators (and behind the eager path below).

def _pool_desc_of(params: Sequence[Any]) -> AveragePoolingDesc:
    kernel, stride, padding, output_size, count_include_pad, divisor_override = params
    return _pool_desc(tuple(kernel), tuple(stride), tuple(padding), tuple(output_size),
                      count_include_pad, divisor_override)


def _pool_impl(x: Tensor, kernel: List[int], stride: List[int], padding: List[int],
               output_size: List[int], count_include_pad: bool, divisor_override: int,
               channels_last: bool) -> Tensor:
    return _run(x, _pool_desc_of((kernel, stride, padding, output_size, count_include_pad,
                                  divisor_override)), channels_last)


def _pool_backward_impl(grad: Tensor, input_size: List[int], kernel: List[int],
                        stride: List[int], padding: List[int], output_size: List[int],
                        count_include_pad: bool, divisor_override: int,
                        channels_last: bool) -> Tensor:
    return _run_backward(grad, input_size, channels_last,
                         _pool_desc_of((kernel, stride, padding, output_size,
                                        count_include_pad, divisor_override)))


def _adaptive_impl(x: Tensor, output_size: List[int], channels_last: bool) -> Tensor:
    return _run(x, adaptive_desc(tuple(output_size)), channels_last)


def _adaptive_backward_impl(grad: Tensor, input_size: List[int], output_size: List[int],
                            channels_last: bool) -> Tensor:
    return _run_backward(grad, input_size, channels_last, adaptive_desc(tuple(output_size)))


_avg_pool_op = torch.library.custom_op("avgpool::avg_pool", _pool_impl, mutates_args=())
_avg_pool_backward_op = torch.library.custom_op("avgpool::avg_pool_backward",
                                                _pool_backward_impl, mutates_args=())
_adaptive_op = torch.library.custom_op("avgpool::adaptive_avg_pool", _adaptive_impl,
                                       mutates_args=())
_adaptive_backward_op = torch.library.custom_op("avgpool::adaptive_avg_pool_backward",
                                                _adaptive_backward_impl, mutates_args=())


@_avg_pool_op.register_fake
def _(x: Tensor, kernel: List[int], stride: List[int], padding: List[int],
      output_size: List[int], count_include_pad: bool, divisor_override: int,
      channels_last: bool) -> Tensor:
    return _empty_in_layout(x, tuple(x.shape[:2]) + tuple(output_size), channels_last)


@_avg_pool_backward_op.register_fake
def _(grad: Tensor, input_size: List[int], kernel: List[int], stride: List[int],
      padding: List[int], output_size: List[int], count_include_pad: bool,
      divisor_override: int, channels_last: bool) -> Tensor:
    return _empty_in_layout(grad, input_size, channels_last)


@_adaptive_op.register_fake
def _(x: Tensor, output_size: List[int], channels_last: bool) -> Tensor:
    return _empty_in_layout(x, tuple(x.shape[:2]) + tuple(output_size), channels_last)


@_adaptive_backward_op.register_fake
def _(grad: Tensor, input_size: List[int], output_size: List[int], channels_last: bool) -> Tensor:
    return _empty_in_layout(grad, input_size, channels_last)


# autograd: the gradient of a pool is its backward operator, in the layout torch gives it; the
# backward is linear in the gradient, and its own gradient is the forward applied to the
# gradient's gradient.

def _setup_pool(ctx: Any, inputs: Tuple[Any, ...], output: Any) -> None:
    x, *params, channels_last = inputs
    ctx.input_size = list(x.shape)
    ctx.params = params
    ctx.channels_last = channels_last


def _pool_grad(ctx: Any, grad: Tensor) -> Tuple[Optional[Tensor], ...]:
    return ((_avg_pool_backward_op(grad, ctx.input_size, *ctx.params, ctx.channels_last),)
            + (None,) * 7)


def _setup_pool_backward(ctx: Any, inputs: Tuple[Any, ...], output: Any) -> None:
    ctx.params = inputs[2:8]


def _pool_backward_grad(ctx: Any, grad_grad: Tensor) -> Tuple[Optional[Tensor], ...]:
    return ((_avg_pool_op(grad_grad, *ctx.params, _result_channels_last(grad_grad)),)
            + (None,) * 8)


_avg_pool_op.register_autograd(_pool_grad, setup_context=_setup_pool)
_avg_pool_backward_op.register_autograd(_pool_backward_grad, setup_context=_setup_pool_backward)


def _adaptive_grad_channels_last(channels_last: bool, output_size: Sequence[Any]) -> bool:
    """The layout of an adaptive pool's gradient: torch pools to all-ones sizes as a mean over
    the spatial axes, whose gradient (an expanded tensor divided) comes out contiguous whatever
    the input's format."""
    return channels_last and any(o != 1 for o in output_size)


def _setup_adaptive(ctx: Any, inputs: Tuple[Any, ...], output: Any) -> None:
    x, output_size, channels_last = inputs
    ctx.input_size = list(x.shape)
    ctx.output_size = output_size
    ctx.channels_last = _adaptive_grad_channels_last(channels_last, output_size)


def _adaptive_grad(ctx: Any, grad: Tensor) -> Tuple[Optional[Tensor], ...]:
    return (_adaptive_backward_op(grad, ctx.input_size, ctx.output_size, ctx.channels_last),
            None, None)


def _setup_adaptive_backward(ctx: Any, inputs: Tuple[Any, ...], output: Any) -> None:
    ctx.output_size = inputs[2]


def _adaptive_backward_grad(ctx: Any, grad_grad: Tensor) -> Tuple[Optional[Tensor], ...]:
    return (_adaptive_op(grad_grad, ctx.output_size, _result_channels_last(grad_grad)),
            None, None, None)


_adaptive_op.register_autograd(_adaptive_grad, setup_context=_setup_adaptive)
_adaptive_backward_op.register_autograd(_adaptive_backward_grad,
                                        setup_context=_setup_adaptive_backward)


# vmap (torch.func.vmap, and the per-sample work of jacrev, jacfwd, hessian): the mapped axis
# joins the batch axis, as a pool treats every (n, c) alike, so that one call of the kernels
# serves the whole map instead of functorch's loop of one call per entry.

def _batch_rule(op: Any, resize: bool) -> Callable[..., Tuple[Tensor, Optional[int]]]:
    """op's vmap rule; resize: op's argument after the tensor is the batched input's size
    (the backward operators), whose batch grows by the map's."""
    def rule(info: Any, in_dims: Tuple[Optional[int], ...], t: Tensor,
             *rest: Any) -> Tuple[Tensor, Optional[int]]:
        if in_dims[0] is None:  # the tensor is not mapped (no other argument is a tensor)
            return op(t, *rest), None
        t = t.movedim(in_dims[0], 0)
        b, n = t.shape[0], t.shape[1]
        args = list(rest)
        if resize:
            args[0] = [b * args[0][0]] + list(args[0][1:])
        return op(t.flatten(0, 1), *args).unflatten(0, (b, n)), 0
    return rule


_avg_pool_op.register_vmap(_batch_rule(_avg_pool_op, False))
_avg_pool_backward_op.register_vmap(_batch_rule(_avg_pool_backward_op, True))
_adaptive_op.register_vmap(_batch_rule(_adaptive_op, False))
_adaptive_backward_op.register_vmap(_batch_rule(_adaptive_backward_op, True))


# ------------------------------------------------------------------------------ eager path
# In plain eager code the operators' Python dispatch (custom_op's layers, the autograd wrapper)
# cost 40-200 us per call, mostly in cache misses after a kernel has streamed megabytes through
# the caches: up to half of a pool's own time. A plain CPU tensor with nothing watching the
# dispatcher runs the same kernels directly (through an autograd.Function when a gradient is
# wanted); anything that must see the operators (torch.compile, make_fx, jit tracing, fake
# tensors, dispatch or function modes, functorch transforms, tensor subclasses) gets them.
# functorch's transforms (torch.func.grad, vjp, jacrev, jacfwd, hessian, vmap of them) do not
# take custom_op's autograd in torch 2.13 ("must override the setup_context staticmethod"), so
# under them, and under forward-mode AD, the operators go through _PoolFunction.

_dispatch_stack_len = getattr(torch._C, "_len_torch_dispatch_stack", None)
_function_stack_len = getattr(torch._C, "_len_torch_function_stack", None)
_transforms_active = getattr(torch._C, "_are_functorch_transforms_active", None)
_forward_ad = torch.autograd.forward_ad
# the batched gradients of torch.autograd.grad(..., is_grads_batched=True) (behind
# torch.autograd.functional.jacobian(vectorize=True)): legacy vmap, no functorch transform
_legacy_batched = getattr(torch._C._functorch, "is_legacy_batchedtensor", None)


def _dual_level() -> bool:
    """Whether forward-mode AD (torch.autograd.forward_ad.dual_level) is on: its dual tensors'
    tangents must go through _PoolFunction's jvp, which a direct call would drop."""
    return getattr(_forward_ad, "_current_level", 0) >= 0


def _eager_direct(x: Tensor) -> bool:
    """Whether a call on x may skip the operators: nothing would see the difference."""
    if (_dispatch_stack_len is None or _function_stack_len is None or _transforms_active is None
            or _legacy_batched is None):
        return False  # a torch without these queries: always the operators
    # is_compiling first: under torch.compile the rest is not traced (nor traceable)
    return (type(x) is Tensor and not torch.compiler.is_compiling()
            and x.is_cpu and not _dual_level() and not _legacy_batched(x)
            and not torch.jit.is_tracing() and _dispatch_stack_len() == 0
            and _function_stack_len() == 0 and not _transforms_active())


def _functorch() -> bool:
    """Whether a functorch transform is active (and nothing is being compiled)."""
    return (_transforms_active is not None and _transforms_active()
            and not torch.compiler.is_compiling())


def _onnx_exporting() -> bool:
    """Whether torch.onnx.export is tracing the call (torch.onnx is imported then; importing it
    only to ask would cost the first call 18 ms). Asking costs 0.9 us: callers ask only off the
    direct route, which an export never takes."""
    onnx = sys.modules.get("torch.onnx")
    return onnx is not None and onnx.is_in_onnx_export()


# Calls that torch's own pools serve, with the same meaning: dtypes the kernels lack (torch's
# windowed pools take int64, dividing as integers, and quantized tensors; for the rest torch
# raises its own error), layouts other than strided (mkldnn, sparse), and the traces that
# must record torch's operators. A TorchScript trace (torch.jit.trace) fixes every Python
# value as a constant, so the output sizes that avgpool's operators take would hold the traced
# input's sizes for every later one; torch's operators compute them from the sizes. ONNX
# exporters write torch's pools as AveragePool, and know nothing of avgpool's.
_KERNEL_DTYPES = frozenset((torch.float32, torch.float64, torch.float16, torch.bfloat16))


def _torchs_own(x: Tensor, direct: bool) -> bool:
    """Whether torch.nn.functional serves the call on x (direct: _eager_direct(x)); the trace
    questions are asked only off the direct route, which no trace takes."""
    return x.dtype not in _KERNEL_DTYPES or x.layout is not torch.strided or (
        not direct and (torch.jit.is_tracing() or _onnx_exporting()))


# Empty inputs and empty adaptive results have nothing to compute, and torch's rules for them
# differ by op (a zero batch passes everywhere; zero channels only the 1-D and 2-D adaptive
# pools; an adaptive output size of 0 gives an empty result): this module's functions hand
# them to torch's own pools for its outcome. avgpool.functional, which runs torch tensors
# through the same operators, keeps avgpool's rulings for them, as for arrays (as_torch=False).

def _empty_sizes(output_size: Any) -> bool:
    """Whether an adaptive output_size asks for an empty result (an entry of 0)."""
    sizes = output_size if isinstance(output_size, (tuple, list)) else (output_size,)
    return any(type(v) is int and v == 0 for v in sizes)


def _wants_grad(x: Tensor) -> bool:
    return x.requires_grad and torch.is_grad_enabled()


class _Pooling:
    """A pool's arguments other than its tensor (params: _PoolParams, or adaptive output
    sizes), as one leaf of functorch's pytrees, and its two linear maps: the pool and its
    adjoint, the backward, each on the kernels directly where nothing would see the difference
    (_eager_direct), else through the operators. channels_last: the layout of the pool's
    result and of the backward's gradient."""

    def __init__(self, adaptive: bool, params: Any, channels_last: bool,
                 input_size: Sequence[Any]) -> None:
        self.adaptive, self.params, self.channels_last = adaptive, params, channels_last
        self.input_size = list(input_size)

    def of_gradient(self, g: Tensor) -> "_Pooling":
        """The pool applied to g (a gradient's gradient), in the layout torch gives g's."""
        return _Pooling(self.adaptive, self.params, _result_channels_last(g), g.shape)

    def desc(self) -> Any:
        """The descriptor the kernels run: of the adaptive sizes, or of the pool's parameters."""
        return adaptive_desc(tuple(self.params)) if self.adaptive else _pool_desc_of(self.params)

    def pool(self, x: Tensor, direct: bool) -> Tensor:
        cl = self.channels_last
        if direct:
            return _run(x, self.desc(), cl)
        if self.adaptive:
            return _adaptive_op(x, self.params, cl)
        params: _PoolParams = self.params
        return _avg_pool_op(x, *params, cl)

    def backward(self, g: Tensor) -> Tensor:
        size = self.input_size
        cl = (_adaptive_grad_channels_last(self.channels_last, self.params) if self.adaptive
              else self.channels_last)
        if _eager_direct(g):
            return _run_backward(g, size, cl, self.desc())
        if self.adaptive:
            return _adaptive_backward_op(g, size, self.params, cl)
        params: _PoolParams = self.params
        return _avg_pool_backward_op(g, size, *params, cl)


class _PoolFunction(torch.autograd.Function):
    """A pool (_Pooling) with its autograd, outside custom_op's: the backward is
    _PoolBackwardFunction (differentiable again: double backward), the forward-mode derivative
    the pool of the tangent (the pool is linear), vmap rules generated from the operators'."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: Tensor, pooling: _Pooling) -> Tensor:
        return pooling.pool(x, _eager_direct(x))

    @staticmethod
    def setup_context(ctx: Any, inputs: Tuple[Any, ...], output: Any) -> None:
        ctx.pooling = inputs[1]

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tuple[Optional[Tensor], None]:
        if torch.is_grad_enabled() or _functorch():  # its own gradient may be taken
            return _PoolBackwardFunction.apply(grad, ctx.pooling), None
        return ctx.pooling.backward(grad), None

    @staticmethod
    def jvp(ctx: Any, tangent: Tensor, _: Any) -> Tensor:
        return _PoolFunction.apply(tangent, ctx.pooling)


class _EagerPool(torch.autograd.Function):
    """_PoolFunction for plain eager code, in the older style (ctx in forward): apply() of the
    setup_context style binds its arguments through inspect.signature on every call (9 us more
    an apply; a pool of 8x64x14x14 with requires_grad took 23 -> 42 us), and only functorch's
    transforms and forward-mode AD need that style."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, pooling: _Pooling) -> Tensor:
        ctx.pooling = pooling
        return pooling.pool(x, True)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tuple[Optional[Tensor], None]:
        return _PoolFunction.backward(ctx, grad)


class _PoolBackwardFunction(torch.autograd.Function):
    """The backward of a pool, with its autograd: its gradient is the pool of the gradient's
    gradient, its forward-mode derivative itself on the tangent (as _PoolFunction)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(grad: Tensor, pooling: _Pooling) -> Tensor:
        return pooling.backward(grad)

    @staticmethod
    def setup_context(ctx: Any, inputs: Tuple[Any, ...], output: Any) -> None:
        ctx.pooling = inputs[1]

    @staticmethod
    def backward(ctx: Any, grad_grad: Tensor) -> Tuple[Optional[Tensor], None]:
        return _PoolFunction.apply(grad_grad, ctx.pooling.of_gradient(grad_grad)), None

    @staticmethod
    def jvp(ctx: Any, tangent: Tensor, _: Any) -> Tensor:
        return _PoolBackwardFunction.apply(tangent, ctx.pooling)


def _route(xb: Tensor, pooling: _Pooling, direct: bool, key: Optional[Tuple[Any, ...]]) -> Tensor:
    """pooling on the batched xb by the cheapest route nothing would tell from the operators
    (direct: _eager_direct of xb): the kernels directly (kept under key for the inference
    path, _run), the same through _EagerPool when a gradient is wanted, _PoolFunction under
    functorch's transforms and forward-mode AD, else the operators."""
    if direct and not _wants_grad(xb):
        return _run(xb, pooling.desc(), pooling.channels_last, key)
    if direct:
        return _EagerPool.apply(xb, pooling)
    if _functorch() or _dual_level():
        return _PoolFunction.apply(xb, pooling)
    return pooling.pool(xb, False)


# --------------------------------------------------------------------------------- functions

def _batched(x: Tensor, rank: int, fname: str) -> Tuple[Tensor, bool]:
    if x.dim() == rank + 1:
        return x.unsqueeze(0), True
    if x.dim() != rank + 2:
        raise ValueError(f"{fname}: input must be {rank + 1}-D (C, ...) or {rank + 2}-D "
                         f"(N, C, ...), got shape {tuple(x.shape)}")
    return x, False


# The arguments become the operators' parameters at trace time: torch.compile calls these once
# per graph and keeps the result as a constant (they depend on sizes and arguments only), rather
# than tracing the descriptor checks.
@torch.compiler.assume_constant_result
def _pool_params(spatial: Tuple[int, ...], rank: int, key: Optional[Tuple[Any, ...]],
                 kernel_size: Any, stride: Any, padding: Any, ceil_mode: Any,
                 count_include_pad: Any, divisor_override: Any) -> _PoolParams:
    """The checked parameters of a pool; cached under key (_pool_key of the arguments) unless
    it is None."""
    if key is None:
        return _pool_params_of(spatial, rank, kernel_size, stride, padding, ceil_mode,
                               count_include_pad, divisor_override)
    return _pool_params_cached(spatial, rank, *key)


def _ints(v: Any, none_ok: bool = False) -> bool:
    """Whether v is an int, or a tuple or list of ints (or None where none_ok): values equal
    only to values of their own kind, so that a cache keyed on them never serves an argument
    that compares equal but fails the checks (2.0 or True after 2 or 1)."""
    if type(v) is int or (none_ok and v is None):
        return True
    return (type(v) is tuple or type(v) is list) and all(
        type(e) is int or (none_ok and e is None) for e in v)


def _tupled(v: Any) -> Any:
    return tuple(v) if type(v) is list else v


def _pool_key(kernel_size: Any, stride: Any, padding: Any, ceil_mode: Any,
              count_include_pad: Any, divisor_override: Any) -> Optional[Tuple[Any, ...]]:
    """The pool arguments as a cache key (lists as tuples), or None when one is not of the
    plain kinds _ints names (or a bool for the flags): such calls are checked every time."""
    if not (_ints(kernel_size) and (stride is None or _ints(stride)) and _ints(padding) and
            type(ceil_mode) is bool and type(count_include_pad) is bool and
            (divisor_override is None or type(divisor_override) is int)):
        return None
    return (_tupled(kernel_size), _tupled(stride), _tupled(padding), ceil_mode,
            count_include_pad, divisor_override)


def _pool_params_of(spatial: Tuple[int, ...], rank: int, kernel_size: Any, stride: Any,
                    padding: Any, ceil_mode: Any, count_include_pad: Any,
                    divisor_override: Any) -> _PoolParams:
    desc = _functional.pool_desc_for(spatial, rank, kernel_size, stride, padding, ceil_mode,
                                     count_include_pad, divisor_override)
    return (list(desc.window_size), list(desc.strides or ()), list(desc.start_padding or ()),
            list(desc.output_sizes or ()), bool(desc.include_padding),
            desc.divisor_override or 0)


# the same arguments on the same sizes (a model's every step): checked once
_pool_params_cached = lru_cache(maxsize=512)(_pool_params_of)


@torch.compiler.assume_constant_result
def _adaptive_params(spatial: Tuple[int, ...], rank: int, output_size: Any) -> List[int]:
    if not _ints(output_size, none_ok=True):
        return list(_functional.adaptive_sizes_for(spatial, rank, output_size))
    return list(_adaptive_sizes_cached(spatial, rank, _tupled(output_size)))


# as _pool_params_cached: checked once per arguments and sizes
_adaptive_sizes_cached = lru_cache(maxsize=512)(_functional.adaptive_sizes_for)


# Sizes torch.compile keeps symbolic (dynamic shapes: by default from the second size a
# compiled function sees on an axis) cannot be constants: the arguments are checked once, as a
# constant, and the output sizes traced from the sizes (plain arithmetic, so the graph holds
# them as expressions and one graph serves every size).

def _symbolic(sizes: Tuple[Any, ...]) -> bool:
    """Whether sizes may be symbolic: under torch.compile (whose tracer takes a symbolic size
    for an int) or given as torch.SymInt (make_fx's symbolic tracing)."""
    return torch.compiler.is_compiling() or torch.SymInt in map(type, sizes)


@torch.compiler.assume_constant_result
def _pool_args(rank: int, kernel_size: Any, stride: Any, padding: Any, ceil_mode: Any,
               count_include_pad: Any, divisor_override: Any) -> Tuple[Any, ...]:
    return _functional.pool_args_for(rank, kernel_size, stride, padding, ceil_mode,
                                     count_include_pad, divisor_override)


def _symbolic_pool_params(spatial: Tuple[Any, ...], rank: int, *arguments: Any) -> _PoolParams:
    kernel, strides, pads, ceil_mode, include, override = _pool_args(rank, *arguments)
    outs = _functional.pool_output_sizes(spatial, kernel, strides, pads, ceil_mode,
                                         symbolic=True)
    return list(kernel), list(strides), list(pads), list(outs), include, override or 0


@torch.compiler.assume_constant_result
def _adaptive_args(rank: int, output_size: Any) -> Tuple[Optional[int], ...]:
    return _functional.adaptive_args_for(rank, output_size)


def _symbolic_adaptive_params(spatial: Tuple[Any, ...], rank: int, output_size: Any) -> List[Any]:
    return [spatial[i] if v is None else v for i, v in enumerate(_adaptive_args(rank, output_size))]


def _avg_pool(x: Tensor, rank: int, fname: str, kernel_size: _Size, stride: Optional[_Size],
              padding: _Size, ceil_mode: bool, count_include_pad: bool,
              divisor_override: Optional[int], as_torch: bool = True) -> Tensor:
    args = _pool_key(kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)
    key = None if args is None else _inference_key(x, (fname,) + args)
    y = _inference_run(key, x)
    if y is not None:
        return y
    _check_tensor(x, fname)
    direct = _eager_direct(x)
    if _torchs_own(x, direct) or (as_torch and x.numel() == 0):
        pool = getattr(torch.nn.functional, fname)
        if rank == 1:
            return pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad)
        return pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                    divisor_override)
    xb, unbatched = _batched(x, rank, fname)
    spatial = tuple(xb.shape[2:])
    arguments = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    params: _PoolParams = (
        _symbolic_pool_params(spatial, rank, *arguments) if not direct and _symbolic(spatial)
        else _pool_params(spatial, rank, args, *arguments))
    pooling = _Pooling(False, params, _result_channels_last(xb), xb.shape)
    y = _route(xb, pooling, direct, None if unbatched else key)
    return y.squeeze(0) if unbatched else y


def _adaptive(x: Tensor, rank: int, fname: str, output_size: Any,
              as_torch: bool = True) -> Tensor:
    key = (_inference_key(x, (fname, _tupled(output_size)))
           if _ints(output_size, none_ok=True) else None)
    y = _inference_run(key, x)
    if y is not None:
        return y
    _check_tensor(x, fname)
    direct = _eager_direct(x)
    if _torchs_own(x, direct) or (as_torch and (x.numel() == 0 or _empty_sizes(output_size))):
        return getattr(torch.nn.functional, fname)(x, output_size)
    xb, unbatched = _batched(x, rank, fname)
    spatial = tuple(xb.shape[2:])
    output_sizes = (
        _symbolic_adaptive_params(spatial, rank, output_size) if not direct and _symbolic(spatial)
        else _adaptive_params(spatial, rank, output_size))
    pooling = _Pooling(True, output_sizes, _result_channels_last(xb), xb.shape)
    y = _route(xb, pooling, direct, None if unbatched else key)
    return y.squeeze(0) if unbatched else y


def avg_pool1d(input: Tensor, kernel_size: _Size, stride: Optional[_Size] = None,
               padding: _Size = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """``torch.nn.functional.avg_pool1d`` on avgpool's kernels, with autograd.

    Output ``o`` averages ``input[..., o * stride - padding + j]`` over ``j < kernel_size``
    (padding counted in the divisor when ``count_include_pad``).

    >>> import torch, avgpool.torch as apt
    >>> apt.avg_pool1d(torch.tensor([[[1., 2., 3., 4.]]]), 2)
    tensor([[[1.5000, 3.5000]]])
    """
    return _avg_pool(input, 1, "avg_pool1d", kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size: _Size, stride: Optional[_Size] = None,
               padding: _Size = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Optional[int] = None) -> Tensor:
    """``torch.nn.functional.avg_pool2d`` on avgpool's kernels, with autograd; channels-last
    input gives channels-last output.

    >>> import torch, avgpool.torch as apt
    >>> apt.avg_pool2d(torch.ones(1, 1, 4, 4), 2, divisor_override=2)[0, 0]
    tensor([[2., 2.],
            [2., 2.]])
    """
    return _avg_pool(input, 2, "avg_pool2d", kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(input: Tensor, kernel_size: _Size, stride: Optional[_Size] = None,
               padding: _Size = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Optional[int] = None) -> Tensor:
    """``torch.nn.functional.avg_pool3d`` on avgpool's kernels, with autograd; the output is
    contiguous, as torch's, even for channels_last_3d input (which runs in place).

    >>> import torch, avgpool.torch as apt
    >>> apt.avg_pool3d(torch.ones(1, 1, 2, 2, 2), 2).shape
    torch.Size([1, 1, 1, 1, 1])
    """
    return _avg_pool(input, 3, "avg_pool3d", kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """``torch.nn.functional.adaptive_avg_pool1d`` on avgpool's kernels, with autograd: output
    ``i`` averages ``input[..., floor(i * L / out) : ceil((i + 1) * L / out)]``.

    >>> import torch, avgpool.torch as apt
    >>> apt.adaptive_avg_pool1d(torch.arange(10.).reshape(1, 1, 10), 3)
    tensor([[[1.5000, 4.5000, 7.5000]]])
    """
    return _adaptive(input, 1, "adaptive_avg_pool1d", output_size)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """``torch.nn.functional.adaptive_avg_pool2d`` on avgpool's kernels, with autograd (an
    entry ``None`` keeps that input size).

    >>> import torch, avgpool.torch as apt
    >>> apt.adaptive_avg_pool2d(torch.ones(1, 3, 5, 7), (2, None)).shape
    torch.Size([1, 3, 2, 7])
    """
    return _adaptive(input, 2, "adaptive_avg_pool2d", output_size)


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """``torch.nn.functional.adaptive_avg_pool3d`` on avgpool's kernels, with autograd.

    >>> import torch, avgpool.torch as apt
    >>> apt.adaptive_avg_pool3d(torch.ones(1, 1, 4, 4, 4), 1).shape
    torch.Size([1, 1, 1, 1, 1])
    """
    return _adaptive(input, 3, "adaptive_avg_pool3d", output_size)


# ----------------------------------------------------------------------------------- modules
# Subclasses of torch.nn's own modules: the same constructor, attributes, extra_repr, state and
# isinstance checks; only forward runs on avgpool. torch.jit.script compiles the branch under
# is_scripting, torch's own forward: a TorchScript program runs without Python, from which
# avgpool's kernels are called, and torch's pool means the same.

class AvgPool1d(torch.nn.AvgPool1d):
    """``torch.nn.AvgPool1d`` on avgpool's kernels."""

    def forward(self, input: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return torch.nn.functional.avg_pool1d(input, self.kernel_size, self.stride,
                                                  self.padding, self.ceil_mode,
                                                  self.count_include_pad)
        return avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                          self.count_include_pad)


class AvgPool2d(torch.nn.AvgPool2d):
    """``torch.nn.AvgPool2d`` on avgpool's kernels."""

    def forward(self, input: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return torch.nn.functional.avg_pool2d(input, self.kernel_size, self.stride,
                                                  self.padding, self.ceil_mode,
                                                  self.count_include_pad, self.divisor_override)
        return avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                          self.count_include_pad, self.divisor_override)


class AvgPool3d(torch.nn.AvgPool3d):
    """``torch.nn.AvgPool3d`` on avgpool's kernels."""

    def forward(self, input: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return torch.nn.functional.avg_pool3d(input, self.kernel_size, self.stride,
                                                  self.padding, self.ceil_mode,
                                                  self.count_include_pad, self.divisor_override)
        return avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                          self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool1d(torch.nn.AdaptiveAvgPool1d):
    """``torch.nn.AdaptiveAvgPool1d`` on avgpool's kernels."""

    def forward(self, input: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return torch.nn.functional.adaptive_avg_pool1d(input, self.output_size)
        return adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(torch.nn.AdaptiveAvgPool2d):
    """``torch.nn.AdaptiveAvgPool2d`` on avgpool's kernels."""

    def forward(self, input: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return torch.nn.functional.adaptive_avg_pool2d(input, self.output_size)
        return adaptive_avg_pool2d(input, self.output_size)


class AdaptiveAvgPool3d(torch.nn.AdaptiveAvgPool3d):
    """``torch.nn.AdaptiveAvgPool3d`` on avgpool's kernels."""

    def forward(self, input: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return torch.nn.functional.adaptive_avg_pool3d(input, self.output_size)
        return adaptive_avg_pool3d(input, self.output_size)


# torch.nn's pooling modules and avgpool's in their place: each of ours subclasses the one
# torch.nn module it stands for and adds no state, so a module's class can change in place
_SWAPS: Dict[type, type] = {ours.__bases__[0]: ours for ours in (
    AvgPool1d, AvgPool2d, AvgPool3d, AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d)}


def swap_modules(model: torch.nn.Module) -> torch.nn.Module:
    """Make every ``torch.nn`` average-pooling module in ``model`` (``model`` itself included)
    the avgpool.torch module of the same name, in place, and return ``model``.

    A model built elsewhere (torchvision's, a checkpoint's) then pools on avgpool's kernels
    with nothing else changed: each module keeps its identity, arguments, hooks, training flag
    and place in ``state_dict`` (pools hold no parameters). Only modules whose class is exactly
    torch's change; a subclass may have a ``forward`` of its own and is left alone.

    >>> import torch, avgpool.torch as apt
    >>> model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.AdaptiveAvgPool2d(1))
    >>> type(apt.swap_modules(model)[1]).__module__
    'avgpool.torch'
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    for module in model.modules():
        ours = _SWAPS.get(type(module))
        if ours is not None:
            module.__class__ = ours
    return model
