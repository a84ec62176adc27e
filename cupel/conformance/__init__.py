"""The conformance runner: run the Cupel specification's TOML vectors against cupel.

From the command line::

    python -m cupel.conformance [PATH ...] [--json]     # or: cupel conformance ...

With no path it runs the repository's ``conformance/`` directory. Each failed assertion
prints ``FAIL <path>: <difference>``; the last line is ``N passed, N failed``. The exit
status is 1 when a vector fails, 2 when the paths are unusable, else 0.

From Python::

    >>> from cupel.conformance import run_paths
    >>> result = run_paths(["conformance/required"])      # doctest: +SKIP
    >>> result.summary()                                  # doctest: +SKIP
    '42 passed, 0 failed'

The vector format is the spec's chapter "Test Vector Format" plus the keys documented in
``conformance/README.md``. Unknown stages and types are failures, never skips. An unknown
key that nearly matches a known one (``pined`` for ``pinned``) fails its vector; any
other unknown key is ignored with a ``WARN <path>: ...`` line on stderr (and in the
``--json`` report), so vectors from a newer suite still run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from cupel._errors import VectorError
from cupel._public import publish
from cupel.conformance._builders import (
    build_budget,
    build_item,
    build_placer,
    build_scored_item,
    build_scorer,
    build_slicer,
    scorer_entries,
)
from cupel.conformance._runner import (
    STAGES,
    ConformanceResult,
    VectorResult,
    check_vector,
    discover,
    run_paths,
    run_vector,
)

__all__ = [
    "STAGES",
    "ConformanceResult",
    "VectorError",
    "VectorResult",
    "build_budget",
    "build_item",
    "build_placer",
    "build_scored_item",
    "build_scorer",
    "build_slicer",
    "check_vector",
    "default_vector_dir",
    "discover",
    "main",
    "report",
    "run_paths",
    "run_vector",
    "scorer_entries",
]


def default_vector_dir() -> Path | None:
    """The repository's ``conformance/`` directory (next to the ``cupel`` package), else
    ``./conformance``; ``None`` when neither exists."""
    package_parent = Path(__file__).resolve().parents[2]  # <parent>/cupel/conformance/
    for candidate in (package_parent / "conformance", Path("conformance")):
        if candidate.is_dir():
            return candidate
    return None


def report(
    paths: Sequence[str],
    *,
    as_json: bool = False,
    prog: str = "cupel-conformance",
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run ``paths`` (or the default directory), print the results, return the exit status."""
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    if not paths:
        default = default_vector_dir()
        if default is None:
            print(
                f"{prog}: error: no conformance/ directory found next to the cupel package "
                "or in the current directory; pass the vector paths explicitly",
                file=err,
            )
            return 2
        paths = [str(default)]
    try:
        files = discover(paths)
    except FileNotFoundError as exc:
        print(f"{prog}: error: {exc}", file=err)
        return 2
    if not files:
        print(f"{prog}: error: no .toml vectors found under {', '.join(paths)}", file=err)
        return 2
    result = ConformanceResult(tuple(run_vector(f, display=d) for f, d in files))
    status = 0 if result.ok else 1
    try:
        if as_json:
            print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False), file=out)
        else:
            for line in result.warning_lines():
                print(line, file=err)
            for line in result.failure_lines():
                print(line, file=out)
            print(result.summary(), file=out)
        out.flush()
    except BrokenPipeError:  # the reader went away (``... | head``): keep the status
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m cupel.conformance [PATH ...] [--json]``."""
    parser = argparse.ArgumentParser(
        prog="python -m cupel.conformance",
        description="Run Cupel conformance vectors (TOML) against cupel.",
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="vector files or directories (default: conformance/)",
    )
    parser.add_argument("--json", action="store_true", help="print a machine-readable report")
    args = parser.parse_args(argv)
    return report(args.paths, as_json=args.json, prog=parser.prog)


publish(__name__, globals(), __all__)
