"""Run the peer implementations (onnx.reference, onnxruntime, OpenVINO, torch) on numpy arrays.

Every peer is imported lazily, so importing this module never fails; the test modules call
``pytest.importorskip`` for the peer they need before using a runner. Compiled models and sessions
are cached per configuration (attributes, input shape and dtype) to keep the suite fast.

A session-wide tally of peer runs is kept in :data:`COUNTS` (peer name -> number of runs); the
test modules add their comparison counts to it, and a session-scoped fixture in each test module
prints :func:`report` at the end of the session (visible with ``pytest -s``).
"""

from __future__ import annotations

import collections
import functools

import numpy as np

__all__ = [
    "COUNTS", "report", "print_report_once", "onnx_pool_model", "onnx_reference", "onnxruntime_run",
    "openvino_avg_pool", "openvino_avg_pool_many", "openvino_adaptive_avg_pool", "torch_avg_pool", "torch_adaptive_avg_pool",
    "ort_errors",
]

COUNTS: "collections.Counter[str]" = collections.Counter()


def report() -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(COUNTS.items()))


# ---------------------------------------------------------------------------------------------
# ONNX


def _onnx_elem_type(dtype):
    from onnx import helper

    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def onnx_pool_model(op, attrs, rank, dtype=np.float32, opset=22):
    """A one-node ModelProto: ``Y = op(X)`` with the given attributes (None values left out).

    ``rank`` is the number of spatial axes; the shapes are left symbolic.
    """
    import onnx
    from onnx import helper

    elem = _onnx_elem_type(dtype)
    dims = ["N", "C"] + [f"D{i}" for i in range(rank)]
    x = helper.make_tensor_value_info("X", elem, dims)
    y = helper.make_tensor_value_info("Y", elem, ["N", "C"] + [f"O{i}" for i in range(rank)])
    node = helper.make_node(op, ["X"], ["Y"], **{k: v for k, v in attrs.items() if v is not None})
    graph = helper.make_graph([node], f"{op.lower()}_test", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="avgpool-tests")
    model.ir_version = min(model.ir_version, 10)  # accepted by every installed runtime
    onnx.checker.check_model(model)
    return model


def _attr_key(attrs):
    return tuple(sorted((k, tuple(v) if isinstance(v, (list, tuple)) else v)
                        for k, v in attrs.items() if v is not None))


@functools.lru_cache(maxsize=512)
def _reference_evaluator(op, key, rank, dtype, opset):
    from onnx.reference import ReferenceEvaluator

    attrs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in key}
    return ReferenceEvaluator(onnx_pool_model(op, attrs, rank, np.dtype(dtype), opset))


def onnx_reference(x, op="AveragePool", opset=22, **attrs):
    """``onnx.reference.ReferenceEvaluator`` on a one-node ``op`` model."""
    x = np.asarray(x)
    ev = _reference_evaluator(op, _attr_key(attrs), x.ndim - 2, x.dtype.str, opset)
    COUNTS["onnx.reference runs"] += 1
    return ev.run(None, {"X": x})[0]


@functools.lru_cache(maxsize=512)
def _ort_session(op, key, rank, dtype, opset):
    import onnxruntime as ort

    attrs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in key}
    model = onnx_pool_model(op, attrs, rank, np.dtype(dtype), opset)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 4
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def _ort_errors():
    try:
        from onnxruntime.capi import onnxruntime_pybind11_state as st
    except ImportError:  # pragma: no cover
        return (RuntimeError,)
    return (st.Fail, st.InvalidArgument, st.InvalidGraph, st.RuntimeException,
            st.NotImplemented, RuntimeError)


def onnxruntime_run(x, op="AveragePool", opset=22, **attrs):
    """onnxruntime (CPU provider, one thread) on a one-node ``op`` model.

    Raises one of :func:`ort_errors` when onnxruntime rejects the configuration.
    """
    x = np.asarray(x)
    sess = _ort_session(op, _attr_key(attrs), x.ndim - 2, x.dtype.str, opset)
    COUNTS["onnxruntime runs"] += 1
    return sess.run(None, {"X": x})[0]


@functools.lru_cache(maxsize=1)
def ort_errors():
    """The exception types onnxruntime raises when it rejects a model or an input."""
    return _ort_errors()


# ---------------------------------------------------------------------------------------------
# OpenVINO


@functools.lru_cache(maxsize=1)
def _ov_core():
    import openvino as ov

    core = ov.Core()
    core.set_property("CPU", {"INFERENCE_NUM_THREADS": 1})
    return core


def _ov_type(dtype):
    import openvino as ov

    return {np.dtype(np.float32): ov.Type.f32, np.dtype(np.float64): ov.Type.f64,
            np.dtype(np.float16): ov.Type.f16}[np.dtype(dtype)]


@functools.lru_cache(maxsize=512)
def _ov_avg_pool_compiled(shape, dtype, kernel, strides, pads_begin, pads_end, exclude_pad,
                          rounding_type, auto_pad, opset):
    import openvino as ov

    ops = __import__(f"openvino.opset{opset}", fromlist=["avg_pool"])
    p = ops.parameter(list(shape), _ov_type(dtype), name="x")
    node = ops.avg_pool(p, list(strides), list(pads_begin), list(pads_end), list(kernel),
                        exclude_pad, rounding_type, auto_pad)
    model = ov.Model([node], [p], "avg_pool")
    # f32 precision hint: no bf16 / f16 down-conversion on CPUs that support it
    return _ov_core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})


def openvino_avg_pool(x, kernel, *, strides, pads_begin, pads_end, exclude_pad,
                      rounding_type="floor", auto_pad="explicit", opset=1):
    """OpenVINO AvgPool-``opset`` (1 or 14) compiled on CPU. Raises RuntimeError when rejected."""
    x = np.ascontiguousarray(x)
    compiled = _ov_avg_pool_compiled(
        tuple(x.shape), x.dtype.str, tuple(kernel), tuple(strides), tuple(pads_begin),
        tuple(pads_end), bool(exclude_pad), rounding_type, auto_pad, opset)
    COUNTS["openvino AvgPool runs"] += 1
    return np.array(compiled({0: x})[0])


def openvino_avg_pool_many(cases, opset=1):
    """OpenVINO AvgPool-``opset`` on many float32 inputs at once: ``cases`` is a sequence of
    ``(x, kernel, strides, pads_begin, pads_end, exclude_pad, rounding_type)``; one model with a
    node per case is compiled and run once (a compile per case costs ~50 ms). Every case must be
    one that OpenVINO accepts. Returns the outputs in order."""
    import openvino as ov

    ops = __import__(f"openvino.opset{opset}", fromlist=["avg_pool"])
    params, nodes = [], []
    for i, (x, kernel, strides, pads_begin, pads_end, exclude_pad, rounding) in enumerate(cases):
        p = ops.parameter(list(x.shape), ov.Type.f32, name=f"x{i}")
        params.append(p)
        nodes.append(ops.avg_pool(p, list(strides), list(pads_begin), list(pads_end), list(kernel),
                                  bool(exclude_pad), rounding, "explicit"))
    compiled = _ov_core().compile_model(ov.Model(nodes, params, "avg_pool_many"), "CPU",
                                        {"INFERENCE_PRECISION_HINT": "f32"})
    result = compiled({i: np.ascontiguousarray(c[0], np.float32) for i, c in enumerate(cases)})
    COUNTS["openvino AvgPool runs"] += len(cases)
    return [np.array(result[compiled.output(i)]) for i in range(len(cases))]


@functools.lru_cache(maxsize=512)
def _ov_adaptive_compiled(shape, dtype, output_size, index_dtype):
    import openvino as ov
    import openvino.opset8 as ops

    p = ops.parameter(list(shape), _ov_type(dtype), name="x")
    size = ops.constant(np.array(output_size, dtype=index_dtype))
    node = ops.adaptive_avg_pool(p, size)
    model = ov.Model([node], [p], "adaptive_avg_pool")
    return _ov_core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})


def openvino_adaptive_avg_pool(x, output_size):
    """OpenVINO AdaptiveAvgPool-8 on CPU; ``output_size`` a 1-D int32 or int64 array."""
    x = np.ascontiguousarray(x)
    output_size = np.asarray(output_size)
    compiled = _ov_adaptive_compiled(tuple(x.shape), x.dtype.str,
                                     tuple(int(v) for v in output_size), output_size.dtype.str)
    COUNTS["openvino AdaptiveAvgPool runs"] += 1
    return np.array(compiled({0: x})[0])


# ---------------------------------------------------------------------------------------------
# torch


def torch_avg_pool(x, rank, *args, **kwargs):
    """``torch.nn.functional.avg_pool{rank}d`` on a numpy array or a tensor; returns a tensor."""
    import torch

    t = x if isinstance(x, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(x))
    COUNTS["torch runs"] += 1
    return getattr(torch.nn.functional, f"avg_pool{rank}d")(t, *args, **kwargs)


def torch_adaptive_avg_pool(x, rank, output_size):
    import torch

    t = x if isinstance(x, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(x))
    COUNTS["torch runs"] += 1
    return getattr(torch.nn.functional, f"adaptive_avg_pool{rank}d")(t, output_size)


_REPORTED = []


def print_report_once():
    """Print the session's peer run and comparison counts (once per session; see with -s)."""
    if not _REPORTED and COUNTS:
        _REPORTED.append(True)
        print("\npeer counts:\n  " + "\n  ".join(f"{k}: {v}" for k, v in sorted(COUNTS.items())))
