"""A self-contained HTML page of one selection (``cupel select|explain|demo --html FILE``).

Package-private. The page has inline CSS (``cupel/data/report.css``), no external assets
and no script: a header with budget use and totals, a map of the budget, the context window
in placed order (each row with a token bar proportional to its tokens, a score bar, a kind
badge and the reason), then the excluded items grouped by reason with their numbers. Every piece
of user content goes through :func:`html.escape`.

>>> from cupel import ContextItem, ContextBudget, Pipeline, RecencyScorer
>>> report = Pipeline(RecencyScorer()).dry_run(
...     [ContextItem(content="<b>hi</b>", tokens=3)], ContextBudget(max_tokens=9, target_tokens=9)
... ).report
>>> page = render_html(report, ContextBudget(max_tokens=9, target_tokens=9), title="t")
>>> "&lt;b&gt;hi&lt;/b&gt;" in page and "<b>hi</b>" not in page
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from html import escape
from importlib import resources

from cupel._model import ContextBudget, ContextItem
from cupel.cli._wording import considered, count, reason_detail, shortfall_text
from cupel.diagnostics import (
    ExcludedItem,
    IncludedItem,
    InclusionReason,
    PipelineStage,
    SelectionReport,
)

__all__ = ["render_html"]

PREVIEW = 160
"""Characters of content shown on a row; longer content folds into a ``<details>``."""

_KIND_CLASSES = {
    "systemprompt": "k-system",
    "message": "k-message",
    "tooloutput": "k-tool",
    "document": "k-document",
    "memory": "k-memory",
}
_REASON_NOTES = {
    "NegativeTokens": "A negative token count; excluded before scoring (Classify).",
    "Deduplicated": "Byte-identical to an item that was kept; the best-scored copy stays.",
    "BudgetExceeded": "Did not fit in what was left of the budget when its turn came.",
    "PinnedOverride": "Would have fitted, but pinned items took the room.",
    "CountCapExceeded": "Its kind had already reached the count quota's cap.",
    "PackingChoice": "Fits the tokens left, but scores under 0.0001, which adds nothing to "
    "the knapsack's total: its best-scoring packing leaves it out.",
    "OutsideWindow": "Older than the recency window, which keeps the newest units that fit "
    "without holes.",
    "InvalidToolCall": "A tool call or result a chat-model provider would reject; left out "
    "before selection.",
}


def _css() -> str:
    """The page's stylesheet (``cupel/data/report.css``)."""
    return (resources.files("cupel.data") / "report.css").read_text(encoding="utf-8")


def _kind_class(item: ContextItem) -> str:
    return _KIND_CLASSES.get(str(item.kind).lower(), "k-other")


def _pct(part: float, whole: float) -> float:
    return 0.0 if whole <= 0 else max(0.0, min(100.0, 100.0 * part / whole))


def _content(item: ContextItem) -> str:
    text = item.content
    if len(text) <= PREVIEW:
        return f'<div class="content">{escape(text)}</div>'
    preview = " ".join(text[:PREVIEW].split()) + "…"
    return f'<details class="content"><summary>{escape(preview)}</summary>{escape(text)}</details>'


def _row(
    entry: IncludedItem | ExcludedItem,
    position: str,
    token_scale: int,
    *,
    stage: str | None = None,
    describe: Callable[[ExcludedItem], str] | None = None,
) -> str:
    item = entry.item
    score_text = f"{entry.score:.3f}"
    if isinstance(entry, IncludedItem):
        reason_name = entry.reason.value
        described = "" if entry.reason is InclusionReason.SCORED else reason_detail(entry)
        if entry.reason is InclusionReason.PINNED:
            score_text = "pinned"
    else:
        reason_name = entry.reason.name
        described = entry.reason.describe() if describe is None else describe(entry)
    detail = described.split(": ", 1)[1] if ": " in described else described
    width = _pct(item.tokens, token_scale)
    score_width = _pct(entry.score, 1.0)
    where = f" <span class=num>at {escape(stage)}</span>" if stage else ""
    return (
        f'<li class="row item" data-tokens="{item.tokens}" data-score="{entry.score!r}" '
        f'data-kind="{escape(str(item.kind))}" data-reason="{escape(reason_name)}">'
        f'<span class="pos">{escape(position)}</span>'
        f'<span><span class="badge {_kind_class(item)}">{escape(str(item.kind))}</span></span>'
        f'<span><span class="num">{item.tokens:,} tokens</span>'
        f'<div class="bar tokens"><span style="width:{width:.4f}%"></span></div></span>'
        f'<span><span class="num">{escape(score_text)}</span>'
        f'<div class="bar score"><span style="width:{score_width:.4f}%"></span></div></span>'
        f'<span class="reason"><b>{escape(reason_name)}</b>{"<br>" if detail else ""}'
        f"{escape(detail)}{where}</span>"
        f"{_content(item)}</li>"
    )


_HEAD_ROW = (
    '<li class="row head"><span class="pos">#</span><span>kind</span><span>tokens</span>'
    "<span>score</span><span>reason</span><span>content</span></li>"
)


def _stat(label: str, value: str, note: str = "") -> str:
    small = f" <small>{escape(note)}</small>" if note else ""
    return f'<div class="stat"><dt>{escape(label)}</dt><dd>{escape(value)}{small}</dd></div>'


def render_html(
    report: SelectionReport,
    budget: ContextBudget,
    *,
    title: str,
    subtitle: str = "",
    stage_of: Mapping[int, PipelineStage] | None = None,
    describe: Callable[[ExcludedItem], str] | None = None,
) -> str:
    """The page for ``report`` under ``budget``.

    ``stage_of`` (``id`` of an excluded entry → stage) adds the excluding stage to each
    excluded row; ``describe`` words each exclusion (default: the reason's
    ``describe()``), so the page says what the text reports say.
    """
    included, excluded = report.included, report.excluded
    used = sum(e.item.tokens for e in included)
    token_scale = max([1, *(e.item.tokens for e in included), *(e.item.tokens for e in excluded)])
    scale = max(budget.max_tokens, used, 1)
    target_pct = _pct(used, budget.target_tokens) if budget.target_tokens else 0.0
    max_pct = _pct(used, budget.max_tokens) if budget.max_tokens else 0.0
    out: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>\n{_css()}</style></head><body><main>",
        f"<h1>{escape(title)}</h1>",
        f'<p class="sub">{escape(subtitle)}</p>' if subtitle else "",
        '<dl class="stats">',
        _stat("included", f"{len(included):,}", f"of {report.total_candidates:,} items"),
        _stat("tokens used", f"{used:,}", f"of {considered(report)}"),
        _stat("of target", f"{target_pct:.1f}%", f"target {budget.target_tokens:,}"),
        _stat("of max", f"{max_pct:.1f}%", f"max {budget.max_tokens:,}"),
        "</dl>",
    ]
    # The budget map: the bar is max_tokens wide; segments are the window's items.
    out.append('<div class="map" role="img" aria-label="token budget map">')
    for entry in included:
        item = entry.item
        out.append(
            f'<span class="seg {_kind_class(item)}" style="width:{_pct(item.tokens, scale):.4f}%"'
            f' title="{escape(_title(item))}"></span>'
        )
    if budget.output_reserve:
        out.append(
            f'<span class="reserve" style="width:{_pct(budget.output_reserve, scale):.4f}%"'
            ' title="output reserve"></span>'
        )
    out.append(
        f'<span class="target" style="left:{_pct(budget.target_tokens, scale):.4f}%"'
        f' title="target {budget.target_tokens:,} tokens"></span></div>'
    )
    kinds = sorted({str(e.item.kind): _kind_class(e.item) for e in included}.items())
    legend = "".join(f'<span><i class="seg {c}"></i>{escape(k)}</span>' for k, c in kinds)
    out.append(
        f'<div class="legend">{legend}<span>▮ target ({budget.target_tokens:,})</span>'
        + (
            f"<span>hatched: output reserve ({budget.output_reserve:,})</span>"
            if budget.output_reserve
            else ""
        )
        + f"<span>bar width: max tokens ({budget.max_tokens:,})</span></div>"
    )
    for shortfall in report.count_requirement_shortfalls:
        out.append(f'<p class="notes">{escape(shortfall_text(shortfall))}</p>')
    if report.overflow is not None:
        out.append(
            f'<p class="notes">overflow: the window exceeds its target by '
            f"{report.overflow.tokens_over_budget:,} tokens</p>"
        )

    out.append(
        f'<section id="window"><h2>Context window — {len(included):,} items, '
        f"{used:,} tokens, placed order</h2>"
    )
    if included:
        out.append('<ol class="rows">' + _HEAD_ROW)
        out += [_row(e, str(i), token_scale) for i, e in enumerate(included, start=1)]
        out.append("</ol>")
    else:
        out.append('<p class="empty">Nothing was selected.</p>')
    out.append("</section>")

    out.append(
        f'<section id="excluded" class="excluded"><h2>Excluded — {len(excluded):,} items</h2>'
    )
    groups: dict[str, list[ExcludedItem]] = {}
    for dropped in excluded:
        groups.setdefault(dropped.reason.name, []).append(dropped)
    if not groups:
        out.append('<p class="empty">Every candidate made it into the window.</p>')
    for name, entries in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        tokens = sum(e.item.tokens for e in entries)
        note = _REASON_NOTES.get(name, "")
        out.append(
            f'<section class="group" data-reason="{escape(name)}"><header>'
            f"<h3>{escape(name)} <span class=num>· {count(len(entries), 'item')} · "
            f"{tokens:,} tokens</span></h3>" + (f"<p>{escape(note)}</p>" if note else "")
        )
        out.append('</header><ol class="rows">' + _HEAD_ROW)
        for dropped in entries:
            stage = stage_of.get(id(dropped)) if stage_of is not None else None
            label = stage.value if isinstance(stage, PipelineStage) else None
            out.append(_row(dropped, "–", token_scale, stage=label, describe=describe))
        out.append("</ol></section>")
    out.append("</section>")
    out.append(
        "<footer>Generated by cupel. Token bars are proportional to the largest item on "
        "this page; score bars span 0 to 1 (pinned items count as 1).</footer>"
    )
    out.append("</main></body></html>")
    return "\n".join(part for part in out if part) + "\n"


def _title(item: ContextItem) -> str:
    """A one-line tooltip for a map segment: kind, tokens and a content preview."""
    flat = " ".join(item.content.split())
    preview = flat if len(flat) <= 80 else flat[:79] + "…"
    return f"{item.kind} · {item.tokens:,} tokens · {preview}"
