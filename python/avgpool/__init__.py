"""avgpool: fast, exact CPU average pooling.

One C core, four standards: ONNX (:mod:`avgpool.onnx`), OpenVINO (:mod:`avgpool.openvino`),
DirectML (:mod:`avgpool.directml`) and PyTorch-style functions (:mod:`avgpool.functional`), all
mapped onto :class:`AveragePoolingDesc` / :class:`AdaptiveAveragePoolingDesc`.
"""

from __future__ import annotations

from . import _core
from ._api import (adaptive_average_pool, adaptive_average_pool_backward, average_pool,
                   average_pool_backward, compile_operator, pool_tile, tile_input_region)
from ._desc import AdaptiveAveragePoolingDesc, AveragePoolingDesc
from ._explain import explain

__version__ = _core.version()

if _core.isa() == "unavailable":
    import os as _os

    def _runnable(name: str) -> bool:
        try:
            _core.set_isa(name)  # harmless: the import fails below either way
        except ValueError:
            return False
        return True

    _here = [name for name in _core.compiled_isas() if _runnable(name)]
    raise ImportError(
        f"AVGPOOL_ISA={_os.environ.get('AVGPOOL_ISA')!r} names an instruction set that is unknown or "
        f"not supported by this CPU and build; this CPU can run: {', '.join(_here)} (or auto, the "
        f"best of them)")

if _core.thread_pool() == "unavailable":
    import os as _os

    raise ImportError(
        f"AVGPOOL_THREAD_POOL={_os.environ.get('AVGPOOL_THREAD_POOL')!r} names no thread pool of "
        f"this build: 'own'" + (" or 'openmp'" if _core.openmp_enabled() else ""))

__all__ = [
    "AveragePoolingDesc",
    "AdaptiveAveragePoolingDesc",
    "average_pool",
    "adaptive_average_pool",
    "average_pool_backward",
    "adaptive_average_pool_backward",
    "compile_operator",
    "tile_input_region",
    "pool_tile",
    "explain",
    "info",
    "set_thread_pool",
    "get_include",
    "get_library_dir",
    "get_cmake_dir",
    "onnx",
    "openvino",
    "directml",
    "functional",
]


def _package_path(*parts: str) -> str:
    import os

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), *parts)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"{path} does not exist: this installation of avgpool carries no C library "
            "(wheels and `pip install .` do; an editable install does not)")
    return path


def get_include() -> str:
    """Directory holding ``avgpool.h``, for C programs built against the installed package."""
    return _package_path("include")


def get_library_dir() -> str:
    """Directory holding the shared C library ``libavgpool.so`` (and its pkg-config file under
    ``pkgconfig/``)."""
    return _package_path("lib")


def get_cmake_dir() -> str:
    """Directory holding ``avgpoolConfig.cmake``: pass it as ``-Davgpool_DIR=...`` to
    ``find_package(avgpool CONFIG)``, which gives the target ``avgpool::avgpool``."""
    return _package_path("lib", "cmake", "avgpool")


def info() -> dict[str, str | bool | int]:
    """Version, build (compiler, flags, kernels compiled in), the kernel instruction set in use,
    the thread settings, the output cache (bytes of dead outputs kept for reuse, and the
    most it keeps: ``AVGPOOL_OUTPUT_CACHE_BYTES``) and the bytes a call moves past which it
    streams its output to memory (``AVGPOOL_STREAM_BYTES``, else the last-level cache's
    size)."""
    import os

    _, kept, limit = _core.output_cache_info()
    return {
        "version": __version__,
        "build": _core.build_info(),
        "isa": _core.isa(),
        "openmp": _core.openmp_enabled(),
        "max_threads": _core.max_threads(),
        "thread_pool": _core.thread_pool(),
        "AVGPOOL_ISA": os.environ.get("AVGPOOL_ISA", ""),
        "AVGPOOL_NUM_THREADS": os.environ.get("AVGPOOL_NUM_THREADS", ""),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", ""),
        "AVGPOOL_THREAD_POOL": os.environ.get("AVGPOOL_THREAD_POOL", ""),
        "output_cache_bytes": kept,
        "output_cache_limit": limit,
        "stream_bytes": _core.stream_bytes(),
    }


def set_thread_pool(name: str) -> None:
    """Which threads help the calling thread run a call: ``"own"`` (the default), avgpool's own
    pool, whose workers spin briefly and then sleep, and which a busy core cannot hold up; or
    ``"openmp"``, the OpenMP team of the runtime the process has loaded, the threads PyTorch
    runs its own operators on when avgpool shares their OpenMP runtime (``import avgpool.torch``
    chooses it then, unless the environment variable ``AVGPOOL_THREAD_POOL`` is set). Results
    are the same bits on either.

    >>> import avgpool
    >>> avgpool.set_thread_pool("own"); avgpool.info()["thread_pool"]
    'own'
    """
    _core.set_thread_pool(name)


from . import directml, functional, onnx, openvino  # noqa: E402  (front ends use the names above)
