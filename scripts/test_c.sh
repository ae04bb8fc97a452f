#!/usr/bin/env bash
# Native C checks of the avgpool core, in four steps:
#   1. build the C library (shared + static) and the C tests with warnings as
#      errors, run ctest (API contract, hand-computed results, every ISA of
#      this CPU against the scalar oracle, exported symbols);
#   2. install into a temporary prefix, build examples/c against it with
#      find_package(avgpool CONFIG) (shared and static) and with the pkg-config
#      recipe of docs/c-library.md (its marked code block, run as written),
#      run them all; then move the prefix and build again (the installed CMake
#      and pkg-config files are relocatable);
#   3. build the library and tests with AVGPOOL_SANITIZE (ASan + UBSan) and
#      run ctest again, with the threads' minimum work (csrc/threading.h) cut
#      to 8 elements, so that the tests' small calls split between threads;
#   4. the same with AVGPOOL_TSAN (ThreadSanitizer), every threaded call on
#      the own pool (csrc/threading.c: its lock-free job hand-over).
# Build trees go under build/ (AVGPOOL_BUILD_ROOT overrides); installs nothing
# outside a temporary directory.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_root=${AVGPOOL_BUILD_ROOT:-$root/build}
jobs=${JOBS:-2}
generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/summary.log

step() { printf '\n=== %s\n' "$*"; }

configure_build_test() { # dir, extra cmake args...
  local dir=$1; shift
  cmake -S "$root" -B "$dir" "${generator[@]}" -DAVGPOOL_PYTHON=OFF -DAVGPOOL_BUILD_TESTS=ON \
        -DAVGPOOL_WERROR=ON "$@"
  cmake --build "$dir" -j "$jobs"
  (cd "$dir" && ctest -V --timeout 600) 2>&1 | tee "$tmp/ctest.log" | \
    grep -E '^[0-9]+: |tests passed|Test +#|Not Run|Failed' || true
  grep -qE '100% tests passed' "$tmp/ctest.log" || { cat "$tmp/ctest.log"; echo "ctest failed in $dir"; exit 1; }
  grep -hE '^[0-9]+: (isa |ISA paths|API contract|test_api|test_isa|path cases|    paths:|-- [0-9]+ symbols)' "$tmp/ctest.log" |
    sed -E 's/^[0-9]+: (-- )?/  /' >> "$log" || true
  grep -hE 'tests passed|did not run|Disabled' "$tmp/ctest.log" | sed 's/^/  ctest: /' >> "$log" || true
}

step "1. native C library and tests ($build_root/c)"
echo "[native]" >> "$log"
configure_build_test "$build_root/c" -DCMAKE_BUILD_TYPE=Release

step "2. install, then the example via find_package and via pkg-config"
prefix=$tmp/prefix
cmake --install "$build_root/c" --prefix "$prefix"
build_example() { # prefix, tag
  local p=$1 tag=$2
  cmake -S "$root/examples/c" -B "$tmp/example-$tag" "${generator[@]}" -DCMAKE_PREFIX_PATH="$p" \
        -DCMAKE_C_FLAGS="-Wall -Wextra -Werror"
  cmake --build "$tmp/example-$tag" -j "$jobs"
  "$tmp/example-$tag/pool_example"
  "$tmp/example-$tag/pool_example_static" > "$tmp/static.out"
  "$tmp/example-$tag/pool_example" | cmp - "$tmp/static.out"
  # pkg-config: the recipe of docs/c-library.md, run exactly as written there, with the example
  # as app.c (its output must match the CMake builds')
  export PKG_CONFIG_PATH="$p/lib/pkgconfig"
  local dir=$tmp/pkg-config-$tag
  mkdir -p "$dir"
  cp "$root/examples/c/pool_example.c" "$dir/app.c"
  printf '%s\n' "$pkg_config_recipe" > "$dir/recipe.sh"
  (cd "$dir" && bash -euo pipefail recipe.sh) > "$dir/out.txt"
  cmp "$dir/out.txt" "$tmp/static.out"
  echo "example ($tag prefix): find_package shared + static and the pkg-config recipe agree" | tee -a "$log"
}
# The code block after the marker comment in docs/c-library.md.
pkg_config_recipe=$(awk '/scripts\/test_c.sh runs the next code block/ {armed = 1; next}
  armed && /^```/ {if (inside) exit; inside = 1; next}
  inside {print}' "$root/docs/c-library.md")
if [ -z "$pkg_config_recipe" ]; then
  echo "no pkg-config recipe found after the marker in docs/c-library.md" >&2
  exit 1
fi
printf 'pkg-config recipe from docs/c-library.md:\n%s\n' "$pkg_config_recipe"
build_example "$prefix" installed
mv "$prefix" "$tmp/moved-prefix"
build_example "$tmp/moved-prefix" moved

step "3. sanitizers: AVGPOOL_SANITIZE=ON ($build_root/asan)"
echo "[AddressSanitizer + UndefinedBehaviorSanitizer]" >> "$log"
# (4000 and 600 random cases in test_isa and its streamed run instead of 10000 and 3000:
# every call handing work to threads under the sanitizers takes several times as long)
configure_build_test "$build_root/asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAVGPOOL_SANITIZE=ON \
  "-DCMAKE_C_FLAGS=-DAP_MIN_ELEMS_PER_THREAD=8 -DAP_MIN_CHUNK_ELEMS=8" -DAVGPOOL_ISA_CASES=4000 \
  -DAVGPOOL_ISA_STREAMED_CASES=600

step "4. ThreadSanitizer: AVGPOOL_TSAN=ON ($build_root/tsan)"
echo "[ThreadSanitizer]" >> "$log"
# (fewer random cases: the pool's hand-over is the same in each, and TSan slows every access)
configure_build_test "$build_root/tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAVGPOOL_TSAN=ON \
  "-DCMAKE_C_FLAGS=-DAP_MIN_ELEMS_PER_THREAD=8 -DAP_MIN_CHUNK_ELEMS=8" -DAVGPOOL_ISA_CASES=600 \
  -DAVGPOOL_ISA_STREAMED_CASES=50

step "summary"
cat "$log"
