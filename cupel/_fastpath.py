"""The array helpers of the pipeline's stages, and the one rule of whose definition runs
(private).

Built-in scorers compute a pass as a float64 array (``_scores``), and built-in slicers
select from the pipeline's score and token columns (``_select_positions``). Such a method
runs only when:

1. every public method it stands for (a scorer's ``score`` and ``score_all``, a slicer's
   ``slice`` and ``slice_detailed``) is cupel's own (:func:`fast_method`): a user's
   subclass that overrides one of them is run through its override;
2. the values can live in an array: scores all exactly Python ``float`` s without NaN
   (:func:`float_column`), token sums below :data:`MAX_EXACT_TOKENS`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import islice
from operator import attrgetter, lt
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = [
    "MAX_EXACT_TOKENS",
    "Columns",
    "FloatArray",
    "IntArray",
    "TokenArray",
    "columns",
    "descending_order",
    "fast_method",
    "float_column",
    "read_fields",
    "stable_argsort",
    "strictly_increasing",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
TokenArray = npt.NDArray[np.int64]

MAX_EXACT_TOKENS = 2**53
"""Token sums below this are exact in int64 and float64 (the array paths' precondition)."""


def fast_method(obj: object, name: str, stands_for: Sequence[str]) -> Callable[..., Any] | None:
    """``obj``'s fast-path method ``name``, or ``None`` when it has none or when one of the
    methods it ``stands_for`` is overridden outside cupel (the class that defines it,
    first in the MRO, is not one of cupel's own).

    >>> from cupel import KindScorer
    >>> def halves(self, item, all_items):
    ...     return 0.5
    >>> def preset(self):
    ...     KindScorer.__init__(self, {"Document": 2.0})
    >>> Halves = type("Halves", (KindScorer,), {"score": halves, "__module__": "app"})
    >>> Preset = type("Preset", (KindScorer,), {"__init__": preset, "__module__": "app"})
    >>> [fast_method(s, "_scores", ("score", "score_all")) is not None
    ...  for s in (KindScorer(), Halves(), Preset())]
    [True, False, True]
    """
    method: Callable[..., Any] | None = getattr(obj, name, None)
    if method is None:
        return None
    mro = type(obj).__mro__
    for public in stands_for:
        owner = next((cls for cls in mro if public in cls.__dict__), None)  # first in the MRO
        if owner is not None and owner.__module__.split(".")[0] != "cupel":
            return None
    return method


def float_column(values: FloatArray | Sequence[Any]) -> FloatArray | None:
    """``values`` as a float64 array when every value is exactly a Python ``float`` (so the
    array holds them exactly) and none is NaN; else ``None``. Float64 arrays are taken as
    they are.

    >>> float_column([0.5, 1.0]), float_column([1, 0.5]), float_column([float("nan")])
    (array([0.5, 1. ]), None, None)
    """
    if isinstance(values, np.ndarray):
        array: FloatArray = values
    else:
        if not set(map(type, values)) <= {float}:
            return None
        array = np.array(values, dtype=np.float64)
    if array.dtype != np.float64 or np.isnan(array).any():
        return None
    return array


class Columns(NamedTuple):
    """Scores and token counts as arrays that the fast paths may read (see :func:`columns`)."""

    scores: FloatArray
    tokens: TokenArray


def columns(
    scores: FloatArray | Sequence[Any], tokens: Sequence[int], *, nonnegative: bool = False
) -> Columns | None:
    """``scores`` and ``tokens`` as :class:`Columns` when the values may live in arrays
    (rule 2): every score a NaN-free ``float`` (:func:`float_column`), every token count
    non-negative (already known when ``nonnegative``) and their sum below
    :data:`MAX_EXACT_TOKENS`; else ``None``.

    >>> columns([0.5, 1.0], [3, 4]).tokens, columns([0.5], [-1]), columns([0.5], [2**53])
    (array([3, 4]), None, None)
    """
    array = float_column(scores)
    if array is None:
        return None
    if tokens and ((not nonnegative and min(tokens) < 0) or sum(tokens) >= MAX_EXACT_TOKENS):
        return None
    return Columns(array, np.array(tokens, dtype=np.int64))


def stable_argsort(keys: FloatArray) -> IntArray:
    """``np.argsort(keys, kind="stable")`` for float64 ``keys`` without NaN: NumPy's
    default sort, then only the tied elements put back in position order.

    >>> keys = np.array([0.5, 0.0, 0.5, -0.0, 1.0])
    >>> stable_argsort(keys).tolist() == np.argsort(keys, kind="stable").tolist()
    True
    """
    order: IntArray = np.argsort(keys)
    n = len(order)
    if n < 2:
        return order
    ranked = keys[order]
    same = ranked[1:] == ranked[:-1]
    if not same.any():
        return order
    # The tied elements (those equal to a neighbour) and their runs of equal keys.
    tied_mask = np.zeros(n, dtype=np.bool_)
    tied_mask[1:] = same
    tied_mask[:-1] |= same
    tied = np.flatnonzero(tied_mask)
    # a run starts at a tied element whose left neighbour is not equal to it; sort the
    # tied elements by (run, position): one unstable sort of distinct integers
    starts = np.ones(len(tied), dtype=np.bool_)
    starts[1:] = ~same[tied[1:] - 1]
    run = np.cumsum(starts, dtype=np.int64)
    run *= n
    run += order[tied]
    run.sort()
    run %= n
    order[tied] = run
    return order


def descending_order(scores: FloatArray | Sequence[Any]) -> IntArray:
    """Positions by descending score, equal scores in input order: exactly the spec's
    stable ``sorted(range(n), key=lambda i: -scores[i])``. NaN-free floats are ranked by
    :func:`stable_argsort`; scores it cannot order so (NaN, which NumPy sorts last but a
    comparison sort leaves wherever its comparisons put it, or values that are not
    floats) by that ``sorted`` itself.

    >>> descending_order([0.5, 1.0, 0.5]).tolist(), descending_order([1, 2]).tolist()
    ([1, 0, 2], [1, 0])
    """
    array = float_column(scores)
    if array is not None:
        return stable_argsort(-array)
    values = scores.tolist() if isinstance(scores, np.ndarray) else list(scores)
    order = sorted(range(len(values)), key=lambda i: -values[i])
    return np.array(order, dtype=np.intp)


def strictly_increasing(values: Sequence[Any]) -> bool:
    """Whether ``values`` strictly increase under ``<`` with none ``None``: one pass of
    ``<`` over neighbours. Values that do not compare (``None``, naive against aware
    datetimes) give ``False`` (a :class:`TypeError` stops the pass).

    >>> strictly_increasing([1, 2, 5]), strictly_increasing([1, 1]), strictly_increasing([None])
    (True, False, False)
    """
    if len(values) < 2:
        return None not in values
    try:
        return all(map(lt, values, islice(values, 1, None)))
    except TypeError:
        return False


FIELD_CHUNK = 512
"""Items per chunk of :func:`read_fields` (their fields stay in the CPU cache while read)."""


def read_fields(items: Sequence[Any], names: Sequence[str], cls: type) -> list[list[Any]] | None:
    """``[[getattr(item, name) for item in items] for name in names]`` when every item is an
    instance of ``cls``, else ``None``; read :data:`FIELD_CHUNK` items at a time, so each
    item's fields are read while it is still in the CPU cache.

    >>> from cupel import ContextItem
    >>> read_fields([ContextItem(content="a", tokens=2)], ("tokens", "pinned"), ContextItem)
    [[2], [False]]
    >>> read_fields([ContextItem(content="a", tokens=2), "b"], ("tokens",), ContextItem)
    """
    getters = [attrgetter(name) for name in names]
    out: list[list[Any]] = [[] for _ in names]
    for start in range(0, len(items), FIELD_CHUNK):
        part = items[start : start + FIELD_CHUNK]
        if not all(issubclass(kind, cls) for kind in set(map(type, part))):
            return None
        for column, get in zip(out, getters, strict=True):
            column.extend(map(get, part))
    return out
