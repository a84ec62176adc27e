"""Scorers rate each item's relevance; the pipeline sorts by the score.

===================  =========  ==============================  ===============
scorer               category   fields used                     range
===================  =========  ==============================  ===============
RecencyScorer        relative   timestamp                       [0, 1]
PriorityScorer       relative   priority                        [0, 1]
FrequencyScorer      relative   tags (case-insensitive)         [0, 1]
KindScorer           absolute   kind (case-insensitive)         [0, max weight]
TagScorer            absolute   tags (case-sensitive default)   [0, 1]
ReflexiveScorer      absolute   future_relevance_hint           [0, 1]
MetadataTrustScorer  absolute   metadata["cupel:trust"]         [0, 1]
MetadataKeyScorer    absolute   metadata[key]                   {1.0, boost}
DecayScorer          absolute   timestamp (+ injected clock)    [0, 1]
RelevanceScorer      relative   content (+ the query)           [0, 1]
CompositeScorer      composite  its children's                  children's
ScaledScorer         composite  its inner scorer's              [0, 1]
===================  =========  ==============================  ===============

- RecencyScorer / PriorityScorer: rank among the items that have the field (ties share it).
- FrequencyScorer: share of the other items that share at least one tag.
- KindScorer: the kind's weight (default table: SystemPrompt 1.0 ... Message 0.2).
- TagScorer: matched tag weight / total configured weight, capped at 1.0.
- ReflexiveScorer / MetadataTrustScorer: the caller's hint / trust value, clamped.
- MetadataKeyScorer: ``boost`` when ``metadata[key] == value``, else 1.0.
- DecayScorer: an exponential, step or window curve of ``now - timestamp``.
- RelevanceScorer: lexical BM25 relevance to a query, over the pass, scaled by its best.
- CompositeScorer: normalized weighted average; ScaledScorer: min-max (0.5 when flat).

*Absolute* scorers look only at the item; *relative* ones compare it with every item of
the pass; *composite* ones combine other scorers (nesting up to :data:`MAX_SCORER_DEPTH`
levels; a child shared by several composites is scored once per pass). Every built-in has
a ``score_all(items)`` batch method that scores a whole pass at once (no per-item re-scan
of the pass) and returns exactly what per-item ``score(item, items)`` calls would; a
subclass of a built-in is scored through the methods it overrides.

Scores are real numbers that fit a double; a custom scorer returning anything else
(``None``, text, a complex number, ``10**400``) raises :class:`~cupel.ScoreError`.

>>> from cupel import ContextItem
>>> scorer = CompositeScorer([(KindScorer(), 1.0), (ScaledScorer(PriorityScorer()), 1.0)])
>>> items = [ContextItem(content="a", tokens=1, kind="Memory", priority=1),
...          ContextItem(content="b", tokens=1, priority=5)]
>>> score_all(scorer, items)
[0.4, 0.6]
"""

from cupel._public import publish
from cupel.scorers._base import BaseScorer, Scorer, score_all
from cupel.scorers._validation import MAX_SCORER_DEPTH
from cupel.scorers.composite import CompositeScorer
from cupel.scorers.decay import (
    DecayCurve,
    DecayScorer,
    ExponentialDecay,
    FixedTimeProvider,
    StepDecay,
    SystemTimeProvider,
    TimeProvider,
    WindowDecay,
)
from cupel.scorers.frequency import FrequencyScorer
from cupel.scorers.kind import KindScorer
from cupel.scorers.metadata import MetadataKeyScorer, MetadataTrustScorer
from cupel.scorers.recency import PriorityScorer, RecencyScorer
from cupel.scorers.reflexive import ReflexiveScorer
from cupel.scorers.relevance import RelevanceScorer
from cupel.scorers.scaled import ScaledScorer
from cupel.scorers.tag import TagScorer

__all__ = [
    "MAX_SCORER_DEPTH",
    "BaseScorer",
    "CompositeScorer",
    "DecayCurve",
    "DecayScorer",
    "ExponentialDecay",
    "FixedTimeProvider",
    "FrequencyScorer",
    "KindScorer",
    "MetadataKeyScorer",
    "MetadataTrustScorer",
    "PriorityScorer",
    "RecencyScorer",
    "ReflexiveScorer",
    "RelevanceScorer",
    "ScaledScorer",
    "Scorer",
    "StepDecay",
    "SystemTimeProvider",
    "TagScorer",
    "TimeProvider",
    "WindowDecay",
    "score_all",
]

publish(__name__, globals(), __all__)
