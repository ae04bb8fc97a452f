"""Every SIMD path against the scalar oracle, and the AVGPOOL_ISA switch.

The conftest runs the whole suite on each path against the float64 reference; here each path is
also compared directly with the scalar kernels on the same input (same dtype, so the only
difference allowed is float32 summation order), including shapes whose rows and channel counts
leave every kind of vector tail, and large windows (running sums).
"""

import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import avgpool
from avgpool import _core

from conftest import available_isas, using_isa

SIMD = [name for name in available_isas() if name != "scalar"]
DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16]
TOL = {np.float32: 2e-6, np.float64: 1e-13, np.float16: 1e-3, ml_dtypes.bfloat16: 8e-3}


def _run_on(isa_name, fn):
    with using_isa(isa_name):
        return fn()


def _compare(isa_name, fn, x, dtype):
    ref = _run_on("scalar", fn).astype(np.float64)
    got = _run_on(isa_name, fn).astype(np.float64)
    # Scale by the mean |x| so windows that cancel are judged fairly.
    finite = np.abs(x.astype(np.float64))
    finite = finite[np.isfinite(finite)]
    scale = max(float(finite.max()) if finite.size else 0.0, 1e-30)
    np.testing.assert_allclose(got, ref, rtol=TOL[dtype], atol=TOL[dtype] * scale, equal_nan=True)
    assert np.array_equal(np.isnan(got), np.isnan(ref))


@st.composite
def pool_cases(draw):
    rank = draw(st.integers(1, 3))
    layout = draw(st.sampled_from(["NCHW", "NHWC"]))
    n, c = draw(st.integers(1, 2)), draw(st.integers(1, 37))
    spatial = [draw(st.integers(1, 40 if rank == 1 else 19)) for _ in range(rank)]
    k = [draw(st.integers(1, 6)) for _ in range(rank)]
    s = [draw(st.integers(1, 4)) for _ in range(rank)]
    d = [draw(st.integers(1, 2)) for _ in range(rank)]
    pb = [draw(st.integers(0, 3)) for _ in range(rank)]
    pe = [draw(st.integers(0, 3)) for _ in range(rank)]
    desc = avgpool.AveragePoolingDesc(k, s, pb, pe, d, include_padding=draw(st.booleans()),
                                      count_overhang=draw(st.booleans()))
    shape = (n, c, *spatial) if layout == "NCHW" else (n, *spatial, c)
    try:
        desc.output_shape(shape, layout)
    except ValueError:
        desc = avgpool.AveragePoolingDesc(k, s, [kk for kk in k], [kk for kk in k], d)
    return desc, shape, layout, draw(st.sampled_from(DTYPES)), draw(st.integers(0, 2**32 - 1))


@pytest.mark.one_path  # compares the simd path with scalar itself
@pytest.mark.skipif(not SIMD, reason="no SIMD path on this CPU")
@pytest.mark.parametrize("simd", SIMD)
@given(case=pool_cases())
def test_pool_matches_scalar(simd, case):
    desc, shape, layout, dtype, seed = case
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    _compare(simd, lambda: avgpool.average_pool(x, desc, layout=layout), x, dtype)


@pytest.mark.one_path  # compares the simd path with scalar itself
@pytest.mark.skipif(not SIMD, reason="no SIMD path on this CPU")
@pytest.mark.parametrize("simd", SIMD)
@given(rank=st.integers(1, 3), layout=st.sampled_from(["NCHW", "NHWC"]), c=st.integers(1, 37),
       data=st.data(), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**32 - 1))
def test_adaptive_matches_scalar(simd, rank, layout, c, data, dtype, seed):
    spatial = [data.draw(st.integers(1, 30 if rank == 1 else 15)) for _ in range(rank)]
    out = [data.draw(st.integers(1, 17)) for _ in range(rank)]
    shape = (2, c, *spatial) if layout == "NCHW" else (2, *spatial, c)
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    _compare(simd, lambda: avgpool.adaptive_average_pool(x, out, layout=layout), x, dtype)


@pytest.mark.one_path  # compares the simd path with scalar itself
@pytest.mark.skipif(not SIMD, reason="no SIMD path on this CPU")
@pytest.mark.parametrize("simd", SIMD)
@pytest.mark.parametrize("k", [5, 8, 15, 33, 64])
@pytest.mark.parametrize("include_padding", [False, True])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_large_window_accuracy(simd, k, include_padding, layout):
    """Running sums stay within 1e-5 of the float64 result, relative to the mean |x| of the
    window, over values of mixed sign spanning 7 orders of magnitude, with inf and NaN."""
    rng = np.random.default_rng(k)
    shape = (1, 3, 2 * k + 40, 2 * k + 50)
    x = (rng.standard_normal(shape) * np.exp(rng.uniform(-8, 8, shape))).astype(np.float32)
    x[0, 0, k, k + 3] = np.inf
    x[0, 1, 5, k + 20] = np.nan
    if layout == "NHWC":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    p = k // 2
    desc = avgpool.AveragePoolingDesc((k, k), (1, 1), (p, p), (p, p),
                                      include_padding=include_padding)

    def pool(a):
        return lambda: avgpool.average_pool(a, desc, layout=layout)
    ref = _run_on("scalar", pool(x.astype(np.float64)))
    ref_abs = _run_on("scalar", pool(np.abs(x).astype(np.float64)))
    got = _run_on(simd, pool(x)).astype(np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    assert np.array_equal(np.isinf(got), np.isinf(ref))
    finite = np.isfinite(ref)
    assert finite.sum() > 0.9 * ref.size
    rel = np.abs(got[finite] - ref[finite]) / ref_abs[finite]
    assert rel.max() <= 1e-5


@pytest.mark.parametrize("name", ["scalar"] + SIMD)
def test_env_forces_path(name):
    code = "import avgpool; print(avgpool.info()['isa'])"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "AVGPOOL_ISA": name},
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == name


def test_info_command_reports_build_and_path():
    out = subprocess.run([sys.executable, "-m", "avgpool", "info"], capture_output=True, text=True,
                         check=True).stdout
    rows = (line.partition(" ") for line in out.splitlines())
    fields = {key: value.strip() for key, _, value in rows}
    assert fields["version"] == avgpool.__version__
    assert "compiler: " in fields["build"] and "flags: " in fields["build"]
    compiled = fields["build"].split("kernels: ")[1].split(";")[0].split()
    assert fields["isa"] in compiled and "scalar" in compiled
    assert "-march=native" not in fields["build"]


def test_env_unavailable_path_fails_at_import():
    code = "import avgpool"
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "AVGPOOL_ISA": "sse9"},
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert "AVGPOOL_ISA='sse9'" in proc.stderr and "ImportError" in proc.stderr
    # the message lists the paths this CPU has: exactly those the test suite runs on
    assert f"this CPU can run: {', '.join(available_isas())} (or auto" in proc.stderr


@pytest.mark.skipif("avx512" in available_isas(), reason="this CPU has AVX-512")
def test_env_avx512_on_a_cpu_without_it():
    proc = subprocess.run([sys.executable, "-c", "import avgpool"],
                          env={**os.environ, "AVGPOOL_ISA": "avx512"}, capture_output=True,
                          text=True)
    assert proc.returncode != 0 and "AVGPOOL_ISA='avx512'" in proc.stderr
    assert f"this CPU can run: {', '.join(available_isas())}" in proc.stderr


def test_set_isa_rejects_unknown():
    with pytest.raises(ValueError, match="isa 'mmx'"):
        _core.set_isa("mmx")


@pytest.mark.one_path  # compares the simd path with scalar itself
@pytest.mark.skipif(not SIMD, reason="no SIMD path on this CPU")
@pytest.mark.parametrize("simd", SIMD)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_non_finite_entering_running_sums(simd, layout, value):
    """Found by the C fuzzer: an inf entering a tall window's running vertical sum gave NaN.
    Non-finite values at every position of a column, each entering and leaving the windows."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 2, 30, 37)).astype(np.float32)
    x[0, 0, 11, 5] = value
    x[0, 1, 20, 30] = value
    x[0, 1, 21, 30] = -value if not np.isnan(value) else value
    if layout == "NHWC":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    for k, s, p in ((9, 1, 4), (14, 3, 6), (12, 1, 0)):
        desc = avgpool.AveragePoolingDesc((k, k), (s, s), (p, p), (p, p), include_padding=True)
        ref = _run_on("scalar", lambda: avgpool.average_pool(x, desc, layout=layout))
        got = _run_on(simd, lambda: avgpool.average_pool(x, desc, layout=layout))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
        np.testing.assert_array_equal(got[np.isinf(ref)], ref[np.isinf(ref)])
        fin = np.isfinite(ref)
        np.testing.assert_allclose(got[fin], ref[fin], rtol=1e-5, atol=1e-5)


@pytest.mark.one_path  # compares the simd path with scalar itself
@pytest.mark.skipif(not SIMD, reason="no SIMD path on this CPU")
@pytest.mark.parametrize("simd", SIMD)
@given(data=st.data(), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**32 - 1))
def test_same_windows_match_scalar(simd, data, dtype, seed):
    """'Same' windows (stride 1, output as large as the input, window < 8) take the whole-plane
    path; every border column and row against the scalar oracle, with inf and NaN. 3-D inputs of
    depth 1 too, whose depth window may be empty or hold padding (the path must then step aside:
    a bug found by the fuzz tests)."""
    rank = data.draw(st.integers(1, 2))
    k = [data.draw(st.integers(1, 7)) for _ in range(rank)]
    spatial = [data.draw(st.integers(k[a], 40)) for a in range(rank)]
    pb = [data.draw(st.integers(0, k[a] - 1)) for a in range(rank)]
    pe = [k[a] - 1 - pb[a] for a in range(rank)]
    s = [1] * rank
    if rank == 2 and data.draw(st.booleans()):  # depth 1, any valid depth window
        kd = data.draw(st.integers(1, 3))
        pbd = data.draw(st.integers(0, kd))
        k, spatial, s = [kd] + k, [1] + spatial, [data.draw(st.integers(1, 2))] + s
        pb, pe = [pbd] + pb, [data.draw(st.integers(max(0, kd - 1 - pbd), kd))] + pe
    desc = avgpool.AveragePoolingDesc(k, s, pb, pe, include_padding=data.draw(st.booleans()),
                                      divisor_override=data.draw(st.sampled_from([None, 3])))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 3, *spatial)).astype(dtype)
    if data.draw(st.booleans()):
        x.reshape(-1)[rng.integers(0, x.size)] = data.draw(st.sampled_from([np.inf, np.nan]))
    _compare(simd, lambda: avgpool.average_pool(x, desc), x, dtype)


@pytest.mark.skipif(not SIMD, reason="no SIMD path on this CPU")
def test_isa_guard_catches_a_leaked_path(pytester, monkeypatch):
    """The conftest guard fails a test that leaves another kernel path active (as _run_on once
    did, resetting to "auto" inside the [scalar] group), and one that starts on the wrong path:
    a small suite under this conftest, on the scalar path only."""
    pytester.makeconftest((Path(__file__).parent / "conftest.py").read_text())
    pytester.makepyfile(test_leak=f"""
        from avgpool import _core

        def test_leaks():
            _core.set_isa("{SIMD[0]}")

        def test_after_the_leak():
            pass
    """)
    monkeypatch.setenv("AVGPOOL_ISA", "scalar")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    # test_leaks passes, then errors in teardown; test_after_the_leak errors in setup
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(["*test_leaks*left the {} kernels active*".format(SIMD[0]),
                                 "*test_after_the_leak*starts on the {} kernels*".format(SIMD[0])])
