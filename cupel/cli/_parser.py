"""The ``cupel`` argument parser (private)."""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence
from typing import Any, NoReturn

from cupel import __version__
from cupel._errors import CliError
from cupel.cli._config import (
    DEMO_MAX_TOKENS,
    DEMO_TARGET_TOKENS,
    PROG,
    overflow_names,
    placer_names,
    scorer_names,
    slicer_names,
)

__all__ = ["build_parser"]


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors become :class:`CliError` (one line, no usage)
    and that takes no abbreviated options (``--max-token`` is not ``--max-tokens``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see '{self.prog} --help')")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> tuple[Any, list[str]]:
        """A required flag missing next to an unknown ``--flag`` (perhaps the misspelt
        one) is reported with it, and a close match, not alone."""
        if args is not None and not self._subparsers:
            self._unknown_with_missing(list(args))
        return super().parse_known_args(args, namespace)

    def _unknown_with_missing(self, args: list[str]) -> None:
        given = {arg.split("=", 1)[0] for arg in args[: args.index("--") if "--" in args else None]}
        missing = [
            action.option_strings[0]
            for action in self._actions
            if action.required
            and action.option_strings
            and not given.intersection(action.option_strings)
        ]
        known = [flag for flag in self._option_string_actions if flag.startswith("--")]
        unknown = sorted(f for f in given if f.startswith("--") and f not in known)
        if not missing or not unknown:
            return
        close = difflib.get_close_matches(unknown[0], known, 1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        self.error(
            f"unrecognized arguments: {' '.join(unknown)}{hint}; the following arguments "
            f"are required: {', '.join(missing)}"
        )


def _config_flags() -> _Parser:
    flags = _Parser(add_help=False)
    group = flags.add_argument_group(
        "pipeline configuration",
        "either --policy or the individual flags (default: recency:3 + kind:1, greedy, "
        "chronological, dedup on, overflow throw)",
    )
    group.add_argument(
        "--policy",
        metavar="NAME|FILE",
        help="a preset (chat, code_review, rag, document_qa, tool_use, long_running, "
        "debugging) or a .json / .toml policy file",
    )
    group.add_argument(
        "--scorer",
        action="append",
        metavar="NAME[:WEIGHT]",
        help=f"repeatable; one of {', '.join(scorer_names())} (default: recency:3 + kind:1)",
    )
    group.add_argument(
        "--tag-weight", action="append", default=[], metavar="TAG=W", help="weights for tag"
    )
    group.add_argument(
        "--half-life", type=float, metavar="SECONDS", help="half-life for decay (system clock)"
    )
    group.add_argument(
        "--slicer",
        choices=slicer_names(),
        help="default: greedy; recency-window keeps the newest items that fit, without holes "
        "(items sharing metadata cupel:turn whole)",
    )
    group.add_argument("--bucket-size", type=int, metavar="N", help="knapsack bucket size (100)")
    group.add_argument("--placer", choices=placer_names(), help="default: chronological")
    group.add_argument("--no-dedup", action="store_true", help="keep duplicate contents")
    group.add_argument("--overflow", choices=overflow_names(), help="default: throw")
    _query_flag(flags)
    return flags


def _query_flag(flags: argparse.ArgumentParser) -> None:
    flags.add_argument(
        "--query",
        metavar="TEXT",
        help="the question a relevance scorer ranks by (--scorer relevance, or a policy with "
        "one); for a chat transcript it defaults to the latest user message",
    )


def _output_flags(*, html: bool) -> _Parser:
    flags = _Parser(add_help=False)
    group = flags.add_argument_group("output")
    group.add_argument(
        "--report",
        choices=("text", "json"),
        default="text",
        help="json: one machine-readable document on stdout (default: text)",
    )
    if html:
        group.add_argument(
            "--html", metavar="FILE", help="also write a self-contained HTML page of the selection"
        )
    return flags


def _budget_flags(*, demo: bool = False) -> _Parser:
    flags = _Parser(add_help=False)
    group = flags.add_argument_group("budget")
    group.add_argument(
        "--max-tokens",
        type=int,
        required=not demo,
        metavar="N",
        help=f"hard token ceiling (default {DEMO_MAX_TOKENS}, or more to fit the other flags)"
        if demo
        else "hard token ceiling",
    )
    group.add_argument(
        "--target-tokens",
        type=int,
        metavar="N",
        help=f"selection target (default {DEMO_TARGET_TOKENS}, or 3/4 of --max-tokens when "
        "that is given)"
        if demo
        else "selection target (default: max tokens)",
    )
    group.add_argument(
        "--output-reserve", type=int, default=0, metavar="N", help="tokens kept for output"
    )
    return flags


def _items_command(
    commands: argparse._SubParsersAction[_Parser], name: str, **options: Any
) -> _Parser:
    """A sub-command that reads items: its first argument is the item file."""
    command = commands.add_parser(name, **options)
    command.add_argument("items", metavar="ITEMS", help="item file, or - for stdin")
    return command


def build_parser() -> argparse.ArgumentParser:
    """The ``cupel`` parser: one sub-command per command."""
    parser = _Parser(prog=PROG, description="Deterministic, explainable context selection.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    config = _config_flags()
    budget = _budget_flags()
    with_html = _output_flags(html=True)
    select = _items_command(
        commands,
        "select",
        parents=[budget, config, with_html],
        help="select a context window from items (JSON array or JSON Lines)",
        description="Write the selected window (JSON) to stdout and a report to stderr; "
        'with --report json, write {"window": [...], "report": {...}} to stdout.',
    )
    select.add_argument(
        "--all",
        action="store_true",
        help="list every item in the report (default: a summary when the lists are long)",
    )
    _items_command(
        commands,
        "explain",
        parents=[budget, config, with_html],
        help="explain every decision of a selection, grouped by stage",
        description="A per-item account of a selection: for each stage (Classify, "
        "Score/Deduplicate, Slice, Place) the items it decided on, with score, decision, "
        "reason and its numbers, then a summary.",
    )
    compare = _items_command(
        commands,
        "compare",
        parents=[budget, _output_flags(html=False)],
        help="compare policies: which items each one includes or excludes",
        description="Run two or more policies over the same items and budget and show, "
        "for every item whose inclusion differs, what each policy decided.",
    )
    _query_flag(compare)
    compare.add_argument(
        "--policy",
        action="append",
        metavar="NAME|FILE",
        help="repeat at least twice; a preset name or a .json / .toml policy file",
    )
    min_budget = _items_command(
        commands,
        "min-budget",
        parents=[config, _output_flags(html=False)],
        help="find the smallest budget at which an item is selected",
        description="Binary-search the smallest budget (max tokens = target tokens) at "
        "which the item is included. The item is the one whose content equals CONTENT, or "
        "else the only one whose content starts with it.",
    )
    min_budget.add_argument(
        "--item", required=True, metavar="CONTENT", help="the item's content (or a prefix)"
    )
    min_budget.add_argument(
        "--search-ceiling",
        type=int,
        metavar="N",
        help="largest budget to try (default: the total tokens of all items)",
    )
    demo = commands.add_parser(
        "demo",
        parents=[_budget_flags(demo=True), config, with_html],
        help="run the pipeline on a shipped agent conversation and explain the selection",
    )
    demo.add_argument("--all", action="store_true", help="list every item of the window")
    conformance = commands.add_parser("conformance", help="run conformance vectors (TOML)")
    conformance.add_argument("paths", nargs="*", metavar="PATH", help="default: conformance/")
    conformance.add_argument(
        "--report",
        choices=("text", "json"),
        default="text",
        help="json: a machine-readable summary on stdout (default: text)",
    )
    conformance.add_argument("--json", action="store_true", help="the same as --report json")
    return parser
