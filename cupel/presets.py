"""Eight ready-made policies for common workloads.

=============  =========================================  ===============  ==============
preset         scorer (composite weights)                 slicer           placer
=============  =========================================  ===============  ==============
chat           Recency 3, Kind 1                          RecencyWindow    Chronological
code_review    Kind 2, Priority 2, Recency 1              Greedy           Chronological
rag            Reflexive 3, Kind 1                        Greedy           U-shaped
document_qa    Kind 2, Reflexive 2, Priority 1            Knapsack(auto)   U-shaped
tool_use       Kind 2, Recency 2, Priority 1              RecencyWindow    Chronological
long_running   Frequency 2, Kind 1, Priority 1            RecencyWindow    Chronological
                                                          (25% scored)
recall         Relevance 1 (to the latest user message)   RecencyWindow    Chronological
                                                          (50% scored)
debugging      Priority 3, Kind 2, Recency 1              Greedy           Chronological
=============  =========================================  ===============  ==============

The history presets (``chat``, ``tool_use``, ``long_running``, ``recall``) keep a *recency window*
(:class:`~cupel.RecencyWindowSlice`): the newest items that fit, with no holes, chat turns
kept whole (the oldest kept turn, when it does not fit whole, keeps its question and its
newest messages: ``partial_blocks``); they do not deduplicate (two equal "ok" turns are
two turns, and dropping one would open a hole). The others select by score and
deduplicate. Every preset uses ``OverflowStrategy.THROW`` and the Kind scorer's default
weights. Each is a plain
:class:`~cupel.policy.Policy`, so it can be saved, edited and compared like any other
(``preset("rag").replace(overflow_strategy="truncate")``).

>>> preset("Code-Review").build().scorer
CompositeScorer([(KindScorer(), 0.4), (PriorityScorer(), 0.4), (RecencyScorer(), 0.2)])
>>> PRESET_NAMES
('chat', 'code_review', 'rag', 'document_qa', 'tool_use', 'long_running', 'recall', \
'debugging')
"""

from cupel.policy import _presets
from cupel.policy._presets import *  # noqa: F403 (defined beside the policy layer; listed once)

__all__: list[str] = []
__all__ += _presets.__all__
