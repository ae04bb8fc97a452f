"""The bench's fastest peers, TFLite (XNNPACK), OpenCV and SciPy, wired as ``python -m avgpool
bench`` runs them: each peer's call on small cases against the float64 reference of
tests/reference.py (which proves the model building and the padding mapping), the cases it must
decline, the new cases, ``--contended``'s busy process and the table's columns.

The peers are test extras (pyproject.toml), so CI installs them and these tests run there; they
are imported, not skipped, here."""

import os
import subprocess
import sys

import numpy as np
import pytest

from avgpool import _bench
from avgpool._bench import Case, _box, _pool
from conftest import available_isas
from reference import ref_adaptive_average_pool, ref_average_pool

import ai_edge_litert  # noqa: F401  (the peers are required, not optional, in the tests)
import cv2  # noqa: F401
import scipy  # noqa: F401

# The bench's plumbing and its peers do not depend on avgpool's kernel path (the subprocesses
# pick their own): run once, on the path the library picks (conftest.py).
pytestmark = pytest.mark.one_path


def _reference(case, x):
    """The case's float64 result, channels first."""
    if case.kind == "pool":  # the descriptor the bench gives avgpool
        return ref_average_pool(x, case.kernel, case.stride, case.pad, case.pad, case.dilation,
                                include_padding=case.count_include_pad,
                                output_sizes=_bench._pool_output_sizes(case))
    sizes = case.output_size if case.kind == "adaptive" else (1,) * case.rank
    return ref_adaptive_average_pool(x, sizes)


def _peer_result(peer, case, layout, seed=0):
    """(peer's output channels first as float64, the reference), or None when it declines."""
    x = np.random.default_rng(seed).standard_normal(case.shape).astype(np.float32)
    fn = _bench.PEERS[peer](case, x, layout, 1)
    if fn is None:
        return None
    got = np.asarray(fn(), np.float64)
    if layout == "NHWC":
        got = np.moveaxis(got, -1, 1)
    return got, _reference(case, x.astype(np.float64))


TFLITE_CASES = [
    Case("global", (2, 19, 5, 6), "global"),
    Case("global-1d", (1, 9, 13), "global"),
    _pool("3x3s1p1-same", (1, 7, 9, 11), 3, 1, 1),               # SAME, padding left out
    _pool("2x2s2-valid", (2, 5, 8, 10), 2, 2),                    # VALID
    _pool("3x3s2-ceil-same", (1, 6, 9, 9), 3, 2, ceil_mode=True),  # SAME: pads 0 and 1
    _pool("3x3s2p1-same", (1, 4, 9, 11), 3, 2, 1),                # SAME: pads 1 and 1
    _pool("1d-k4s4-valid", (1, 3, 16), 4, 4),
    Case("adaptive-divisible", (1, 5, 12, 8), "adaptive", output_size=(3, 4)),
]


@pytest.mark.parametrize("case", TFLITE_CASES, ids=lambda c: c.id)
def test_tflite_matches_reference(case):
    got, want = _peer_result("tflite", case, "NHWC")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", [
    _pool("include-pad", (1, 3, 8, 8), 3, 1, 1, count_include_pad=True),
    _pool("dilated", (1, 3, 9, 9), 3, 1, 2, dilation=2),
    _pool("pad-not-same", (1, 3, 8, 8), 3, 1, 2),           # padding SAME would not choose
    _pool("even-s2p1", (1, 4, 10, 12), 3, 2, 1),            # SAME would pad 0 before, 1 after
    _pool("3d", (1, 2, 4, 6, 6), 2, 2),
    Case("adaptive-not-divisible", (1, 3, 13, 13), "adaptive", output_size=(7, 7)),
    Case("f16", (1, 3, 4, 4), "global", dtype="float16"),
], ids=lambda c: c.id)
def test_tflite_declines_what_it_cannot_express(case):
    x = np.zeros(case.shape, np.float32).astype(case.dtype)
    assert _bench.PEERS["tflite"](case, x, "NHWC", 1) is None
    assert _bench.PEERS["tflite"](case, x, "NCHW", 1) is None  # channels last only


BOX_CASES = [_box("box3", (2, 3, 9, 11), 3), _box("box5-1ch", (1, 1, 12, 10), 5),
             _pool("box-5x3", (1, 2, 10, 9), 5, 1, 2, count_include_pad=True)]


@pytest.mark.parametrize("peer", ["opencv", "scipy"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("case", BOX_CASES, ids=lambda c: c.id)
def test_box_peers_match_reference(peer, layout, case):
    got, want = _peer_result(peer, case, layout)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_box_peers_decline_other_windows():
    x = np.zeros((1, 3, 8, 8), np.float32)
    for case in (_pool("exclude-pad", (1, 3, 8, 8), 3, 1, 1),
                 _pool("stride-2", (1, 3, 8, 8), 3, 2, 1, count_include_pad=True),
                 _pool("even", (1, 3, 8, 8), 4, 1, 2, count_include_pad=True)):
        for peer in ("opencv", "scipy"):
            assert _bench.PEERS[peer](case, x, "NCHW", 1) is None, (peer, case.id)
    # OpenCV's images hold at most 128 channels
    wide = _box("wide", (1, 129, 5, 5), 3)
    assert _bench.PEERS["opencv"](wide, np.zeros(wide.shape, np.float32), "NHWC", 1) is None


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_float64_cases_run_on_the_peers_that_have_float64(layout):
    """The float64 rows: torch and OpenVINO (channels first) run them and match the float64
    reference; onnxruntime (no float64 AveragePool) and TFLite decline."""
    import openvino  # noqa: F401
    import torch  # noqa: F401

    case = _pool("f64", (2, 3, 9, 11), 3, 1, 1, dtype="float64")
    x = np.random.default_rng(3).standard_normal(case.shape)
    want = _reference(case, x)
    for peer in ("torch", "openvino"):
        fn = _bench.PEERS[peer](case, x, layout, 1)
        if peer == "openvino" and layout == "NHWC":
            assert fn is None
            continue
        got = np.asarray(fn(), np.float64)  # torch's: (N, C, ...) in either memory format
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, err_msg=peer)
    for peer in ("onnxruntime", "tflite"):
        assert _bench.PEERS[peer](case, x, layout, 1) is None, peer


def test_issue_cases_are_in_the_suite():
    ids = {c.id for c in _bench.CASES}
    for case_id in ("global-1x64x7x7", "3x3s1p1-1x64x7x7", "box5x5-1x3x1080x1920",
                    "box31x31-1x1x2048x2048", "box15x15-1x32x256x256"):
        assert case_id in ids
    box31 = next(c for c in _bench.CASES if c.id == "box31x31-1x1x2048x2048")
    assert _bench._is_box(box31) and box31.count_include_pad


def test_busy_core_spins_and_stops():
    with _bench.busy_core():
        procs = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        assert "while True: pass" in procs
    procs = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "while True: pass" not in procs


def test_table_names_the_fastest_peer_and_the_slowdowns():
    cases = [Case("global-tiny", (1, 8, 3, 3), "global"), _box("box-tiny", (1, 2, 9, 9), 5)]
    result = _bench.run(cases, threads=1, quick=True, peers=["tflite", "opencv", "scipy"],
                        progress=False, contended=True)
    table = _bench.format_table(result)
    for column in ("tflite us", "opencv us", "scipy us", "best peer", "ratio"):
        assert column in table
    rows = {(r["case"], r["layout"]): r for r in result["rows"]}
    assert rows[("global-tiny", "NHWC")]["best_peer"] == "tflite"
    assert rows[("box-tiny", "NCHW")]["best_peer"] in ("opencv", "scipy")
    assert all(all(r["agree"].values()) for r in result["rows"])
    assert "slowdown with a busy process" in table
    for r in result["rows"]:
        assert all(v["slowdown"] > 0 for v in r["impls"].values())


def test_contended_flag_on_the_command_line():
    proc = subprocess.run(
        [sys.executable, "-m", "avgpool", "bench", "--quick", "--threads", "1", "--contended",
         "--cases", "global-1x64x7x7"], capture_output=True, text=True, timeout=600,
        env={**os.environ})
    assert proc.returncode == 0, proc.stderr
    assert "slowdown with a busy process on one core" in proc.stdout


@pytest.mark.skipif("avx2" not in available_isas() or "avx512" not in available_isas(),
                    reason="scripts/bench_avx2.py emulates an AVX2-only CPU on an AVX-512 one")
def test_bench_avx2_script_takes_the_peers_avx512_kernels_away():
    """scripts/bench_avx2.py: avgpool on its AVX2 kernels, torch and OpenCV on theirs, and
    XNNPACK's flags cut to an AVX2 CPU's, checked by the kernels it then took (the script
    also exits non-zero if one of them, or torch's or OpenCV's code, is AVX-512)."""
    script = os.path.join(os.path.dirname(__file__), "..", "scripts", "bench_avx2.py")
    proc = subprocess.run(
        [sys.executable, script, "--quick", "--threads", "1", "--no-progress", "--cases", "x7"],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "isa=avx2" in proc.stdout and "torch AVX2" in proc.stdout
    opencv = proc.stdout.split("; OpenCV ")[1].split(";")[0].split()
    assert all(f.endswith("?") for f in opencv if "AVX512" in f), opencv
    used = proc.stdout.split("XNNPACK's kernels:")[1]
    assert "avgpool_minmax_ukernel_9p__avx_u8" in used and "rsum_ukernel__avx_" in used
    assert "avx512" not in used
