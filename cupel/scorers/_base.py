"""The scorer interface.

A scorer maps an item (and its peers) to a float: ``score(item, all_items)``, all that a
custom scorer implements. The pipeline scores a whole pass at once (:func:`batch_scores`):
a built-in :class:`ArrayScorer` by one whole-pass algorithm on arrays (O(N log N) or less,
where per-item calls of a relative scorer are O(N^2)), any other scorer through its
``score_all(items)`` if it has one, else ``score`` per item. A user's subclass overriding
``score`` (or ``score_all``) is scored through its override
(:func:`cupel._fastpath.fast_method`). Every score is checked once, where the batch is
taken (:func:`as_score`), and each distinct scorer object is scored once per pass,
however many composites share it (:class:`Batches`).
"""

from __future__ import annotations

import numbers
import reprlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from operator import attrgetter
from typing import Any, ClassVar, Protocol, TypeGuard, runtime_checkable

import numpy as np

from cupel._errors import ScoreError
from cupel._fastpath import FloatArray, fast_method
from cupel._model import ContextItem
from cupel._params import Configurable

__all__ = [
    "ArrayScorer",
    "BaseScorer",
    "Batches",
    "FloatArray",
    "Scorer",
    "as_score",
    "batch_scores",
    "children_of",
    "fields_read",
    "score_all",
    "walk",
]


@runtime_checkable
class Scorer(Protocol):
    """Anything with ``score(item, all_items) -> float`` is a scorer."""

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        """Score ``item``; ``all_items`` is every scoreable item of the pass (``item`` included)."""
        ...


class BaseScorer(Configurable, ABC):
    """Base class of the built-in scorers (custom scorers may subclass it too).

    Subclasses implement :meth:`score`; relative scorers override :meth:`score_all`
    with a whole-batch algorithm.
    """

    @abstractmethod
    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        """Score one item against ``all_items``."""

    def score_all(self, items: Sequence[ContextItem]) -> list[float]:
        """Score every item of ``items`` against ``items`` (``result[i]`` is ``items[i]``'s)."""
        return [self.score(item, items) for item in items]

    def children(self) -> tuple[Scorer, ...]:
        """Scorers this one delegates to (used for cycle detection)."""
        return ()


class ArrayScorer(BaseScorer):
    """A built-in whose batch is one whole-pass algorithm returning a float64 array
    (``score_all`` is that array as a list), unless a subclass overrides ``score``."""

    _fields: ClassVar[tuple[str, ...]] = ()
    """The item fields the batch reads (through :meth:`Batches.column`)."""

    def score_all(self, items: Sequence[ContextItem]) -> list[float]:
        if fast_method(self, "_scores", ("score",)) is None:  # a subclass's score() rules
            return BaseScorer.score_all(self, items)
        result: list[float] = self._scores(items).tolist()
        return result

    def _scores(self, items: Sequence[ContextItem]) -> FloatArray:
        """Every item's score as a float64 array."""
        return self._scores_in(Batches(items))

    @abstractmethod
    def _scores_in(self, batches: Batches) -> FloatArray:
        """:meth:`_scores` within a pass's ``batches``, from which a scorer with children
        takes theirs (:meth:`Batches.of`: a child shared by several parents is scored once)."""

    def _with_children(self, children: tuple[Scorer, ...]) -> ArrayScorer | None:
        """A copy of this scorer whose ``children()`` are ``children`` (same length and
        order), or ``None`` when it cannot be rebuilt (the default)."""
        return None


def as_score(value: Any, scorer: object, item: ContextItem | None) -> float:
    """``value`` as a score (a Python ``float``), or :class:`~cupel.ScoreError`.

    Real numbers (``float``, ``int``, NumPy scalars, ``Fraction``, ``Decimal``) that fit a
    double are scores; ``bool``, ``None``, text, complex numbers and integers beyond the
    double range (``10**400``) are not.

    >>> as_score(1, None, None), as_score(float("inf"), None, None)
    (1.0, inf)
    """
    if type(value) is float:
        return value
    if isinstance(value, (numbers.Real, Decimal)) and not isinstance(value, bool):
        try:
            return float(value)
        except (OverflowError, ValueError, TypeError):
            pass
    where = "" if item is None else f" for item {item.content[:60]!r}"
    raise ScoreError(
        f"scorer {_describe(scorer)} returned {type(value).__name__} {_SHORT.repr(value)}"
        f"{where}: a score must be a real number that fits a float (an IEEE 754 double)",
        scorer=scorer,
        item=item,
        value=value,
    )


_SHORT = reprlib.Repr()
_SHORT.maxother = _SHORT.maxstring = 80
_SHORT.maxlong = 40


def _describe(scorer: object) -> str:
    try:
        return _SHORT.repr(scorer)
    except Exception:  # a broken __repr__ must not hide the real error
        return f"{type(scorer).__name__}@{id(scorer):#x}"


def _as_scores(values: Any, scorer: object, items: Sequence[ContextItem]) -> FloatArray:
    """A scorer's batch as a validated float64 array (see :func:`as_score`)."""
    if isinstance(values, np.ndarray):
        values = values.tolist()  # NumPy scalars become Python numbers, checked below
    elif not isinstance(values, list):
        values = list(values)
    if not set(map(type, values)) <= {float}:
        values = [
            as_score(value, scorer, items[i] if i < len(items) else None)
            for i, value in enumerate(values)
        ]
    return np.array(values, dtype=np.float64)


class Batches:
    """One pass's scores, each distinct scorer object (by identity) scored once over
    ``items``, and the item fields read already (``fields``: name → one value per item),
    which the built-in batches read through :meth:`column`.

    >>> from cupel import ContextItem, KindScorer
    >>> kind = KindScorer()
    >>> batches = Batches([ContextItem(content="x", tokens=1, kind="Memory")])
    >>> batches.of(kind) is batches.of(kind), batches.of(kind).tolist()
    (True, [0.8])
    """

    __slots__ = ("_done", "_fields", "items")

    def __init__(
        self, items: Sequence[ContextItem], fields: Mapping[str, list[Any]] | None = None
    ) -> None:
        self.items = items
        self._fields: dict[str, list[Any]] = {} if fields is None else dict(fields)
        self._done: list[tuple[object, FloatArray]] = []

    def column(self, name: str) -> list[Any]:
        """Every item's ``name`` field, in order (read once per pass; do not modify it)."""
        column = self._fields.get(name)
        if column is None:
            column = self._fields[name] = list(map(attrgetter(name), self.items))
        return column

    def of(self, scorer: Scorer) -> FloatArray:
        """``scorer``'s batch over the pass, validated and read-only (computed once)."""
        for done, batch in self._done:
            if done is scorer:
                return batch
        result = _batch(scorer, self)
        result.flags.writeable = False
        self._done.append((scorer, result))
        return result


def batch_scores(
    scorer: Scorer, items: Sequence[ContextItem], fields: Mapping[str, list[Any]] | None = None
) -> FloatArray:
    """Score a whole pass: the scorer's batch (see the module) as a validated, read-only
    float64 array. ``fields``: item fields already read (name → one value per item)."""
    return Batches(items, fields).of(scorer)


def _batched(scorer: object) -> TypeGuard[ArrayScorer]:
    """Whether ``scorer`` is scored through its built-in batch (no override of its own)."""
    return (
        isinstance(scorer, ArrayScorer)
        and fast_method(scorer, "_scores", ("score", "score_all")) is not None
    )


def _batch(scorer: Scorer, batches: Batches) -> FloatArray:
    items = batches.items
    if _batched(scorer):
        return scorer._scores_in(batches)
    method = getattr(scorer, "score_all", None)
    if callable(method):
        raw: Any = method(items)
    else:
        raw = [scorer.score(item, items) for item in items]
    return _as_scores(raw, scorer, items)


def children_of(scorer: object) -> tuple[Scorer, ...]:
    """What ``scorer`` delegates to: its ``children()``, if it has that method."""
    method = getattr(scorer, "children", None)
    return tuple(method()) if callable(method) else ()


def walk(scorer: Scorer, descend: Callable[[Scorer], bool] | None = None) -> Iterator[Scorer]:
    """Each distinct scorer (by identity) of the tree under ``scorer``, depth first in
    child order; the children of a scorer for which ``descend`` is false are skipped.

    >>> from cupel import CompositeScorer, KindScorer
    >>> kind = KindScorer()
    >>> [type(s).__name__ for s in walk(CompositeScorer([(kind, 1), (kind, 2)]))]
    ['CompositeScorer', 'KindScorer']
    """
    pending = [scorer]
    seen: list[Scorer] = []
    while pending:
        current = pending.pop()
        if not any(current is done for done in seen):
            seen.append(current)
            yield current
            if descend is None or descend(current):
                pending.extend(reversed(children_of(current)))


def fields_read(scorer: Scorer) -> tuple[str, ...]:
    """The item fields the built-in batches of ``scorer`` and of the scorers it delegates
    to (``children()``) read, in first-seen order; a scorer scored through its own
    ``score`` / ``score_all`` adds none (nor do its children: they may not be asked).

    >>> from cupel import CompositeScorer, KindScorer, RecencyScorer
    >>> fields_read(CompositeScorer([(RecencyScorer(), 1), (KindScorer(), 1)]))
    ('timestamp', 'kind')
    """
    names: dict[str, None] = {}
    for current in walk(scorer, _batched):
        if _batched(current):
            names.update(dict.fromkeys(current._fields))
    return tuple(names)


def score_all(scorer: Scorer, items: Sequence[ContextItem]) -> list[float]:
    """Score a whole pass with ``scorer`` (its batch method if it has one, else per item),
    as a list of Python floats; see :func:`batch_scores`."""
    result: list[float] = batch_scores(scorer, items).tolist()
    return result
