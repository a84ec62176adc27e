"""The selection report's ways out: the latest report per component (per thread or asyncio
task, built on first read when the selection made none) and the ``cupel_selection`` custom
event (JSON-ready data, sent only when a handler listens)."""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManager,
    BaseCallbackManager,
    CallbackManager,
    Callbacks,
)

from cupel import ConfigurationError, ContextBudget, SelectionReport
from cupel.conversation import HistoryWindow

__all__ = [
    "REPORT_EVENT",
    "Explainable",
    "ReportEventData",
    "adispatch_report",
    "dispatch_report",
    "last_report_of",
    "listens",
    "remember_report",
    "report_event_data",
    "report_from_event",
]

REPORT_EVENT = "cupel_selection"
"""The name of the LangChain custom event carrying a selection's report."""


# -- per-thread / per-task latest reports ---------------------------------------------------
Explainable = SelectionReport | HistoryWindow
"""A report, or a window whose report is built when first read (:meth:`HistoryWindow.explain`)."""

_LATEST: ContextVar[Mapping[int, tuple[weakref.ref[Any], Explainable]]] = ContextVar(
    "cupel_langchain_latest_reports"
)


def remember_report(component: object, report: Explainable) -> None:
    """Record ``report`` as ``component``'s latest in the current context (thread or
    asyncio task): other threads and tasks do not see it. A window is explained when
    the report is first read (:func:`last_report_of`)."""
    current = _LATEST.get({})
    latest = {key: entry for key, entry in current.items() if entry[0]() is not None}
    latest[id(component)] = (weakref.ref(component), report)
    _LATEST.set(latest)


def last_report_of(component: object) -> SelectionReport | None:
    """``component``'s latest report in the current context, if any."""
    entry = _LATEST.get({}).get(id(component))
    if entry is None or entry[0]() is not component:
        return None
    report = entry[1]
    return report.explain() if isinstance(report, HistoryWindow) else report


def listens(manager: BaseCallbackManager) -> bool:
    """Whether a handler of ``manager`` receives custom events (the report event)."""
    return any(not handler.ignore_custom_event for handler in manager.handlers)


class ReportEventData(dict[str, Any]):
    """The payload of the :data:`REPORT_EVENT` custom event: plain JSON-ready data (the
    report in its wire form under ``"report"``, plus a summary: ``component``,
    ``included``, ``excluded``, ``included_tokens``, ``max_tokens``; with
    ``cache_stable`` on also ``stable_prefix``, ``cut_moved`` and ``cut``), so
    ``json.dumps`` works wherever events are forwarded (SSE, log pipelines). In-process
    callers get the :class:`~cupel.SelectionReport` object itself as
    :attr:`selection_report` (not part of the data; :func:`report_from_event` rebuilds it
    from the data after a JSON hop).

    The wire form is made when the event is sent to someone (:meth:`complete`): a
    selection nobody listens to does not pay for it.
    """

    selection_report: SelectionReport | None = None

    def complete(self) -> ReportEventData:
        """This payload with ``"report"`` filled in (once)."""
        if "report" not in self and self.selection_report is not None:
            self["report"] = self.selection_report.to_dict()
        return self


def report_event_data(
    component: str,
    report: SelectionReport,
    budget: ContextBudget,
    stable: Mapping[str, Any] | None = None,
) -> ReportEventData:
    """The payload of the :data:`REPORT_EVENT` custom event (see :class:`ReportEventData`).

    >>> import json
    >>> from cupel import ContextBudget, ContextItem, Pipeline, RecencyScorer
    >>> budget = ContextBudget(max_tokens=10, target_tokens=10)
    >>> report = Pipeline(RecencyScorer()).dry_run([ContextItem(content="a", tokens=3)],
    ...                                            budget).report
    >>> data = report_event_data("CupelMessageSelector", report, budget).complete()
    >>> json.loads(json.dumps(data))["included_tokens"], data.selection_report is report
    (3, True)
    """
    data = ReportEventData(
        component=component,
        included=len(report.included),
        excluded=len(report.excluded),
        included_tokens=report.included_tokens,
        max_tokens=budget.max_tokens,
    )
    if stable:
        data.update(stable)
    data.selection_report = report
    return data


def report_from_event(event: Mapping[str, Any]) -> SelectionReport:
    """The :class:`~cupel.SelectionReport` of a ``"cupel_selection"`` event: a stream
    event (``{"event": "on_custom_event", "data": ...}``), a callback's ``data``, or a
    custom-stream chunk. The object itself in-process, else rebuilt from the wire form.
    """
    data: Any = event.get("data", event) if "report" not in event else event
    report = getattr(data, "selection_report", None)
    if isinstance(report, SelectionReport):
        return report
    wire = data.get("report") if isinstance(data, Mapping) else None
    if isinstance(wire, SelectionReport):
        return wire
    if not isinstance(wire, Mapping):
        raise ConfigurationError(
            f"not a {REPORT_EVENT!r} event: no report in {event!r:.80}",
            field="event",
            value=event,
        )
    return SelectionReport.from_dict(wire)


def dispatch_report(callbacks: Callbacks, data: ReportEventData) -> None:
    """Send the report event to ``callbacks`` (a manager or handlers), if any listen."""
    manager = (
        callbacks
        if isinstance(callbacks, CallbackManager)
        else CallbackManager.configure(inheritable_callbacks=callbacks)
    )
    if manager.handlers:
        manager.on_custom_event(REPORT_EVENT, data.complete(), run_id=manager.parent_run_id)


async def adispatch_report(callbacks: Callbacks, data: ReportEventData) -> None:
    """Async :func:`dispatch_report`."""
    if isinstance(callbacks, AsyncCallbackManager):
        manager = callbacks
    else:
        handlers = callbacks.handlers if isinstance(callbacks, BaseCallbackManager) else callbacks
        manager = AsyncCallbackManager.configure(inheritable_callbacks=handlers)
    if manager.handlers:
        await manager.on_custom_event(REPORT_EVENT, data.complete(), run_id=manager.parent_run_id)
