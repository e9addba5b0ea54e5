"""The `tscript` command (also `python -m tscript`)."""
import argparse
import sys


def _demo(args) -> int:
    """The main job, end to end. Until compilation exists it is an eager tour of the library."""
    from . import demo
    demo.run(seed=args.seed)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tscript", description="tscript: trace, optimize, compile and "
                                     "save PyTorch-style models.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="run the built-in end-to-end demo")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.set_defaults(func=_demo)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
