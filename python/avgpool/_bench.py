"""``python -m avgpool bench``: avgpool against the fastest CPU implementations in one run.

Peers: TFLite / LiteRT (``ai-edge-litert``, whose CPU kernels are XNNPACK's; channels last, only
the paddings SAME and VALID, float32), OpenCV (``cv2.boxFilter``: 2-D stride-1 'same' windows
with include pad; at most 128 channels channels last), SciPy (``ndimage.uniform_filter``, the
same windows), PyTorch, ONNX Runtime and OpenVINO. A peer runs the cases it can express and
shows ``-`` elsewhere; a peer known to take seconds on a case is skipped there (``Case.skip``).

Every case runs avgpool and each installed peer with the same thread count, checks that all
outputs agree, then times them one after the other (median and min over repeats, after a pause
that lets the previous one's spinning threads fall asleep). GB/s counts the input read once
and the output written once; ``%bw`` compares that with a large copy measured in the same run.
``ratio`` is the fastest peer's median over avgpool's (> 1: avgpool is faster); avgpool's time
is the better of its plain call and, where ``avgpool.compile_operator`` exists, the compiled
operator's call (column ``avgpool-op``).

``--contended`` times every implementation's back-to-back calls (mean time per call, so that
the occasional call a descheduled thread holds up for milliseconds counts) without and then with
a busy process pinned to the last core (another program competing for the machine), and reports
each one's slowdown.

Every array the bench gives an implementation (inputs, and avgpool's outputs) starts on a 64-byte
boundary (``ALIGN``), as the peers' own buffers do; numpy's allocator gives 16 bytes.

avgpool writes into an output buffer allocated once (``out=``), as an inference loop would and as
OpenVINO's reused infer request does; ``--alloc`` makes it allocate per call instead, like torch and
onnxruntime (for outputs of tens of MB that adds the kernel's page zeroing to every call).

A noisy machine makes every ratio meaningless, so the run says when it was: a load average above
``MAX_LOAD_PER_CORE`` per core at the start, or a case where some implementation's median is more
than ``MAX_SPREAD`` times its minimum (:func:`noisy_impls`), gets a warning, a ``noisy`` note on the
row and a closing hint. When stdout or stderr is not a terminal there is no progress bar: one plain
line per case goes to stderr instead.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

import avgpool

__all__ = ["CASES", "Case", "run", "main", "noisy_impls", "load_per_core", "format_table"]

# A run is flagged as noisy above these (see the module docstring).
MAX_LOAD_PER_CORE = 0.5
MAX_SPREAD = 1.5
# Seconds of pause before each implementation's timing, then of warm-up calls (see _time).
SETTLE_S = 0.05
WARM_S = 0.02


@dataclass(frozen=True)
class Case:
    """One benchmark case; ``shape`` is always given channels first (N, C, *spatial)."""

    id: str
    shape: Tuple[int, ...]
    kind: str = "pool"                  # "pool", "adaptive" or "global"
    kernel: Tuple[int, ...] = ()
    stride: Tuple[int, ...] = ()
    pad: Tuple[int, ...] = ()
    dilation: Tuple[int, ...] = ()
    ceil_mode: bool = False
    count_include_pad: bool = False
    output_size: Tuple[int, ...] = ()
    dtype: str = "float32"
    quick: bool = True                  # part of --quick
    skip: Tuple[str, ...] = ()          # peers that take seconds here: not timed

    @property
    def rank(self) -> int:
        return len(self.shape) - 2


def _pool(id, shape, k, s, p=0, **kw):
    r = len(shape) - 2
    d = kw.pop("dilation", 1)
    return Case(id, shape, "pool", (k,) * r, (s,) * r, (p,) * r, (d,) * r, **kw)


def _box(id, shape, k, **kw):
    """A box filter: stride 1, 'same' size (odd k, padding k // 2), padding counted."""
    return _pool(id, shape, k, 1, k // 2, count_include_pad=True, **kw)


CASES: List[Case] = [
    # tiny calls: the per-call cost decides
    Case("global-1x64x7x7", (1, 64, 7, 7), "global"),
    _pool("3x3s1p1-1x64x7x7", (1, 64, 7, 7), 3, 1, 1),
    Case("global-1x2048x7x7", (1, 2048, 7, 7), "global"),
    Case("global-32x2048x7x7", (32, 2048, 7, 7), "global"),
    _pool("3x3s1p1-1x192x35x35", (1, 192, 35, 35), 3, 1, 1),
    _pool("3x3s1p1-32x192x35x35", (32, 192, 35, 35), 3, 1, 1),
    _pool("2x2s2-1x64x112x112", (1, 64, 112, 112), 2, 2),
    _pool("2x2s2-16x64x112x112", (16, 64, 112, 112), 2, 2),
    _pool("3x3s2p1-8x64x112x112", (8, 64, 112, 112), 3, 2, 1),
    _pool("1d-k4s4-32x256x4096", (32, 256, 4096), 4, 4),
    _pool("3d-2x2x2s2-2x64x16x56x56", (2, 64, 16, 56, 56), 2, 2),
    _pool("15x15s1p7-1x32x256x256", (1, 32, 256, 256), 15, 1, 7),
    # box filters (OpenCV's and SciPy's domain): an RGB image, a large window on a raster
    _box("box15x15-1x32x256x256", (1, 32, 256, 256), 15),
    _box("box5x5-1x3x1080x1920", (1, 3, 1080, 1920), 5),
    # torch, onnxruntime and openvino take seconds per call here (no running sums)
    _box("box31x31-1x1x2048x2048", (1, 1, 2048, 2048), 31,
         skip=("torch", "onnxruntime", "openvino")),
    Case("adaptive-1x512x13x13-7x7", (1, 512, 13, 13), "adaptive", output_size=(7, 7)),
    Case("adaptive-32x512x14x14-7x7", (32, 512, 14, 14), "adaptive", output_size=(7, 7)),
    Case("adaptive-8x256x100x100-6x6", (8, 256, 100, 100), "adaptive", output_size=(6, 6)),
    _pool("ceil-3x3s2-16x64x56x56", (16, 64, 56, 56), 3, 2, ceil_mode=True),
    _pool("dilated-3x3d2p2-8x64x56x56", (8, 64, 56, 56), 3, 1, 2, dilation=2),
    Case("f16-global-32x2048x7x7", (32, 2048, 7, 7), "global", dtype="float16"),
    _pool("f16-2x2s2-16x64x112x112", (16, 64, 112, 112), 2, 2, dtype="float16"),
    # numpy's default dtype (onnxruntime has no float64 AveragePool, TFLite no float64 pools)
    _pool("f64-3x3s1p1-8x64x56x56", (8, 64, 56, 56), 3, 1, 1, dtype="float64"),
    _pool("f64-2x2s2-8x64x112x112", (8, 64, 112, 112), 2, 2, dtype="float64"),
    # Larger than the last-level cache of most machines: memory, not cache, bound.
    _pool("big-2x2s2-32x64x224x224", (32, 64, 224, 224), 2, 2, quick=False),
]


# ---------------------------------------------------------------- implementations

# Byte alignment of every array the bench hands to an implementation: torch's, TFLite's and
# onnxruntime's own buffers are 64-byte aligned, numpy's only 16-byte, and a vector load that
# straddles two cache lines costs up to a quarter of a channels-last 3x3 pool's time on AVX-512.
ALIGN = 64


def _aligned_empty(shape: Tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on an ALIGN-byte boundary."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    raw = np.empty(n * dtype.itemsize + ALIGN, np.uint8)
    start = -raw.ctypes.data % ALIGN
    return raw[start:start + n * dtype.itemsize].view(dtype).reshape(shape)


def _aligned(a: np.ndarray) -> np.ndarray:
    """A C-contiguous, ALIGN-byte aligned copy of ``a``."""
    out = _aligned_empty(a.shape, a.dtype)
    out[...] = a
    return out


def _to_layout(x: np.ndarray, layout: str) -> np.ndarray:
    return x if layout == "NCHW" else _aligned(np.moveaxis(x, 1, -1))


def _avgpool_desc(case: Case) -> Any:
    """The case's AveragePoolingDesc or AdaptiveAveragePoolingDesc."""
    if case.kind == "pool":
        return avgpool.AveragePoolingDesc(
            case.kernel, case.stride, case.pad, case.pad, case.dilation,
            include_padding=case.count_include_pad, output_sizes=_pool_output_sizes(case))
    sizes = case.output_size if case.kind == "adaptive" else (1,) * case.rank
    return avgpool.AdaptiveAveragePoolingDesc(sizes)


def _avgpool_fn(case: Case, x: np.ndarray, layout: str, threads: int, reuse_out: bool) -> Callable:
    """avgpool on this case; with reuse_out the output buffer is allocated once and passed as
    ``out=`` (as OpenVINO's reused infer request keeps its output), else every call allocates."""
    xl = _to_layout(x, layout)
    desc = _avgpool_desc(case)
    pool: Callable[..., Any] = (avgpool.average_pool if case.kind == "pool"
                                else avgpool.adaptive_average_pool)
    out = _aligned_empty(desc.output_shape(xl.shape, layout), xl.dtype) if reuse_out else None
    return lambda: pool(xl, desc, layout=layout, out=out, num_threads=threads)


def _avgpool_op_fn(case: Case, x: np.ndarray, layout: str, threads: int,
                   reuse_out: bool) -> Optional[Callable]:
    """The compiled operator (``avgpool.compile_operator``, when this version has it): the
    plan made once, each call checks the array and runs it."""
    compile_operator = getattr(avgpool, "compile_operator", None)
    if compile_operator is None:
        return None
    xl = _to_layout(x, layout)
    op = compile_operator(_avgpool_desc(case), xl.shape, xl.dtype, layout=layout,
                          num_threads=threads)
    out = _aligned_empty(op.output_shape, xl.dtype) if reuse_out else None
    return lambda: op(xl, out=out)


def _pool_output_sizes(case: Case) -> Tuple[int, ...]:
    """Output sizes with PyTorch / ONNX ceil_mode rules."""
    outs = []
    for a in range(case.rank):
        size, k, s, p, d = (case.shape[2 + a], case.kernel[a], case.stride[a], case.pad[a],
                            case.dilation[a])
        span = size + 2 * p - ((k - 1) * d + 1)
        out = (-(-span // s) if case.ceil_mode else span // s) + 1
        if case.ceil_mode and (out - 1) * s >= size + p:
            out -= 1
        outs.append(out)
    return tuple(outs)


def _torch_fn(case: Case, x: np.ndarray, layout: str, threads: int) -> Optional[Callable]:
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    if any(d != 1 for d in case.dilation):
        return None  # torch's avg_pool has no dilation
    t = torch.from_numpy(x)
    if layout == "NHWC":
        if case.rank == 1:
            return None
        fmt = torch.channels_last if case.rank == 2 else torch.channels_last_3d
        t = t.contiguous(memory_format=fmt)
    if case.kind == "pool":
        fn: Callable[..., Any] = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[case.rank - 1]
        args: Dict[str, Any] = dict(kernel_size=case.kernel, stride=case.stride, padding=case.pad,
                    ceil_mode=case.ceil_mode, count_include_pad=case.count_include_pad)
        return lambda: fn(t, **args)
    afn: Callable[..., Any] = (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d,
                               F.adaptive_avg_pool3d)[case.rank - 1]
    sizes = case.output_size if case.kind == "adaptive" else (1,) * case.rank
    return lambda: afn(t, sizes)


def _onnx_model(case: Case, x: np.ndarray):
    from onnx import TensorProto, helper

    elem = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16}.get(case.dtype)
    if elem is None:  # onnxruntime's CPU AveragePool: float32 and float16 only
        return None
    if case.kind == "global":
        node = helper.make_node("GlobalAveragePool", ["x"], ["y"])
    elif case.kind == "pool":
        node = helper.make_node(
            "AveragePool", ["x"], ["y"], kernel_shape=list(case.kernel), strides=list(case.stride),
            pads=list(case.pad) * 2, ceil_mode=int(case.ceil_mode),
            count_include_pad=int(case.count_include_pad), dilations=list(case.dilation))
    else:
        return None
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", elem, x.shape)],
                              [helper.make_tensor_value_info("y", elem, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def _ort_fn(case: Case, x: np.ndarray, layout: str, threads: int) -> Optional[Callable]:
    import onnxruntime as ort

    if layout != "NCHW":
        return None
    model = _onnx_model(case, x)
    if model is None:
        return None
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    feed = {"x": x}
    return lambda: sess.run(None, feed)[0]


def _openvino_fn(case: Case, x: np.ndarray, layout: str, threads: int) -> Optional[Callable]:
    import openvino as ov
    import openvino.opset8 as ops8
    import openvino.opset14 as ops14

    if layout != "NCHW" or any(d != 1 for d in case.dilation):
        return None
    elem = {"float32": ov.Type.f32, "float16": ov.Type.f16, "float64": ov.Type.f64}[case.dtype]
    param = ops14.parameter(x.shape, elem)
    if case.kind == "pool":
        node = ops14.avg_pool(param, list(case.stride), list(case.pad), list(case.pad),
                              list(case.kernel), not case.count_include_pad,
                              rounding_type="ceil_torch" if case.ceil_mode else "floor")
    else:
        sizes = case.output_size if case.kind == "adaptive" else (1,) * case.rank
        node = ops8.adaptive_avg_pool(param, ops14.constant(np.array(sizes, np.int64)))
    model = ov.Model([node], [param])
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                      "INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    tensor = ov.Tensor(x)

    def call():
        request.infer({0: tensor})
        return request.get_output_tensor(0).data
    return call


def _tflite_padding(case: Case) -> Optional[str]:
    """'VALID' or 'SAME' when TFLite's padding gives exactly this case's windows, else None.

    TFLite's SAME has ceil(in / s) outputs, pads ``max((out - 1) s + k - in, 0)`` in total with
    the smaller half first, and leaves padding out of the divisor; VALID pads nothing."""
    if case.count_include_pad or any(d != 1 for d in case.dilation):
        return None
    outs = _pool_output_sizes(case)
    spatial = case.shape[2:]
    if all(p == 0 for p in case.pad) and outs == tuple(
            (n - k) // s + 1 for n, k, s in zip(spatial, case.kernel, case.stride)):
        return "VALID"
    for n, k, s, p, o in zip(spatial, case.kernel, case.stride, case.pad, outs):
        total = max((o - 1) * s + k - n, 0)
        if o != -(-n // s) or p != total // 2:
            return None
    return "SAME"


def _tflite_model(case: Case, shape_nhwc: Tuple[int, ...]) -> Optional[bytes]:
    """A one-operator TFLite flatbuffer: AVERAGE_POOL_2D, or MEAN over the spatial axes."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as tfl

    n, h, w, c = shape_nhwc
    sizes = case.output_size if case.kind == "adaptive" else ()
    kernel, stride, padding = case.kernel, case.stride, None
    if case.kind == "pool":
        padding = _tflite_padding(case)
        if padding is None:
            return None
    elif case.kind == "adaptive":  # divisible: a VALID pool with k = s = in / out
        if any(i % o for i, o in zip(case.shape[2:], sizes)):
            return None
        kernel = stride = tuple(i // o for i, o in zip(case.shape[2:], sizes))
        padding = "VALID"
    if case.rank == 1:  # 1-D as H = 1
        kernel, stride = (1,) + tuple(kernel), (1,) + tuple(stride)

    def tensor(name: str, shape: Tuple[int, ...], buffer: int, kind: int) -> Any:
        t = tfl.TensorT()
        t.name, t.shape, t.buffer, t.type = name, list(shape), buffer, kind
        return t

    buffers = [tfl.BufferT() for _ in range(3)]
    op, code = tfl.OperatorT(), tfl.OperatorCodeT()
    op.opcodeIndex, op.inputs, op.outputs = 0, [0], [1]
    if case.kind == "global":
        axes = tfl.BufferT()
        axes.data = np.array([1, 2], np.int32).tobytes()
        buffers.append(axes)
        tensors = [tensor("x", shape_nhwc, 1, tfl.TensorType.FLOAT32),
                   tensor("y", (n, 1, 1, c), 2, tfl.TensorType.FLOAT32),
                   tensor("axes", (2,), 3, tfl.TensorType.INT32)]
        op.inputs = [0, 2]
        opts: Any = tfl.ReducerOptionsT()
        opts.keepDims = True
        op.builtinOptionsType, op.builtinOptions = tfl.BuiltinOptions.ReducerOptions, opts
        code.builtinCode = code.deprecatedBuiltinCode = tfl.BuiltinOperator.MEAN
    else:
        if padding == "SAME":
            oh, ow = -(-h // stride[0]), -(-w // stride[1])
        else:
            oh, ow = (h - kernel[0]) // stride[0] + 1, (w - kernel[1]) // stride[1] + 1
        tensors = [tensor("x", shape_nhwc, 1, tfl.TensorType.FLOAT32),
                   tensor("y", (n, oh, ow, c), 2, tfl.TensorType.FLOAT32)]
        opts = tfl.Pool2DOptionsT()
        opts.padding = tfl.Padding.SAME if padding == "SAME" else tfl.Padding.VALID
        opts.strideH, opts.strideW = stride
        opts.filterHeight, opts.filterWidth = kernel
        op.builtinOptionsType, op.builtinOptions = tfl.BuiltinOptions.Pool2DOptions, opts
        code.builtinCode = code.deprecatedBuiltinCode = tfl.BuiltinOperator.AVERAGE_POOL_2D
    graph = tfl.SubGraphT()
    graph.tensors, graph.inputs, graph.outputs, graph.operators = tensors, [0], [1], [op]
    model = tfl.ModelT()
    model.version, model.subgraphs, model.operatorCodes, model.buffers = 3, [graph], [code], buffers
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _tflite_fn(case: Case, x: np.ndarray, layout: str, threads: int) -> Optional[Callable]:
    """TFLite's interpreter with its default XNNPACK delegate: input set once, ``invoke()``
    timed (it reuses its output), as an inference loop would run it."""
    from ai_edge_litert.interpreter import Interpreter

    if layout != "NHWC" or case.dtype != "float32" or case.rank == 3:
        return None
    xn = np.ascontiguousarray(np.moveaxis(x, 1, -1))
    if case.rank == 1:
        xn = xn[:, None]  # (N, 1, W, C)
    model = _tflite_model(case, xn.shape)
    if model is None:
        return None
    interp = Interpreter(model_content=model, num_threads=threads)
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], xn)
    out_index = interp.get_output_details()[0]["index"]
    rank = case.rank

    def call():
        interp.invoke()
        y = interp.get_tensor(out_index)
        return y[:, 0] if rank == 1 else y
    call.timed = interp.invoke  # type: ignore[attr-defined]
    return call


def _is_box(case: Case) -> bool:
    """2-D stride-1 'same' windows with padding counted: a normalized box filter."""
    return (case.kind == "pool" and case.rank == 2 and case.count_include_pad
            and not case.ceil_mode and all(s == 1 for s in case.stride)
            and all(d == 1 for d in case.dilation)
            and all(k % 2 == 1 and p == k // 2 for k, p in zip(case.kernel, case.pad)))


# OpenCV's Mat holds at most this many channels (CV_CN_MAX in OpenCV 5).
_OPENCV_MAX_CHANNELS = 128


def _opencv_fn(case: Case, x: np.ndarray, layout: str, threads: int) -> Optional[Callable]:
    """``cv2.boxFilter(normalize=True, BORDER_CONSTANT)`` per image (channels last: H x W x C)
    or per plane (channels first), into preallocated outputs."""
    import cv2

    if not _is_box(case) or case.dtype != "float32":
        return None
    cv2.setNumThreads(threads)  # its box filter runs on one thread whatever this says
    ksize = (case.kernel[1], case.kernel[0])
    border = cv2.BORDER_CONSTANT
    if layout == "NHWC":
        if case.shape[1] > _OPENCV_MAX_CHANNELS:
            return None
        xs = [_aligned(np.moveaxis(img, 0, -1)) for img in x]
        if case.shape[1] == 1:
            xs = [img[..., 0] for img in xs]
    else:
        xs = [plane for img in x for plane in img]
    ys = [_aligned_empty(a.shape, a.dtype) for a in xs]

    def call():
        for a, b in zip(xs, ys):
            cv2.boxFilter(a, -1, ksize, dst=b, normalize=True, borderType=border)
        if layout == "NHWC":
            return np.stack([b.reshape(b.shape[:2] + (-1,)) for b in ys])
        return np.stack(ys).reshape(x.shape)
    return call


def _scipy_fn(case: Case, x: np.ndarray, layout: str, threads: int) -> Optional[Callable]:
    """``scipy.ndimage.uniform_filter(mode='constant')`` over the spatial axes (one thread)."""
    from scipy import ndimage

    if not _is_box(case) or case.dtype != "float32":
        return None
    xl = _to_layout(x, layout)
    size = (1, 1, *case.kernel) if layout == "NCHW" else (1, *case.kernel, 1)
    out = _aligned_empty(xl.shape, xl.dtype)
    return lambda: ndimage.uniform_filter(xl, size=size, output=out, mode="constant", cval=0.0)


PEERS: Dict[str, Callable] = {"tflite": _tflite_fn, "opencv": _opencv_fn, "scipy": _scipy_fn,
                              "torch": _torch_fn, "onnxruntime": _ort_fn, "openvino": _openvino_fn}
_PEER_MODULES = {"tflite": "ai_edge_litert", "opencv": "cv2", "scipy": "scipy", "torch": "torch",
                 "onnxruntime": "onnxruntime", "openvino": "openvino"}


def available_peers() -> List[str]:
    import importlib.util

    return [name for name, mod in _PEER_MODULES.items() if importlib.util.find_spec(mod)]


# ---------------------------------------------------------------- noise

def noisy_impls(impls: Dict[str, Dict[str, float]], max_spread: float = MAX_SPREAD) -> List[str]:
    """The implementations of one case whose timings are too spread out to trust: median more
    than ``max_spread`` times the minimum. ``impls`` maps a name to its ``median_us`` and
    ``min_us`` (a row's ``"impls"``); a pure function of those numbers."""
    return [name for name, t in impls.items() if t["median_us"] > max_spread * t["min_us"]]


def load_per_core() -> Optional[float]:
    """The 1-minute load average per core, or None where the OS does not report it."""
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except (AttributeError, OSError):
        return None


def load_warning(load: Optional[float], max_load: float = MAX_LOAD_PER_CORE) -> Optional[str]:
    """The warning line for a load average per core above ``max_load`` (None: no warning)."""
    if load is None or load <= max_load:
        return None
    return (f"WARNING: this machine is busy (load average {load:.2f} per core at the start, above "
            f"{max_load}); timings and ratios will be noisy")


_HINT = ("For numbers to trust, rerun on an idle machine (close other programs, wait for the load "
         "to drop), and try --threads 1, which suffers least from other work on the machine.")

_LEGEND = """columns:
  avgpool us (min)  avgpool's median time per call in microseconds (its fastest call in brackets)
  op us             the same through a compiled operator (avgpool.compile_operator), if any
  GB/s              input bytes read once + output bytes written once, over avgpool's better
                    median
  %bw               that GB/s as a percentage of a large single-threaded copy's bandwidth, which
                    streams main memory; above 100% means the case's data sat in the CPU caches
                    (or several threads read at once), so memory bandwidth was not the limit
  <peer> us         the peer's median time; '!' after it: its output disagreed with avgpool's;
                    '-': the peer cannot express the case; 'skip': it takes seconds there
  ratio             the fastest peer's median / avgpool's better median (> 1: avgpool is faster)
  note              'noisy': some implementation's median exceeds {spread}x its minimum"""


# ---------------------------------------------------------------- timing

def _warm_up(fn: Callable) -> None:
    """Calls of fn for WARM_S (at least one): after the pause, every thread it uses is awake
    again, its core given back by the OS (a VM's idle virtual CPU can take milliseconds to get
    a core again, and a few dozen calls of 25 us timed in that time ran on one thread: 2x)."""
    start = time.perf_counter()
    fn()
    while time.perf_counter() - start < WARM_S:
        fn()


def _time(fn: Callable, budget_s: float, min_reps: int, max_reps: int) -> Tuple[float, float]:
    """(median, min) seconds of fn over repeats, after a pause and a warm-up (_warm_up).

    The pause lets threads that the implementation timed before left spinning (onnxruntime's and
    torch's OpenMP threads spin for milliseconds after a call) fall asleep, so they do not
    compete with this one; timing implementations in interleaved rounds instead would charge
    each one the spinning of the others (and favour the ones that spin longest)."""
    time.sleep(SETTLE_S)
    _warm_up(fn)
    times: List[float] = []
    start = time.perf_counter()
    while len(times) < max_reps and (len(times) < min_reps or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def _mean_time(fn: Callable, budget_s: float) -> float:
    """Seconds per call of back-to-back calls for about budget_s (after a pause and a warm-up,
    as in _time)."""
    time.sleep(SETTLE_S)
    _warm_up(fn)
    calls, start = 0, time.perf_counter()
    while calls < 3 or time.perf_counter() - start < budget_s:
        fn()
        calls += 1
    return (time.perf_counter() - start) / calls


def copy_bandwidth(nbytes: int = 256 << 20) -> float:
    """GB/s of a large numpy copy (bytes read + bytes written)."""
    a = np.ones(nbytes // 4, np.float32)
    b = np.empty_like(a)
    np.copyto(b, a)
    best = math.inf
    for _ in range(5):
        t0 = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - t0)
    return 2 * nbytes / best / 1e9


def _as_float64(y) -> np.ndarray:
    if hasattr(y, "detach"):
        import torch

        y = y.detach().contiguous()
        y = y.float() if y.dtype in (torch.float16, torch.bfloat16) else y
        return y.numpy().astype(np.float64)
    return np.asarray(y).astype(np.float64)


@dataclass
class Result:
    case: str
    layout: str
    impl: str
    median_us: float
    min_us: float
    gbps: float
    extra: dict = field(default_factory=dict)


def run(cases: List[Case], threads: int, quick: bool = False, peers: Optional[List[str]] = None,
        progress: bool = True, reuse_out: bool = True, contended: bool = False) -> dict:
    """Run the suite; returns a JSON-ready dict with every timing and ratio. With
    ``contended``, every implementation is timed again beside :func:`busy_core`."""
    peers = available_peers() if peers is None else peers
    budget, min_reps, max_reps = (0.15, 5, 50) if quick else (0.6, 10, 400)
    bandwidth = copy_bandwidth()
    rng = np.random.default_rng(0)
    work = [(c, layout) for c in cases for layout in ("NCHW", "NHWC")]
    # the bar redraws a line with carriage returns: only on a terminal, else one line per case
    interactive = sys.stdout.isatty() and sys.stderr.isatty()
    bar = _progress(len(work) * (1 + len(peers)), progress and interactive)
    rows = []
    for i, (case, layout) in enumerate(work, 1):
        x = _aligned(rng.standard_normal(case.shape, dtype=np.float32).astype(case.dtype))
        impls = {"avgpool": _avgpool_fn(case, x, layout, threads, reuse_out)}
        op = _avgpool_op_fn(case, x, layout, threads, reuse_out)
        if op is not None:
            impls["avgpool-op"] = op
        ours_names = list(impls)
        for peer in peers:
            if peer in case.skip:
                continue
            try:
                fn = PEERS[peer](case, x, layout, threads)
            except Exception as exc:  # a peer that cannot run this case is left out
                fn = None
                print(f"\n{peer} cannot run {case.id} {layout}: {exc}", file=sys.stderr)
            if fn is not None:
                impls[peer] = fn
        if len(impls) == len(ours_names) and layout == "NHWC":
            bar.update(1 + len(peers))
            continue  # NHWC only where a peer supports it
        ref = _as_float64(impls["avgpool"]())
        if layout == "NHWC":
            ref = np.moveaxis(ref, -1, 1)  # compare in the logical (N, C, ...) order of torch
        tol = 1e-4 if case.dtype in ("float32", "float64") else 2e-2
        agree = {}
        for name, fn in impls.items():
            got = _as_float64(fn())
            if layout == "NHWC" and name not in ("torch", "onnxruntime", "openvino"):
                got = np.moveaxis(got, -1, 1)
            agree[name] = bool(got.shape == ref.shape and np.allclose(got, ref, rtol=tol, atol=tol))
        in_bytes = x.nbytes
        out_bytes = ref.size * x.itemsize
        row: Dict[str, Any] = {"case": case.id, "layout": layout, "dtype": case.dtype,
                               "threads": threads, "bytes": in_bytes + out_bytes, "agree": agree,
                               "impls": {}, "skipped": [p for p in peers if p in case.skip]}
        for name, fn in impls.items():
            med, mn = _time(getattr(fn, "timed", fn), budget, min_reps, max_reps)  # tflite: invoke()
            gbps = (in_bytes + out_bytes) / med / 1e9
            row["impls"][name] = {"median_us": med * 1e6, "min_us": mn * 1e6, "gbps": gbps,
                                  "bw_fraction": gbps / bandwidth}
            bar.update(1)
        if contended:  # throughput: the occasional call a descheduled thread stalls counts
            quiet = {name: _mean_time(getattr(fn, "timed", fn), budget) for name, fn in impls.items()}
            with busy_core():
                for name, fn in impls.items():
                    busy = _mean_time(getattr(fn, "timed", fn), budget)
                    row["impls"][name]["quiet_mean_us"] = quiet[name] * 1e6
                    row["impls"][name]["contended_mean_us"] = busy * 1e6
                    row["impls"][name]["slowdown"] = busy / quiet[name]
        bar.update(1 + len(peers) - len(impls) + len(ours_names))
        ours = min(row["impls"][n]["median_us"] for n in ours_names)
        row["avgpool_us"] = ours
        peer_times = {n: v["median_us"] for n, v in row["impls"].items() if n not in ours_names}
        if peer_times:
            best = min(peer_times, key=lambda n: peer_times[n])
            row["best_peer"] = best
            row["ratio_best_peer"] = peer_times[best] / ours
        if "torch" in peer_times:
            row["ratio_torch"] = peer_times["torch"] / ours
        row["noisy"] = noisy_impls(row["impls"])
        rows.append(row)
        if progress and not interactive:
            times = ", ".join(f"{n} {v['median_us']:.0f} us" for n, v in row["impls"].items())
            note = " (noisy)" if row["noisy"] else ""
            print(f"bench {i}/{len(work)} {case.id} {layout}: {times}{note}", file=sys.stderr,
                  flush=True)
    bar.close()
    ratios = [r["ratio_torch"] for r in rows if "ratio_torch" in r]
    summary = {
        "geomean_ratio_torch": math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None,
        "min_ratio_best_peer": min((r["ratio_best_peer"] for r in rows if "ratio_best_peer" in r),
                                   default=None),
        "noisy_rows": sum(1 for r in rows if r["noisy"]),
    }
    return {"avgpool": avgpool.info(), "threads": threads, "copy_gbps": bandwidth,
            "reuse_out": reuse_out, "peers": peers, "rows": rows, "summary": summary,
            "contended": contended}


@contextlib.contextmanager
def busy_core() -> Iterator[None]:
    """Another program competing for the machine: a process spinning on the last core."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(spinner.pid, {max(os.sched_getaffinity(0))})
        time.sleep(0.2)  # let it start spinning
        yield
    finally:
        spinner.kill()
        spinner.wait()


class _NoBar:
    def update(self, n=1):
        pass

    def close(self):
        pass


def _progress(total: int, enabled: bool):
    if not enabled:
        return _NoBar()
    try:
        from tqdm import tqdm

        return tqdm(total=total, desc="bench", unit="run", file=sys.stderr, leave=False)
    except ImportError:
        return _TextBar(total)


class _TextBar:
    """Fallback progress bar on stderr when tqdm is not installed."""

    def __init__(self, total: int):
        self.total, self.done = total, 0

    def update(self, n=1):
        self.done += n
        filled = int(30 * self.done / max(self.total, 1))
        sys.stderr.write(f"\rbench [{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total}")
        sys.stderr.flush()

    def close(self):
        sys.stderr.write("\r" + " " * 60 + "\r")


# ---------------------------------------------------------------- reporting

def format_table(result: dict) -> str:
    peers = result["peers"]
    rows = result["rows"]
    head = (f"avgpool {result['avgpool']['version']} isa={result['avgpool']['isa']} "
            f"threads={result['threads']} copy bandwidth {result['copy_gbps']:.1f} GB/s, avgpool "
            + ("writes into a reused out= buffer" if result["reuse_out"] else "allocates its output")
            + "\n")
    load = result.get("load_per_core")
    warning = load_warning(load)
    if warning:
        head = warning + "\n" + head
    has_op = any("avgpool-op" in r["impls"] for r in rows)
    cols = ["case", "layout", "avgpool us (min)"] + (["op us"] if has_op else []) + \
        ["GB/s", "%bw"] + [f"{p} us" for p in peers] + ["best peer", "ratio", "note"]
    lines = [cols]
    for r in rows:
        ours = r["impls"]["avgpool"]
        best = min((r["impls"][n] for n in ("avgpool", "avgpool-op") if n in r["impls"]),
                   key=lambda v: v["median_us"])
        line = [r["case"], r["layout"], f"{ours['median_us']:.0f} ({ours['min_us']:.0f})"]
        if has_op:
            op = r["impls"].get("avgpool-op")
            line.append(f"{op['median_us']:.1f}" if op else "-")
        line += [f"{best['gbps']:.1f}", f"{100 * best['bw_fraction']:.0f}%"]
        for p in peers:
            v = r["impls"].get(p)
            mark = "" if r["agree"].get(p, True) else "!"
            cell = "skip" if p in r.get("skipped", ()) else "-"
            line.append(f"{v['median_us']:.0f}{mark}" if v else cell)
        line += [r.get("best_peer", "-"),
                 f"{r['ratio_best_peer']:.2f}x" if "ratio_best_peer" in r else "-",
                 "noisy (" + ", ".join(r["noisy"]) + ")" if r.get("noisy") else ""]
        lines.append(line)
    out = [head] + _columns(lines)
    s = result["summary"]
    if s["geomean_ratio_torch"] is not None:
        out.append(f"\ngeometric mean speed-up over torch: {s['geomean_ratio_torch']:.2f}x")
    if s["min_ratio_best_peer"] is not None:
        out.append(f"lowest ratio to the fastest peer:   {s['min_ratio_best_peer']:.2f}x")
    if result.get("contended"):
        out.append("\nslowdown with a busy process on one core (mean time per call of back-to-back "
                   "calls, contended / quiet):")
        names = ["avgpool"] + (["avgpool-op"] if has_op else []) + peers
        slow = [["case", "layout"] + names]
        for r in rows:
            slow.append([r["case"], r["layout"]] + [
                f"{r['impls'][n]['slowdown']:.1f}x" if n in r["impls"] else "-" for n in names])
        out += _columns(slow)
    out.append("")
    out.append(_LEGEND.format(spread=MAX_SPREAD))
    noisy = sum(1 for r in rows if r.get("noisy"))
    if warning or noisy:
        out.append("")
        what = (f"{noisy} of {len(rows)} rows noisy" if noisy else
                "the machine was busy at the start")
        out.append(f"Note: {what}. {_HINT}")
    return "\n".join(out)


def _columns(lines: List[List[str]]) -> List[str]:
    """Left-aligned columns, a rule under the first line."""
    widths = [max(len(str(row[i])) for row in lines) for i in range(len(lines[0]))]
    out = []
    for i, row in enumerate(lines):
        out.append("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip())
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def plot(result: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    impls = ["avgpool"] + result["peers"]
    labels = [f"{r['case']} {r['layout']}" for r in rows]
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(rows) + 1.5))
    h = 0.8 / len(impls)
    for i, name in enumerate(impls):
        vals = [r["impls"][name]["gbps"] if name in r["impls"] else 0 for r in rows]
        ax.barh([j + i * h for j in range(len(rows))], vals, height=h, label=name)
    ax.set_yticks([j + 0.4 - h / 2 for j in range(len(rows))])
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("GB/s (input + output bytes / median time); higher is better")
    ax.set_title(f"avgpool vs peers, {result['threads']} thread(s)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(args) -> int:
    if getattr(args, "scale_out", False):
        from . import _bench_scale

        if not any(args.cases in case for case in _bench_scale.CASES):
            print(f"no case matches {args.cases!r}", file=sys.stderr)
            return 2
        gib = 0.25 if args.quick else args.scale_gib
        result = _bench_scale.run_scale_out(gib, args.scale_dir, args.scale_timeout,
                                            args.scale_memory, cases=args.cases)
        print(_bench_scale.format_scale_table(result))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
        return 0
    if getattr(args, "torch", False):
        from . import _bench_torch

        if not any(args.cases in c[0] for c in _bench_torch.TORCH_CASES):
            print(f"no case matches {args.cases!r}", file=sys.stderr)
            return 2
        result = _bench_torch.run_torch(args.threads or os.cpu_count() or 1, quick=args.quick,
                                        cases=args.cases)
        print(_bench_torch.format_torch_table(result))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1)
        return 0
    cases = [c for c in CASES if (not args.quick or c.quick)]
    if args.cases:
        cases = [c for c in cases if args.cases in c.id]
    if not cases:
        print(f"no case matches {args.cases!r}", file=sys.stderr)
        return 2
    threads = args.threads or os.cpu_count() or 1
    load = load_per_core()
    warning = load_warning(load)
    if warning:  # now, before minutes of timing (stderr, with the progress); repeated in the table
        print(warning, file=sys.stderr, flush=True)
    result = run(cases, threads, quick=args.quick, progress=not args.no_progress,
                 reuse_out=not args.alloc, contended=args.contended)
    result["load_per_core"] = load
    print(format_table(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    if args.plot:
        plot(result, args.plot)
    return 0
