"""``pypto-runtime``: program mode from the command line (also ``python -m pypto.runtime``).

Subcommands:
    run ARTIFACT       run a compiled program on ``.npy`` inputs, write its outputs
    inspect ARTIFACT   show an artifact's metadata (``--json`` for scripts)
    compile FILE::FN   specialise a ``@pl.jit`` function and compile it into the store
    cache ...          inspect and maintain the artifact store

ARTIFACT is an artifact directory or a store key (or a prefix naming one entry).

Exit status: 0 ok; 1 loading, compiling or running failed; 2 usage (unknown option, no such
artifact, a parameter missing or unknown, an input file that cannot be read or does not
match its parameter).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from pypto.runtime.cli import cache, compile, inspect, run
from pypto.runtime.cli._common import EXIT_FAILED, CommandError, plain

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pypto-runtime", description=plain(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    from pypto.runtime import __version__

    parser.add_argument("--version", action="version", version=f"pypto-runtime {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-q", "--quiet", action="store_true", help="no progress and no report; errors still go to stderr"
    )
    sub = parser.add_subparsers(dest="group", required=True, metavar="{run,inspect,compile,cache}")
    run.add_parser(sub, common)
    inspect.add_parser(sub, common)
    compile.add_parser(sub, common)
    cache.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except CommandError as exc:
        print(f"pypto-runtime {args.group}: error: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print(f"pypto-runtime {args.group}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `pypto-runtime inspect KEY --json | head`: the reader left
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes stdout
        return EXIT_FAILED
