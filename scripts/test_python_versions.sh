#!/usr/bin/env bash
# The oldest Python pyproject.toml claims (3.9): install from the source tree
# (what pip does where no wheel fits) into a fresh virtual environment with only numpy's side of
# the dependencies (torch and the peers are tested on CI's own Python), and run the core suite
# on the kernel path the library picks. A Python not on this machine (on PATH as python3.X, or
# under pyenv) is reported as not tested. `scripts/test_python_versions.sh 3.9 3.13` tests
# others too (3.13, the newest claimed, passed by hand on 2026-11-28; CI's time keeps one).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export PIP_CONSTRAINT=${PIP_CONSTRAINT:-$root/.ci/constraints.txt}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

find_python() {  # one that runs (pyenv's shims are on PATH without running)
    local v=$1 p
    for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/python "$(command -v "python$v")"; do
        if [ -n "$p" ] && [ -x "$p" ] && "$p" -c "import sys" 2>/dev/null; then
            echo "$p"
            return
        fi
    done
}

for v in "${@:-3.9}"; do
    py=$(find_python "$v" || true)
    if [ -z "$py" ]; then
        echo "== Python $v: not on this machine, not tested"
        continue
    fi
    echo "== Python $v: $py"
    "$py" -m venv "$work/venv$v"
    vpy="$work/venv$v/bin/python"
    "$vpy" -m pip install -q --upgrade pip  # an old Python's own pip backtracks for minutes
    "$vpy" -m pip install -q ".[dask]" "pytest>=7" "hypothesis>=6"
    # from a copy in an empty directory: the installed package, not the source tree
    rm -rf "$work/run" && mkdir "$work/run" && cp -r tests pyproject.toml README.md "$work/run/"
    mkdir -p "$work/run/csrc/include" "$work/run/docs"
    cp csrc/include/avgpool.h "$work/run/csrc/include/" && cp docs/c-library.md "$work/run/docs/"
    (cd "$work/run" && AVGPOOL_ISA=auto "$vpy" -m pytest -q -p no:cacheprovider \
        tests/test_core.py tests/test_errors.py tests/test_edge_cases.py tests/test_functional.py \
        tests/test_compiled.py tests/test_backward.py tests/test_dask.py tests/test_docs.py)
done
