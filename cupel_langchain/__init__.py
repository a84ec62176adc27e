"""cupel for LangChain: explainable context selection as LangChain components.

==============================  =========================================================
component                       what it does
==============================  =========================================================
CupelMessageSelector            LCEL Runnable: ``prompt | selector | model``
select_messages                 the same selection as a function (``..._with_report``)
CupelDocumentCompressor         ``BaseDocumentCompressor`` (``ContextualCompressionRetriever``)
CupelRetriever                  wraps any retriever: retrieve, then select (optional ``k``)
CupelContextMiddleware          ``langchain.agents`` middleware (needs ``langchain``)
messages_to_items               the mapping of messages to :class:`~cupel.ContextItem` and back
documents_to_items              the same for documents
tool_call_problems              why a provider would reject a message list's tool calls
report_from_event               the SelectionReport of a ``"cupel_selection"`` event
==============================  =========================================================

Messages: the default window keeps the system prompt and the latest human message, then
whole units from the newest backwards until the next one does not fit — earlier turns
whole (the oldest kept turn, when it does not fit whole, keeps its question and its newest
messages), an ``AIMessage`` with tool calls always with its ``ToolMessage`` s — so it has no
holes and is always valid for the provider. The output is the same message objects in
conversation order. Every component can build the :class:`~cupel.SelectionReport` and
emits it as the LangChain custom event ``"cupel_selection"``, as JSON-ready data
(:class:`ReportEventData`; the agent middleware also writes it to the custom stream).
Settings are live fields; components copy, pickle and (with a preset or a ``Policy``)
serialize with ``langchain_core.load``.

>>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
>>> history = [HumanMessage("Weather in Oslo?"),
...            AIMessage("", tool_calls=[{"name": "weather", "args": {}, "id": "c1"}]),
...            ToolMessage("Rain, 4 °C " * 20, tool_call_id="c1"),
...            AIMessage("Rainy, 4 °C."), HumanMessage("And tomorrow?")]
>>> [m.type for m in select_messages(history, max_tokens=150)]
['human', 'ai', 'tool', 'ai', 'human']
>>> [m.type for m in select_messages(history, max_tokens=60)]  # turn 1 does not fit whole:
['human', 'ai', 'human']

Turn 1 no longer fits whole: its question and its answer stay, its tool round is left out.
>>> tool_call_problems(history[2:])
["message 0: tool result for 'c1' answers no call made just before it (unknown_result)"]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cupel_langchain._documents import (
    CupelDocumentCompressor,
    CupelRetriever,
    DocumentItems,
    documents_to_items,
)
from cupel_langchain._messages import (
    MessageItems,
    messages_to_items,
    tool_call_problems,
)
from cupel_langchain._options import (
    DEFAULT_MESSAGE_KINDS,
    FunctionOptions,
    HistoryOptions,
    MiddlewareOptions,
)
from cupel_langchain._reports import (
    REPORT_EVENT,
    ReportEventData,
    report_from_event,
)
from cupel_langchain._runnable import (
    CupelMessageSelector,
    select_messages,
    select_messages_with_report,
)
from cupel_langchain._tokens import approximate_message_tokens

if TYPE_CHECKING:
    from cupel_langchain._middleware import CupelContextMiddleware

__all__ = [
    "DEFAULT_MESSAGE_KINDS",
    "REPORT_EVENT",
    "CupelContextMiddleware",
    "CupelDocumentCompressor",
    "CupelMessageSelector",
    "CupelRetriever",
    "DocumentItems",
    "FunctionOptions",
    "HistoryOptions",
    "MessageItems",
    "MiddlewareOptions",
    "ReportEventData",
    "approximate_message_tokens",
    "documents_to_items",
    "messages_to_items",
    "report_from_event",
    "select_messages",
    "select_messages_with_report",
    "tool_call_problems",
]


def __getattr__(name: str) -> Any:
    """Import ``CupelContextMiddleware`` on first use: it needs the ``langchain`` package."""
    if name == "CupelContextMiddleware":
        try:
            from cupel_langchain._middleware import CupelContextMiddleware
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "CupelContextMiddleware needs the 'langchain' package (langchain.agents): "
                "pip install 'cupel-context[langchain-agents]'"
            ) from exc
        return CupelContextMiddleware
    raise AttributeError(f"module 'cupel_langchain' has no attribute {name!r}")
