"""avgpool.onnx against the ONNX peers: onnx.reference (ReferenceEvaluator) and onnxruntime.

(a) every AveragePool / GlobalAveragePool node test case of the installed onnx, plus the
    pytorch-converted AvgPool model tests it ships;
(b) hypothesis against onnx.reference; (c) hypothesis against onnxruntime;
(d) docs/semantics.md section 5 cases 3-10 and 16 and the section 3b rows, asserted against both peers;
(e) pinned disagreements between the peers, each stating which side avgpool takes.

Peer disagreements found (measured with onnx 1.23.2 and onnxruntime 1.32.0), see section (e):

- onnx.reference, ceil_mode=1 with a ceil "extra pad" of 2 or more (the last window reaches >= 2
  positions past the padded end): it splits the extra pad between both ends and so shifts every
  window; onnxruntime and avgpool keep the windows in place.
- onnx.reference, auto_pad VALID / SAME_* with dilations > 1: it ignores the dilation in the output
  size (trailing zeros); onnxruntime ignores it in the SAME pads (one output fewer). avgpool follows
  the ONNX operator text: SAME gives ceil(in / stride) outputs with pads from the dilated window,
  VALID gives floor((in - ek) / stride) + 1 (as onnxruntime).
- onnx.reference, opset 1: padded positions are counted (count_include_pad is read as None);
  AveragePool-1 always excludes them, which avgpool does. onnxruntime has no AveragePool-1.
- onnx.reference refuses ceil_mode=1 with any auto_pad. For SAME, avgpool and onnxruntime give
  ceil(in / stride). For VALID, onnxruntime applies the ceil rule (as pads=0 + ceil_mode=1, not
  the floor size docs/semantics.md section 3b first recorded): avgpool follows it
  (test_valid_with_ceil_mode_matches_onnxruntime).
- SAME with kernel < stride (a negative total pad): onnxruntime 19+ shifts the windows by the
  negative head pad, and so does avgpool (ruling R3, tests/test_rulings.py); onnxruntime's opset
  7-11 kernels and onnx.reference raise.
- onnxruntime rejects any pad >= kernel; onnx.reference gives NaN for an empty window, as avgpool.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnx.reference")

from hypothesis import assume, given, note  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

import avgpool.onnx as A  # noqa: E402
import peers  # noqa: E402
from reference import ref_average_pool  # noqa: E402

RTOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12, np.dtype(np.float16): 1e-3}
ATOL = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12, np.dtype(np.float16): 2e-3}


@pytest.fixture(scope="session", autouse=True)
def _peer_report():
    yield
    peers.print_report_once()


def assert_close(got, expected, what=""):
    got = np.asarray(got)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype} != {expected.dtype}"
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64),
                               rtol=RTOL[got.dtype], atol=ATOL[got.dtype], equal_nan=True,
                               err_msg=what)


def _have_ort():
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def ort_or_skip():
    pytest.importorskip("onnxruntime")


def _call_avgpool(x, attrs):
    """avgpool.onnx.average_pool with the attributes of a node (None = attribute absent)."""
    kw = {k: v for k, v in attrs.items() if v is not None and k != "kernel_shape"}
    return A.average_pool(x, attrs["kernel_shape"], **kw)


# ---------------------------------------------------------------------------------------------
# (a) the node test cases the installed onnx ships


_ONNX_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
_PREFIXES = ("test_averagepool", "test_globalaveragepool")


def _generated_node_cases():
    """The node cases from onnx's own generators (the wheel does not ship data/node)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import onnx.backend.test.case.node as node_cases
        import onnx.backend.test.case.node.averagepool  # noqa: F401  (registers its cases)
        import onnx.backend.test.case.node.globalaveragepool  # noqa: F401
    return {c.name: c for c in node_cases._NodeTestCases if c.name.startswith(_PREFIXES)}


def _collect_node_cases():
    cases = {}
    node_dir = _ONNX_DATA / "node"
    if node_dir.is_dir():
        for d in sorted(node_dir.iterdir()):
            if d.name.startswith(_PREFIXES) and (d / "model.onnx").is_file():
                cases[d.name] = ("dir", d)
    if not cases:
        try:
            for name, case in sorted(_generated_node_cases().items()):
                cases[name] = ("generated", case)
        except Exception as exc:  # pragma: no cover - depends on the installed onnx
            cases["onnx-node-cases-unavailable"] = ("error", repr(exc))
    for d in sorted((_ONNX_DATA / "pytorch-converted").glob("test_AvgPool*")):
        if (d / "model.onnx").is_file():
            cases[d.name] = ("dir", d)
    return cases


NODE_CASES = _collect_node_cases()
# cases whose expected output onnx's generator writes as a rounded literal
_ROUNDED_EXPECTED = {"test_averagepool_2d_ceil_last_window_starts_on_pad"}


def _load_tensor(path):
    t = onnx.TensorProto()
    t.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(t)


def _run_graph(model, x):
    """Run the (linear) graph of a node test model with avgpool doing the pooling."""
    values = {model.graph.input[0].name: x}
    for node in model.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in attrs.items()}
        src = values[node.input[0]]
        if node.op_type == "AveragePool":
            y = _call_avgpool(src, attrs)
        elif node.op_type == "GlobalAveragePool":
            y = A.global_average_pool(src)
        elif node.op_type == "Unsqueeze":
            y = np.expand_dims(src, tuple(attrs["axes"]))
        elif node.op_type == "Squeeze":
            y = np.squeeze(src, tuple(attrs["axes"]))
        else:  # pragma: no cover
            pytest.fail(f"unexpected node {node.op_type} in {model.graph.name}")
        values[node.output[0]] = y
    return values[model.graph.output[0].name]


def test_node_cases_found():
    """The installed onnx provides AveragePool and GlobalAveragePool node cases."""
    names = [n for n in NODE_CASES if n.startswith(_PREFIXES)]
    assert any(n.startswith("test_averagepool") for n in names), NODE_CASES
    assert any(n.startswith("test_globalaveragepool") for n in names), NODE_CASES
    assert len(names) >= 20, names


@pytest.mark.parametrize("name", sorted(NODE_CASES))
def test_onnx_node_case(name):
    kind, src = NODE_CASES[name]
    if kind == "error":
        pytest.fail(f"could not build the onnx node cases: {src}")
    if kind == "dir":
        model = onnx.load(str(src / "model.onnx"))
        x = _load_tensor(src / "test_data_set_0" / "input_0.pb")
        expected = _load_tensor(src / "test_data_set_0" / "output_0.pb")
    else:
        model = src.model
        (x,), (expected,) = src.data_sets[0]
        x, expected = np.asarray(x), np.asarray(expected)
    ops = {n.op_type for n in model.graph.node}
    assert ops & {"AveragePool", "GlobalAveragePool"}, ops
    got = _run_graph(model, x)
    peers.COUNTS["compared: onnx node cases"] += 1
    if name in _ROUNDED_EXPECTED:
        # The generator writes this output with 4 decimals: compare at onnx's own backend-test
        # tolerance, and at full float32 precision against both peers.
        assert got.shape == expected.shape and got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-7, err_msg=name)
        node = model.graph.node[0]
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        assert_close(got, peers.onnx_reference(x, opset=model.opset_import[0].version, **attrs),
                     "onnx.reference")
        if _have_ort():
            assert_close(got, peers.onnxruntime_run(x, opset=model.opset_import[0].version,
                                                    **attrs), "onnxruntime")
        return
    assert_close(got, expected, name)


# ---------------------------------------------------------------------------------------------
# Hypothesis strategies

MAX_SIZE = {1: 10, 2: 6, 3: 4}
MAX_PAD = {1: 3, 2: 2, 3: 1}
MAX_KERNEL = {1: 4, 2: 3, 3: 3}


@st.composite
def onnx_configs(draw, opsets=(7, 10, 11, 19, 22), ceil_with_auto_pad=True,
                 dilation_with_auto_pad=True, pads_below_kernel=0.0):
    """(x, attrs, opset): a float32 input and AveragePool attributes valid for ``opset``.

    ``pads_below_kernel``: the share of examples whose pads are all smaller than the kernel."""
    rank = draw(st.integers(1, 3))
    clamp = draw(st.integers(0, 99)) < 100 * pads_below_kernel
    opset = draw(st.sampled_from(opsets))
    auto_pad = draw(st.sampled_from(["NOTSET", "NOTSET", "NOTSET", "VALID", "SAME_UPPER",
                                     "SAME_LOWER"]))
    use_dil = opset >= 19 and (auto_pad == "NOTSET" or dilation_with_auto_pad)
    sizes, kernel, strides, dil, pb, pe = [], [], [], [], [], []
    for _ in range(rank):
        n = draw(st.integers(1, MAX_SIZE[rank]))
        d = draw(st.integers(1, 3)) if use_dil else 1
        s = draw(st.integers(1, 4))
        b, e = (draw(st.integers(0, MAX_PAD[rank])), draw(st.integers(0, MAX_PAD[rank]))) \
            if auto_pad == "NOTSET" else (0, 0)
        room = n + b + e if auto_pad in ("NOTSET", "VALID") else 10 ** 6
        k = draw(st.integers(1, max(1, min(MAX_KERNEL[rank], (room - 1) // d + 1))))
        if clamp:
            b, e = min(b, k - 1), min(e, k - 1)
            if auto_pad == "NOTSET":
                n = max(n, (k - 1) * d + 1 - b - e)
        sizes.append(n), kernel.append(k), strides.append(s), dil.append(d)
        pb.append(b), pe.append(e)
    attrs = {"kernel_shape": kernel}
    attrs["strides"] = None if all(s == 1 for s in strides) and draw(st.booleans()) else strides
    if auto_pad == "NOTSET":
        attrs["auto_pad"] = draw(st.sampled_from([None, "NOTSET"]))
        pads = pb + pe
        attrs["pads"] = None if not any(pads) and draw(st.booleans()) else pads
    else:
        attrs["auto_pad"] = auto_pad
    if opset >= 7:
        attrs["count_include_pad"] = draw(st.sampled_from([None, 0, 1]))
    if opset >= 10 and (auto_pad == "NOTSET" or ceil_with_auto_pad):
        attrs["ceil_mode"] = draw(st.sampled_from([None, 0, 1]))
    if use_dil:
        attrs["dilations"] = None if all(v == 1 for v in dil) and draw(st.booleans()) else dil
    n_batch = draw(st.integers(1, 2)) if rank < 3 else 1
    channels = draw(st.integers(1, 3)) if rank < 3 else draw(st.integers(1, 2))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    x = np.random.default_rng(seed).standard_normal((n_batch, channels, *sizes)).astype(np.float32)
    return x, attrs, opset


def _axes(x, attrs):
    """Per-axis (in, k, s, d, pb, pe) of an explicit-padding configuration."""
    rank = x.ndim - 2
    pads = attrs.get("pads") or [0] * (2 * rank)
    strides = attrs.get("strides") or [1] * rank
    dil = attrs.get("dilations") or [1] * rank
    return [(x.shape[2 + a], attrs["kernel_shape"][a], strides[a], dil[a], pads[a], pads[a + rank])
            for a in range(rank)]


def _ceil_extra_pad(x, attrs):
    """Largest ``(out - 1) * s + ek - (in + pb + pe)`` over the axes under ceil_mode (NOTSET)."""
    worst = 0
    for n, k, s, d, b, e in _axes(x, attrs):
        ek = (k - 1) * d + 1
        out = -(-(n + b + e - ek) // s) + 1
        if (out - 1) * s >= n + b:
            out -= 1
        worst = max(worst, (out - 1) * s + ek - (n + b + e))
    return worst


def _is_notset(attrs):
    return attrs.get("auto_pad") in (None, "NOTSET")


# ---------------------------------------------------------------------------------------------
# (b) hypothesis against onnx.reference


def _same_total_pad_negative(x, attrs):
    rank = x.ndim - 2
    strides = attrs.get("strides") or [1] * rank
    for a in range(rank):
        n, k, s = x.shape[2 + a], attrs["kernel_shape"][a], strides[a]
        if (-(-n // s) - 1) * s + k - n < 0:
            return True
    return False


def reference_accepts(x, attrs, opset):
    """Whether onnx.reference computes this configuration as the operator defines it."""
    if not _is_notset(attrs):
        if attrs.get("ceil_mode"):
            return False  # "ceil_mode is not supported with auto_pad"
        if any(v != 1 for v in attrs.get("dilations") or []):
            return False  # ignores the dilation in the output size (section e)
        if attrs["auto_pad"].startswith("SAME") and _same_total_pad_negative(x, attrs):
            return False  # a negative SAME pad (kernel < stride) makes np.pad raise (section e)
    elif attrs.get("ceil_mode"):
        if _ceil_extra_pad(x, attrs) >= 2:
            return False  # shifts the windows (section e)
        if any(e >= k for _, k, _, _, _, e in _axes(x, attrs)):
            return False  # end pad >= kernel: the dropped window makes it index out of range
    return opset >= 7  # opset 1 counts pads (section e)


@given(onnx_configs(ceil_with_auto_pad=False, dilation_with_auto_pad=False))
def test_average_pool_vs_onnx_reference(cfg):
    x, attrs, opset = cfg
    note(f"opset={opset} shape={x.shape} attrs={attrs}")
    assume(reference_accepts(x, attrs, opset))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "Mean of empty slice" (empty windows)
        expected = peers.onnx_reference(x, opset=opset, **attrs)
    got = _call_avgpool(x, attrs)
    peers.COUNTS["compared: onnx.reference AveragePool (hypothesis)"] += 1
    assert_close(got, expected, f"opset {opset} {attrs}")


@given(st.integers(1, 3), st.integers(1, 2), st.integers(1, 3), st.data())
def test_global_average_pool_vs_peers(rank, n, c, data):
    sizes = data.draw(st.lists(st.integers(1, MAX_SIZE[rank] + 2), min_size=rank, max_size=rank))
    seed = data.draw(st.integers(0, 2 ** 32 - 1))
    x = np.random.default_rng(seed).standard_normal((n, c, *sizes)).astype(np.float32)
    got = A.global_average_pool(x)
    assert_close(got, peers.onnx_reference(x, op="GlobalAveragePool"), "onnx.reference")
    peers.COUNTS["compared: onnx.reference GlobalAveragePool (hypothesis)"] += 1
    if _have_ort():
        assert_close(got, peers.onnxruntime_run(x, op="GlobalAveragePool"), "onnxruntime")
        peers.COUNTS["compared: onnxruntime GlobalAveragePool (hypothesis)"] += 1


# ---------------------------------------------------------------------------------------------
# (c) hypothesis against onnxruntime


def ort_rejects(x, attrs):
    """onnxruntime refuses any pad >= kernel ("Pad should be smaller than kernel")."""
    if not _is_notset(attrs):
        return False
    return any(b >= k or e >= k for _, k, _, _, b, e in _axes(x, attrs))


def _same_total_pad(x, attrs):
    """Smallest SAME total pad ``(ceil(in / s) - 1) * s + k - in`` over the axes (no dilation)."""
    rank = x.ndim - 2
    strides = attrs.get("strides") or [1] * rank
    return min((-(-x.shape[2 + a] // strides[a]) - 1) * strides[a] + attrs["kernel_shape"][a]
               - x.shape[2 + a] for a in range(rank))


def ort_agrees(attrs):
    """onnxruntime computes SAME pads from the undilated kernel (section e)."""
    return not ((attrs.get("auto_pad") or "").startswith("SAME")
                and any(v != 1 for v in attrs.get("dilations") or []))


@given(onnx_configs(pads_below_kernel=0.8))
def test_average_pool_vs_onnxruntime(cfg):
    ort_or_skip()
    x, attrs, opset = cfg
    note(f"opset={opset} shape={x.shape} attrs={attrs}")
    assume(ort_agrees(attrs))
    if ort_rejects(x, attrs):
        with pytest.raises(peers.ort_errors(), match="Pad should be smaller than kernel"):
            peers.onnxruntime_run(x, opset=opset, **attrs)
        peers.COUNTS["compared: onnxruntime rejections (hypothesis)"] += 1
        return
    if (attrs.get("auto_pad") or "").startswith("SAME") and _same_total_pad(x, attrs) < 0:
        # kernel < stride: a negative SAME total pad, applied as onnxruntime 19+ applies it
        # (ruling R3); its older kernels mostly reject the pad
        try:
            expected = peers.onnxruntime_run(x, opset=opset, **attrs)
        except peers.ort_errors() as exc:
            assert opset < 19 and "padding values must be non-negative" in str(exc), exc
            peers.COUNTS["compared: onnxruntime rejections (hypothesis)"] += 1
            return
        assert_close(_call_avgpool(x, attrs), expected, f"opset {opset} {attrs}")
        peers.COUNTS["compared: onnxruntime AveragePool (hypothesis)"] += 1
        return
    expected = peers.onnxruntime_run(x, opset=opset, **attrs)
    got = _call_avgpool(x, attrs)
    peers.COUNTS["compared: onnxruntime AveragePool (hypothesis)"] += 1
    empty = np.isnan(got)
    if empty.any():
        # a window whose every tap falls in the padding through its dilation holes (pads are
        # smaller than the kernel here): NaN in avgpool and onnx.reference, 0 in onnxruntime
        # (test_pin_empty_dilated_window)
        assert not attrs.get("count_include_pad") and any(
            v > 1 for v in attrs.get("dilations") or []), attrs
        assert got.shape == expected.shape and (expected[empty] == 0).all()
        peers.COUNTS["compared: onnxruntime empty dilated windows (hypothesis)"] += 1
        got = np.where(empty, np.float32(0), got)
    assert_close(got, expected, f"opset {opset} {attrs}")


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
@pytest.mark.parametrize("attrs", [
    dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=0),
    dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
    dict(kernel_shape=[2, 3], strides=[2, 2], pads=[1, 0, 0, 2], ceil_mode=1),
    dict(kernel_shape=[2, 2], auto_pad="SAME_LOWER", count_include_pad=1),
    dict(kernel_shape=[2, 2], strides=[1, 2], dilations=[2, 1], pads=[1, 1, 1, 1]),
], ids=["exclude", "include", "ceil-asym", "same-lower", "dilated"])
def test_average_pool_other_dtypes_vs_peers(dtype, attrs):
    """float16 and float64 agree with both peers (float16 within a float16 tolerance)."""
    x = np.random.default_rng(7).standard_normal((2, 3, 7, 6)).astype(dtype)
    got = _call_avgpool(x, attrs)
    assert got.dtype == np.dtype(dtype)
    assert_close(got, peers.onnx_reference(x, **attrs), "onnx.reference")
    peers.COUNTS["compared: onnx.reference AveragePool (explicit)"] += 1
    if _have_ort() and dtype != np.float64:  # onnxruntime's CPU AveragePool: float / float16
        assert_close(got, peers.onnxruntime_run(x, **attrs), "onnxruntime")
        peers.COUNTS["compared: onnxruntime AveragePool (explicit)"] += 1


# ---------------------------------------------------------------------------------------------
# (d) docs/semantics.md section 5 and the section 3b table, against both peers


def check_both(x, expected=None, *, ort=True, opset=22, **attrs):
    """avgpool == onnx.reference (== onnxruntime) (== ``expected``); returns avgpool's output."""
    got = A.average_pool(x, **attrs)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = peers.onnx_reference(x, opset=opset, **attrs)
    assert_close(got, ref, f"onnx.reference {attrs}")
    peers.COUNTS["compared: onnx.reference AveragePool (explicit)"] += 1
    if ort and _have_ort():
        assert_close(got, peers.onnxruntime_run(x, opset=opset, **attrs), f"onnxruntime {attrs}")
        peers.COUNTS["compared: onnxruntime AveragePool (explicit)"] += 1
    if expected is not None:
        assert_close(got, np.asarray(expected, dtype=got.dtype), f"expected {attrs}")
    return got


def seq(*shape, dtype=np.float32):
    n = int(np.prod(shape))
    return np.arange(1, n + 1, dtype=dtype).reshape(shape)


def test_case3_ceil_mode_2d():
    x = seq(1, 1, 5, 5)
    y = check_both(x, kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    assert y.shape == (1, 1, 3, 3)
    # last row/column: the window is half outside, averaged over its valid half
    assert y[0, 0, 2, 2] == pytest.approx(25, rel=1e-6)
    assert y[0, 0, 0, 2] == pytest.approx((5 + 10) / 2, rel=1e-6)


def test_case4_6x6_k3_s3_p1_ceil():
    """1x1x6x6, k 3, s 3, pads 1, ceil: out 3x3; the last window (1 valid + 1 pad + 1 overhang)
    starts inside the input, so ONNX keeps it (docs/semantics.md section 5 case 4 expects a dropped window, which
    this shape does not produce: see test_2b_ceil_window_starting_in_right_pad_is_dropped); with
    count_include_pad the overhang does not count."""
    x = seq(1, 1, 6, 6)
    ex = check_both(x, kernel_shape=[3, 3], strides=[3, 3], pads=[1, 1, 1, 1], ceil_mode=1)
    inc = check_both(x, kernel_shape=[3, 3], strides=[3, 3], pads=[1, 1, 1, 1], ceil_mode=1,
                     count_include_pad=1)
    assert ex.shape == inc.shape == (1, 1, 3, 3)
    assert ex[0, 0, 2, 2] == pytest.approx(36, rel=1e-6)
    assert inc[0, 0, 2, 2] == pytest.approx(36 / 4, rel=1e-6)  # 1 valid of 2x2 counted


def test_case5_include_pad_with_ceil_mode():
    x = seq(1, 1, 5, 5)
    y = check_both(x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1,
                   count_include_pad=1)
    expected = ref_average_pool(x, (3, 3), (2, 2), (1, 1), (1, 1), include_padding=True,
                                output_sizes=(3, 3))
    assert_close(y, expected.astype(np.float32))


@pytest.mark.parametrize("kernel,stride", [(4, 2), (2, 1), (3, 2), (3, 4), (5, 3)])
@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("cip", [0, 1])
def test_case6_same_upper_lower(kernel, stride, auto_pad, cip):
    x = seq(1, 1, 6, 6)
    y = check_both(x, kernel_shape=[kernel, kernel], strides=[stride, stride], auto_pad=auto_pad,
                   count_include_pad=cip)
    assert y.shape == (1, 1, -(-6 // stride), -(-6 // stride))


def test_case6_same_odd_total_pad_1d():
    """Section 2b: in 6, k 2, s 1 -> UPPER pads the end, LOWER the start."""
    x = seq(1, 1, 6)
    check_both(x, [[[1.5, 2.5, 3.5, 4.5, 5.5, 6]]], kernel_shape=[2], auto_pad="SAME_UPPER")
    check_both(x, [[[1, 1.5, 2.5, 3.5, 4.5, 5.5]]], kernel_shape=[2], auto_pad="SAME_LOWER")
    # with count_include_pad the pad counts: 6 / 2 and 1 / 2
    check_both(x, [[[1.5, 2.5, 3.5, 4.5, 5.5, 3]]], kernel_shape=[2], auto_pad="SAME_UPPER",
               count_include_pad=1)
    check_both(x, [[[0.5, 1.5, 2.5, 3.5, 4.5, 5.5]]], kernel_shape=[2], auto_pad="SAME_LOWER",
               count_include_pad=1)


@pytest.mark.parametrize("shape,kernel,stride", [((1, 1, 7, 7), [2, 2], [3, 3]),
                                                 ((1, 2, 9, 8), [2, 1], [4, 3]),
                                                 ((1, 1, 10), [3], [5])])
def test_case7_valid_stride_larger_than_kernel(shape, kernel, stride):
    x = seq(*shape)
    y = check_both(x, kernel_shape=kernel, strides=stride, auto_pad="VALID")
    assert y.shape[2:] == tuple((n - k) // s + 1 for n, k, s in zip(shape[2:], kernel, stride))


def test_case8_dilation_with_padding():
    x = seq(1, 1, 6)
    check_both(x, [[[1, 2, 3, 4, 5, 2.5]]], kernel_shape=[2], pads=[1, 1], dilations=[2],
               count_include_pad=1, opset=19)
    x2 = seq(1, 1, 6, 6)
    for cip in (0, 1):
        for opset in (19, 22):
            check_both(x2, kernel_shape=[2, 2], pads=[1, 1, 1, 1], dilations=[2, 2],
                       count_include_pad=cip, opset=opset)
            check_both(x2, kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1],
                       dilations=[2, 3], count_include_pad=cip, ceil_mode=1, opset=opset)


@pytest.mark.parametrize("cip", [0, 1])
def test_case9_asymmetric_pads(cip):
    x = seq(1, 1, 5, 5)
    y = check_both(x, kernel_shape=[3, 3], pads=[0, 1, 2, 0], count_include_pad=cip)
    assert y.shape == (1, 1, 5, 4)
    expected = ref_average_pool(x, (3, 3), None, (0, 1), (2, 0), include_padding=bool(cip))
    assert_close(y, expected.astype(np.float32))


@pytest.mark.parametrize("rank", [1, 3])
def test_case10_cases_2_and_3_in_1d_and_3d(rank):
    x = seq(1, 1, *([5] * rank))
    k = [3] * rank
    ex = check_both(x, kernel_shape=k, pads=[1] * (2 * rank), count_include_pad=0)
    inc = check_both(x, kernel_shape=k, pads=[1] * (2 * rank), count_include_pad=1)
    corner = (0, 0) + (0,) * rank
    window = x[(0, 0) + (slice(0, 2),) * rank].sum()
    assert ex[corner] == pytest.approx(window / 2 ** rank)
    assert inc[corner] == pytest.approx(window / 3 ** rank)
    y = check_both(x, kernel_shape=[2] * rank, strides=[2] * rank, ceil_mode=1)
    assert y.shape == (1, 1) + (3,) * rank
    assert y[(0, 0) + (2,) * rank] == pytest.approx(x[(0, 0) + (4,) * rank], rel=1e-6)


def test_case16_empty_window():
    """count_include_pad=0 with pad >= kernel: onnx.reference gives NaN, avgpool too;
    onnxruntime rejects the pads."""
    x = np.array([[[1, 2]]], np.float32)
    y = check_both(x, [[[np.nan, 1]]], ort=False, kernel_shape=[2], strides=[2], pads=[3, 0])
    assert np.isnan(y[0, 0, 0])
    x2 = seq(1, 1, 3, 3)
    y2 = check_both(x2, ort=False, kernel_shape=[2, 2], pads=[2, 0, 0, 2])
    assert np.isnan(y2[0, 0, 0]).all() and np.isnan(y2[0, 0, :, -1]).all()
    assert np.isfinite(y2[0, 0, 1:, :-1]).all()
    # with count_include_pad=1 an all-pad window is 0 (onnx.reference agrees)
    y3 = check_both(x, [[[0, 0.5]]], ort=False, kernel_shape=[2], strides=[2], pads=[3, 0],
                    count_include_pad=1)
    assert not np.signbit(y3).any()
    if _have_ort():
        for cip in (0, 1):
            with pytest.raises(peers.ort_errors(), match="Pad should be smaller than kernel"):
                peers.onnxruntime_run(x, kernel_shape=[2], strides=[2], pads=[3, 0],
                                      count_include_pad=cip)


@pytest.mark.parametrize("cip,expected", [(0, [1, 2.5, 4.5]), (1, [0.5, 2.5, 4.5])])
def test_2b_ceil_window_starting_in_right_pad_is_dropped(cip, expected):
    x = seq(1, 1, 5)
    check_both(x, [[expected]], kernel_shape=[2], strides=[2], pads=[1, 1], ceil_mode=1,
               count_include_pad=cip)


def test_2b_overhang_not_counted():
    x = seq(1, 1, 6)
    check_both(x, [[[1, 4, 3]]], kernel_shape=[3], strides=[3], pads=[1, 1], ceil_mode=1,
               count_include_pad=1)


def test_2b_k3_s2_p1_ceil_include():
    check_both(seq(1, 1, 5), [[[1, 3, 3]]], kernel_shape=[3], strides=[2], pads=[1, 1],
               ceil_mode=1, count_include_pad=1)


def test_2b_valid_with_ceil_mode_row():
    """The section 2b row: in 6, k 2, s 3, VALID, ceil_mode=1: onnx.reference refuses; onnxruntime
    gives [1.5, 4.5] (its ceil size 3 loses the window starting at 6 = in); avgpool agrees."""
    x = seq(1, 1, 6)
    got = A.average_pool(x, [2], strides=[3], auto_pad="VALID", ceil_mode=1)
    assert_close(got, np.array([[[1.5, 4.5]]], np.float32))
    with pytest.raises(Exception, match="ceil_mode is not supported with auto_pad"):
        peers.onnx_reference(x, kernel_shape=[2], strides=[3], auto_pad="VALID", ceil_mode=1)
    if _have_ort():
        assert_close(got, peers.onnxruntime_run(x, kernel_shape=[2], strides=[3],
                                                auto_pad="VALID", ceil_mode=1))


_VALID_CEIL_CASES = [
    # (in, k, s, d, onnxruntime's output for x = 1..in, count_include_pad 0 and 1)
    (3, 2, 2, 1, [1.5, 3]),
    (7, 2, 3, 1, [1.5, 4.5, 7]),
    (4, 2, 2, 2, [2, 3]),
    (5, 3, 3, 1, [2, 4.5]),
]


@pytest.mark.parametrize("n,k,s,d,ort_out", _VALID_CEIL_CASES,
                         ids=[f"in{c[0]}-k{c[1]}-s{c[2]}-d{c[3]}" for c in _VALID_CEIL_CASES])
@pytest.mark.parametrize("cip", [0, 1])
def test_valid_with_ceil_mode_matches_onnxruntime(n, k, s, d, ort_out, cip):
    """onnxruntime 1.32 applies the ceil rule to VALID: exactly pads=0 with ceil_mode=1, the last
    window dropped only when it starts at or past the input end (not the floor size, which gives
    one output fewer in these cases). avgpool follows it."""
    x = seq(1, 1, n)
    attrs = dict(kernel_shape=[k], strides=[s], auto_pad="VALID", ceil_mode=1, dilations=[d],
                 count_include_pad=cip)
    expected = np.array([[ort_out]], np.float32)
    if _have_ort():
        assert_close(peers.onnxruntime_run(x, **attrs), expected, "onnxruntime (recorded)")
    # onnxruntime's VALID + ceil equals explicit zero pads + ceil in avgpool
    assert_close(A.average_pool(x, **{**attrs, "auto_pad": "NOTSET", "pads": [0, 0]}), expected)
    assert_close(A.average_pool(x, **attrs), expected, "avgpool VALID + ceil_mode")


def test_same_with_ceil_mode_matches_onnxruntime():
    """SAME_* ignores ceil_mode (out = ceil(in / stride)), as onnxruntime does."""
    ort_or_skip()
    x = seq(1, 1, 7, 6)
    for ap in ("SAME_UPPER", "SAME_LOWER"):
        for cip in (0, 1):
            attrs = dict(kernel_shape=[3, 2], strides=[2, 4], auto_pad=ap, count_include_pad=cip)
            got = A.average_pool(x, ceil_mode=1, **attrs)
            assert_close(got, A.average_pool(x, **attrs))
            assert_close(got, peers.onnxruntime_run(x, ceil_mode=1, **attrs))


# ---------------------------------------------------------------------------------------------
# (e) pinned disagreements between the peers (recorded outputs; avgpool's side is asserted)


def test_pin_reference_ceil_extra_pad_shifts_windows():
    """x = [1, 2, 3, 4], k 3, s 3, ceil_mode: windows [1, 2, 3] and [4] -> [2, 4].

    onnx.reference splits the ceil extra pad (2) over both ends and returns [1.5, 3];
    onnxruntime returns [2, 4]; avgpool follows onnxruntime (and the operator's definition)."""
    x = seq(1, 1, 4)
    attrs = dict(kernel_shape=[3], strides=[3], ceil_mode=1)
    got = A.average_pool(x, **attrs)
    assert_close(got, np.array([[[2, 4]]], np.float32))
    assert_close(peers.onnx_reference(x, **attrs), np.array([[[1.5, 3]]], np.float32))
    assert_close(peers.onnx_reference(x, count_include_pad=1, **attrs),
                 np.array([[[1, 3]]], np.float32))
    assert_close(A.average_pool(x, count_include_pad=1, **attrs), np.array([[[2, 4]]], np.float32))
    if _have_ort():
        assert_close(got, peers.onnxruntime_run(x, **attrs))
        assert_close(A.average_pool(x, count_include_pad=1, **attrs),
                     peers.onnxruntime_run(x, count_include_pad=1, **attrs))


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_pin_same_with_dilation(auto_pad):
    """in 6, k 2, dilation 2, s 1: the operator text gives out = ceil(6 / 1) = 6 and total pad
    (6 - 1) * 1 + 3 - 6 = 2 (1 each side). avgpool: [2, 2, 3, 4, 5, 5].
    onnx.reference ignores the dilation in out/pads and leaves a trailing 0; onnxruntime computes
    the pads from the undilated kernel (total 1) and returns 5 outputs."""
    x = seq(1, 1, 6)
    attrs = dict(kernel_shape=[2], dilations=[2], auto_pad=auto_pad)
    got = A.average_pool(x, **attrs)
    assert_close(got, np.array([[[2, 2, 3, 4, 5, 5]]], np.float32))
    expected = ref_average_pool(x, (2,), (1,), (1,), (1,), (2,))
    assert_close(got, expected.astype(np.float32))
    ref_recorded = {"SAME_UPPER": [2, 3, 4, 5, 5, 0], "SAME_LOWER": [2, 2, 3, 4, 5, 0]}[auto_pad]
    assert_close(peers.onnx_reference(x, **attrs), np.array([[ref_recorded]], np.float32))
    if _have_ort():
        ort_recorded = {"SAME_UPPER": [2, 3, 4, 5, 5], "SAME_LOWER": [2, 2, 3, 4, 5]}[auto_pad]
        assert_close(peers.onnxruntime_run(x, **attrs), np.array([[ort_recorded]], np.float32))


def test_pin_valid_with_dilation():
    """VALID, in 6, k 2, dilation 2: floor((6 - 3) / 1) + 1 = 4 outputs [2, 3, 4, 5] (avgpool,
    onnxruntime); onnx.reference ignores the dilation in the size and appends a 0."""
    x = seq(1, 1, 6)
    attrs = dict(kernel_shape=[2], dilations=[2], auto_pad="VALID")
    got = A.average_pool(x, **attrs)
    assert_close(got, np.array([[[2, 3, 4, 5]]], np.float32))
    assert_close(peers.onnx_reference(x, **attrs), np.array([[[2, 3, 4, 5, 0]]], np.float32))
    if _have_ort():
        assert_close(got, peers.onnxruntime_run(x, **attrs))


def test_pin_opset1_excludes_pads():
    """AveragePool-1 divides by the non-pad elements; onnx.reference's AveragePool_1 counts the
    pads ([1, 2, 3, 2.333]); onnxruntime has no AveragePool-1 kernel. avgpool (no opset argument:
    opset 1 = count_include_pad 0) gives [1.5, 2, 3, 3.5], as onnx.reference does from opset 7."""
    x = seq(1, 1, 4)
    got = A.average_pool(x, [3], pads=[1, 1])
    assert_close(got, np.array([[[1.5, 2, 3, 3.5]]], np.float32))
    assert_close(peers.onnx_reference(x, opset=7, kernel_shape=[3], pads=[1, 1]), got)
    assert_close(peers.onnx_reference(x, opset=1, kernel_shape=[3], pads=[1, 1]),
                 np.array([[[1, 2, 3, 7 / 3]]], np.float32))
    if _have_ort():
        with pytest.raises(peers.ort_errors(), match="AveragePool"):
            peers.onnxruntime_run(x, opset=1, kernel_shape=[3], pads=[1, 1])


def test_opset1_without_pads_matches_reference():
    """Without padding the opset-1 reference agrees (nothing to count)."""
    x = np.random.default_rng(3).standard_normal((2, 3, 7, 5)).astype(np.float32)
    for attrs in (dict(kernel_shape=[3, 2]), dict(kernel_shape=[2, 2], strides=[2, 3]),
                  dict(kernel_shape=[3, 3], auto_pad="VALID", strides=[2, 1])):
        assert_close(A.average_pool(x, **attrs), peers.onnx_reference(x, opset=1, **attrs))
        peers.COUNTS["compared: onnx.reference AveragePool (explicit)"] += 1


def test_pin_reference_same_with_kernel_smaller_than_stride():
    """SAME_UPPER, in 5, k 1, s 3: the total pad (2 - 1) * 3 + 1 - 5 is negative; avgpool and
    onnxruntime clamp it to 0 (windows at 0 and 3), onnx.reference passes it to np.pad, which
    raises."""
    x = seq(1, 1, 5)
    attrs = dict(kernel_shape=[1], strides=[3], auto_pad="SAME_UPPER")
    got = A.average_pool(x, **attrs)
    assert_close(got, np.array([[[1, 4]]], np.float32))
    with pytest.raises(ValueError, match="negative"):
        peers.onnx_reference(x, **attrs)
    if _have_ort():
        assert_close(got, peers.onnxruntime_run(x, **attrs))  # total pad -1: same windows
        with pytest.raises(peers.ort_errors(), match="padding values must be non-negative"):
            peers.onnxruntime_run(x, opset=11, **attrs)


def test_pin_reference_ceil_with_end_pad_not_smaller_than_kernel():
    """in 1, k 1, s 1, pads [0, 1], ceil_mode=1: the ceil size (2) drops its last window, which
    starts in the right padding -> 1 output (avgpool). onnx.reference computes the same size, then
    iterates the floor rule's 2 windows and raises IndexError. onnxruntime rejects the pads."""
    x = np.array([[[0.5]]], np.float32)
    attrs = dict(kernel_shape=[1], pads=[0, 1], ceil_mode=1)
    assert_close(A.average_pool(x, **attrs), x)
    assert_close(A.average_pool(x, count_include_pad=1, **attrs), x)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(IndexError):
            peers.onnx_reference(x, **attrs)
        # without ceil_mode the window in the right padding stays (empty: NaN), for both
        check_both(x, [[[0.5, np.nan]]], ort=False, kernel_shape=[1], pads=[0, 1])


def test_pin_empty_dilated_window():
    """x = [5], k 2, dilation 2, pads [1, 1], stride 2, count_include_pad=0: the one window's taps
    are -1 and 1, both padding. avgpool gives NaN, as onnx.reference does for every empty window;
    onnxruntime gives 0 (it accepts the pads, which are smaller than the kernel)."""
    x = np.array([[[5]]], np.float32)
    attrs = dict(kernel_shape=[2], strides=[2], pads=[1, 1], dilations=[2])
    got = check_both(x, [[[np.nan]]], ort=False, **attrs)
    assert np.isnan(got).all()
    # count_include_pad=1: 0 / 2 = 0 everywhere
    check_both(x, [[[0]]], count_include_pad=1, **attrs)
    x2 = seq(1, 1, 3, 3)
    attrs2 = dict(kernel_shape=[2, 2], pads=[1, 1, 1, 1], dilations=[4, 1])
    got2 = check_both(x2, ort=False, **attrs2)
    assert got2.shape == (1, 1, 1, 4) and np.isnan(got2).all()
    if _have_ort():
        assert_close(peers.onnxruntime_run(x, **attrs), np.array([[[0]]], np.float32))
        assert_close(peers.onnxruntime_run(x2, **attrs2), np.zeros((1, 1, 1, 4), np.float32))
