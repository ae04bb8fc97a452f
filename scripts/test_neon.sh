#!/usr/bin/env bash
# Cross-build the C library and C tests for aarch64 and run ctest under
# qemu-aarch64, so the NEON kernels are compared with the scalar oracle (and
# the float64 reference) on the same random cases as on x86-64.
#   - toolchain: cmake/aarch64-linux-gnu.cmake (Debian's gcc-aarch64-linux-gnu,
#     qemu-user as CMAKE_CROSSCOMPILING_EMULATOR); installed with apt-get when
#     missing and running as root;
#   - build tree: build/neon (AVGPOOL_BUILD_ROOT overrides), no Python;
#   - fails unless the NEON path was found and compared.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_root=${AVGPOOL_BUILD_ROOT:-$root/build}
dir=$build_root/neon
jobs=${JOBS:-2}

if ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || ! command -v qemu-aarch64 >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing gcc-aarch64-linux-gnu and qemu-user"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc-aarch64-linux-gnu qemu-user
  else
    echo "test_neon.sh needs aarch64-linux-gnu-gcc and qemu-aarch64 (Debian: apt-get install gcc-aarch64-linux-gnu qemu-user)" >&2
    exit 1
  fi
fi

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
cmake -S "$root" -B "$dir" "${generator[@]}" \
      -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" -DCMAKE_BUILD_TYPE=Release \
      -DAVGPOOL_PYTHON=OFF -DAVGPOOL_BUILD_TESTS=ON -DAVGPOOL_WERROR=ON
cmake --build "$dir" -j "$jobs"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
(cd "$dir" && ctest -V --timeout 1200) > "$log" 2>&1 || status=$?
grep -E '^[0-9]+: |tests passed|Not Run|Failed' "$log" || true
if [ "$status" != 0 ]; then
  cat "$log"
  echo "ctest failed under qemu-aarch64" >&2
  exit 1
fi
if ! grep -qE 'ISA paths compared with scalar: .*neon' "$log"; then
  echo "the NEON path was not compared (is the build really aarch64?)" >&2
  exit 1
fi
echo
echo "summary (aarch64 under qemu):"
grep -hE '^[0-9]+: (isa |ISA paths|API contract|test_api|test_isa|path cases|    paths:|-- [0-9]+ symbols)|tests passed' "$log" |
  sed -E 's/^[0-9]+: (-- )?/  /'
