"""Robustness of the Python API: Ctrl-C, memory growth over many calls, concurrent callers.

- A KeyboardInterrupt (SIGINT) in the middle of a loop of avgpool calls is raised normally,
  and the library keeps working afterwards (in a subprocess).
- 20000 small calls of every op and front end, including ones that raise, do not grow the
  process's resident memory.
- 8 Python threads, each with its own input, op, layout, dtype and num_threads, run at once and
  every result matches the float64 reference; a call's num_threads never changes the OpenMP
  default (``avgpool.info()["max_threads"]``).
"""

import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import avgpool
from avgpool import directml, functional, onnx, openvino
from strategies import BFLOAT16, assert_matches, reference_adaptive, reference_pool, to_layout

# ---- (a) KeyboardInterrupt ----------------------------------------------------------------

SIGINT_CHILD = textwrap.dedent(r'''
    import signal, sys, time
    import numpy as np
    import avgpool
    from avgpool import onnx, openvino, functional, directml

    # a shell's background job (`pytest &`) starts with SIGINT ignored, and so does this child
    signal.signal(signal.SIGINT, signal.default_int_handler)

    isa = sys.argv[1]
    avgpool._core.set_isa(isa)
    rng = np.random.default_rng(0)
    small = rng.standard_normal((2, 8, 32, 32)).astype(np.float32)
    big = rng.standard_normal((4, 32, 128, 128)).astype(np.float32)  # a few ms per call
    desc = avgpool.AveragePoolingDesc((2, 2), (2, 2))

    def block_mean(x):  # numpy: 2x2 blocks, stride 2
        n, c, h, w = x.shape
        return x.reshape(n, c, h // 2, 2, w // 2, 2).mean(axis=(3, 5), dtype=np.float64)

    def calls(x):
        yield avgpool.average_pool(x, desc)
        yield avgpool.average_pool(x, desc, num_threads=2)
        yield avgpool.adaptive_average_pool(x, (x.shape[2] // 2, x.shape[3] // 2))
        yield onnx.average_pool(x, [2, 2], strides=[2, 2])
        yield openvino.avg_pool(x, [2, 2], strides=[2, 2], pads_begin=[0, 0], pads_end=[0, 0],
                                exclude_pad=True)
        yield functional.avg_pool2d(x, 2)
        yield directml.average_pooling(x, [2, 2], [2, 2], [0, 0], [0, 0], False)
        try:
            avgpool.average_pool(x, avgpool.AveragePoolingDesc((99, 99)))
        except ValueError:
            pass

    print("ready", flush=True)
    start = time.monotonic()
    n = 0
    try:
        while time.monotonic() - start < 30:
            for y in calls(big if n % 3 == 0 else small):
                pass
            n += 1
        print("no KeyboardInterrupt within 30 s", flush=True)
        sys.exit(1)
    except KeyboardInterrupt:
        pass
    # the library still works, on every path, with threads
    for x in (small, big, small[:, :, ::2, ::2], big.transpose(0, 1, 3, 2)):
        want = block_mean(np.ascontiguousarray(x))
        for y in calls(x):
            y = np.asarray(y)
            if y.shape != want.shape or not np.allclose(y, want, rtol=1e-5, atol=1e-6):
                print("wrong result after KeyboardInterrupt", flush=True)
                sys.exit(1)
    print(f"ok after {n} loops", flush=True)
''')


def test_keyboard_interrupt_mid_loop(isa):
    proc = subprocess.Popen([sys.executable, "-c", SIGINT_CHILD, isa], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, (proc.returncode, out, err[-3000:])
    assert out.strip().startswith("ok"), out


# ---- (b) no memory growth -------------------------------------------------------------------

def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _call_set():
    """Small calls of every op and front end; the last ones raise."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 3, 9, 9)).astype(np.float32)
    x1 = rng.standard_normal((2, 5, 17)).astype(np.float64)
    x3 = rng.standard_normal((1, 2, 4, 5, 6)).astype(np.float16)
    xb = x.astype(BFLOAT16)
    xh = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    xs = x[:, :, ::2, ::-1]  # non-contiguous: copied
    desc = avgpool.AveragePoolingDesc((3, 3), (2, 2), (1, 1), (1, 1), include_padding=True)
    adesc = avgpool.AdaptiveAveragePoolingDesc((4, 3))
    out = np.empty((1, 3, 5, 5), np.float32)
    ok = [
        lambda: avgpool.average_pool(x, desc),
        lambda: avgpool.average_pool(xh, desc, layout="NHWC"),
        lambda: avgpool.average_pool(xb, desc, num_threads=2),
        lambda: avgpool.average_pool(xs, avgpool.AveragePoolingDesc((2, 2))),
        lambda: avgpool.average_pool(x, desc, out=out),
        lambda: avgpool.adaptive_average_pool(x, adesc),
        lambda: avgpool.adaptive_average_pool(x1, (7,)),
        lambda: avgpool.adaptive_average_pool(x3, [2, 3, 4]),
        lambda: onnx.average_pool(x, [3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
        lambda: onnx.average_pool(x1, [4], auto_pad="SAME_UPPER", dilations=[2]),
        lambda: onnx.global_average_pool(x3),
        lambda: openvino.avg_pool(x, [3, 3], strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1],
                                  exclude_pad=False, rounding_type="ceil"),
        lambda: openvino.adaptive_avg_pool(x, np.array([2, 2], np.int32)),
        lambda: directml.average_pooling(x, [2, 2], [1, 1], [1, 0], [0, 1], True, [2, 2]),
        lambda: functional.avg_pool2d(x, 3, 2, 1, True, False),
        lambda: functional.avg_pool1d(x1, 4, divisor_override=3),
        lambda: functional.adaptive_avg_pool3d(x3[0], (2, None, 3)),
    ]
    try:
        import torch
    except ImportError:  # pragma: no cover
        torch = None
    if torch is not None:
        t = torch.from_numpy(x)
        ok.append(lambda: functional.avg_pool2d(t, 2))
        ok.append(lambda: functional.adaptive_avg_pool2d(t.to(torch.bfloat16), 3))
    bad = [
        lambda: avgpool.AveragePoolingDesc((0, 2)),
        lambda: avgpool.average_pool(x, avgpool.AveragePoolingDesc((20, 20))),
        lambda: avgpool.average_pool(x.astype(np.int32), desc),
        lambda: avgpool.average_pool(x, desc, layout="NCW"),
        lambda: avgpool.average_pool(x, desc, out=np.empty((1, 3, 4, 4), np.float32)),
        lambda: avgpool.average_pool(x, desc, num_threads=0),
        lambda: avgpool.adaptive_average_pool(x, (0, 2)),
        lambda: onnx.average_pool(x, [3, 3], auto_pad="SAME"),
        lambda: openvino.avg_pool(x, [2, 2], strides=[1, 1], pads_begin=[2, 0], pads_end=[0, 0],
                                  exclude_pad=True),
        lambda: functional.avg_pool2d(x, 2, padding=2),
        lambda: directml.average_pooling(x, [2.0, 2], [1, 1], [0, 0], [0, 0], False),
    ]
    return ok, bad


def test_no_memory_growth():
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("needs /proc/self/statm")
    ok, bad = _call_set()

    def loop(n):
        for i in range(n):
            ok[i % len(ok)]()
            try:
                bad[i % len(bad)]()
            except (ValueError, TypeError):
                pass
            else:
                raise AssertionError(f"bad call {i % len(bad)} did not raise")

    loop(3000)  # warm-up: caches, allocator pools, OpenMP threads
    gc.collect()
    before = _rss_bytes()
    loop(20000)
    gc.collect()
    grown = _rss_bytes() - before
    assert grown < 4 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over 20000 calls"


# ---- (c) concurrent Python threads and thread counts ----------------------------------------

def _jobs():
    """8 jobs: (call, reference, reference of |x|, dtype)."""
    rng = np.random.default_rng(11)
    dtypes = [np.float32, np.float64, np.float16, BFLOAT16]
    jobs = []
    for i in range(8):
        dtype = np.dtype(dtypes[i % 4])
        layout = "NHWC" if i % 2 else "NCHW"
        nt = (1, 2, 3, 8)[i % 4]
        shape = (4, 16 + i, 30 + i, 33)  # > 16 K elements: the kernels do split the work
        xc = (rng.integers(-255, 256, size=shape) / 64.0).astype(dtype)
        x = to_layout(xc, layout)
        if i % 3 == 2:
            outs = (5 + i, 7)
            ref, ref_abs = reference_adaptive(x, outs, layout)
            call = (lambda x=x, outs=outs, layout=layout, nt=nt:
                    avgpool.adaptive_average_pool(x, outs, layout=layout, num_threads=nt))
        else:
            kw = dict(window_size=(3, 2 + i % 3), strides=(1 + i % 2, 2), start_padding=(1, 0),
                      end_padding=(1, 1), dilations=(1, 1), include_padding=bool(i % 4 == 1))
            ref, ref_abs = reference_pool(x, kw, layout)
            desc = avgpool.AveragePoolingDesc(**kw)
            call = (lambda x=x, desc=desc, layout=layout, nt=nt:
                    avgpool.average_pool(x, desc, layout=layout, num_threads=nt))
        jobs.append((call, ref, ref_abs, dtype))
    return jobs


def test_concurrent_threads_match_reference():
    jobs = _jobs()
    errors = []
    counts = [0] * len(jobs)
    barrier = threading.Barrier(len(jobs))
    deadline = [0.0]

    def work(j):
        call, ref, ref_abs, dtype = jobs[j]
        try:
            barrier.wait()
            while time.monotonic() < deadline[0] or counts[j] < 5:
                assert_matches(call(), ref, ref_abs, dtype)
                counts[j] += 1
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append((j, repr(e)))

    deadline[0] = time.monotonic() + 2.0
    threads = [threading.Thread(target=work, args=(j,)) for j in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors, errors
    assert min(counts) >= 5, counts


def test_num_threads_does_not_change_the_default():
    before = avgpool.info()["max_threads"]
    x = np.random.default_rng(0).standard_normal((4, 64, 64, 64)).astype(np.float32)
    desc = avgpool.AveragePoolingDesc((3, 3), (1, 1), (1, 1), (1, 1))
    one = avgpool.average_pool(x, desc, num_threads=1)
    for n in (8, 1, 3, 1):
        np.testing.assert_array_equal(avgpool.average_pool(x, desc, num_threads=n), one)
        assert avgpool.info()["max_threads"] == before, n


def test_num_threads_does_not_change_omp_default_in_subprocess():
    """With OMP_NUM_THREADS=3 the default stays 3 after calls with num_threads 8 and 1."""
    code = textwrap.dedent('''
        import numpy as np, avgpool
        x = np.ones((4, 64, 64, 64), np.float32)
        d = avgpool.AveragePoolingDesc((3, 3))
        seen = [avgpool.info()["max_threads"]]
        for n in (8, 1, 5, 1, None):
            y = avgpool.average_pool(x, d, num_threads=n)
            assert float(y.min()) == float(y.max()) == 1.0
            seen.append(avgpool.info()["max_threads"])
        print(seen)
    ''')
    env = {**os.environ, "OMP_NUM_THREADS": "3"}
    env.pop("AVGPOOL_NUM_THREADS", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    want = 3 if avgpool.info()["openmp"] else 1
    assert out.stdout.strip() == str([want] * 6), out.stdout
