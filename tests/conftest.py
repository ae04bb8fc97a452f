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
import pytest  # noqa: E402

from avgpool import _core  # noqa: E402


def available_isas():
    """The kernel paths this build and CPU can run, the scalar oracle first."""
    names = []
    for name in _core.compiled_isas():
        try:
            _core.set_isa(name)
        except ValueError:
            continue
        names.append(name)
    _core.set_isa(os.environ.get("AVGPOOL_ISA") or "auto")
    return names


# AVGPOOL_ISA unset: every path; "auto": only the one the library picks; else that one.
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
