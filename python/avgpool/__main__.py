"""Command line: ``python -m avgpool info``."""

import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m avgpool", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="print version, build flags and thread settings")
    args = parser.parse_args(argv)
    if args.command == "info":
        import avgpool

        for key, value in avgpool.info().items():
            print(f"{key:20s} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
