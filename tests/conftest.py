"""Hypothesis profiles: "ci" (default) and "long"; pick one with HYPOTHESIS_PROFILE."""

import os

from hypothesis import HealthCheck, settings

# "ci" is derandomized: every run tries the same examples, so a CI result is reproducible
# here; "long" explores new random examples each run.
settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "long",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# ---- every kernel path ------------------------------------------------------------------------
# The whole suite runs once per instruction set this CPU supports (scalar, avx2, avx512 / neon),
# or only the one AVGPOOL_ISA names ("auto": the one the library picks). Tests are grouped by path
# and their ids end in [isa].
import contextlib  # noqa: E402

import pytest  # noqa: E402

from avgpool import _core  # noqa: E402

pytest_plugins = ["pytester"]  # test_isa.py checks the path guard below on a suite of its own


def available_isas():
    """The kernel paths this build and CPU can run, the scalar oracle first."""
    names = []
    prev = _core.isa()
    for name in _core.compiled_isas():
        try:
            _core.set_isa(name)
        except ValueError:
            continue
        names.append(name)
    _core.set_isa(prev)
    return names


# AVGPOOL_ISA unset: every path; "auto": only the one the library picks; else that one.
_PICKED = _core.isa()  # before anything switches paths: the library's own choice
_FORCED = os.environ.get("AVGPOOL_ISA", "")
if not _FORCED:
    ISAS = available_isas()
elif _FORCED == "auto":
    ISAS = [_core.isa()]
else:
    ISAS = [_FORCED]


@pytest.fixture(scope="session", params=ISAS, autouse=True)
def isa(request):
    """Run every test on one kernel path."""
    _core.set_isa(request.param)
    yield request.param
    _core.set_isa(_FORCED or "auto")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "one_path: the test does not depend on avgpool's kernel path (the bench's "
        "plumbing, its peers, subprocesses that pick their own path, Python-level routing) or "
        "switches between the paths itself: it runs once, on the path the library picks, and "
        "its copies for the other paths are deselected")


def pytest_collection_modifyitems(config, items):
    """Deselect the copies of one_path tests for every path but one."""
    keep_path = _PICKED if _PICKED in ISAS else ISAS[-1]
    kept, dropped = [], []
    for item in items:
        params = getattr(item, "callspec", None)
        path = params.params.get("isa") if params else None
        if item.get_closest_marker("one_path") and path not in (None, keep_path):
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


# the thread pool before any test module imported avgpool.torch (which chooses torch's team)
_DEFAULT_POOL = _core.thread_pool()


@pytest.fixture(autouse=True)
def thread_pool_of_module(request):
    """Tests of avgpool.torch run on the pool importing it chooses, as its users do; the others
    on the default pool, whichever test modules the collection imported."""
    pool = _DEFAULT_POOL
    if request.module.__name__ == "test_torch_ops":
        import avgpool.torch

        pool = avgpool.torch._torch_thread_pool() or pool
    _core.set_thread_pool(pool)
    yield


# tests that ran with their kernel path active at start and end, per path (the summary below)
GUARDED: "dict[str, int]" = {}


@pytest.fixture(autouse=True)
def isa_guard(request, isa):
    """Fail any test whose id names a kernel path ([scalar], [avx2], ...) other than the one
    active while it runs, or that leaves another path active for the tests after it."""
    assert _core.isa() == isa, f"{request.node.nodeid} starts on the {_core.isa()} kernels"
    yield
    assert _core.isa() == isa, (f"{request.node.nodeid} left the {_core.isa()} kernels active "
                                f"(switch paths with conftest.using_isa, which restores them)")
    GUARDED[isa] = GUARDED.get(isa, 0) + 1


def pytest_terminal_summary(terminalreporter):
    """Per kernel path, how many tests ran with that path active from start to end."""
    if GUARDED:
        counts = ", ".join(f"{name} {GUARDED[name]}" for name in ISAS if name in GUARDED)
        terminalreporter.write_line(f"kernel paths (tests run with the path active throughout): "
                                    f"{counts}")


@contextlib.contextmanager
def using_isa(name):
    """Run the block on the kernel path ``name``, then restore the path that was active."""
    prev = _core.isa()
    _core.set_isa(name)
    try:
        yield
    finally:
        _core.set_isa(prev)
