"""Command line: ``python -m avgpool info`` and ``python -m avgpool bench``."""

import argparse
import sys
from typing import List, Optional


def _version() -> str:
    from avgpool import __version__

    return __version__


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m avgpool")
    parser.add_argument("--version", action="version", version=f"avgpool {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    from avgpool._explain import SPEC_HELP

    info = sub.add_parser("info", help="print version, build flags, kernel instruction set, "
                                       "thread settings and the output cache",
                          epilog=SPEC_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    info.add_argument("--explain", metavar="SPEC",
                      help="print the kernel path a call takes and why, instead (see below)")
    bench = sub.add_parser("bench", help="time avgpool against the installed peers")
    bench.add_argument("--threads", type=int, default=None,
                       help="threads for avgpool and every peer (default: all cores)")
    bench.add_argument("--quick", action="store_true", help="fewer repeats, no out-of-cache case")
    bench.add_argument("--cases", default="", metavar="SUBSTR",
                       help="only cases whose id contains SUBSTR (--torch and --scale-out too)")
    bench.add_argument("--json", metavar="PATH", help="write every timing to PATH")
    bench.add_argument("--plot", metavar="PATH.png", help="bar chart per case (needs matplotlib)")
    bench.add_argument("--no-progress", action="store_true", help="no progress bar")
    bench.add_argument("--alloc", action="store_true",
                       help="avgpool allocates its output per call instead of reusing out=")
    bench.add_argument("--torch", action="store_true",
                       help="avgpool.torch against torch.nn.functional: forward and backward, "
                            "NCHW and channels last (instead of the peer comparison)")
    bench.add_argument("--scale-out", action="store_true",
                       help="avgpool.xarray on a 2-worker dask.distributed cluster against "
                            "xarray's coarsen / rolling and map_overlap + OpenCV / scipy, on a zarr "
                            "raster written to disk (instead of the peer comparison)")
    bench.add_argument("--scale-gib", type=float, default=8.0, metavar="GIB",
                       help="--scale-out raster size (default 8; --quick: 0.25)")
    bench.add_argument("--scale-dir", default=None, metavar="DIR",
                       help="--scale-out: where to write the zarr stores (default: the temp dir)")
    bench.add_argument("--scale-timeout", type=float, default=900.0, metavar="S",
                       help="--scale-out: stop a method after S seconds (default 900)")
    bench.add_argument("--scale-memory", default="6GiB", metavar="SIZE",
                       help="--scale-out: memory limit of each worker (default 6GiB)")
    bench.add_argument("--contended", action="store_true",
                       help="time everything again beside a process spinning on one core and "
                            "report each one's slowdown")
    args = parser.parse_args(argv)
    if args.command == "info":
        import avgpool

        if args.explain is not None:
            try:
                print(avgpool._explain.explain_spec(args.explain))
            except (ValueError, TypeError) as e:
                print(f"error: {e}", file=sys.stderr)
                return 2
            return 0
        for key, value in avgpool.info().items():
            print(f"{key:20s} {value}")
        return 0
    from avgpool import _bench

    return _bench.main(args)


if __name__ == "__main__":
    sys.exit(main())
