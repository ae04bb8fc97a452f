#!/usr/bin/env bash
# The Python test suite against an AddressSanitizer + UndefinedBehaviorSanitizer build of the
# extension: the Cython wrappers, the output cache (pyx/output_cache.h) and the C core, as the
# tests drive them from numpy, torch, dask and the fuzzers. A development check, not a CI stage:
# the default selection below takes about 6 minutes on 2 cores (build included), the whole
# suite over an hour (a partial run: 12 % in 10 minutes).
# Usage: scripts/test_asan_python.sh [pytest arguments, default: the selection below]
# Needs the test extras in the running Python (pip install ".[test]") and GCC's libasan.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
python -m pip install -q --no-build-isolation --no-deps --target "$work/site" \
  -Ccmake.build-type=RelWithDebInfo -Cbuild-dir="$work/build" \
  "-Ccmake.define.CMAKE_C_FLAGS=$flags" \
  "-Ccmake.define.CMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined" \
  "-Ccmake.define.CMAKE_MODULE_LINKER_FLAGS=-fsanitize=address,undefined" .

if [ $# -eq 0 ]; then
  # The Python-facing layers (torch, the output cache, threads, errors and the fuzzers' bad
  # arguments), not the sweeps of kernel numbers that the C tests run under ASan already.
  # test_no_memory_growth is left out: ASan's quarantine holds freed memory on purpose.
  set -- -k "not memory_growth" tests/test_torch_ops.py tests/test_output_cache.py \
    tests/test_threads.py tests/test_robustness.py tests/test_fuzz_core.py \
    tests/test_fuzz_onnx.py tests/test_fuzz_openvino.py tests/test_fuzz_directml.py \
    tests/test_fuzz_functional.py tests/test_fuzz_regressions.py tests/test_errors.py \
    tests/test_directml.py tests/test_functional.py tests/test_compiled.py tests/test_tiles.py \
    tests/test_guard_pages.py tests/test_nan_omit.py tests/test_xarray.py tests/test_dtypes.py
fi
# libasan first (the interpreter is not instrumented); libstdc++ with it, so that ASan's
# __cxa_throw interceptor finds the real one when torch throws (without it: a CHECK failure
# and a crash on torch's first C++ exception).
export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so.6)"
# -s: pytest's default captures file descriptor 2, where a sanitizer writes its report just
# before it ends the process (the report would go with the process; UBSan's log_path is not
# honoured in a library loaded after start). SEGV is left to the tests (test_guard_pages
# expects a child to die of it).
export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:handle_segv=0
export UBSAN_OPTIONS=print_stacktrace=1
PYTHONPATH="$work/site" python -m pytest -q -s -p no:cacheprovider "$@"
