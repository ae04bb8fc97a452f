"""Threading: num_threads / AVGPOOL_NUM_THREADS, determinism, and concurrent Python callers."""

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import avgpool
from reference import ref_adaptive_average_pool, ref_average_pool

# Large enough that the kernels do split the work between threads.
X = np.random.default_rng(0).standard_normal((4, 64, 40, 40)).astype(np.float32)
DESC = avgpool.AveragePoolingDesc((3, 3), (1, 1), (1, 1), (1, 1))


POOLS = ["own", "openmp"] if avgpool.info()["openmp"] else ["own"]


@pytest.fixture(params=POOLS)
def thread_pool(request):
    """Each thread pool in turn (avgpool.set_thread_pool), the one before restored after."""
    before = avgpool.info()["thread_pool"]
    avgpool.set_thread_pool(request.param)
    yield request.param
    avgpool.set_thread_pool(before)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_thread_counts_give_identical_results(layout, thread_pool):
    x = X if layout == "NCHW" else np.ascontiguousarray(X.transpose(0, 2, 3, 1))
    one = avgpool.average_pool(x, DESC, layout=layout, num_threads=1)
    for n in (2, 3, 8):
        np.testing.assert_array_equal(avgpool.average_pool(x, DESC, layout=layout, num_threads=n), one)
    assert avgpool.info()["thread_pool"] == thread_pool


@pytest.mark.one_path  # subprocesses that pick their own path
def test_thread_pool_choice():
    """set_thread_pool names one of two pools; AVGPOOL_THREAD_POOL chooses at import (a name of
    none fails the import); avgpool.torch chooses torch's OpenMP team unless the variable is
    set."""
    with pytest.raises(ValueError, match="thread pool 'OpenMP' is unknown"):
        avgpool.set_thread_pool("OpenMP")
    if not avgpool.info()["openmp"]:
        with pytest.raises(ValueError, match="needs OpenMP"):
            avgpool.set_thread_pool("openmp")

    def pool_after(code, value=None):
        env = {k: v for k, v in os.environ.items() if k != "AVGPOOL_THREAD_POOL"}
        if value is not None:
            env["AVGPOOL_THREAD_POOL"] = value
        show = "; print(avgpool.info()['thread_pool'])"
        return subprocess.run([sys.executable, "-c", code + show], env=env, capture_output=True,
                              text=True)

    assert pool_after("import avgpool").stdout.strip() == "own"
    assert pool_after("import avgpool", "own").stdout.strip() == "own"
    bad = pool_after("import avgpool", "fibers")
    assert bad.returncode != 0 and "AVGPOOL_THREAD_POOL='fibers' names no thread pool" in bad.stderr
    if avgpool.info()["openmp"]:
        assert pool_after("import avgpool", "openmp").stdout.strip() == "openmp"
        pytest.importorskip("torch")  # a test extra: CI has it
        # torch's OpenMP team when avgpool's OpenMP runtime is torch's (a build from source);
        # a wheel's renamed copy of libgomp would be a second team: the own pool stays
        shared = pool_after("import avgpool, avgpool.torch as t; "
                            "print(t._shares_openmp_with_torch())").stdout.split()
        assert shared[1] == ("openmp" if shared[0] == "True" else "own"), shared
        assert pool_after("import avgpool, avgpool.torch", "own").stdout.strip() == "own"


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_box_results_do_not_depend_on_the_thread_count(layout):
    """The box path restarts its running sums at bands fixed by the shape (5 bands of 72 rows
    here), not by the threads: any thread count gives the same bits."""
    x = np.random.default_rng(2).standard_normal((1, 3, 300, 50)).astype(np.float32)
    if layout == "NHWC":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    desc = avgpool.AveragePoolingDesc((9, 9), (1, 1), (4, 4), (4, 4), include_padding=True)
    assert "box" in avgpool.explain(desc, x.shape, layout=layout) or avgpool._core.isa() == "scalar"
    one = avgpool.average_pool(x, desc, layout=layout, num_threads=1)
    for n in (2, 3, 8):
        assert avgpool.average_pool(x, desc, layout=layout, num_threads=n).tobytes() == one.tobytes()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this platform")
def test_threads_work_in_a_forked_child(thread_pool):
    """The pool's workers do not survive fork(): a child (multiprocessing's default start on
    Linux, Dask's forked workers) starts with none and makes its own. A parent on the OpenMP
    team has a child on the own pool (libgomp's team does not survive fork either)."""
    want = avgpool.average_pool(X, DESC, num_threads=1)
    avgpool.average_pool(X, DESC, num_threads=2)  # the parent's pool has a worker now
    pid = os.fork()
    if pid == 0:  # the child: exit status 0 only if threaded pooling works and agrees
        ok = False
        try:
            ok = avgpool.info()["thread_pool"] == "own" and all(
                np.array_equal(avgpool.average_pool(X, DESC, num_threads=2), want)
                for _ in range(20))
        finally:
            os._exit(0 if ok else 1)
    for _ in range(600):  # 60 s: a deadlocked child fails the test instead of hanging it
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        import time
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung")
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_env_thread_count(monkeypatch):
    one = avgpool.average_pool(X, DESC, num_threads=1)
    monkeypatch.setenv("AVGPOOL_NUM_THREADS", "2")
    np.testing.assert_array_equal(avgpool.average_pool(X, DESC), one)
    monkeypatch.setenv("AVGPOOL_NUM_THREADS", "two")
    with pytest.raises(ValueError, match="AVGPOOL_NUM_THREADS must be a positive integer"):
        avgpool.average_pool(X, DESC)
    monkeypatch.setenv("AVGPOOL_NUM_THREADS", "0")
    with pytest.raises(ValueError, match="AVGPOOL_NUM_THREADS must be between 1 and 65536"):
        avgpool.average_pool(X, DESC)


def test_omp_num_threads_is_the_default():
    code = "import avgpool; print(avgpool.info()['max_threads'])"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "OMP_NUM_THREADS": "3"},
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == ("3" if avgpool.info()["openmp"] else "1")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts threads in /proc")
@pytest.mark.skipif(not avgpool.info()["openmp"], reason="built without OpenMP: one thread")
def test_threadpoolctl_limits_the_default_thread_count():
    """threadpoolctl (a test dependency) finds the OpenMP runtime avgpool takes its default
    from, the bundled copy of the wheel included: inside threadpool_limits(1) a call starts no
    worker, after it the same call does."""
    code = """if True:
        import os, numpy as np, avgpool, threadpoolctl
        tasks = lambda: len(os.listdir("/proc/self/task"))
        x = np.ones((8, 64, 112, 112), np.float32)
        desc = avgpool.AveragePoolingDesc((2, 2), (2, 2))
        before = tasks()
        with threadpoolctl.threadpool_limits(1):
            limited = avgpool.info()["max_threads"]
            avgpool.average_pool(x, desc)
            inside = tasks() - before
        avgpool.average_pool(x, desc)
        print(limited, inside, tasks() - before, avgpool.info()["max_threads"])
    """
    env = {k: v for k, v in os.environ.items() if k != "AVGPOOL_NUM_THREADS"}
    env.update(OMP_NUM_THREADS="2", AVGPOOL_THREAD_POOL="own")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["1", "0", "1", "2"]


def test_concurrent_python_threads():
    """8 Python threads, each with its own input, op, layout and thread count, at once."""
    rng = np.random.default_rng(1)
    jobs = []
    for i in range(8):
        x = rng.standard_normal((2, 16 + i, 23, 31)).astype(np.float32)
        if i % 2:
            desc = avgpool.AveragePoolingDesc((3, 2), (2, 1), (1, 0), (1, 1), include_padding=i % 4 == 1)
            ref = ref_average_pool(x.astype(np.float64), desc.window_size, desc.strides,
                                   desc.start_padding, desc.end_padding, desc.dilations,
                                   desc.include_padding)
            fn = lambda x=x, desc=desc, n=i % 3 + 1: avgpool.average_pool(x, desc, num_threads=n)
        else:
            ref = ref_adaptive_average_pool(x.astype(np.float64), (5, 7))
            xl = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
            fn = lambda xl=xl, n=i % 3 + 1: np.moveaxis(
                avgpool.adaptive_average_pool(xl, (5, 7), layout="NHWC", num_threads=n), -1, 1)
        jobs.append((fn, ref))

    def work(job):
        fn, ref = job
        for _ in range(20):
            np.testing.assert_allclose(fn(), ref, rtol=1e-5, atol=1e-5)
        return True

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(work, jobs))
