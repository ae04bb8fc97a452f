#!/usr/bin/env bash
# libFuzzer over the C entry points (tests/fuzz/fuzz_core.c), built with AddressSanitizer and
# UndefinedBehaviorSanitizer; every kernel path is compared with the scalar oracle.
# Usage: scripts/fuzz_c.sh [seconds, default 60] [seed, default 1; 0 = random]. The corpus is
# kept in build/fuzz/corpus. The fixed default seed makes CI's short run try the same inputs on
# every run (a new finding shows up in a long run by hand, not as a flaky CI failure).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
seed=${2:-1}
if ! command -v clang >/dev/null; then
  apt-get update -qq && apt-get install -y -qq clang >/dev/null
fi
out=build/fuzz
mkdir -p "$out/corpus"
flags=(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -g -O1 -Wall -Wextra
       -Icsrc/include)
srcs=(csrc/api.c csrc/plan.c csrc/paths.c csrc/dispatch.c csrc/threading.c csrc/nan_omit.c csrc/relayout.c csrc/kernels/scalar.c)
if [ "$(uname -m)" = x86_64 ]; then
  flags+=(-DAP_HAVE_X86_KERNELS=1)
  clang "${flags[@]}" -mavx2 -mfma -mf16c -c csrc/kernels/avx2.c -o "$out/avx2.o"
  clang "${flags[@]}" -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c \
    -c csrc/kernels/avx512.c -o "$out/avx512.o"
  extra=("$out/avx2.o" "$out/avx512.o")
elif [ "$(uname -m)" = aarch64 ]; then
  flags+=(-DAP_HAVE_NEON_KERNELS=1)
  srcs+=(csrc/kernels/neon.c)
  extra=()
fi
clang "${flags[@]}" -fsanitize=fuzzer "${srcs[@]}" "${extra[@]}" tests/fuzz/fuzz_core.c -lm \
  -o "$out/fuzz_core"
"$out/fuzz_core" -max_total_time="$secs" -seed="$seed" -max_len=512 -print_final_stats=1 \
  "$out/corpus" 2>&1 \
  | grep -E "^(#[0-9]+ +DONE|stat::|INFO: Seed|==[0-9]+==ERROR|SUMMARY)|Done [0-9]+ runs" || true
# libFuzzer exits non-zero (and writes crash-*) on any finding
test -z "$(ls crash-* leak-* timeout-* 2>/dev/null)"
