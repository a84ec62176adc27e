"""When a built-in's fast path may be taken (private). Both rules live here, and only here.

Built-in scorers, slicers and placers have a second implementation of their definition
that works on float64 / int64 arrays (scorers: ``_scores``; slicers:
``_select_positions``; placers: ``_order``). Two questions decide whether it runs:

1. **Whose definition is it?** A fast path stands for public methods (a scorer's
   ``score`` and ``score_all``, a slicer's ``slice`` and ``slice_detailed``, a placer's
   ``place``); it runs only when every one of them is cupel's own
   (:func:`fast_method`). A user's subclass that overrides one of them is run through
   its override: a ``KindScorer`` subclass whose ``score()`` returns 0.5 is scored
   through that ``score()``, never through ``KindScorer``'s batch. (A subclass that only
   adds an ``__init__`` or a ``__repr__`` keeps the fast path: nothing it stands for
   changed.)
2. **Can the values live in an array?** Scores must all be exactly Python ``float`` s,
   without NaN unless the caller handles NaN (:func:`float_column`); token sums must stay
   below :data:`MAX_EXACT_TOKENS`, so int64 sums and float64 densities are exact.

Otherwise the spec's per-item definition runs; both give identical results (the
agreement tests in tests/core/perf and tests/core/test_properties.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from itertools import islice
from operator import attrgetter, itemgetter, lt
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = [
    "MAX_EXACT_TOKENS",
    "Columns",
    "FloatArray",
    "IntArray",
    "SharedFields",
    "TokenArray",
    "columns",
    "fast_method",
    "field_column",
    "float_column",
    "increasing_column",
    "known_increasing",
    "read_fields",
    "read_item_fields",
    "sharing_fields",
    "stable_argsort",
    "strictly_increasing",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
TokenArray = npt.NDArray[np.int64]

MAX_EXACT_TOKENS = 2**53
"""Token sums below this are exact in int64 and float64 (the array paths' precondition)."""


def _is_cupel(cls: type) -> bool:
    module = cls.__module__
    return module == "cupel" or module.startswith("cupel.")


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
        owner = next((cls for cls in mro if public in cls.__dict__), None)
        if owner is not None and not _is_cupel(owner):
            return None
    return method


def float_column(
    values: FloatArray | Sequence[Any], *, allow_nan: bool = False
) -> FloatArray | None:
    """``values`` as a float64 array when every value is exactly a Python ``float`` (so the
    array holds them exactly) and, unless ``allow_nan``, none is NaN; else ``None``.
    Float64 arrays are taken as they are.

    >>> float_column([0.5, 1.0]), float_column([1, 0.5]), float_column([float("nan")])
    (array([0.5, 1. ]), None, None)
    """
    if isinstance(values, np.ndarray):
        array: FloatArray = values
    else:
        if not set(map(type, values)) <= {float}:
            return None
        array = np.array(values, dtype=np.float64)
    if array.dtype != np.float64:
        return None
    if not allow_nan and np.isnan(array).any():
        return None
    return array


class Columns(NamedTuple):
    """Scores and token counts as arrays that the fast paths may read (see :func:`columns`)."""

    scores: FloatArray
    tokens: TokenArray


def columns(
    scores: FloatArray | Sequence[Any],
    tokens: Sequence[int],
    *,
    nonnegative: bool = False,
    token_array: TokenArray | None = None,
) -> Columns | None:
    """``scores`` and ``tokens`` as :class:`Columns` when the values may live in arrays
    (rule 2): every score a NaN-free ``float`` (:func:`float_column`), every token count
    non-negative (already known when ``nonnegative``) and their sum below
    :data:`MAX_EXACT_TOKENS`; else ``None``. ``token_array``: ``tokens`` as int64,
    already checked so (the Classify stage's), taken as it is.

    >>> columns([0.5, 1.0], [3, 4]).tokens, columns([0.5], [-1]), columns([0.5], [2**53])
    (array([3, 4]), None, None)
    """
    array = float_column(scores)
    if array is None:
        return None
    if token_array is not None:
        return Columns(array, token_array)
    if tokens and ((not nonnegative and min(tokens) < 0) or sum(tokens) >= MAX_EXACT_TOKENS):
        return None
    return Columns(array, np.array(tokens, dtype=np.int64))


def stable_argsort(keys: FloatArray, tie_scores: FloatArray | None = None) -> IntArray:
    """``np.argsort(keys, kind="stable")`` for float64 ``keys`` without NaN, several times
    faster on large arrays: NumPy's default (unstable, vectorised) sort, then, only where
    equal keys are adjacent, those tied elements alone put back in ascending position
    order, which is exactly what the stable sort gives (equal keys, ``0.0`` and ``-0.0``
    included, keep their order). ``keys`` with NaN get the stable sort itself.

    ``tie_scores``: equal keys are ordered by descending ``tie_scores`` first, then by
    position (``np.lexsort((positions, -tie_scores, keys))``; GreedySlice's densities).

    >>> keys = np.array([0.5, 0.0, 0.5, -0.0, 1.0])
    >>> stable_argsort(keys).tolist() == np.argsort(keys, kind="stable").tolist()
    True
    >>> stable_argsort(keys, np.array([1.0, 0.0, 2.0, 0.0, 0.0])).tolist()
    [1, 3, 2, 0, 4]
    """
    order: IntArray = np.argsort(keys)
    n = len(order)
    if n < 2:
        return order
    ranked = keys[order]
    if np.isnan(ranked[-1]):  # NaN sorts last
        order = np.argsort(keys, kind="stable")
        if tie_scores is None:
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
    # a run starts at a tied element whose left neighbour is not equal to it
    starts = np.ones(len(tied), dtype=np.bool_)
    starts[1:] = ~same[tied[1:] - 1]
    run = np.cumsum(starts, dtype=np.int64)
    members = order[tied]
    if tie_scores is None:  # by (run, position): one unstable sort of distinct integers
        run *= n
        run += members
        run.sort()
        run %= n
        order[tied] = run
    else:
        order[tied] = members[np.lexsort((members, -tie_scores[members], run))]
    return order


FIELD_CHUNK = 512
"""Items per chunk of :func:`read_fields` (their fields stay in the CPU cache while read)."""

_getter: Callable[[str], Callable[[Any], Any]] = cache(attrgetter)
"""One ``attrgetter`` per field name, made once."""
_item_getter: Callable[[str], Callable[[Any], Any]] = cache(itemgetter)
"""One ``itemgetter`` per field name, made once."""


def read_fields(items: Sequence[Any], names: Sequence[str]) -> list[list[Any]]:
    """``[[getattr(item, name) for item in items] for name in names]``, read chunk by chunk
    (:data:`FIELD_CHUNK` items at a time, every name per chunk): each item's fields are read
    while its object is still in the CPU cache, which on large passes costs about half of
    one full pass per name. Same values, same order, same errors as the plain passes.

    >>> from cupel import ContextItem
    >>> read_fields([ContextItem(content="a", tokens=2)], ("tokens", "pinned"))
    [[2], [False]]
    """
    columns = read_item_fields(items, names, object)
    if columns is None:  # pragma: no cover - every value is an object
        raise TypeError("read_fields: an item is not an object")
    return columns


def read_item_fields(
    items: Sequence[Any], names: Sequence[str], cls: type, *, dict_class: type | None = None
) -> list[list[Any]] | None:
    """:func:`read_fields` when every item is an instance of ``cls``, else ``None`` (the
    items' types are checked chunk by chunk too, while the chunk is in the CPU cache).

    ``dict_class``: a class whose instances keep each of ``names`` in their instance
    ``__dict__`` and which defines no attribute of those names (exactly
    :class:`~cupel.ContextItem`, whose fields pydantic stores so). A chunk of only its
    instances is read from their ``__dict__`` s: one read of the ``__dict__`` per item and
    one dict lookup per field, about 0.8x the attribute reads, same values. A chunk
    holding an item that misses one of the names (built with ``model_construct`` without
    it) is read attribute by attribute instead, which raises the usual
    ``AttributeError``.

    >>> from cupel import ContextItem
    >>> read_item_fields([ContextItem(content="a", tokens=2)], ("tokens",), ContextItem)
    [[2]]
    >>> read_item_fields([ContextItem(content="a", tokens=2), "b"], ("tokens",), ContextItem)
    """
    by_name = [_getter(name) for name in names]
    by_key = None if dict_class is None else [_item_getter(name) for name in names]
    plain = {dict_class}
    out: list[list[Any]] = [[] for _ in names]
    n = len(items)
    for start in range(0, n, FIELD_CHUNK):
        part = items if n <= FIELD_CHUNK else items[start : start + FIELD_CHUNK]
        types = set(map(type, part))
        if by_key is not None and types <= plain:
            dicts = list(map(_DICT, part))
            try:
                for column, get in zip(out, by_key, strict=True):
                    column.extend(map(get, dicts))
                continue
            except KeyError:  # a missing field: read the chunk again by attribute
                for column in out:
                    del column[start:]
        elif not all(issubclass(kind, cls) for kind in types):
            return None
        for column, get in zip(out, by_name, strict=True):
            column.extend(map(get, part))
    return out


_DICT = attrgetter("__dict__")


class SharedFields(dict[str, list[Any]]):
    """Field name → one value per item (the Classify stage's read), plus what one pass
    has already learnt about those lists: ``increasing`` maps a field name to whether
    its list is :func:`strictly_increasing` (:func:`increasing_column` fills it, the
    Recency scorer for one; :func:`known_increasing` reads it, the Chronological placer
    for one). The lists are never modified, so what was learnt stays true."""

    __slots__ = ("increasing",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.increasing: dict[str, bool] = {}


# The fields already read for one pass: (the items object, field name → one value per item).
_SHARED: ContextVar[tuple[Sequence[Any], dict[str, list[Any]]] | None] = ContextVar(
    "cupel_shared_fields", default=None
)


@contextmanager
def sharing_fields(items: Sequence[Any], fields: dict[str, list[Any]]) -> Iterator[None]:
    """Within the block, :func:`field_column` on this very ``items`` object returns the
    lists of ``fields`` instead of reading the items again (the pipeline reads the fields
    its built-in stages need once, in :func:`read_fields`, and shares them)."""
    token = _SHARED.set((items, fields))
    try:
        yield
    finally:
        _SHARED.reset(token)


def field_column(items: Sequence[Any], name: str) -> list[Any]:
    """Every item's ``name`` attribute, in order: the shared list when the pass being
    scored has read it already (:func:`sharing_fields`), else read now. Do not modify it.

    >>> from cupel import ContextItem
    >>> field_column([ContextItem(content="a", tokens=2)], "tokens")
    [2]
    """
    shared = _SHARED.get()
    if shared is not None and shared[0] is items:
        column = shared[1].get(name)
        if column is not None:
            return column
    return list(map(_getter(name), items))


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


def _shared_fields(items: Sequence[Any]) -> SharedFields | None:
    shared = _SHARED.get()
    if shared is not None and shared[0] is items and isinstance(shared[1], SharedFields):
        return shared[1]
    return None


def increasing_column(items: Sequence[Any], name: str) -> tuple[list[Any], bool]:
    """:func:`field_column` and whether it is :func:`strictly_increasing`; for a shared
    column (:func:`sharing_fields` with :class:`SharedFields`), found once per pass and
    kept for :func:`known_increasing`.

    >>> from cupel import ContextItem
    >>> increasing_column([ContextItem(content="a", tokens=2)], "tokens")
    ([2], True)
    """
    column = field_column(items, name)
    shared = _shared_fields(items)
    if shared is None or shared.get(name) is not column:
        return column, strictly_increasing(column)
    known = shared.increasing.get(name)
    if known is None:
        known = shared.increasing[name] = strictly_increasing(column)
    return column, known


def known_increasing(items: Sequence[Any], name: str) -> bool | None:
    """Whether the shared ``name`` column of ``items`` was found strictly increasing
    during this pass (:func:`increasing_column`); ``None`` when that is not known."""
    shared = _shared_fields(items)
    return None if shared is None else shared.increasing.get(name)
