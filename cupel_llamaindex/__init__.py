"""cupel for LlamaIndex: a node postprocessor and a chat memory that select within a
token budget, explain every decision and return the very same LlamaIndex objects.

* :class:`CupelNodePostprocessor` — ``index.as_query_engine(node_postprocessors=[...])``.
* :class:`CupelMemory` — LlamaIndex's current ``Memory`` (SQL chat store, memory blocks)
  with cupel choosing the history window and the memory blocks under one budget.
* :class:`CupelChatMemory` — a drop-in for ``ChatMemoryBuffer`` (``BaseMemory`` users).
* :class:`CupelSelectionEvent` — the instrumentation event both emit.
* :func:`nodes_to_items` / :func:`messages_to_items` — the mappings, usable on their own.
"""

from cupel_llamaindex._blocks_memory import CupelMemory
from cupel_llamaindex._common import CupelSelectionEvent
from cupel_llamaindex._mapping import MessageMapping, MessageUnit, messages_to_items
from cupel_llamaindex._memory import CupelChatMemory
from cupel_llamaindex._nodes import NodeMapping, nodes_to_items
from cupel_llamaindex._postprocessor import CupelNodePostprocessor
from cupel_llamaindex._reading import message_text, tool_call_ids

__all__ = [
    "CupelChatMemory",
    "CupelMemory",
    "CupelNodePostprocessor",
    "CupelSelectionEvent",
    "MessageMapping",
    "MessageUnit",
    "NodeMapping",
    "message_text",
    "messages_to_items",
    "nodes_to_items",
    "tool_call_ids",
]
