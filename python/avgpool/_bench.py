"""``python -m avgpool bench``: avgpool against PyTorch, ONNX Runtime and OpenVINO in one run.

Every case runs avgpool and each installed peer with the same thread count, checks that all
outputs agree, then times them (median and min over repeats). GB/s counts the input read once
and the output written once; ``%bw`` compares that with a large copy measured in the same run.
``ratio`` is the fastest peer's median over avgpool's (> 1: avgpool is faster).

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

import json
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

import avgpool

__all__ = ["CASES", "Case", "run", "main", "noisy_impls", "load_per_core", "format_table"]

# A run is flagged as noisy above these (see the module docstring).
MAX_LOAD_PER_CORE = 0.5
MAX_SPREAD = 1.5


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

    @property
    def rank(self) -> int:
        return len(self.shape) - 2


def _pool(id, shape, k, s, p=0, **kw):
    r = len(shape) - 2
    d = kw.pop("dilation", 1)
    return Case(id, shape, "pool", (k,) * r, (s,) * r, (p,) * r, (d,) * r, **kw)


CASES: List[Case] = [
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
    Case("adaptive-1x512x13x13-7x7", (1, 512, 13, 13), "adaptive", output_size=(7, 7)),
    Case("adaptive-32x512x14x14-7x7", (32, 512, 14, 14), "adaptive", output_size=(7, 7)),
    Case("adaptive-8x256x100x100-6x6", (8, 256, 100, 100), "adaptive", output_size=(6, 6)),
    _pool("ceil-3x3s2-16x64x56x56", (16, 64, 56, 56), 3, 2, ceil_mode=True),
    _pool("dilated-3x3d2p2-8x64x56x56", (8, 64, 56, 56), 3, 1, 2, dilation=2),
    Case("f16-global-32x2048x7x7", (32, 2048, 7, 7), "global", dtype="float16"),
    _pool("f16-2x2s2-16x64x112x112", (16, 64, 112, 112), 2, 2, dtype="float16"),
    # Larger than the last-level cache of most machines: memory, not cache, bound.
    _pool("big-2x2s2-32x64x224x224", (32, 64, 224, 224), 2, 2, quick=False),
]


# ---------------------------------------------------------------- implementations

def _to_layout(x: np.ndarray, layout: str) -> np.ndarray:
    return x if layout == "NCHW" else np.ascontiguousarray(np.moveaxis(x, 1, -1))


def _avgpool_fn(case: Case, x: np.ndarray, layout: str, threads: int, reuse_out: bool) -> Callable:
    """avgpool on this case; with reuse_out the output buffer is allocated once and passed as
    ``out=`` (as OpenVINO's reused infer request keeps its output), else every call allocates."""
    xl = _to_layout(x, layout)
    desc: Any  # AveragePoolingDesc or AdaptiveAveragePoolingDesc, matching pool
    pool: Callable[..., Any]
    if case.kind == "pool":
        desc = avgpool.AveragePoolingDesc(
            case.kernel, case.stride, case.pad, case.pad, case.dilation,
            include_padding=case.count_include_pad,
            output_sizes=_pool_output_sizes(case))
        pool = avgpool.average_pool
    else:
        sizes = case.output_size if case.kind == "adaptive" else (1,) * case.rank
        desc = avgpool.AdaptiveAveragePoolingDesc(sizes)
        pool = avgpool.adaptive_average_pool
    out = np.empty(desc.output_shape(xl.shape, layout), xl.dtype) if reuse_out else None
    return lambda: pool(xl, desc, layout=layout, out=out, num_threads=threads)


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

    elem = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16}[case.dtype]
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
    elem = {"float32": ov.Type.f32, "float16": ov.Type.f16}[case.dtype]
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


PEERS: Dict[str, Callable] = {"torch": _torch_fn, "onnxruntime": _ort_fn, "openvino": _openvino_fn}
_PEER_MODULES = {"torch": "torch", "onnxruntime": "onnxruntime", "openvino": "openvino"}


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
  GB/s              input bytes read once + output bytes written once, over the median time
  %bw               that GB/s as a percentage of a large single-threaded copy's bandwidth, which
                    streams main memory; above 100% means the case's data sat in the CPU caches
                    (or several threads read at once), so memory bandwidth was not the limit
  <peer> us         the peer's median time; '!' after it: its output disagreed with avgpool's
  ratio             the fastest peer's median / avgpool's median (> 1: avgpool is faster)
  note              'noisy': some implementation's median exceeds {spread}x its minimum"""


# ---------------------------------------------------------------- timing

def _time(fn: Callable, budget_s: float, min_reps: int, max_reps: int) -> Tuple[float, float]:
    """(median, min) seconds of fn over repeats after one warm-up call."""
    fn()
    times: List[float] = []
    start = time.perf_counter()
    while len(times) < max_reps and (len(times) < min_reps or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


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
        progress: bool = True, reuse_out: bool = True) -> dict:
    """Run the suite; returns a JSON-ready dict with every timing and ratio."""
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
        x = rng.standard_normal(case.shape, dtype=np.float32).astype(case.dtype)
        impls = {"avgpool": _avgpool_fn(case, x, layout, threads, reuse_out)}
        for peer in peers:
            try:
                fn = PEERS[peer](case, x, layout, threads)
            except Exception as exc:  # a peer that cannot run this case is left out
                fn = None
                print(f"\n{peer} cannot run {case.id} {layout}: {exc}", file=sys.stderr)
            if fn is not None:
                impls[peer] = fn
        if len(impls) == 1 and layout == "NHWC":
            bar.update(1 + len(peers))
            continue  # NHWC only where a peer supports it
        ref = _as_float64(impls["avgpool"]())
        if layout == "NHWC":
            ref = np.moveaxis(ref, -1, 1)  # compare in the logical (N, C, ...) order of torch
        tol = 1e-4 if case.dtype == "float32" else 2e-2
        agree = {}
        for name, fn in impls.items():
            got = _as_float64(fn())
            if name == "avgpool" and layout == "NHWC":
                got = np.moveaxis(got, -1, 1)
            agree[name] = bool(got.shape == ref.shape and np.allclose(got, ref, rtol=tol, atol=tol))
        in_bytes = x.nbytes
        out_bytes = ref.size * x.itemsize
        row: Dict[str, Any] = {"case": case.id, "layout": layout, "dtype": case.dtype,
                               "threads": threads, "bytes": in_bytes + out_bytes, "agree": agree,
                               "impls": {}}
        for name, fn in impls.items():
            med, mn = _time(fn, budget, min_reps, max_reps)
            gbps = (in_bytes + out_bytes) / med / 1e9
            row["impls"][name] = {"median_us": med * 1e6, "min_us": mn * 1e6, "gbps": gbps,
                                  "bw_fraction": gbps / bandwidth}
            bar.update(1)
        bar.update(1 + len(peers) - len(impls))
        ours = row["impls"]["avgpool"]["median_us"]
        peer_times = {n: v["median_us"] for n, v in row["impls"].items() if n != "avgpool"}
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
            "reuse_out": reuse_out, "peers": peers, "rows": rows, "summary": summary}


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
    head = (f"avgpool {result['avgpool']['version']} isa={result['avgpool']['isa']} "
            f"threads={result['threads']} copy bandwidth {result['copy_gbps']:.1f} GB/s, avgpool "
            + ("writes into a reused out= buffer" if result["reuse_out"] else "allocates its output")
            + "\n")
    load = result.get("load_per_core")
    warning = load_warning(load)
    if warning:
        head = warning + "\n" + head
    cols = ["case", "layout", "avgpool us (min)", "GB/s", "%bw"] + [f"{p} us" for p in peers] + \
        ["best peer", "ratio", "note"]
    lines = [cols]
    for r in result["rows"]:
        ours = r["impls"]["avgpool"]
        line = [r["case"], r["layout"], f"{ours['median_us']:.0f} ({ours['min_us']:.0f})",
                f"{ours['gbps']:.1f}", f"{100 * ours['bw_fraction']:.0f}%"]
        for p in peers:
            v = r["impls"].get(p)
            mark = "" if r["agree"].get(p, True) else "!"
            line.append(f"{v['median_us']:.0f}{mark}" if v else "-")
        line += [r.get("best_peer", "-"),
                 f"{r['ratio_best_peer']:.2f}x" if "ratio_best_peer" in r else "-",
                 "noisy (" + ", ".join(r["noisy"]) + ")" if r.get("noisy") else ""]
        lines.append(line)
    widths = [max(len(str(row[i])) for row in lines) for i in range(len(cols))]
    out = [head]
    for i, row in enumerate(lines):
        out.append("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip())
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    s = result["summary"]
    if s["geomean_ratio_torch"] is not None:
        out.append(f"\ngeometric mean speed-up over torch: {s['geomean_ratio_torch']:.2f}x")
    if s["min_ratio_best_peer"] is not None:
        out.append(f"lowest ratio to the fastest peer:   {s['min_ratio_best_peer']:.2f}x")
    out.append("")
    out.append(_LEGEND.format(spread=MAX_SPREAD))
    noisy = sum(1 for r in result["rows"] if r.get("noisy"))
    if warning or noisy:
        out.append("")
        what = (f"{noisy} of {len(result['rows'])} rows noisy" if noisy else
                "the machine was busy at the start")
        out.append(f"Note: {what}. {_HINT}")
    return "\n".join(out)


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
                 reuse_out=not args.alloc)
    result["load_per_core"] = load
    print(format_table(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    if args.plot:
        plot(result, args.plot)
    return 0
