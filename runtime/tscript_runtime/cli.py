"""The `tsrt` command (also `python -m tscript_runtime`): inspect and run saved models."""
import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tsrt", description="Run tscript saved models (.tsm) with numpy "
                                     "and llvmlite only.")
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    parser.parse_args(argv)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
