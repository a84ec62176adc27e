"""The conversation layer: chat histories as units, turns and valid tool calls.

Framework-neutral (the LangChain and LlamaIndex adapters map their messages to it and
back): give each message's role and tool-call links, get the history's structure —

- **units**: a message, or an *exchange* (an assistant message that calls tools, with the
  tool results answering it), kept or dropped together;
- **turns**: a user message and everything up to the next one;
- **validity**: the providers' rule (the tool results right after an assistant message
  answer exactly its calls, each once; no tool result anywhere else). Units breaking it
  (unanswered or partially answered calls; late, duplicate or unknown results) are left
  out of every selection and reported as :class:`~cupel.InvalidToolCall`.

:class:`HistoryItems` maps the units to :class:`~cupel.ContextItem` s (pinning the system
prompt and the latest user message, marking earlier turns as blocks) and selects a window
with a pipeline. With the default history policies (:func:`cupel.presets.chat`, ...) the
window is a :class:`~cupel.RecencyWindowSlice`: system messages, the latest user message,
then whole units from the newest backwards, contiguously, until the next one does not fit
(earlier turns whole; the oldest kept turn, when it does not fit whole, keeps its question
— or an agent's task — and its newest units) — no holes; the only gap allowed is between a
kept turn's first message (the latest user message, or the oldest kept turn's question) and
the newest units of that turn kept after it.

>>> from cupel import ContextBudget, Pipeline
>>> roles = ["system", "user", "assistant", "user", "assistant", "tool", "assistant"]
>>> conversation = Conversation(roles, calls={4: ["c1"]}, answers={5: "c1"})
>>> texts = ["Be brief.", "Hi", "Hello!", "Weather?", "", "Rain", "It rains."]
>>> mapped = HistoryItems.from_conversation(conversation, texts, [4, 2, 3, 3, 10, 3, 4])
>>> window = mapped.select(Pipeline.from_policy("chat"), ContextBudget(max_tokens=28,
...                        target_tokens=28), with_report=True)
>>> [texts[i] for i in window.messages]
['Be brief.', 'Weather?', '', 'Rain', 'It rains.']
>>> window.report.excluded[0].reason.name
'OutsideWindow'
"""

from cupel._public import publish
from cupel.conversation._columns import PinnedOptions, synthetic_timestamps
from cupel.conversation._history import DEFAULT_UNIT_KINDS, UNIT_TYPES, HistoryItems
from cupel.conversation._plain import (
    plain_key,
    plain_pipeline,
    reads_unit_metadata,
    tool_free_window,
)
from cupel.conversation._stable import (
    DEFAULT_LOW_WATER,
    StableCut,
    cache_stable_pipeline,
    check_cache_stable,
    stable_cut,
)
from cupel.conversation._structure import (
    ASSISTANT,
    ROLES,
    SYSTEM,
    TOOL,
    USER,
    Conversation,
    Unit,
    WindowCheck,
)
from cupel.conversation._window import STABLE_CUT_FILTER, START_ON_FILTER, HistoryWindow

__all__ = [
    "ASSISTANT",
    "DEFAULT_LOW_WATER",
    "DEFAULT_UNIT_KINDS",
    "ROLES",
    "STABLE_CUT_FILTER",
    "START_ON_FILTER",
    "SYSTEM",
    "TOOL",
    "UNIT_TYPES",
    "USER",
    "Conversation",
    "HistoryItems",
    "HistoryWindow",
    "PinnedOptions",
    "StableCut",
    "Unit",
    "WindowCheck",
    "cache_stable_pipeline",
    "check_cache_stable",
    "plain_key",
    "plain_pipeline",
    "reads_unit_metadata",
    "stable_cut",
    "synthetic_timestamps",
    "tool_free_window",
]

publish(__name__, globals(), __all__)
