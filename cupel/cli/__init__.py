"""The ``cupel`` command line.

::

    cupel select ITEMS --max-tokens N [options]    select a window from JSON / JSONL items
    cupel explain ITEMS --max-tokens N [options]   every decision, grouped by stage
    cupel compare ITEMS --max-tokens N --policy A --policy B [...]
                                                   which items swing between policies
    cupel min-budget ITEMS --item CONTENT [options]
                                                   the smallest budget that includes an item
    cupel demo [options]                           run a pipeline on a shipped example
    cupel conformance [PATH ...] [--json]          run the conformance vectors

The pipeline comes from ``--policy NAME|FILE`` (a preset name or a ``.json`` / ``.toml``
policy file) or from the individual ``--scorer`` / ``--slicer`` / ``--placer`` / ...
flags, not both. ``select`` writes the selected window (item wire format, placed order)
as a JSON array to stdout and a readable report to stderr (summarised when long; ``--all``
lists every item); with ``--report json`` it writes ``{"window": [...], "report": {...}}``
to stdout instead. ``--report json`` makes every command print one strict JSON document
(the ``SelectionReport`` wire form plus the command's own fields) on stdout; ``--html
FILE`` (select, explain, demo) writes a self-contained HTML page of the selection.
``python -m cupel`` is the same program; ``cupel --version`` prints the version.

Exit status: 0 on success; 1 when a conformance vector fails; 2 on input errors
(unreadable file, bad JSON, invalid item, policy, budget or flag) and on a selection the
configuration refuses (pinned items or overflow under ``--overflow throw``), each
reported as one ``cupel: error: ...`` line; 130 after Ctrl-C (one ``cupel: interrupted``
line). Degenerate input (no items, a decay
half-life that scores every dated item 0) gets a ``cupel: warning: ...`` line on stderr.
Options are never abbreviated; progress bars appear on stderr only when it is a terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
from collections.abc import Sequence

from cupel._errors import CliError, CupelError, PinnedBudgetError, TableTooLargeError
from cupel.cli._commands import COMMANDS, load_items
from cupel.cli._config import DEMO_DATA, PROG, build_pipeline, load_policy
from cupel.cli._format import format_demo, format_report, pinned_message, table_message
from cupel.cli._io import parse_items, terminal_safe
from cupel.cli._parser import build_parser

__all__ = [
    "DEMO_DATA",
    "EXIT_INTERRUPTED",
    "CliError",
    "build_pipeline",
    "format_demo",
    "format_report",
    "load_items",
    "load_policy",
    "main",
    "parse_items",
]

EXIT_INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT), as shells and other tools use."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``cupel`` command line; returns the exit status (0 success, 1 failing
    conformance vectors, 2 bad input, 130 interrupted)."""
    frozen = gc.get_freeze_count()
    try:
        return _main(argv)
    finally:
        if not frozen:  # the input, kept out of collections while a command ran
            gc.unfreeze()


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args: argparse.Namespace | None = None
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            raise CliError(
                "a command is required: select, explain, compare, min-budget, demo or "
                "conformance (see 'cupel --help')"
            )
        status: int = COMMANDS[args.command](args)
        return status
    except SystemExit as exc:  # --help / --version
        return exc.code if isinstance(exc.code, int) else 0
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's status for SIGINT
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"\n{PROG}: interrupted\n")
            sys.stderr.flush()
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (``cupel demo | head``): not an error
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except TableTooLargeError as exc:
        message = table_message(exc, args)
    except PinnedBudgetError as exc:
        message = pinned_message(exc, args)
    except CupelError as exc:
        message = str(exc)
    except (ValueError, OSError) as exc:
        message = f"{type(exc).__name__}: {exc}"
    print(terminal_safe(f"{PROG}: error: {message}"), file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
