"""What the command line runs (private): its constants, the budget its flags give, and
the pipeline: ``--policy NAME|FILE``, or the configuration flags turned into a
:class:`~cupel.policy.Policy` and built like any other (one vocabulary: the scorers and
slicers ``--scorer`` / ``--slicer`` offer, and what their flags set, are the components'
own parameters).

>>> scorer_names()
('recency', 'priority', 'kind', 'tag', 'frequency', 'reflexive', 'metadata-trust', 'decay',
 'relevance')
>>> slicer_names()
('greedy', 'knapsack', 'recency-window')
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from cupel._errors import CliError, CupelError, PolicyError
from cupel._model import ContextBudget, OverflowStrategy
from cupel._pipeline import Pipeline
from cupel.policy import Policy, resolve_pipeline
from cupel.policy._derive import spec_of
from cupel.policy._specs import PLACERS, SCORERS, SLICERS, type_name
from cupel.presets import PRESET_NAMES, preset
from cupel.scorers import TagScorer

__all__ = [
    "DEFAULT_SCORERS",
    "DEMO_DATA",
    "DEMO_MAX_TOKENS",
    "DEMO_TARGET_TOKENS",
    "PROG",
    "TRANSCRIPT_POLICY",
    "bucket_flag",
    "budget_from_flags",
    "build_pipeline",
    "configured",
    "describe_config",
    "load_policy",
    "overflow_names",
    "placer_names",
    "policy_from_flags",
    "scorer_names",
    "slicer_names",
    "with_query",
]

PROG = "cupel"
DEMO_DATA = "demo_chat.jsonl"
"""The example shipped in ``cupel/data`` (an agent debugging a failed deployment, as an
OpenAI-style chat transcript)."""
TRANSCRIPT_POLICY = "chat"
"""The policy a chat transcript gets when no configuration flag is given: the coherent
conversation window (the system prompt, the latest user message, then the newest whole
turns and tool rounds that fit, without holes)."""
DEFAULT_SCORERS = ("recency:3", "kind:1")
DEMO_MAX_TOKENS = 8000
DEMO_TARGET_TOKENS = 6000

FLAGS = {"tag_weights": "--tag-weight", "curve": "--half-life", "bucket_size": "--bucket-size"}
"""The component parameters a configuration flag sets (every other parameter keeps its
default)."""


def _offered(classes: tuple[type, ...]) -> tuple[str, ...]:
    """The components whose required parameters the flags can give, by their policy
    ``type`` (hyphenated, as on the command line)."""
    return tuple(
        type_name(cls).replace("_", "-")
        for cls in classes
        if all(
            key in FLAGS
            for key, field in spec_of(cls).model_fields.items()
            if key != "type" and field.is_required()
        )
    )


def scorer_names() -> tuple[str, ...]:
    """The scorers ``--scorer`` offers."""
    return _offered(SCORERS)


def slicer_names() -> tuple[str, ...]:
    """The slicers ``--slicer`` offers."""
    return _offered(SLICERS)


def overflow_names() -> tuple[str, ...]:
    """The strategies ``--overflow`` offers."""
    return tuple(member.folded() for member in OverflowStrategy)


def placer_names() -> tuple[str, ...]:
    """The placers ``--placer`` offers."""
    return tuple(type_name(cls).replace("_", "-") for cls in PLACERS)


def _scorer_spec(spec: str) -> tuple[str, float]:
    name, sep, weight = spec.partition(":")
    name = name.strip().lower().replace("_", "-")
    names = scorer_names()
    if name not in names:
        raise CliError(f"unknown scorer {name!r} (choose from {', '.join(names)})")
    if not sep:
        return name, 1.0
    try:
        value = float(weight)
    except ValueError:
        raise CliError(f"--scorer {spec}: weight {weight!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise CliError(f"--scorer {spec}: weight must be a positive number")
    return name, value


def _tag_weights(specs: Sequence[str]) -> dict[str, float]:
    weights = {}
    for spec in specs:
        tag, sep, weight = spec.partition("=")
        try:
            if not sep or not tag:
                raise ValueError
            weights[tag] = float(weight)
        except ValueError:
            raise CliError(f"--tag-weight {spec!r}: expected TAG=WEIGHT") from None
    return weights


def _half_life(args: argparse.Namespace) -> float:
    """``--half-life`` in seconds, checked in the flag's own words."""
    if args.half_life is None:
        raise CliError("--scorer decay needs --half-life SECONDS")
    seconds: float = args.half_life
    if not (math.isfinite(seconds) and seconds > 0):
        raise CliError(f"--half-life must be a positive number of seconds, got {seconds:g}")
    try:
        half_life = timedelta(seconds=seconds)
    except OverflowError:
        raise CliError(f"--half-life {seconds:g}: too large for a duration") from None
    if half_life <= timedelta(0):
        raise CliError(f"--half-life {seconds:g}: rounds to zero (the unit is a microsecond)")
    return seconds


def _scorer_table(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The policy table of one ``--scorer`` (its flags set the parameters they name)."""
    table: dict[str, Any] = {"type": name.replace("-", "_")}
    if name == "tag":
        if not args.tag_weight:
            raise CliError("--scorer tag needs at least one --tag-weight TAG=WEIGHT")
        weights = _tag_weights(args.tag_weight)
        TagScorer(weights)  # the weights checked in the scorer's own words, as before
        table["tag_weights"] = weights
    elif name == "decay":
        table["curve"] = {"type": "exponential", "half_life_secs": _half_life(args)}
    return table


def _slicer_table(args: argparse.Namespace) -> dict[str, Any]:
    name = (args.slicer or "greedy").replace("-", "_")
    if name == "knapsack":
        bucket_size = 100 if args.bucket_size is None else args.bucket_size
        if bucket_size <= 0:
            raise CliError(f"--bucket-size must be a positive integer, got {bucket_size}")
        return {"type": name, "bucket_size": bucket_size}
    if args.bucket_size is not None:
        raise CliError("--bucket-size applies only with --slicer knapsack")
    return {"type": name}


def policy_from_flags(args: argparse.Namespace) -> Policy:
    """The policy the configuration flags describe (defaults: recency:3 + kind:1, greedy,
    chronological, deduplication on, overflow throw)."""
    specs = [_scorer_spec(s) for s in (args.scorer or DEFAULT_SCORERS)]
    names = {name for name, _ in specs}
    if args.tag_weight and "tag" not in names:
        raise CliError("--tag-weight applies only with --scorer tag")
    if args.half_life is not None and "decay" not in names:
        raise CliError("--half-life applies only with --scorer decay")
    tables = [(_scorer_table(name, args), weight) for name, weight in specs]
    scorer = (
        tables[0][0]
        if len(tables) == 1
        else {"type": "composite", "scorers": [{"weight": w, "scorer": t} for t, w in tables]}
    )
    data = {
        "scorer": scorer,
        "slicer": _slicer_table(args),
        "placer": args.placer or "chronological",
        "deduplication": not args.no_dedup,
        "overflow_strategy": args.overflow or "throw",
    }
    try:
        return Policy.from_dict(data)
    except PolicyError as exc:
        raise CliError(_in_flag_words(exc)) from None


def _in_flag_words(exc: PolicyError) -> str:
    """A policy error from the flags, naming the flag (``--tag-weight: must be >= 0``)."""
    parts = []
    for path, rule, _ in exc.problems:
        flag = next((f for key, f in FLAGS.items() if key in path), None)
        if flag is None and path.endswith(".weight"):
            flag = "--scorer"
        parts.append(f"{flag}: {rule}" if flag is not None else f"{path}: {rule}")
    return "; ".join(parts)


_CONFIG_FLAGS = (
    "scorer",
    "tag_weight",
    "half_life",
    "slicer",
    "bucket_size",
    "placer",
    "no_dedup",
    "overflow",
)
"""The configuration flags (``--tag-weight``), by their ``argparse`` names."""


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def load_policy(spec: str) -> Policy:
    """The policy ``spec`` names: a preset name, or the path of a ``.json`` / ``.toml`` file."""

    if not spec.lower().endswith((".json", ".toml")):
        try:
            return preset(spec)
        except PolicyError:
            raise CliError(
                f"--policy {spec!r} is neither a preset ({', '.join(PRESET_NAMES)}) "
                "nor a .json / .toml policy file"
            ) from None
    try:
        return Policy.load(spec)
    except OSError as exc:
        raise CliError(f"--policy: cannot read {spec}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise CliError(f"--policy {spec}: not UTF-8 text ({exc.reason})") from None
    except PolicyError as exc:
        raise CliError(f"policy file {spec}: {exc}") from None


def _given(value: object) -> bool:
    """Whether a configuration flag was given (``0`` counts: ``--bucket-size 0`` was)."""
    return value is not None and value is not False and value != []


def configured(args: argparse.Namespace) -> bool:
    """Whether ``--policy`` or any configuration flag was given."""
    return getattr(args, "policy", None) is not None or any(
        _given(getattr(args, dest, None)) for dest in _CONFIG_FLAGS
    )


def build_pipeline(args: argparse.Namespace, *, transcript: bool = False) -> Pipeline:
    """The pipeline the configuration flags (or ``--policy``) describe; for a chat
    ``transcript`` without any, the conversation window (:data:`TRANSCRIPT_POLICY`)."""
    policy = getattr(args, "policy", None)
    if transcript and not configured(args):
        return resolve_pipeline(preset(TRANSCRIPT_POLICY))
    if policy is None:
        return resolve_pipeline(policy_from_flags(args))
    given = [_flag(dest) for dest in _CONFIG_FLAGS if _given(getattr(args, dest))]
    if given:
        raise CliError(
            f"--policy cannot be combined with {', '.join(given)}: the policy sets the "
            "scorer, slicer, placer, deduplication and overflow strategy"
        )
    return resolve_pipeline(load_policy(policy))


def with_query(
    pipeline: Pipeline, args: argparse.Namespace, latest_user: str | None, transcript: bool
) -> tuple[Pipeline, str | None]:
    """``pipeline`` with its unbound relevance scorers bound to ``--query``, or for a chat
    ``transcript`` without it to the latest user message (``latest_user``); and the query
    bound (``None`` when the pipeline needed none). A pipeline that needs a query without
    one to have, or ``--query`` for a pipeline that needs none, is a :class:`CliError`."""
    query: str | None = getattr(args, "query", None)
    if not pipeline.needs_query:
        if query is not None:
            raise CliError(
                "--query applies only with a relevance scorer that has no query of its own "
                "(--scorer relevance, or a policy with a relevance scorer)"
            )
        return pipeline, None
    if query is None:
        query = latest_user
    if query is None:
        where = (
            "the transcript has no user message"
            if transcript
            else "or give a chat transcript: its latest user message is the query"
        )
        raise CliError(f"the relevance scorer needs a query: give --query TEXT ({where})")
    return pipeline.with_query(query), query


def describe_config(args: argparse.Namespace, *, transcript: bool = False) -> str:
    """The configuration in one line: how the items were chosen."""
    policy = getattr(args, "policy", None)
    if transcript and not configured(args):
        return (
            f"policy {TRANSCRIPT_POLICY} (the default for chat transcripts): the system "
            "prompt, the latest user message, then the newest whole turns and tool rounds "
            "that fit, without holes (the oldest kept turn may keep just its question and "
            "latest messages)"
        )
    if policy is not None:
        try:  # read already: a preset's or policy file's own description, or none
            description = load_policy(policy).description
        except CliError:
            description = None
        return f"policy {policy}" + (f": {description}" if description else "")
    scorers = " + ".join(spec.replace(":", " ×", 1) for spec in (args.scorer or DEFAULT_SCORERS))
    slicer = args.slicer or "greedy"
    if slicer == "knapsack":
        bucket = 100 if args.bucket_size is None else args.bucket_size
        chosen = f"the best total score that fits (knapsack, buckets of {bucket} tokens)"
    else:
        chosen = _SLICER_WORDS[slicer]
    placer = args.placer or "chronological"
    dedup = "copies kept" if args.no_dedup else "duplicates removed"
    return (
        f"scored by {scorers}; {chosen}; {_PLACER_WORDS[placer]}; {dedup}; "
        f"{_OVERFLOW_WORDS[args.overflow or 'throw']}"
    )


_SLICER_WORDS = {
    "greedy": "the best score per token first, while it fits (greedy)",
    "recency-window": "the newest items that fit, without holes (recency window)",
}
_PLACER_WORDS = {
    "chronological": "placed oldest first (chronological)",
    "u-shaped": "the best at both ends (u-shaped)",
}
_OVERFLOW_WORDS = {
    "throw": "over the target: an error",
    "truncate": "over the target: the lowest scores dropped",
    "proceed": "over the target: sent with a warning",
}


def budget_from_flags(args: argparse.Namespace) -> ContextBudget:
    """The budget the flags give; defaults derive from what the user typed.

    ``select``, ``explain`` and ``compare``: ``--max-tokens`` is required and the target
    defaults to it. ``demo`` (which has no required flags): 8,000 / 6,000 when neither
    is given; ``--max-tokens N`` alone targets 3/4 of N (the demo's ratio); without
    ``--max-tokens``, the max grows past 8,000 to fit the target plus the output reserve.
    """
    max_tokens, target = args.max_tokens, args.target_tokens
    if getattr(args, "command", None) == "demo":
        if max_tokens is None:
            target = DEMO_TARGET_TOKENS if target is None else target
            max_tokens = max(DEMO_MAX_TOKENS, target + args.output_reserve)
        elif target is None:
            target = max_tokens * 3 // 4
    elif target is None:
        target = max_tokens
    try:
        return ContextBudget(
            max_tokens=max_tokens, target_tokens=target, output_reserve=args.output_reserve
        )
    except CupelError as exc:
        message = str(exc).removeprefix("ContextBudget.")
        for field in ("max_tokens", "target_tokens", "output_reserve"):
            message = message.replace(field, _flag(field))
        raise CliError(f"invalid budget: {message}") from None


def bucket_flag(args: argparse.Namespace) -> str:
    return "the policy's bucket_size" if getattr(args, "policy", None) else "--bucket-size"
