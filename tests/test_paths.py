"""One test per kernel path (csrc/paths.h, chosen by ap_choose_path in csrc/paths.c).

Each case has a shape that only its path takes on every SIMD instruction set (4 to 16 lanes):
``avgpool.explain`` must name that path on each SIMD path this CPU runs, the result on each must
match the scalar kernels on the same input (same dtype: only float32 summation order differs),
and every path must match the float64 brute force of tests/reference.py. Test ids avoid the
instruction-set names (the ids end in the conftest's [isa]).
"""

import functools
import zlib

import ml_dtypes
import numpy as np
import pytest

import avgpool
from avgpool import _core

from avgpool._bench import _aligned, _aligned_empty
from conftest import available_isas
from reference import ref_adaptive_average_pool, ref_average_pool

SIMD = [name for name in available_isas() if name != "scalar"]
DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16]
# vs scalar: summation order only; vs the float64 reference: plus the input dtype's rounding
TOL_SCALAR = {np.float32: 2e-6, np.float64: 1e-13, np.float16: 1e-3, ml_dtypes.bfloat16: 8e-3}
TOL_REF = {np.float32: 3e-5, np.float64: 1e-12, np.float16: 1.5e-3, ml_dtypes.bfloat16: 1e-2}
BIG = 2**28  # positions past int32 row-buffer indices

# id -> (path, layout, input shape, window kwargs or None, adaptive output sizes or None)
CASES = {
    "global": ("global", "NCHW", (2, 3, 9, 11), dict(window_size=(9, 11)), None),
    "global-adaptive": ("global", "NCHW", (1, 4, 7, 5, 6), None, (1, 1, 1)),
    # channels last: blocks of 8 vectors of channels and a tail (AVX2 and AVX-512 widths)
    "global-nhwc": ("global", "NHWC", (2, 9, 11, 300), dict(window_size=(9, 11)), None),
    "global-nhwc-adaptive": ("global", "NHWC", (1, 5, 7, 6, 70), None, (1, 1, 1)),
    "same-flat": ("same-flat", "NCHW", (1, 2, 10, 12),
                  dict(window_size=(3, 3), start_padding=(1, 1), end_padding=(1, 1)), None),
    "same-flat-5x5": ("same-flat", "NCHW", (1, 2, 9, 11),   # border columns summed in a loop
                      dict(window_size=(5, 5), start_padding=(2, 2), end_padding=(2, 2)), None),
    "same-flat-w3": ("same-flat", "NCHW", (1, 3, 40, 3),  # 3 wide on 3 columns: one inside
                     dict(window_size=(3, 3), start_padding=(1, 1), end_padding=(1, 1)), None),
    "same-flat-dilated": ("same-flat", "NCHW", (1, 2, 13, 17),  # taps 2 and 3 apart
                          dict(window_size=(3, 3), start_padding=(1, 4), end_padding=(3, 2),
                               dilations=(2, 3)), None),
    "same-flat-depth1": ("same-flat", "NCHW", (1, 3, 1, 9, 17),
                         dict(window_size=(1, 5, 3), start_padding=(0, 2, 1),
                              end_padding=(0, 2, 1), include_padding=True), None),
    # (planes past planes-cl's 2048 input and output elements)
    "rows-s1": ("rows-s1", "NCHW", (1, 2, 20, 60), dict(window_size=(3, 5)), None),
    "rows-s1-k3": ("rows-s1", "NCHW", (1, 2, 11, 100), dict(window_size=(2, 3)), None),
    "rows-s2": ("rows-s2", "NCHW", (1, 2, 17, 121),
                dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1),
                     end_padding=(1, 1)), None),
    "rows-s2-k5": ("rows-s2", "NCHW", (1, 2, 9, 161), dict(window_size=(2, 5), strides=(1, 2)),
                   None),
    # windows 2-3 wide over at most 8 input rows skip the row buffer (fused_row_s of
    # simd_rows.inc): rows of 56 (a vector inside the row, then one past its end, stored in
    # part), columns before the row (left padding 2), divisors that are powers of two (their
    # reciprocals), an override, output rows without input rows (padding 3 > window 2), 3-D
    "rows-s2-2x2": ("rows-s2", "NCHW", (2, 3, 22, 56), dict(window_size=(2, 2), strides=(2, 2)),
                    None),
    "rows-s2-pad2-override": ("rows-s2", "NCHW", (1, 2, 29, 75),
                              dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 2),
                                   end_padding=(2, 1), divisor_override=4), None),
    "rows-s2-empty-rows": ("rows-s2", "NCHW", (1, 2, 23, 90),
                           dict(window_size=(2, 3), strides=(2, 2), start_padding=(3, 1),
                                end_padding=(3, 0), include_padding=True), None),
    "rows-s2-3d": ("rows-s2", "NCHW", (1, 2, 5, 9, 70),
                   dict(window_size=(2, 2, 2), strides=(2, 2, 2), end_padding=(1, 1, 0)), None),
    # rows of 512 bytes or more (here f32; f16 and bf16 rows of 300 bytes go across) are summed
    # row by row in strips of 1024 elements (a strip boundary and a tail here); shorter rows
    # vector by vector, as in the cases above (rows of 256-511 bytes go in order too when the
    # input is past 16 MiB: the same sums, not repeated here)
    "rows-s2-wide": ("rows-s2", "NCHW", (1, 2, 7, 1100), dict(window_size=(2, 2), strides=(2, 2)),
                     None),
    "rows-s1-wide": ("rows-s1", "NCHW", (2, 1, 9, 150),
                     dict(window_size=(4, 3), start_padding=(1, 0), end_padding=(1, 0)), None),
    # rows of 1024 floats or more go one at a time instead of in groups of 8; where a window's
    # input rows pass 32 KiB, in column strips of about 1024 inputs over blocks of 32 rows
    # (strip boundaries inside windows, padding at both ends, a tail strip)
    "rows-s1-strips": ("rows-s1", "NCHW", (1, 2, 40, 1200),
                       dict(window_size=(7, 5), start_padding=(3, 2), end_padding=(3, 2)), None),
    "rows-s2-strips-3d": ("rows-s2", "NCHW", (1, 1, 4, 9, 2100),
                          dict(window_size=(2, 4, 3), strides=(1, 1, 2), start_padding=(0, 0, 1),
                               end_padding=(0, 0, 1)), None),
    "rows-gather-strips": ("rows-gather", "NCHW", (2, 1, 9, 3001),
                           dict(window_size=(6, 3), strides=(1, 3), dilations=(1, 2)), None),
    "rows-s1-nhwc-flat-strips": ("rows-s1", "NHWC", (1, 12, 700, 3),
                                 dict(window_size=(5, 5), start_padding=(2, 2),
                                      end_padding=(2, 2)), None),
    "rows-s4k4-1d-wide": ("rows-s4k4", "NCHW", (2, 3, 4403),
                          dict(window_size=(4,), strides=(4,), end_padding=(1,)), None),
    "rows-s4k4": ("rows-s4k4", "NCHW", (1, 3, 12, 177),
                  dict(window_size=(4, 4), strides=(4, 4), end_padding=(0, 3)), None),
    "rows-running": ("rows-running", "NCHW", (1, 2, 12, 100),
                     dict(window_size=(9, 40), strides=(2, 1), start_padding=(2, 3),
                          end_padding=(2, 3)), None),
    "rows-gather": ("rows-gather", "NCHW", (1, 2, 15, 109),
                    dict(window_size=(3, 3), strides=(3, 3), start_padding=(1, 1),
                         dilations=(1, 2)), None),
    "rows-gather-adaptive": ("rows-gather", "NCHW", (2, 3, 13, 161), None, (5, 7)),
    # rows of at most 40 elements (plane-flat): groups of whole planes; windows tiling the
    # rows from their start summed by shuffles (2 x 2 leaving a column over, adaptive 14 -> 7,
    # 4 x 4 on 3-D planes, a divisor that is not a power of two), others gathered (3 x 3
    # stride 2 pad 1, adaptive 13 -> 5 x 17 -> 7)
    "plane-flat-2x2": ("plane-flat", "NCHW", (2, 37, 14, 15),
                       dict(window_size=(2, 2), strides=(2, 2)), None),
    "plane-flat-adaptive-tiled": ("plane-flat", "NCHW", (1, 5, 14, 14), None, (7, 7)),
    "plane-flat-4x4-3d": ("plane-flat", "NCHW", (1, 5, 3, 9, 34),
                          dict(window_size=(2, 4, 4), strides=(1, 4, 4)), None),
    "plane-flat-override": ("plane-flat", "NCHW", (1, 3, 8, 8),
                            dict(window_size=(2, 2), strides=(2, 2), divisor_override=3), None),
    "plane-flat-3x3s2": ("plane-flat", "NCHW", (1, 9, 130, 13),
                         dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1),
                              end_padding=(1, 1)), None),
    "plane-flat-adaptive": ("plane-flat", "NCHW", (2, 3, 125, 17), None, (5, 7)),
    # planes of at most 2048 input and output elements together (planes-cl): groups of up to
    # 128 planes transposed to float32 channels last and pooled by nhwc-direct (by columns,
    # over a row of column sums, over the input), written back channels first; 200 and 150
    # planes leave a smaller last group
    "planes-cl-same": ("planes-cl", "NCHW", (2, 100, 7, 7),
                       dict(window_size=(3, 3), start_padding=(1, 1), end_padding=(1, 1)), None),
    "planes-cl-3x3s2": ("planes-cl", "NCHW", (1, 150, 14, 14),
                        dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1),
                             end_padding=(1, 1), divisor_override=5), None),
    "planes-cl-adaptive": ("planes-cl", "NCHW", (1, 130, 13, 13), None, (7, 7)),
    "planes-cl-rowsums": ("planes-cl", "NCHW", (1, 130, 20, 30),
                          dict(window_size=(3, 5)), None),
    "planes-cl-3d": ("planes-cl", "NCHW", (1, 70, 4, 6, 9),
                     dict(window_size=(2, 2, 3), strides=(1, 1, 2), start_padding=(0, 0, 1),
                          end_padding=(0, 0, 1), include_padding=True), None),
    "planes-cl-1d": ("planes-cl", "NCHW", (2, 70, 23),
                     dict(window_size=(3,), strides=(2,), start_padding=(1,)), None),
    # (rows of more than 24 whose stride-2 windows rows-s2 sums in registers stay there)
    "rows-s2-1d": ("rows-s2", "NCHW", (2, 70, 50),
                   dict(window_size=(3,), strides=(2,), start_padding=(1,)), None),
    "int32-fallback": ("scalar-fallback", "NCHW", (1, 3, 5),
                       dict(window_size=(2,), dilations=(BIG,), end_padding=(BIG,)), None),
    # windows 2-3 wide at stride 1 (and 3 wide at stride 2): column sums shared by 4 outputs
    # along W (a run of 12 full windows here, 3 blocks; 9 in the next, 2 blocks and a single;
    # 10 at stride 2; padding at both ends), channel tails of every vector width, 2 vectors (a
    # head when misaligned), divisors from padding, an override, 3-D windows
    "nhwc-direct": ("nhwc-direct", "NHWC", (1, 9, 14, 19),
                    dict(window_size=(3, 3), start_padding=(1, 1), end_padding=(1, 1)), None),
    "nhwc-direct-cols-k2": ("nhwc-direct", "NHWC", (2, 7, 10, 32),
                            dict(window_size=(2, 2), start_padding=(0, 1), end_padding=(1, 1),
                                 include_padding=True), None),
    "nhwc-direct-cols-override": ("nhwc-direct", "NHWC", (1, 6, 12, 40),
                                  dict(window_size=(3, 3), start_padding=(1, 2),
                                       end_padding=(1, 0), divisor_override=7), None),
    "nhwc-direct-cols-3d": ("nhwc-direct", "NHWC", (1, 3, 5, 9, 20),
                            dict(window_size=(2, 2, 3), start_padding=(0, 1, 1),
                                 end_padding=(1, 0, 1)), None),
    "nhwc-direct-cols-s2": ("nhwc-direct", "NHWC", (2, 9, 23, 13),
                            dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1),
                                 end_padding=(1, 1)), None),
    # (more than 2 vectors of channels, 11 outputs along W: the taps of the input)
    "nhwc-direct-s2-wide": ("nhwc-direct", "NHWC", (2, 9, 23, 40),
                            dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1),
                                 end_padding=(1, 1)), None),
    # the same windows on images of at most 8 outputs along W: each output row from a row of
    # column sums (the plane way; test_nhwc_plane_same_bits_as_the_direct_way checks the bits)
    "nhwc-direct-plane": ("nhwc-direct", "NHWC", (2, 7, 7, 19),
                          dict(window_size=(3, 3), start_padding=(1, 1), end_padding=(1, 1)), None),
    "nhwc-direct-plane-s2": ("nhwc-direct", "NHWC", (1, 9, 9, 40),
                             dict(window_size=(3, 3), strides=(2, 2), start_padding=(1, 1),
                                  end_padding=(1, 1), divisor_override=7), None),
    "nhwc-direct-plane-3d": ("nhwc-direct", "NHWC", (1, 3, 4, 6, 20),
                             dict(window_size=(2, 2, 3), start_padding=(0, 1, 1),
                                  end_padding=(1, 0, 1), include_padding=True), None),
    # a 4 x 4 window at stride 1: over a row of column sums (a run of 10 full windows along W
    # in one call); stride 3 (no overlap): over the input
    "nhwc-direct-rowsums": ("nhwc-direct", "NHWC", (1, 8, 14, 41),
                            dict(window_size=(4, 4), start_padding=(0, 1), end_padding=(1, 2),
                                 include_padding=True), None),
    "nhwc-direct-input": ("nhwc-direct", "NHWC", (2, 10, 11, 37),
                          dict(window_size=(3, 3), strides=(3, 3), start_padding=(1, 1),
                               dilations=(1, 2)), None),
    "nhwc-direct-2x2": ("nhwc-direct", "NHWC", (1, 8, 9, 70),
                        dict(window_size=(2, 2), strides=(2, 2), end_padding=(0, 1)), None),
    # more than 64 taps (stride 2, so not box) on a (W, C) row of 129 x 9000 > 1 M floats
    "nhwc-fallback": ("scalar-fallback", "NHWC", (1, 1, 1, 9000),
                      dict(window_size=(1, 65), strides=(1, 2), start_padding=(0, 64),
                           end_padding=(0, 64)), None),
    "nhwc-separable": ("nhwc-separable", "NHWC", (2, 12, 14, 21),
                       dict(window_size=(5, 5), strides=(2, 1), start_padding=(2, 2),
                            end_padding=(2, 2)), None),
    "nhwc-separable-s2": ("nhwc-separable", "NHWC", (1, 4, 9, 11, 9),
                          dict(window_size=(2, 3, 3), strides=(1, 2, 2)), None),
    "nhwc-separable-adaptive": ("nhwc-separable", "NHWC", (1, 20, 21, 17), None, (3, 4)),
    # box: 4 interleaved prefix segments (1 channel), 2 (2-3 channels), channel vectors (more);
    # bands of 8 window heights restart the column sums (the 150-row case has 3 bands)
    "box": ("box", "NCHW", (1, 2, 150, 50),
            dict(window_size=(9, 9), start_padding=(4, 4), end_padding=(4, 4),
                 include_padding=True), None),
    "box-wide": ("box", "NCHW", (2, 1, 5, 1100),
                 dict(window_size=(3, 31), start_padding=(1, 15), end_padding=(1, 15)), None),
    "box-1d": ("box", "NCHW", (1, 3, 90), dict(window_size=(17,), end_padding=(4,)), None),
    # rows past one run of segments (the buffers are sized by the segments a row takes): 4
    # segments of 512, then a second run whose last segments read the zero slack
    "box-long-row": ("box", "NCHW", (1, 1, 3, 2500),
                     dict(window_size=(1, 17), start_padding=(0, 8), end_padding=(0, 8)), None),
    "box-3d": ("box", "NCHW", (1, 2, 4, 20, 30), dict(window_size=(2, 9, 9), strides=(2, 1, 1)),
               None),
    # channels last, windows wider than 8 along W (narrower ones with fewer channels than a
    # vector go through the rows path, below)
    "box-nhwc-rgb": ("box", "NHWC", (1, 30, 40, 3),
                     dict(window_size=(5, 9), start_padding=(2, 4), end_padding=(2, 4)), None),
    "box-nhwc-c2": ("box", "NHWC", (1, 21, 19, 2),
                    dict(window_size=(5, 9), start_padding=(2, 3), end_padding=(1, 3),
                         divisor_override=30), None),
    "box-nhwc": ("box", "NHWC", (2, 20, 25, 7),
                 dict(window_size=(5, 9), start_padding=(3, 3), end_padding=(1, 1)), None),
    "box-nhwc-long-row": ("box", "NHWC", (1, 3, 600, 20),
                          dict(window_size=(3, 9), start_padding=(1, 4), end_padding=(1, 4)),
                          None),
    # channels last with fewer channels than a vector and a stride-1 window of at most 8 taps
    # along W: one channel of W x C, a window of dilation C (csrc/api.c ap_flatten_channels)
    "same-flat-nhwc-flat-rgb": ("same-flat", "NHWC", (1, 30, 40, 3),  # a 'same' window
                                dict(window_size=(5, 5), start_padding=(2, 2),
                                     end_padding=(2, 2)), None),
    "rows-s1-nhwc-flat-c2": ("rows-s1", "NHWC", (2, 20, 25, 2),
                             dict(window_size=(3, 3), strides=(2, 1), start_padding=(1, 1),
                                  end_padding=(1, 1), include_padding=True), None),
    "rows-s1-nhwc-flat-1d": ("rows-s1", "NHWC", (2, 50, 5),
                             dict(window_size=(4,), start_padding=(2,), end_padding=(1,),
                                  dilations=(2,)), None),
}


def _path_name(line):
    """The path named by an explain line: between the first ': ' and the next ' ('."""
    return line.split(": ", 1)[1].split(" (", 1)[0]


def _desc(case):
    _, _, _, kwargs, adaptive = case
    return avgpool.AveragePoolingDesc(**kwargs) if kwargs else avgpool.AdaptiveAveragePoolingDesc(adaptive)


def _pool(case, x):
    desc = _desc(case)
    if isinstance(desc, avgpool.AdaptiveAveragePoolingDesc):
        return avgpool.adaptive_average_pool(x, desc, layout=case[1])
    return avgpool.average_pool(x, desc, layout=case[1])


def _reference(case, x):
    _, layout, _, kwargs, adaptive = case
    if kwargs is None:
        return ref_adaptive_average_pool(x, adaptive, layout=layout)
    kw = dict(kwargs)
    return ref_average_pool(x, kw.pop("window_size"), layout=layout, **kw)


def _input_of(case_id, dtype):
    """The input a path test draws for case_id (the same for every test and every run: crc32,
    not hash(), which Python salts per process), in dtype."""
    rng = np.random.default_rng(zlib.crc32(case_id.encode()))
    return rng.uniform(-1, 1, CASES[case_id][2]).astype(dtype)


def _close(got, want, tol, what):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape, what
    assert np.array_equal(np.isnan(got), np.isnan(want)), what
    ok = ~np.isnan(want)
    err = np.abs(got[ok] - want[ok])
    bound = tol * (np.abs(want[ok]) + 1.0)
    assert np.all(err <= bound), f"{what}: max error {err.max() if err.size else 0}"


def _on(name, fn):
    prev = _core.isa()
    _core.set_isa(name)
    try:
        return fn()
    finally:
        _core.set_isa(prev)


@pytest.mark.one_path  # runs every path itself
@pytest.mark.parametrize("case_id", list(CASES))
def test_path_is_named_and_matches_scalar(case_id):
    case = CASES[case_id]
    path, layout, shape = case[:3]
    desc = _desc(case)
    x64 = _input_of(case_id, np.float64)
    ref = _reference(case, x64)
    for dtype in DTYPES:
        x = x64.astype(dtype)
        want = _reference(case, x.astype(np.float64))
        scalar = _on("scalar", lambda: _pool(case, x))
        line = _on("scalar", lambda: avgpool.explain(desc, shape, layout=layout, dtype=dtype))
        assert _path_name(line) == "scalar", line
        _close(scalar, want, TOL_REF[dtype], f"scalar {np.dtype(dtype)} vs float64 reference")
        for name in SIMD:
            line = _on(name, lambda: avgpool.explain(desc, shape, layout=layout, dtype=dtype))
            assert _path_name(line) == path, f"{name}: {line}"
            assert line.startswith(f"isa {name}, layout {layout}, "), line
            got = _on(name, lambda: _pool(case, x))
            assert got.dtype == x.dtype
            _close(got, scalar, TOL_SCALAR[dtype], f"{name} {path} {np.dtype(dtype)} vs scalar")
            _close(got, want, TOL_REF[dtype], f"{name} {path} {np.dtype(dtype)} vs reference")
    # float64: the scalar kernels on the scalar instruction set; on the vector ones its own
    # column sums where they pay, else the scalar kernels (test_float64_path_rule)
    line = _on("scalar", lambda: avgpool.explain(desc, shape, layout=layout, dtype="float64"))
    assert _path_name(line) == "scalar", line
    scalar64 = _on("scalar", lambda: _pool(case, x64))
    _close(scalar64, ref, TOL_REF[np.float64], "scalar float64")
    for name in SIMD:
        line = _on(name, lambda: avgpool.explain(desc, shape, layout=layout, dtype="float64"))
        assert _path_name(line) in ("f64-separable", "f64-direct", "f64-global", "scalar"), line
        got = _on(name, lambda: _pool(case, x64))
        _close(got, scalar64, TOL_SCALAR[np.float64], f"{name} float64 vs scalar")
        _close(got, ref, TOL_REF[np.float64], f"{name} float64")


@pytest.mark.parametrize("layout,shape,kwargs,path", [
    # channels first: planes whose input and output have at most 4096 values together, on
    # rows of at most 32 values or where the column sums save no adds, the taps directly on
    # groups of planes (f64-direct); others on rows of 8 values or more, 10 or more where the
    # column sums save no adds, column sums, else the scalar kernels
    ("NCHW", (1, 2, 9, 10), dict(window_size=(2, 2), strides=(2, 2)), "f64-direct"),
    ("NCHW", (1, 2, 20, 32), dict(window_size=(3, 3)), "f64-direct"),
    ("NCHW", (1, 2, 20, 33), dict(window_size=(3, 3)), "f64-separable"),
    ("NCHW", (1, 2, 20, 100), dict(window_size=(2, 2), strides=(2, 2)), "f64-direct"),
    ("NCHW", (2, 3, 7, 7), dict(window_size=(5, 7)), "f64-direct"),
    ("NCHW", (1, 1, 2048), dict(window_size=(1,)), "f64-direct"),          # 2048 + 2048
    ("NCHW", (1, 1, 2049), dict(window_size=(1,)), "f64-separable"),       # 2049 + 2049
    ("NCHW", (1, 2, 450, 10), dict(window_size=(2, 2), strides=(2, 2)), "f64-separable"),
    ("NCHW", (1, 2, 450, 9), dict(window_size=(2, 2), strides=(2, 2)), "scalar"),
    ("NCHW", (1, 2, 520, 8), dict(window_size=(3, 3), start_padding=(1, 1),
                                  end_padding=(1, 1)), "f64-separable"),
    ("NCHW", (1, 2, 520, 7), dict(window_size=(3, 3), start_padding=(1, 1),
                                  end_padding=(1, 1)), "scalar"),
    # one window over each plane: 8 interleaved partial sums
    ("NCHW", (2, 3, 7, 7), dict(window_size=(7, 7)), "f64-global"),
    ("NCHW", (2, 3, 2, 61), dict(window_size=(4, 63), start_padding=(1, 1), end_padding=(1, 1),
                                 include_padding=True), "f64-global"),
    # channels last: column sums where they take fewer adds than the taps (kd kh * stride +
    # kw < kd kh kw), else the taps directly (f64-direct, the scalar kernels' order)
    ("NHWC", (1, 5, 5, 8), dict(window_size=(2, 3)), "f64-separable"),
    ("NHWC", (1, 64, 64, 8), dict(window_size=(2, 2), strides=(2, 2)), "f64-direct"),
    ("NHWC", (1, 9, 64, 8), dict(window_size=(1, 9)), "f64-direct"),
    ("NHWC", (1, 9, 64, 8), dict(window_size=(3, 3), strides=(2, 2)), "f64-direct"),
    ("NHWC", (1, 4, 9, 9, 8), dict(window_size=(2, 2, 2)), "f64-separable"),
    ("NHWC", (1, 4, 9, 9, 8), dict(window_size=(2, 1, 2)), "f64-direct"),
])
def test_float64_path_rule(layout, shape, kwargs, path):
    """float64 on a vector instruction set takes the column sums (f64-separable) where they
    pay, by the shape alone (paths.c), and matches the scalar kernels there; f64-direct sums in
    the scalar kernels' order, so it gives their bits, NaN omitted or not."""
    if _core.isa() == "scalar":
        pytest.skip("the scalar instruction set runs the scalar kernels")
    desc = avgpool.AveragePoolingDesc(**kwargs)
    assert _path_name(avgpool.explain(desc, shape, layout=layout, dtype="float64")) == path
    x = np.random.default_rng(5).uniform(-1, 1, shape)
    x.flat[::7] = np.nan
    for policy in ("propagate", "omit"):
        d = avgpool.AveragePoolingDesc(**kwargs, nan_policy=policy)
        got = avgpool.average_pool(x, d, layout=layout)
        want = _on("scalar", lambda: avgpool.average_pool(x, d, layout=layout))
        if path == "f64-direct":
            np.testing.assert_array_equal(got, want)
        else:
            _close(got, want, TOL_SCALAR[np.float64], f"float64 {policy} vs scalar")


def _f64_in_order(x, k, s, p, layout, include_padding, override, separable, omit):
    """2-D float64 pooling with the adds of simd_f64.inc in their order, one numpy add (one IEEE
    add per element) at a time: f64-direct sums each window's valid taps from 0, rows then
    columns ascending; f64-separable sums each window's valid rows from 0 into column sums,
    then the window's columns from 0. With omit, NaN taps add 0 to the sums and 1 to NaN
    counts summed alongside, and the divisor loses them. Windows of the floor rule, padding p
    at both ends, min_count 1."""
    xc = x if layout == "NCHW" else np.moveaxis(x, -1, 1)
    nan = np.isnan(xc) if omit else np.zeros(xc.shape, bool)
    xc = np.where(nan, 0.0, xc)
    H, W = xc.shape[2:]
    OH, OW = (H + 2 * p - k) // s + 1, (W + 2 * p - k) // s + 1
    y = np.empty(xc.shape[:2] + (OH, OW))
    for oh in range(OH):
        rows = [r for r in range(oh * s - p, oh * s - p + k) if 0 <= r < H]
        cs, cn = np.zeros(xc.shape[:2] + (W,)), np.zeros(xc.shape[:2] + (W,))
        for r in rows:
            cs, cn = cs + xc[:, :, r, :], cn + nan[:, :, r, :]
        for ow in range(OW):
            cols = [c for c in range(ow * s - p, ow * s - p + k) if 0 <= c < W]
            acc, nans = np.zeros(xc.shape[:2]), np.zeros(xc.shape[:2])
            if separable:
                for c in cols:
                    acc, nans = acc + cs[:, :, c], nans + cn[:, :, c]
            else:
                for r in rows:
                    for c in cols:
                        acc, nans = acc + xc[:, :, r, c], nans + nan[:, :, r, c]
            d = override or (k * k if include_padding else len(rows) * len(cols)) - nans
            with np.errstate(invalid="ignore", divide="ignore"):
                q = acc / d
            y[:, :, oh, ow] = np.where((len(rows) * len(cols) - nans < 1) | (d == 0), np.nan, q)
    return y if layout == "NCHW" else np.moveaxis(y, 1, -1)


@pytest.mark.parametrize("layout,shape,k,s,p,path", [
    # channels: 4-vector blocks, one-vector blocks and single values (3, 13, 40, 70)
    ("NHWC", (2, 9, 11, 70), 3, 2, 1, "f64-direct"),
    ("NHWC", (2, 9, 11, 13), 2, 2, 0, "f64-direct"),
    ("NHWC", (1, 7, 7, 3), 3, 2, 1, "f64-direct"),
    ("NHWC", (1, 18, 18, 13), 9, 9, 0, "f64-direct"),      # 81 taps: the whole window
    ("NHWC", (1, 18, 18, 130), 9, 9, 0, "f64-direct"),     # 130 channels: row by row
    ("NHWC", (2, 9, 11, 70), 3, 1, 1, "f64-separable"),
    ("NHWC", (1, 12, 10, 13), 5, 1, 2, "f64-separable"),
    ("NHWC", (1, 12, 40, 3), 5, 1, 2, "f64-separable"),   # a run's positions and channels
    ("NCHW", (2, 3, 20, 110), 3, 1, 1, "f64-separable"),
    ("NCHW", (1, 2, 40, 105), 15, 1, 7, "f64-separable"),  # runs of 3 blocks and 27 values
    ("NCHW", (1, 2, 20, 220), 2, 2, 0, "f64-separable"),
    # planes: 6 (fewer than a vector), 75 (two groups of 32 and 11: whole 8 x 8 blocks
    # transposed and the values past them), 80
    ("NCHW", (2, 3, 20, 30), 3, 1, 1, "f64-direct"),
    ("NCHW", (3, 25, 9, 11), 3, 2, 1, "f64-direct"),
    ("NCHW", (2, 40, 7, 7), 2, 2, 0, "f64-direct"),
])
@pytest.mark.parametrize("include_padding,override", [(False, None), (True, None), (False, 3)])
@pytest.mark.parametrize("nan_policy", ["propagate", "omit"])
def test_float64_paths_add_in_their_documented_order(layout, shape, k, s, p, path,
                                                    include_padding, override, nan_policy):
    """The float64 vector paths give exactly the bits of their documented order of adds (the
    sums held in registers, the blocks of channels and the values past them, NaN omitted or
    not), checked against numpy doing the same adds one at a time; f64-direct's are the scalar
    kernels' bits."""
    x = np.random.default_rng(11).standard_normal(shape)
    x[..., 1, :] = -0.0  # a column (channels last) or row of negative zeros: 0 + -0 = +0
    x.flat[::17] = np.nan
    x[0, :5, :5] = np.nan  # windows of NaN only: NaN when omitted too (min_count 1)
    desc = avgpool.AveragePoolingDesc((k, k), (s, s), (p, p), (p, p),
                                      include_padding=include_padding, divisor_override=override,
                                      nan_policy=nan_policy)
    want = _f64_in_order(x, k, s, p, layout, include_padding, override,
                         path == "f64-separable", nan_policy == "omit")
    for name in SIMD:
        line = _on(name, lambda: avgpool.explain(desc, shape, layout=layout, dtype="float64"))
        assert _path_name(line) == path, line
        got = _on(name, lambda: avgpool.average_pool(x, desc, layout=layout))
        np.testing.assert_array_equal(got, want, err_msg=f"{name} {path}")
        if path == "f64-direct":
            scalar = _on("scalar", lambda: avgpool.average_pool(x, desc, layout=layout))
            np.testing.assert_array_equal(got, scalar, err_msg=f"{name} {path} vs scalar")


def test_explain_empty_batch_runs_no_kernel():
    desc = avgpool.AveragePoolingDesc((2, 2))
    assert _path_name(avgpool.explain(desc, (0, 2, 6, 6))) == "none"


def test_explain_reasons_and_errors():
    line = avgpool.explain(avgpool.AveragePoolingDesc((3, 3), strides=(2, 2)), (1, 64, 56, 56))
    assert line.startswith(f"isa {_core.isa()}, layout NCHW, f32: ")
    if _core.isa() != "scalar":
        assert "rows-s2 (stride 2 along W" in line and "window height 3 < 8" in line
    # adaptive sizes as a plain sequence; dtype names
    assert "f16" in avgpool.explain((2, 2), (1, 1, 8, 8), dtype="float16")
    assert "bf16" in avgpool.explain((2, 2), (1, 1, 8, 8), dtype="bfloat16")
    # the errors a call raises
    with pytest.raises(ValueError, match=r"window_size: .*spatial axis 0"):
        avgpool.explain(avgpool.AveragePoolingDesc((6, 2)), (1, 1, 5, 5))
    with pytest.raises(ValueError, match="layout"):
        avgpool.explain(avgpool.AveragePoolingDesc((2,)), (1, 1, 5), layout="NWC")
    with pytest.raises(TypeError, match="int32"):
        avgpool.explain(avgpool.AveragePoolingDesc((2,)), (1, 1, 5), dtype="int32")


@pytest.mark.parametrize("channels", [3, 13, 40, 300])
def test_stride2_windows_3_wide_by_columns_on_few_channels(channels):
    """Channels last, 3 x 3 stride 2 takes the column sums on at most 2 vectors of channels
    (and on images the plane way takes), the taps of the input on more; a tile of a few
    channels keeps the whole call's way, so its bits are the whole call's (test_dask's
    channel chunks)."""
    desc = avgpool.AveragePoolingDesc((3, 3), strides=(2, 2), start_padding=(1, 1),
                                      end_padding=(1, 1))
    if _core.isa() == "scalar":
        pytest.skip("the scalar kernels sum every window tap by tap")
    whole = (2, 9, 23, channels)
    line = avgpool.explain(desc, whole, layout="NHWC")
    lanes = 16 if _core.isa() == "avx512" else 8 if _core.isa() == "avx2" else 4
    cols = "by columns shared by 4 outputs along W"
    assert (cols in line) == (channels <= 2 * lanes), line
    x = np.random.default_rng(channels).uniform(-1, 1, whole).astype(np.float32)
    want = avgpool.average_pool(x, desc, layout="NHWC")
    region = [slice(1, 5), slice(2, 12)]
    rows, cols_in = avgpool.tile_input_region(desc, whole, region, layout="NHWC")
    for c0, c1 in ((0, min(3, channels)), (channels - 2, channels)):
        got = avgpool.pool_tile(x[:, rows, cols_in, c0:c1], desc, whole, region, layout="NHWC")
        part = np.ascontiguousarray(want[:, 1:5, 2:12, c0:c1])
        assert got.tobytes() == part.tobytes(), (c0, c1)
    small = (1, 9, 9, 300)  # 5 outputs along W: the plane way, by columns, whatever C is
    assert "from a row of column sums" in avgpool.explain(desc, small, layout="NHWC")


@pytest.mark.parametrize("case_id,how", [
    ("nhwc-direct", "by columns shared by 4 outputs along W"),
    ("nhwc-direct-rowsums", "of a row of column sums (a third"),
    ("nhwc-direct-plane", "a small image's output row from a row of column sums"),
    ("nhwc-direct-plane-s2", "a small image's output row from a row of column sums"),
    ("nhwc-direct-plane-3d", "a small image's output row from a row of column sums"),
    ("nhwc-direct-input", "summed over the taps of the input)"),
    ("nhwc-direct-s2-wide", "summed over the taps of the input)"),
    ("nhwc-direct-2x2", "summed over the taps of the input)"),
])
def test_nhwc_direct_cases_take_their_variant(case_id, how):
    """The nhwc-direct path cases above cover each way it sums a window (explain names it)."""
    case = CASES[case_id]
    if _core.isa() == "scalar":
        pytest.skip("the scalar kernels sum every window tap by tap")
    line = avgpool.explain(_desc(case), case[2], layout=case[1])
    assert how in line, line


@pytest.mark.parametrize("window,pad,stride,extra", [
    ((3, 3), 1, 1, {}),
    ((3, 3), 1, 2, {"include_padding": True}),
    ((2, 2), 1, 1, {"include_padding": True}),  # one-column windows of 2 rows at the borders
    ((2, 3), 1, 1, {"divisor_override": 5}),
    ((2, 2, 3), 1, 1, {}),
    ((3, 3), 2, 1, {}),  # one-column windows of 3 rows: the taps, not the plane way
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_nhwc_plane_same_bits_as_the_direct_way(window, pad, stride, extra, dtype):
    """On images of at most 8 outputs along W, windows that nhwc-direct sums by columns come
    from a row of column sums (the plane way), whose sums are those of the direct way (column
    by column; at a border, the two chains of taps starting at +0), bit for bit, signed
    zeros included. A channels-first output still takes the direct way: the same bits."""
    rank = len(window)
    desc = avgpool.AveragePoolingDesc(window, (stride,) * rank, (pad,) * rank, (pad,) * rank,
                                      **extra)
    shape = (2,) + (4, 6, 7)[3 - rank:] + (21,)
    rng = np.random.default_rng(sum(window) + pad)
    x = rng.uniform(-1, 1, shape).astype(dtype)
    x[rng.random(shape) < 0.3] = -0.0
    x[..., :2] = -0.0  # channels of negative zeros: windows of them sum to -0 or +0 by order
    line = avgpool.explain(desc, shape, layout="NHWC", dtype=dtype)
    # a border window one column wide (padding as wide as the window) of more than 2 rows
    # sums its taps in another order: then the direct way
    one_column_rows = np.prod(window[:-1]) if pad >= window[-1] - 1 else 0
    assert ("from a row of column sums" in line) == (one_column_rows <= 2 and
                                                     _core.isa() != "scalar"), line
    for threads in (1, 2):
        want = avgpool.average_pool(x, desc, layout="NHWC", num_threads=threads)
        op = avgpool.compile_operator(desc, shape, dtype, layout="NHWC", output_layout="NCHW",
                                      num_threads=threads)
        direct = np.moveaxis(op(x), 1, -1)
        assert want.tobytes() == np.ascontiguousarray(direct).tobytes(), threads


def test_cli_explain(capsys):
    from avgpool.__main__ import main

    assert main(["info", "--explain", "window=3,3 strides=2,2 padding=1,1 shape=1,64,56,56 "
                                      "layout=NCHW"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"isa {_core.isa()}, layout NCHW, f32: ")
    assert main(["info", "--explain", "adaptive=1,1 shape=2,7,7,64 layout=NHWC dtype=float64"]) == 0
    assert _path_name(capsys.readouterr().out.strip()) == (
        "scalar" if _core.isa() == "scalar" else "f64-direct")
    assert main(["info", "--explain", "window=3,3 shape=1,1"]) == 2  # rank mismatch: an error
    assert "x/window_size: window_size has 2 entries" in capsys.readouterr().err
    assert main(["info", "--explain", "windw=3"]) == 2
    assert "unknown key 'windw'" in capsys.readouterr().err


def _sysfs_l3_bytes():
    """The level-3 cache of CPU 0 as Linux's sysfs describes it, or None."""
    import glob

    for d in sorted(glob.glob("/sys/devices/system/cpu/cpu0/cache/index*")):
        try:
            with open(f"{d}/level") as f:
                if f.read().strip() != "3":
                    continue
            with open(f"{d}/size") as f:
                text = f.read().strip()
        except OSError:
            return None
        unit = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
        return int(text.rstrip("KM")) * unit
    return None


@pytest.mark.one_path
def test_stream_threshold_is_the_last_level_cache(monkeypatch):
    """Outputs stream past AVGPOOL_STREAM_BYTES when set (read on each call), else past the
    level-3 cache's size as sysfs gives it on Linux (sysconf's can be the whole host's)."""
    monkeypatch.setenv("AVGPOOL_STREAM_BYTES", "12345")
    assert avgpool.info()["stream_bytes"] == 12345
    monkeypatch.delenv("AVGPOOL_STREAM_BYTES")
    l3 = _sysfs_l3_bytes()
    if l3 is None:
        assert avgpool.info()["stream_bytes"] > 0
    else:
        assert avgpool.info()["stream_bytes"] == l3


@pytest.mark.parametrize("layout,shape,window,strides,pad", [
    ("NCHW", (2, 3, 64, 64), (2, 2), (2, 2), 0),     # 32 outputs a row: two 64-byte lines
    ("NCHW", (1, 4, 6, 448), (2, 2), (2, 2), 0),     # 224: the big bench case's row
    ("NCHW", (1, 1, 130, 128), (3, 3), (1, 1), 1),   # stride 1, padded (past same-flat's plane)
    ("NCHW", (1, 1, 140, 160), (5, 5), (1, 1), 2),   # a wider window
    ("NCHW", (1, 3, 30, 64), (3, 3), (2, 2), 1),     # 32 outputs, stride 2, padded
    ("NHWC", (2, 10, 12, 64), (2, 2), (2, 2), 0),    # 64 channels: four lines a position
    ("NHWC", (1, 9, 9, 16), (3, 3), (1, 1), 1),      # one line a position, padded
    ("NHWC", (1, 7, 11, 80), (3, 3), (2, 2), 1),     # 80: a block of 4 vectors and one more
])
def test_streamed_output(monkeypatch, layout, shape, window, strides, pad):
    """float32 results written with streaming stores: channels-first rows paths whose output
    rows, and nhwc-direct calls whose channels, are whole 64-byte lines, into a 64-byte
    aligned out=, once a call moves more bytes than AVGPOOL_STREAM_BYTES (default: the
    last-level cache's size; 0 here, so these small calls take them). The same bits as plain
    stores, and the float64 reference."""
    x = _aligned(np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32))
    desc = avgpool.AveragePoolingDesc(window, strides, (pad, pad), (pad, pad))
    path = ": rows-" if layout == "NCHW" else ": nhwc-direct"
    assert path in avgpool.explain(desc, shape, layout=layout) or _core.isa() == "scalar"
    out_shape = avgpool.average_pool(x, desc, layout=layout).shape
    assert (out_shape[-1] * 4) % 64 == 0
    plain, streamed = _aligned_empty(out_shape, np.float32), _aligned_empty(out_shape, np.float32)
    streamed[...] = np.nan  # written once: its pages are in memory (fresh ones take plain stores)
    avgpool.average_pool(x, desc, layout=layout, out=plain)
    monkeypatch.setenv("AVGPOOL_STREAM_BYTES", "0")
    avgpool.average_pool(x, desc, layout=layout, out=streamed)
    avgpool.average_pool(x, desc, layout=layout, out=streamed, num_threads=2)
    assert streamed.tobytes() == plain.tobytes()
    want = ref_average_pool(x.astype(np.float64), window, strides, (pad, pad), (pad, pad),
                            layout=layout)
    np.testing.assert_allclose(streamed, want, rtol=TOL_REF[np.float32], atol=1e-6)


@pytest.mark.parametrize("shape,window,pad,dilation", [
    ((3, 5, 35, 35), (3, 3), 1, 1),     # planes of 1225: lines shared by neighbouring planes
    ((2, 3, 17, 64), (5, 5), 2, 1),     # planes of whole lines; border columns by the loop
    ((1, 7, 23, 29), (3, 3), 2, 2),     # dilated
])
@pytest.mark.parametrize("start", [0, 1, 5])  # out= starting start floats past a line
def test_streamed_same_flat_output(monkeypatch, shape, window, pad, dilation, start):
    """same-flat with streaming stores (float32 calls moving more bytes than
    AVGPOOL_STREAM_BYTES, 0 here): each plane, border columns included, in a scratch plane,
    then its whole 64-byte lines streamed and the partial lines it shares with its neighbours
    stored plainly, wherever out= starts. The same bits as plain stores at 1 and 2 threads,
    and the float64 reference."""
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    desc = avgpool.AveragePoolingDesc(window, (1, 1), (pad, pad), (pad, pad),
                                      dilations=(dilation, dilation))
    assert ": same-flat" in avgpool.explain(desc, shape) or _core.isa() == "scalar"
    plain = avgpool.average_pool(x, desc)
    monkeypatch.setenv("AVGPOOL_STREAM_BYTES", "0")
    for threads in (1, 2):
        streamed = _aligned_empty((plain.size + 16,), np.float32)[start:start + plain.size]
        streamed[...] = np.nan  # written once: its pages are in memory (fresh ones: plain)
        streamed = streamed.reshape(plain.shape)
        avgpool.average_pool(x, desc, out=streamed, num_threads=threads)
        assert streamed.tobytes() == plain.tobytes()
    want = ref_average_pool(x.astype(np.float64), window, (1, 1), (pad, pad), (pad, pad),
                            dilations=(dilation, dilation))
    np.testing.assert_allclose(streamed, want, rtol=TOL_REF[np.float32], atol=1e-6)


@pytest.mark.parametrize("shape,window,strides,pad", [
    ((2, 150, 8, 8), (3, 3), (1, 1), 1),    # planes of 64 outputs: whole lines; 2 groups
    ((1, 40, 7, 8), (2, 2), (1, 1), 0),     # 6 x 7 outputs: no whole line a plane
    ((3, 50, 5, 7), (3, 3), (2, 2), 1),     # 3 x 4 outputs, stride 2
])
@pytest.mark.parametrize("start", [0, 1])  # out= starting start floats past a line
def test_planes_cl_plane_way_past_the_caches(monkeypatch, shape, window, strides, pad, start):
    """planes-cl on nhwc-direct's plane way (float32): each group pooled channels last into a
    buffer and transposed into the channels-first output; past AVGPOOL_STREAM_BYTES (0 here)
    the transposes stream (planes of whole 64-byte lines, out= on a line) or else ask for the
    output's lines before the group is pooled. The same bits as within the caches, at 1 and 2
    threads, and the float64 reference."""
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    desc = avgpool.AveragePoolingDesc(window, strides, (pad, pad), (pad, pad))
    why = avgpool.explain(desc, shape)
    assert (": planes-cl" in why and "each output row from a row of column sums" in why
            or _core.isa() == "scalar")
    plain = avgpool.average_pool(x, desc)
    monkeypatch.setenv("AVGPOOL_STREAM_BYTES", "0")
    for threads in (1, 2):
        far = _aligned_empty((plain.size + 16,), np.float32)[start:start + plain.size]
        far[...] = np.nan  # written once: its pages are in memory (fresh ones: plain stores)
        far = far.reshape(plain.shape)
        avgpool.average_pool(x, desc, out=far, num_threads=threads)
        assert far.tobytes() == plain.tobytes()
    want = ref_average_pool(x.astype(np.float64), window, strides, (pad, pad), (pad, pad))
    np.testing.assert_allclose(plain, want, rtol=TOL_REF[np.float32], atol=1e-6)


@pytest.mark.parametrize("shape,window,strides", [
    ((2, 16, 20, 32), (2, 2), (2, 2)),        # bands start on whole lines
    ((1, 32, 14, 512), (2, 2), (2, 2)),       # bands of 9 rows of 7: starts inside a line
    ((1, 6, 16, 24, 40), (2, 2, 2), (2, 2, 2)),  # 40 channels: a vector and a part, 3-D
])
def test_streamed_channels_first_output(monkeypatch, isa, shape, window, strides):
    """nhwc-direct into a channels-first output (compile_operator's output_layout) with
    streaming stores: whole VL x VL blocks of a band transposed in registers and streamed from
    the band's first vector-aligned position on, the positions before it and after the last
    whole block and the channels past the last whole vector one by one. The same bits as the
    plain stores' transposes and as the channels-last result transposed, at 1 and 2 threads,
    and the float64 reference."""
    x = _aligned(np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32))
    desc = avgpool.AveragePoolingDesc(window, strides)
    assert ": nhwc-direct" in avgpool.explain(desc, shape, layout="NHWC") or isa == "scalar"
    cl = avgpool.compile_operator(desc, shape, np.float32, layout="NHWC")
    op = avgpool.compile_operator(desc, shape, np.float32, layout="NHWC", output_layout="NCHW")
    assert (int(np.prod(op.output_shape[2:])) * 4) % 64 == 0  # each channel's plane whole lines
    want = _other_layout(cl(x), "NHWC")
    plain, streamed = _aligned_empty(op.output_shape, np.float32), _aligned_empty(
        op.output_shape, np.float32)
    streamed[...] = np.nan  # written once: its pages are in memory (fresh ones take plain stores)
    op(x, out=plain)
    monkeypatch.setenv("AVGPOOL_STREAM_BYTES", "0")
    for threads in (1, 2):
        streamed[...] = np.nan
        avgpool.compile_operator(desc, shape, np.float32, layout="NHWC", output_layout="NCHW",
                                 num_threads=threads)(x, out=streamed)
        assert streamed.tobytes() == plain.tobytes() == want.tobytes()
    ref = _other_layout(ref_average_pool(x.astype(np.float64), window, strides,
                                         layout="NHWC"), "NHWC")
    np.testing.assert_allclose(streamed, ref, rtol=TOL_REF[np.float32], atol=1e-6)


def _misaligned_copies(x):
    """(offset, a copy of x starting offset elements past a 64-byte boundary), offsets 1-15."""
    n = x.size
    for offset in range(1, 16):
        xm = _aligned_empty((n + 16,), x.dtype)[offset:offset + n].reshape(x.shape)
        xm[...] = x
        yield offset, xm


@pytest.mark.parametrize("shape,window,strides,pad", [
    ((1, 9, 11, 32), (3, 3), (1, 1), 1),     # columns shared by blocks of windows
    ((2, 7, 9, 48), (3, 3), (2, 2), 1),
    ((2, 7, 9, 48), (3, 3), (3, 3), 1),      # taps read from the input
    ((1, 6, 8, 64), (2, 2), (2, 2), 0),
    ((1, 9, 12, 32), (4, 4), (1, 1), 1),     # taps read from a row of column sums
    ((1, 6, 8, 128), (2, 2), (2, 2), 0),     # 8 vectors of 16 lanes: realigned
    ((1, 7, 9, 256), (3, 3), (2, 2), 1),     # realigned, columns shared by blocks of windows
    ((1, 5, 6, 128), (3, 3), (1, 1), 1),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_nhwc_direct_misaligned_input(shape, window, strides, pad, dtype):
    """nhwc-direct reads an input that starts inside a vector's span (numpy's large arrays: 16
    bytes past a page): with split loads, or, for C of at least 8 whole vectors, a masked head
    of channels first, then aligned loads. Every start offset gives the bits of the aligned
    input and the reference."""
    desc = avgpool.AveragePoolingDesc(window, strides, (pad, pad), (pad, pad))
    assert ": nhwc-direct" in avgpool.explain(desc, shape, layout="NHWC") or _core.isa() == "scalar"
    x = _aligned(np.random.default_rng(sum(shape)).uniform(-1, 1, shape).astype(dtype))
    want = avgpool.average_pool(x, desc, layout="NHWC")
    for offset, xm in _misaligned_copies(x):
        assert avgpool.average_pool(xm, desc, layout="NHWC").tobytes() == want.tobytes(), offset
    ref = ref_average_pool(x.astype(np.float64), window, strides, (pad, pad), (pad, pad),
                           layout="NHWC")
    _close(want, ref, TOL_REF[dtype], f"{np.dtype(dtype)} vs float64 reference")


@pytest.mark.parametrize("shape", [
    (2, 7, 7, 2048),   # a head up to the boundary, then segments of 8 (AVX2: 6) vectors
    (3, 5, 6, 48),     # fewer than 8 vectors: no head, one segment
    (1, 4, 9, 200),    # not whole vectors (on 16 lanes): no head, a masked last vector
    (1, 33, 1, 8),     # less than a vector on AVX-512: one masked vector
])
@pytest.mark.parametrize("dtype", DTYPES + [np.float64])
def test_global_nhwc_misaligned_input(shape, dtype):
    """Global pooling channels last with C at least 8 whole vectors reads an input that starts
    inside a vector's span with its first channels (up to the boundary) as a segment of their
    own, then aligned loads: every channel's sum takes the positions in the same order in any
    segment, so every start offset gives the aligned input's bits, and the reference."""
    outs = (1, 1)
    assert ": global" in avgpool.explain(avgpool.AdaptiveAveragePoolingDesc(outs), shape,
                                         layout="NHWC") or _core.isa() == "scalar"
    x = _aligned(np.random.default_rng(sum(shape)).uniform(-1, 1, shape).astype(dtype))
    want = avgpool.adaptive_average_pool(x, outs, layout="NHWC")
    for offset, xm in _misaligned_copies(x):
        got = avgpool.adaptive_average_pool(xm, outs, layout="NHWC", num_threads=offset % 3 + 1)
        assert got.tobytes() == want.tobytes(), offset
    ref = ref_adaptive_average_pool(x.astype(np.float64), outs, layout="NHWC")
    _close(want, ref, TOL_REF[dtype], f"{np.dtype(dtype)} vs float64 reference")


@pytest.mark.parametrize("channels", [8, 40, 48, 200, 2048])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_global_nhwc_channel_slices_same_bits(channels, dtype):
    """Global pooling channels last sums every channel the same way (even and odd positions in
    two chains) whatever the channel count, segment or alignment: a call on a slice of the
    channels gives that slice of the call on all of them, bit for bit."""
    shape = (2, 9, 7, channels)
    x = np.random.default_rng(channels).uniform(-1, 1, shape).astype(dtype)
    want = avgpool.adaptive_average_pool(x, (1, 1), layout="NHWC")
    for width in (1, 3, 8, 17, 40):
        for c0 in range(0, channels, max(width, channels // 5)):
            part = np.ascontiguousarray(x[..., c0:c0 + width])
            got = avgpool.adaptive_average_pool(part, (1, 1), layout="NHWC")
            assert got.tobytes() == want[..., c0:c0 + width].tobytes(), (width, c0)


def _other_layout(a, layout):
    """a, stored in layout, as an array of the other layout (a transposed copy)."""
    rank = a.ndim - 2
    order = ((0,) + tuple(range(2, 2 + rank)) + (1,) if layout == "NCHW"
             else (0, 1 + rank) + tuple(range(1, 1 + rank)))
    return np.ascontiguousarray(a.transpose(order))


@functools.lru_cache(maxsize=None)
def _reference_of(case_id, dtype):
    """The float64 reference on the input the test below draws for case_id in dtype (the same on
    every instruction set, so computed once)."""
    case = CASES[case_id]
    x = _input_of(case_id, dtype)
    return _other_layout(_reference(case, x.astype(np.float64)), case[1])


@pytest.mark.parametrize("case_id", list(CASES))
@pytest.mark.parametrize("dtype", DTYPES + [np.float64])
def test_output_in_the_other_layout(case_id, dtype):
    """compile_operator(..., output_layout=the other layout) on every path: the result is the
    same-layout result transposed, bit for bit, so within the float64 reference's tolerance;
    its backward takes the gradient in the output's layout and gives the plain backward's bits.
    Channels last to first runs the channels-last kernels' own row transposes on nhwc-direct
    and nhwc-separable (ap_transpose) and goes through ap_relayout elsewhere."""
    case = CASES[case_id]
    _, layout, shape = case[:3]
    other = "NHWC" if layout == "NCHW" else "NCHW"
    desc = _desc(case)
    x = _input_of(case_id, dtype)
    same = avgpool.compile_operator(desc, shape, dtype, layout=layout)
    op = avgpool.compile_operator(desc, shape, dtype, layout=layout, output_layout=other)
    assert (op.layout, op.output_layout) == (layout, other)
    want = _other_layout(same(x), layout)
    assert op.output_shape == want.shape
    got = op(x)
    np.testing.assert_array_equal(got, want)
    _close(got, _reference_of(case_id, dtype), TOL_REF[dtype],
           f"{case_id} {np.dtype(dtype)} vs reference")
    out = np.full(op.output_shape, np.nan, dtype)
    assert op(x, out=out) is out
    np.testing.assert_array_equal(out, want)
    gy = np.random.default_rng(7).uniform(-1, 1, op.output_shape).astype(dtype)
    gy_same = _other_layout(gy, other)
    np.testing.assert_array_equal(op.backward(gy), same.backward(gy_same))
