"""avgpool: fast, exact CPU average pooling.

One C core, four standards: ONNX (:mod:`avgpool.onnx`), OpenVINO (:mod:`avgpool.openvino`),
DirectML (:mod:`avgpool.directml`) and PyTorch-style functions (:mod:`avgpool.functional`), all
mapped onto :class:`AveragePoolingDesc` / :class:`AdaptiveAveragePoolingDesc`.
"""

from . import _core
from ._api import adaptive_average_pool, average_pool
from ._desc import AdaptiveAveragePoolingDesc, AveragePoolingDesc

__version__ = _core.version()

if _core.isa() == "unavailable":
    import os as _os

    raise ImportError(
        f"AVGPOOL_ISA={_os.environ.get('AVGPOOL_ISA')!r} names an instruction set that is unknown or "
        "not supported by this CPU; use scalar, avx2, avx512 (x86-64), neon (aarch64) or auto")

__all__ = [
    "AveragePoolingDesc",
    "AdaptiveAveragePoolingDesc",
    "average_pool",
    "adaptive_average_pool",
    "info",
    "onnx",
    "openvino",
    "directml",
    "functional",
]


def info() -> dict:
    """Version, kernel instruction set and threading of this build."""
    import os

    return {
        "version": __version__,
        "isa": _core.isa(),
        "openmp": _core.openmp_enabled(),
        "max_threads": _core.max_threads(),
        "AVGPOOL_ISA": os.environ.get("AVGPOOL_ISA", ""),
        "AVGPOOL_NUM_THREADS": os.environ.get("AVGPOOL_NUM_THREADS", ""),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", ""),
    }


from . import directml, functional, onnx, openvino  # noqa: E402  (front ends use the names above)
