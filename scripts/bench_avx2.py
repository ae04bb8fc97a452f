#!/usr/bin/env python3
"""``python -m avgpool bench`` as an AVX2-only x86-64 CPU would run it, on a CPU with AVX-512.

    python scripts/bench_avx2.py --quick --threads 1      # any `python -m avgpool bench` option

The speed issue asks for every case at or above the fastest peer on AVX2-only CPUs too, and
none was at hand. ``AVGPOOL_ISA=avx2`` alone runs avgpool's AVX2 kernels against peers that
keep their AVX-512 code. This script takes each peer's AVX-512 code away as well, before any
of them loads:

- avgpool: ``AVGPOOL_ISA=avx2``;
- torch: ``ATEN_CPU_CAPABILITY=avx2``;
- OpenCV: ``OPENCV_CPU_DISABLE`` with its AVX-512 feature groups;
- TFLite's XNNPACK has no switch: it reads the CPU's features once, into the `arch_flags`
  of its `hardware_config`, and picks each operator's kernels from them when the operator
  is first made. The script asks XNNPACK for that config (its local function
  `xnn_init_hardware_config`, found by name with `nm` in the LiteRT library), keeps only the
  flags of an AVX2 CPU without AVX-VNNI (SSE to AVX2, FMA3 and F16C: bits 0-7 of this
  build's flags) and, after the bench, names the kernels XNNPACK took for average pooling
  and for MEAN.
- The script exits non-zero, its table not valid, if torch, OpenCV or one of those XNNPACK
  kernels still runs AVX-512 code.
- onnxruntime and OpenVINO keep their AVX-512 code (neither has a switch); they are the
  slowest peers here anyway, and faster peers only lower avgpool's ratios.

The machine is still an AVX-512 machine (its caches, its clocks, its scalar code), so this
answers which kernels win, not how fast an AVX2-only CPU is. Development tool: it depends
on symbols of one LiteRT build and stops with a message when they are not there.
"""
import ctypes
import os
import subprocess
import sys

# Before any peer loads: the switches are read at import or first use.
os.environ["AVGPOOL_ISA"] = "avx2"
os.environ["ATEN_CPU_CAPABILITY"] = "avx2"
os.environ["OPENCV_CPU_DISABLE"] = ",".join(
    ["AVX512F", "AVX512-COMMON", "AVX512-SKX", "AVX512-CLX", "AVX512-CNL", "AVX512-ICL"])

# XNNPACK's flags of an AVX2 CPU in the LiteRT build this was written against
# (init_hardware_config's code: bit 4 AVX, 7 AVX2, 9 AVX-512F; above 7 only AVX-512 and VNNI).
XNN_AVX2_FLAGS = 0xFF


def _litert_library():
    import ai_edge_litert
    import ai_edge_litert.interpreter  # noqa: F401  (maps the library)

    path = os.path.realpath(os.path.join(os.path.dirname(ai_edge_litert.__file__),
                                         "libpywrap_litert_common.so"))
    symbols = {}
    nm = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    for line in nm.splitlines():
        fields = line.split()
        if len(fields) == 3:
            symbols[fields[2]] = int(fields[0], 16)
    base = None
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and fields[5] == path and int(fields[2], 16) == 0:
                base = int(fields[0].split("-")[0], 16)
                break
    needed = ("xnn_init_hardware_config", "hardware_config", "f32_avgpool_config",
              "f32_rsum_config")
    missing = [n for n in needed if n not in symbols]
    if base is None or missing:
        sys.exit(f"bench_avx2: this LiteRT build lacks {missing or 'a mapping'} ({path}); "
                 "XNNPACK's kernels cannot be restricted")
    return base, symbols


def restrict_xnnpack():
    """Set XNNPACK's CPU flags to an AVX2 CPU's; returns (base, symbols, flags before)."""
    base, symbols = _litert_library()
    init = ctypes.CFUNCTYPE(ctypes.c_void_p)(base + symbols["xnn_init_hardware_config"])
    config = init()
    if config != base + symbols["hardware_config"]:
        sys.exit("bench_avx2: xnn_init_hardware_config returned an unexpected address")
    flags = ctypes.c_uint64.from_address(config + 8)  # arch_flags, as its readers load it
    before = flags.value
    flags.value = before & XNN_AVX2_FLAGS
    return base, symbols, before


def chosen_kernels(base, symbols, config_name):
    """Names of the XNNPACK micro-kernels a config points at (its first 64 bytes)."""
    kernels = {address: name for name, address in symbols.items() if "ukernel" in name}
    start = base + symbols[config_name]
    words = (ctypes.c_uint64 * 8).from_address(start)
    return [kernels[w - base] for w in words if w - base in kernels]


def main():
    base, symbols, before = restrict_xnnpack()
    import cv2
    import torch

    from avgpool.__main__ import main as avgpool_main

    torch_isa, opencv = torch.backends.cpu.get_cpu_capability(), cv2.getCPUFeaturesLine()
    print(f"bench_avx2: XNNPACK arch flags {before:#x} -> {before & XNN_AVX2_FLAGS:#x}; "
          f"torch {torch_isa}; OpenCV {opencv}; onnxruntime and OpenVINO unrestricted",
          flush=True)
    # OpenCV marks a dispatched feature that OPENCV_CPU_DISABLE turned off with '?'
    if "AVX512" in torch_isa or any("AVX512" in f and not f.endswith("?") for f in opencv.split()):
        sys.exit("bench_avx2: torch or OpenCV kept its AVX-512 code")
    rc = avgpool_main(["bench"] + sys.argv[1:])
    used = {n: chosen_kernels(base, symbols, n) for n in ("f32_avgpool_config", "f32_rsum_config")}
    print(f"bench_avx2: XNNPACK's kernels: {used}")
    if any("avx512" in k for ks in used.values() for k in ks):
        sys.exit("bench_avx2: XNNPACK still ran AVX-512 kernels; the table above is not valid")
    return rc


if __name__ == "__main__":
    sys.exit(main())
