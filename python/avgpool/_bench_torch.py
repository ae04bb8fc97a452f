"""``python -m avgpool bench --torch``: avgpool.torch against torch.nn.functional.

Per case and memory format (contiguous NCHW, channels last), medians in microseconds of
- the forward through ``avgpool.torch`` and through ``torch.nn.functional``, and the plain
  avgpool call on the same memory (``avgpool.average_pool`` / ``adaptive_average_pool`` with
  ``layout="NHWC"`` for channels last), which shows what the torch operator adds; where torch
  returns the other layout (the 3-D pools on channels_last_3d tensors: contiguous), also
  avgpool's call that writes that layout from the same memory; the forwards are timed in
  turn, twice, and each keeps its better median;
- the backward alone: ``torch.autograd.grad`` of a kept graph, so the time is the backward
  operator plus the autograd engine, for both libraries.
Ratios are torch's time over avgpool's; ``bwd vs best`` divides torch's faster format's backward
by avgpool's backward in this format (the issue's target: >= 1.5).
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

from . import _bench

# (id, shape NCHW, torch.nn.functional name, positional args after the input)
TORCH_CASES: List[Tuple[str, Tuple[int, ...], str, Tuple[Any, ...]]] = [
    ("3x3s2p1-8x64x112x112", (8, 64, 112, 112), "avg_pool2d", (3, 2, 1)),
    ("2x2s2-16x64x112x112", (16, 64, 112, 112), "avg_pool2d", (2, 2)),
    ("3x3s1p1-32x192x35x35", (32, 192, 35, 35), "avg_pool2d", (3, 1, 1)),
    ("adaptive-32x512x14x14-7x7", (32, 512, 14, 14), "adaptive_avg_pool2d", ((7, 7),)),
    ("global-32x2048x7x7", (32, 2048, 7, 7), "adaptive_avg_pool2d", (1,)),
    ("3d-2x2x2s2-2x64x16x56x56", (2, 64, 16, 56, 56), "avg_pool3d", (2, 2)),
]


def _plain_calls(name: str, args: Tuple[Any, ...], x: Any,
                 channels_last: bool) -> Dict[str, Callable]:
    """The plain avgpool call on x's memory (what the torch operator wraps) as
    ``plain_fwd_us``; where torch returns the result in the other layout (the 3-D pools on
    channels_last_3d tensors: contiguous), also ``plain_own_fwd_us``, avgpool's call that
    writes it so from the same memory (a compiled operator with that ``output_layout``)."""
    import avgpool
    from avgpool import functional

    rank = x.dim() - 2
    layout = "NHWC" if channels_last else "NCHW"
    a = x.permute((0,) + tuple(range(2, rank + 2)) + (1,)).numpy() if channels_last \
        else x.numpy()
    desc: Any
    if name.startswith("adaptive"):
        desc = functional.adaptive_sizes_for(tuple(x.shape[2:]), rank, args[0])
        calls = {"plain_fwd_us": lambda: avgpool.adaptive_average_pool(a, desc, layout=layout)}
    else:
        k = args[0]
        s = args[1] if len(args) > 1 else None
        p = args[2] if len(args) > 2 else 0
        desc = functional.pool_desc_for(tuple(x.shape[2:]), rank, k, s, p, False, True, None)
        calls = {"plain_fwd_us": lambda: avgpool.average_pool(a, desc, layout=layout)}
    if channels_last and rank == 3:
        op = avgpool.compile_operator(desc, a.shape, a.dtype, layout="NHWC",
                                      output_layout="NCHW")
        calls["plain_own_fwd_us"] = lambda: op(a)
    return calls


def run_torch(threads: int, quick: bool = False, cases: str = "") -> Dict[str, Any]:
    """Time every case (those whose id contains `cases`, when given) at `threads` threads for
    both libraries (torch's own thread count and AVGPOOL_NUM_THREADS are set for the run and
    restored after it)."""
    import torch

    before = torch.get_num_threads(), os.environ.get("AVGPOOL_NUM_THREADS")
    torch.set_num_threads(threads)
    os.environ["AVGPOOL_NUM_THREADS"] = str(threads)
    try:
        return _run_torch(threads, quick, cases)
    finally:
        torch.set_num_threads(before[0])
        if before[1] is None:
            del os.environ["AVGPOOL_NUM_THREADS"]
        else:
            os.environ["AVGPOOL_NUM_THREADS"] = before[1]


def _run_torch(threads: int, quick: bool, cases: str) -> Dict[str, Any]:
    import torch

    import avgpool.torch as apt

    budget = 0.15 if quick else 0.5
    rows = []
    for cid, shape, name, args in [c for c in TORCH_CASES if cases in c[0]]:
        for fmt in ("NCHW", "channels_last"):
            x = torch.tensor(np.random.default_rng(0).standard_normal(shape), dtype=torch.float32)
            if fmt == "channels_last":
                x = x.contiguous(memory_format=torch.channels_last if len(shape) == 4
                                 else torch.channels_last_3d)
            row: Dict[str, Any] = {"case": cid, "format": fmt, "threads": threads}
            theirs, ours = getattr(torch.nn.functional, name), getattr(apt, name)
            forwards = {"torch_fwd_us": lambda: theirs(x, *args),
                        "avgpool_fwd_us": lambda: ours(x, *args),
                        **_plain_calls(name, args, x, fmt != "NCHW")}
            # the forwards in two rounds, each one's better median kept: a median taken right
            # after another library's calls swung by up to 40 % with the order of the timings
            for _ in range(2):
                for key, fwd in forwards.items():
                    t = _bench._time(fwd, budget / 2, 5, 2000)[0] * 1e6
                    row[key] = min(row.get(key, t), t)
            for lib, fn in (("torch", theirs), ("avgpool", ours)):
                xr = x.detach().clone().requires_grad_()
                y = fn(xr, *args)
                g = torch.randn_like(y)
                row[f"{lib}_bwd_us"] = _bench._time(
                    lambda: torch.autograd.grad(y, xr, g, retain_graph=True), budget, 5,
                    2000)[0] * 1e6
            row["agree"] = bool(torch.allclose(ours(x, *args), theirs(x, *args), rtol=1e-5,
                                               atol=1e-6))
            rows.append(row)
    # torch's faster format per case, for the backward target
    for row in rows:
        both = [r["torch_bwd_us"] for r in rows if r["case"] == row["case"]]
        row["bwd_vs_best"] = min(both) / row["avgpool_bwd_us"]
    return {"threads": threads, "rows": rows}


def format_torch_table(result: Dict[str, Any]) -> str:
    head = ["case", "format", "fwd torch", "fwd avgpool", "ratio", "plain call",
            "in op's format", "bwd torch", "bwd avgpool", "ratio", "bwd vs best"]
    lines = [head]
    for r in result["rows"]:
        lines.append([r["case"], r["format"] + ("" if r["agree"] else " !"),
                      f"{r['torch_fwd_us']:.0f}", f"{r['avgpool_fwd_us']:.0f}",
                      f"{r['torch_fwd_us'] / r['avgpool_fwd_us']:.2f}x",
                      f"{r['plain_fwd_us']:.0f}",
                      f"{r['plain_own_fwd_us']:.0f}" if "plain_own_fwd_us" in r else "=",
                      f"{r['torch_bwd_us']:.0f}", f"{r['avgpool_bwd_us']:.0f}",
                      f"{r['torch_bwd_us'] / r['avgpool_bwd_us']:.2f}x",
                      f"{r['bwd_vs_best']:.2f}x"])
    out = [f"avgpool.torch against torch.nn.functional, {result['threads']} thread(s), "
           f"medians in us (float32)", ""]
    out += _bench._columns(lines)
    out += ["", "fwd: the forward call; plain call: avgpool.average_pool on the same memory "
            "(NHWC for channels last); in op's format: where torch returns another layout "
            "(contiguous from the 3-D pools on channels_last_3d), avgpool's compiled operator "
            "writing that layout from the same memory ('=': the plain call's); the forwards "
            "timed in turn, twice, the better median kept; bwd: torch.autograd.grad of a kept "
            "graph (backward operator + autograd engine); ratio: torch / avgpool; bwd vs best: "
            "torch's faster format's backward / avgpool's; '!': the outputs disagree"]
    return "\n".join(out)
