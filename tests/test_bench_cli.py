"""``python -m avgpool bench`` as a user meets it: output piped into a file or a CI log (no
carriage-return animation, one plain line per case), the legend of the columns, and the warnings
of a noisy run (the decision functions are pure: tested with made-up timings)."""

import functools
import re
import subprocess

import pytest
import sys

from avgpool import _bench

# The bench's plumbing and its peers do not depend on avgpool's kernel path (the subprocesses
# pick their own): run once, on the path the library picks (conftest.py).
pytestmark = pytest.mark.one_path

CASE = "global-1x2048x7x7"  # the smallest case of the suite


@functools.lru_cache(maxsize=None)
def _piped_run():
    """One bench run with stdout and stderr piped (shared by the tests below, which the isa
    fixture repeats per kernel path)."""
    proc = subprocess.run(
        [sys.executable, "-m", "avgpool", "bench", "--quick", "--threads", "1", "--cases", CASE],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    return proc.returncode, proc.stdout, proc.stderr


def test_piped_run_has_no_carriage_returns():
    rc, out, err = _piped_run()
    assert rc == 0, err
    assert "\r" not in out
    assert "\r" not in err


def test_piped_run_prints_one_plain_line_per_case():
    _, out, err = _piped_run()
    lines = [line for line in err.splitlines() if line.startswith("bench ")]
    assert lines, err
    for line in lines:
        assert re.fullmatch(rf"bench \d+/2 {CASE} (NCHW|NHWC): avgpool \d+ us.*", line), line
    # one line per row of the table (NHWC has a row only where a peer has that layout)
    rows = [line for line in out.splitlines() if line.startswith(CASE)]
    assert len(rows) == len(lines)


def test_piped_run_has_the_legend():
    _, out, _ = _piped_run()
    assert "columns:" in out
    legend = out[out.index("columns:"):]
    for column in ("avgpool us (min)", "GB/s", "%bw", "ratio", "note"):
        assert column in legend
    assert "above 100%" in legend and "cache" in legend


def test_noisy_impls_flags_a_median_far_above_the_minimum():
    impls = {
        "avgpool": {"median_us": 10.0, "min_us": 9.0},
        "torch": {"median_us": 31.0, "min_us": 20.0},    # 1.55x
        "openvino": {"median_us": 15.0, "min_us": 10.0},  # exactly 1.5x: still steady
    }
    assert _bench.noisy_impls(impls) == ["torch"]
    assert _bench.noisy_impls(impls, max_spread=2.0) == []
    assert _bench.noisy_impls(impls, max_spread=1.2) == ["torch", "openvino"]
    assert _bench.noisy_impls({"avgpool": {"median_us": 100.0, "min_us": 1.0}}) == ["avgpool"]


def test_load_warning_above_half_a_core():
    assert _bench.load_warning(None) is None
    assert _bench.load_warning(0.2) is None
    assert _bench.load_warning(0.5) is None
    warning = _bench.load_warning(1.25)
    assert warning is not None and warning.startswith("WARNING") and "1.25" in warning


def _result(noisy, load=0.0):
    row = {"case": "c", "layout": "NCHW", "agree": {"avgpool": True, "torch": True},
           "impls": {"avgpool": {"median_us": 10.0, "min_us": 9.0, "gbps": 1.0, "bw_fraction": 2.5},
                     "torch": {"median_us": 20.0, "min_us": 5.0, "gbps": 0.5, "bw_fraction": 1.2}},
           "best_peer": "torch", "ratio_best_peer": 2.0, "ratio_torch": 2.0, "noisy": noisy}
    return {"avgpool": {"version": "0", "isa": "scalar"}, "threads": 1, "copy_gbps": 10.0,
            "reuse_out": True, "peers": ["torch"], "rows": [row], "load_per_core": load,
            "summary": {"geomean_ratio_torch": 2.0, "min_ratio_best_peer": 2.0,
                        "noisy_rows": int(bool(noisy))}}


def test_table_marks_noisy_rows_and_ends_with_a_hint():
    table = _bench.format_table(_result(["torch"]))
    row = next(line for line in table.splitlines() if line.startswith("c "))
    assert row.endswith("noisy (torch)")
    assert "1 of 1 rows noisy" in table and "--threads 1" in table


def test_table_of_a_busy_machine_starts_with_the_warning():
    table = _bench.format_table(_result([], load=2.0))
    assert table.splitlines()[0].startswith("WARNING")
    assert "--threads 1" in table


def test_table_of_a_quiet_run_has_no_warning():
    table = _bench.format_table(_result([]))
    assert "WARNING" not in table and "noisy (" not in table and "--threads 1" not in table


def test_torch_section_times_both_libraries_and_checks_agreement(monkeypatch):
    """bench --torch on one small case: every column filled, outputs agree, the table prints."""
    pytest.importorskip("torch")  # a test extra: CI installs it
    from avgpool import _bench_torch

    monkeypatch.setattr(_bench_torch, "TORCH_CASES",
                        [("3x3s2p1-2x8x20x20", (2, 8, 20, 20), "avg_pool2d", (3, 2, 1)),
                         ("adaptive-2x8x9x9-4x4", (2, 8, 9, 9), "adaptive_avg_pool2d", ((4, 4),)),
                         ("3d-2x8x4x6x6", (2, 8, 4, 6, 6), "avg_pool3d", (2, 2))])
    result = _bench_torch.run_torch(1, quick=True)
    assert [(r["case"], r["format"]) for r in result["rows"]] == [
        ("3x3s2p1-2x8x20x20", "NCHW"), ("3x3s2p1-2x8x20x20", "channels_last"),
        ("adaptive-2x8x9x9-4x4", "NCHW"), ("adaptive-2x8x9x9-4x4", "channels_last"),
        ("3d-2x8x4x6x6", "NCHW"), ("3d-2x8x4x6x6", "channels_last")]
    for r in result["rows"]:
        assert r["agree"]
        for key in ("torch_fwd_us", "avgpool_fwd_us", "plain_fwd_us", "torch_bwd_us",
                    "avgpool_bwd_us", "bwd_vs_best"):
            assert r[key] > 0
    # the call in the op's own layout: only where torch's differs from the plain call's
    assert [r["plain_own_fwd_us"] > 0 for r in result["rows"] if "plain_own_fwd_us" in r] == [
        True]
    assert "plain_own_fwd_us" in result["rows"][-1]
    table = _bench_torch.format_torch_table(result)
    assert "bwd vs best" in table and "3x3s2p1-2x8x20x20" in table and "in op's format" in table
    # --cases picks rows here too
    only = _bench_torch.run_torch(1, quick=True, cases="adaptive")
    assert [(r["case"], r["format"]) for r in only["rows"]] == [
        ("adaptive-2x8x9x9-4x4", "NCHW"), ("adaptive-2x8x9x9-4x4", "channels_last")]


@functools.lru_cache(maxsize=None)
def _scale_out_run(cases=""):
    """bench --scale-out on a 768 x 768 raster in 256 x 256 chunks (9 chunks, so halos cross
    chunks), once for the session (the isa fixture repeats the tests below)."""
    pytest.importorskip("distributed")  # a test extra: CI installs it
    from avgpool import _bench_scale

    before = _bench_scale.CHUNK
    _bench_scale.CHUNK = 256
    try:
        return _bench_scale.run_scale_out(768 * 768 * 4 / 2**30, timeout_s=120, cases=cases)
    finally:
        _bench_scale.CHUNK = before


def test_scale_out_section_runs_every_method_and_checks_agreement():
    from avgpool import _bench_scale

    result = _scale_out_run()
    assert result["side"] == 768
    assert [(r["case"], r["method"]) for r in result["rows"]] == [
        ("coarsen 2x2", "floor: read, [::2, ::2], write"),
        ("coarsen 2x2", "avgpool.xarray.coarsen_mean"), ("coarsen 2x2", "xarray coarsen().mean()"),
        ("rolling 15x15", "floor: read, x * 1, write"),
        ("rolling 15x15", "avgpool.xarray.rolling_mean"),
        ("rolling 15x15", "xarray rolling().mean()"),
        ("rolling 15x15", "map_overlap + scipy uniform_filter"),
        ("rolling 15x15", "map_overlap + OpenCV boxFilter")]
    for r in result["rows"]:
        assert "error" not in r, r
        assert r["seconds"] > 0 and r["peak_mib"] > 0
    assert all(r["equal_to_xarray"] for r in result["rows"] if r["method"].startswith("avgpool"))
    table = _bench_scale.format_scale_table(result)
    assert "equal to xarray's" in table and "768 x 768" in table


def test_scale_out_cases_picks_the_methods_of_matching_cases(capsys):
    from avgpool.__main__ import main

    assert main(["bench", "--scale-out", "--cases", "median"]) == 2  # before any cluster starts
    assert "no case matches 'median'" in capsys.readouterr().err
    result = _scale_out_run("coarsen")
    assert [r["method"] for r in result["rows"]] == [
        "floor: read, [::2, ::2], write", "avgpool.xarray.coarsen_mean",
        "xarray coarsen().mean()"]
    assert result["rows"][1]["equal_to_xarray"]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("shape", [(3, 5, 7), (1,), (0, 4)])
def test_bench_arrays_are_64_byte_aligned_copies(shape, dtype):
    import numpy as np

    a = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    b = _bench._aligned(a)
    assert b.flags.c_contiguous and (b.size == 0 or b.ctypes.data % 64 == 0)
    assert b.dtype == a.dtype and b.shape == a.shape and np.array_equal(a, b)
    assert not np.shares_memory(a, b)
    c = _bench._aligned(np.moveaxis(a, 0, -1))  # a strided view comes back contiguous
    assert c.flags.c_contiguous and (c.size == 0 or c.ctypes.data % 64 == 0)
    assert np.array_equal(c, np.moveaxis(a, 0, -1))
