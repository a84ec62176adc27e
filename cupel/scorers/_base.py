"""The scorer interface.

A scorer maps an item (and its peers) to a float: ``score(item, all_items)``. That is all
a custom scorer has to implement. The pipeline scores a whole pass at once through
:func:`batch_scores`, which uses a scorer's ``score_all(items)`` batch method when it has
one; every built-in scorer has one, so a pass costs O(N log N) or less instead of the
O(N^2) of calling ``score`` per item. Both paths return identical values.

Internally, the built-ins that matter for speed are :class:`ArrayScorer`\\ s: their batch
is a float64 numpy array (``_scores``), which the pipeline consumes without building a
Python list; ``score_all`` is that array as a list. A user's subclass of a built-in that
overrides ``score`` (or ``score_all``) is scored through its override, never through the
built-in batch (the rule of :mod:`cupel._fastpath`, shared with the slicers and placers).

Every value a scorer returns is checked once, where the batch is taken: scores are real
numbers that fit an IEEE 754 double (NaN and infinities included); anything else raises
:class:`~cupel.ScoreError` naming the scorer and the item. Within one pass, each distinct
scorer object is scored once, however many composites share it.
"""

from __future__ import annotations

import numbers
import platform
import reprlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from decimal import Decimal
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from cupel._errors import ScoreError
from cupel._fastpath import FloatArray, IntArray, fast_method
from cupel._model import ContextItem
from cupel._params import Configurable

__all__ = [
    "ArrayScorer",
    "BaseScorer",
    "FloatArray",
    "Scorer",
    "as_score",
    "batch_scores",
    "fields_read",
    "object_ids",
    "score_all",
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
    """A built-in whose batch is computed as a float64 array by :meth:`_scores`.

    ``score_all`` returns that array as a list. ``_scores`` may return ``None`` when it
    cannot decide on arrays; ``_score_list`` then computes the list in Python. A
    subclass that overrides ``score`` is scored through its ``score`` instead.

    ``_fields`` names the item fields ``_scores`` reads (through
    :func:`~cupel._fastpath.field_column`, so that a pipeline reads them once for all
    its stages; see :func:`fields_read`).
    """

    _fields: ClassVar[tuple[str, ...]] = ()

    def score_all(self, items: Sequence[ContextItem]) -> list[float]:
        if fast_method(self, "_scores", ("score",)) is None:  # a subclass's score() rules
            return BaseScorer.score_all(self, items)
        with _pass(items):
            result: list[float] = self._batch(items).tolist()
        return result

    def _batch(self, items: Sequence[ContextItem]) -> FloatArray:
        """The built-in batch, validated: ``_scores``, or ``_score_list`` when that
        cannot decide on arrays."""
        scores = self._scores(items)
        if scores is not None:
            return scores
        return _as_scores(self._score_list(items), self, items)

    @abstractmethod
    def _scores(self, items: Sequence[ContextItem]) -> FloatArray | None:
        """Every item's score as a float64 array (``None``: use :meth:`_score_list`)."""

    def _score_list(self, items: Sequence[ContextItem]) -> list[float]:
        """The batch as a Python list, for when :meth:`_scores` returns ``None``."""
        return BaseScorer.score_all(self, items)


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


# One pass (the items object being scored) and each scorer's batch within it, so that a
# scorer shared by several composites is scored once per pass.
_PASS: ContextVar[tuple[Sequence[ContextItem], dict[int, tuple[object, FloatArray]]] | None] = (
    ContextVar("cupel_scoring_pass", default=None)
)


@contextmanager
def _pass(items: Sequence[ContextItem]) -> Iterator[dict[int, tuple[object, FloatArray]]]:
    current = _PASS.get()
    if current is not None and current[0] is items:
        yield current[1]
        return
    memo: dict[int, tuple[object, FloatArray]] = {}
    token = _PASS.set((items, memo))
    try:
        yield memo
    finally:
        _PASS.reset(token)


def batch_scores(scorer: Scorer, items: Sequence[ContextItem]) -> FloatArray:
    """Score a whole pass: the scorer's batch as a validated float64 array.

    A built-in :class:`ArrayScorer` computes it on arrays; any other scorer through its
    ``score_all(items)`` if it has one, else ``score(item, items)`` per item. Within one
    pass (the same ``items`` object), each distinct scorer object is scored once: a child
    shared by several composites costs one batch, not one per use. The returned array
    is read-only.
    """
    with _pass(items) as memo:
        hit = memo.get(id(scorer))
        if hit is not None and hit[0] is scorer:
            return hit[1]
        result = _batch(scorer, items)
        result.flags.writeable = False
        memo[id(scorer)] = (scorer, result)
        return result


def _batch(scorer: Scorer, items: Sequence[ContextItem]) -> FloatArray:
    if isinstance(scorer, ArrayScorer) and fast_method(scorer, "_scores", ("score", "score_all")):
        return scorer._batch(items)
    method = getattr(scorer, "score_all", None)
    if callable(method):
        raw: Any = method(items)
    else:
        raw = [scorer.score(item, items) for item in items]
    return _as_scores(raw, scorer, items)


def fields_read(scorer: Scorer) -> tuple[str, ...]:
    """The item fields that the built-in batches of ``scorer`` and of the scorers it
    delegates to (``children()``) read, in first-seen order; a scorer scored through its
    own ``score`` / ``score_all`` adds none (nor do its children: they may not be asked).

    >>> from cupel import CompositeScorer, KindScorer, RecencyScorer
    >>> fields_read(CompositeScorer([(RecencyScorer(), 1), (KindScorer(), 1)]))
    ('timestamp', 'kind')
    """
    names: dict[str, None] = {}
    seen: set[int] = set()
    pending: list[Scorer] = [scorer]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ArrayScorer) and fast_method(
            current, "_scores", ("score", "score_all")
        ):
            names.update(dict.fromkeys(current._fields))
            pending.extend(reversed(current.children()))
    return tuple(names)


def score_all(scorer: Scorer, items: Sequence[ContextItem]) -> list[float]:
    """Score a whole pass with ``scorer`` (its batch method if it has one, else per item),
    as a list of Python floats; see :func:`batch_scores`."""
    result: list[float] = batch_scores(scorer, items).tolist()
    return result


def object_ids(refs: npt.NDArray[np.object_]) -> IntArray:
    """``id()`` of every element of the one-dimensional object array ``refs``, as an
    ``intp`` array (``object_ids(np.array([x], dtype=object))[0] == id(x)``).
    The ids are those of objects ``refs`` holds: valid while they are alive.

    In CPython, ``id(x)`` is the address of ``x``, and an object array holds exactly
    those addresses: they are copied out through NumPy's ``__array_interface__``
    protocol, some 5 ns an element instead of the ~40 ns of calling ``id`` on each.
    Elsewhere (checked once, at import), and for fewer than :data:`_FEW_IDS` elements,
    ``id`` is called per element.

    >>> values = [None, "a", None]
    >>> object_ids(np.fromiter(values, dtype=object, count=3)).tolist() == list(map(id, values))
    True
    """
    if not _ADDRESSES_ARE_IDS or len(refs) < _FEW_IDS:
        return np.fromiter(map(id, refs.tolist()), dtype=np.intp, count=len(refs))
    ids: IntArray = np.array(_Addresses(np.ascontiguousarray(refs)), dtype=np.intp)  # a copy
    return ids


class _Addresses:
    """The element addresses of a contiguous object array, seen as ``intp`` (holding the
    array, so that the addresses stay valid while NumPy copies them)."""

    __slots__ = ("__array_interface__", "refs")

    def __init__(self, refs: npt.NDArray[np.object_]) -> None:
        self.refs = refs
        self.__array_interface__ = {
            "version": 3,
            "shape": refs.shape,
            "typestr": np.dtype(np.intp).str,
            "data": (refs.__array_interface__["data"][0], True),
        }


def _addresses_are_ids() -> bool:
    if platform.python_implementation() != "CPython" or np.dtype(np.intp).itemsize != (
        np.dtype(object).itemsize
    ):
        return False
    sample = [None, object(), "x", 10**30]
    refs = np.fromiter(sample, dtype=object, count=len(sample))
    return bool(np.array(_Addresses(refs), dtype=np.intp).tolist() == list(map(id, sample)))


_ADDRESSES_ARE_IDS = _addresses_are_ids()
_FEW_IDS = 64
"""Below this many elements, :func:`object_ids` calls ``id`` (the copy's set-up costs more)."""
