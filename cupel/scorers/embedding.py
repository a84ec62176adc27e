"""Embedder: a user's embedding model as vectors for :class:`~cupel.RelevanceScorer`.

An :class:`Embedder` wraps two functions of the user's model — texts to vectors, and the
query to a vector — and keeps each vector in a bounded cache keyed by the text: a
selection over a growing conversation sends the model only the texts it has not embedded
yet. Every vector is checked (finite numbers, one dimension for all) and stored as a unit
vector, so the cosine of two texts is the dot product of their vectors. The adapters'
``embeddings=`` find the same embedder again for the same model object
(:func:`shared_embedder`), so the cache lasts as long as the model is used.

>>> def letters(texts):
...     return [[t.count("a"), t.count("b")] for t in texts]
>>> embedder = Embedder(letters, name="letters")
>>> embedder.vectors(["ab", "aa", "ab"]).round(4).tolist()
[[0.7071, 0.7071], [1.0, 0.0], [0.7071, 0.7071]]
>>> embedder.vectors(["ab", "bb"]).shape, embedder.calls, embedder.embedded
((2, 2), 2, 3)
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from numbers import Real
from typing import Any

import numpy as np

from cupel._errors import EmbeddingError, refusal
from cupel.scorers._base import FloatArray

__all__ = ["EmbedQuery", "EmbedTexts", "Embedder", "model_embedder", "shared_embedder"]

EmbedTexts = Callable[[Sequence[str]], Sequence[Sequence[float]]]
"""Texts to their vectors, one per text, in order (``Embeddings.embed_documents``)."""
EmbedQuery = Callable[[str], Sequence[float]]
"""The query to its vector (``Embeddings.embed_query``)."""

DEFAULT_MAX_TEXTS = 16_384
"""How many texts' vectors an :class:`Embedder` keeps by default (the oldest used go
first); the history's own reuse bound."""
_MAX_QUERIES = 256


def _short(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


class Embedder:
    """Texts to unit vectors through ``embed`` (and queries through ``query``, default
    ``embed`` of the one text), each distinct text sent to the model once while it stays
    among the ``max_texts`` most recently used. ``name`` names the model in errors.

    ``calls`` counts the model's calls, ``embedded`` the texts (queries included) sent.
    A zero vector stays zero. Thread-safe (two threads may embed the same new text twice,
    with one result). Copies and pickles keep the model functions (a deep copy does not
    copy them) and start with an empty cache.
    """

    def __init__(
        self,
        embed: EmbedTexts,
        query: EmbedQuery | None = None,
        *,
        name: str | None = None,
        max_texts: int = DEFAULT_MAX_TEXTS,
    ) -> None:
        if not callable(embed):
            rule = "must be a callable taking a list of texts and returning one vector per text"
            raise refusal("Embedder", "embed", rule, embed, typed=True)
        if query is not None and not callable(query):
            rule = "must be a callable taking one text and returning its vector, or None"
            raise refusal("Embedder", "query", rule, query, typed=True)
        if isinstance(max_texts, bool) or not isinstance(max_texts, int) or max_texts < 1:
            raise refusal("Embedder", "max_texts", "must be an int >= 1", max_texts)
        self._embed = embed
        self._query = query
        self.name = name if name is not None else getattr(embed, "__qualname__", repr(embed))
        self.max_texts = max_texts
        self._start()

    def _start(self) -> None:
        self.calls = 0
        self.embedded = 0
        self._lock = threading.Lock()
        self._texts: OrderedDict[str, FloatArray] = OrderedDict()  # least recently used first
        self._queries: OrderedDict[str, FloatArray] = OrderedDict()
        self._dimension: int | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {key: self.__dict__[key] for key in ("_embed", "_query", "name", "max_texts")}

    def __deepcopy__(self, memo: dict[int, Any]) -> Embedder:
        """A new embedder of the same model functions (a live model is not copied; some
        frameworks' instrumented methods cannot be), with an empty cache."""
        return Embedder(self._embed, self._query, name=self.name, max_texts=self.max_texts)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._start()

    def __repr__(self) -> str:
        return f"Embedder({self.name})"

    def _returned(self, what: str, index: int | None = None) -> EmbeddingError:
        """The error for a model that returned ``what``."""
        message = f"embedding model {self.name} returned {what}"
        return EmbeddingError(message, model=self.name, index=index)

    def _unit(self, raw: object, index: int | None, text: str) -> FloatArray:
        """``raw`` checked and scaled to length 1 (a zero vector kept)."""
        where = f"{'the query' if index is None else f'text {index}'} ({_short(text)})"
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence | np.ndarray):
            raise self._returned(
                f"{type(raw).__name__} for {where}, not a sequence of numbers", index
            )
        values = list(raw)
        if not values or not all(
            isinstance(v, (Real, np.floating, np.integer)) and not isinstance(v, bool)
            for v in values
        ):
            rule = f"a vector for {where} that is empty or holds something other than numbers"
            raise self._returned(rule, index)
        vector = np.array(values, dtype=np.float64)
        if not np.isfinite(vector).all():
            raise self._returned(f"a vector with a NaN or infinite value for {where}", index)
        if self._dimension is None:
            self._dimension = len(vector)
        elif len(vector) != self._dimension:
            raise self._returned(
                f"a vector of dimension {len(vector)} for {where}, unlike its earlier ones "
                f"({self._dimension})",
                index,
            )
        norm = math.sqrt(math.fsum(float(v) * float(v) for v in vector))
        return vector / norm if norm > 0.0 else vector

    def _call(self, given: str, call: Callable[[], Any]) -> Any:
        """``call()`` of the model; its failure an EmbeddingError naming what it was ``given``."""
        try:
            return call()
        except EmbeddingError:
            raise
        except Exception as exc:
            raise EmbeddingError(
                f"embedding model {self.name} failed on {given}: {type(exc).__name__}: {exc}",
                model=self.name,
            ) from exc

    def vectors(self, texts: Sequence[str]) -> FloatArray:
        """The unit vectors of ``texts`` (one row each, in order); only the texts not in
        the cache are sent to the model, once each, in one call."""
        cache = self._texts
        with self._lock:
            found = list(map(cache.get, texts))
            for text, vector in zip(texts, found, strict=True):
                if vector is not None:  # the texts found are the most recently used
                    cache.move_to_end(text)
        absent = [i for i, vector in enumerate(found) if vector is None]
        if absent:
            new = self._embed_missing(list(dict.fromkeys(texts[i] for i in absent)), texts)
            for i in absent:
                found[i] = new[texts[i]]
        return np.array(found) if found else np.zeros((0, self._dimension or 0))

    def _embed_missing(self, missing: list[str], texts: Sequence[str]) -> dict[str, FloatArray]:
        """The unit vectors of ``missing`` (texts of ``texts``) from one call of the model,
        kept in the cache, whose least recently used texts are evicted past ``max_texts``."""
        raw = self._call(f"{len(missing)} texts", lambda: self._embed(missing))
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence | np.ndarray):
            raise self._returned(f"{type(raw).__name__}, not a sequence of vectors")
        listed = list(raw)
        if len(listed) != len(missing):
            raise self._returned(f"{len(listed)} vectors for {len(missing)} texts")
        first = {t: i for i, t in reversed(list(enumerate(texts)))}
        with self._lock:
            self.calls += 1
            self.embedded += len(missing)
            new = {t: self._unit(v, first[t], t) for t, v in zip(missing, listed, strict=True)}
            for text, vector in new.items():
                self._texts[text] = vector
                self._texts.move_to_end(text)
            while len(self._texts) > self.max_texts:
                self._texts.popitem(last=False)
        return new

    def query(self, text: str) -> FloatArray:
        """The unit vector of the query ``text`` (cached like the texts)."""
        with self._lock:
            known = self._queries.get(text)
            if known is not None:
                self._queries.move_to_end(text)
                return known
        raw = self._call(
            f"the query ({_short(text)})",
            lambda: self._query(text) if self._query is not None else self._embed([text])[0],
        )
        with self._lock:
            self.calls += 1
            self.embedded += 1
            vector = self._unit(raw, None, text)
            self._queries[text] = vector
            while len(self._queries) > _MAX_QUERIES:
                self._queries.popitem(last=False)
        return vector


_SHARED: list[tuple[object, Embedder]] = []
_SHARED_LOCK = threading.Lock()
_MAX_SHARED = 8


def shared_embedder(model: object, build: Callable[[], Embedder]) -> Embedder:
    """The :class:`Embedder` of the live ``model`` object: the one built for the same
    object (found by identity among the :data:`_MAX_SHARED` most recently used models,
    which this keeps alive), else ``build()``. The adapters call it on every selection
    so that one model's cache serves every call and every component using it.

    >>> model = object()
    >>> first = shared_embedder(model, lambda: Embedder(lambda ts: [[1.0] for _ in ts]))
    >>> shared_embedder(model, lambda: Embedder(len)) is first
    True
    """
    with _SHARED_LOCK:
        for position, (known, embedder) in enumerate(_SHARED):
            if known is model:
                if position:
                    _SHARED.insert(0, _SHARED.pop(position))
                return embedder
    built = build()
    with _SHARED_LOCK:
        _SHARED.insert(0, (model, built))
        del _SHARED[_MAX_SHARED:]
    return built


def model_embedder(
    model: object, texts: Callable[[list[str]], Sequence[Sequence[float]]], query: EmbedQuery
) -> Embedder:
    """The shared :class:`Embedder` (:func:`shared_embedder`) of a framework's embedding
    ``model``, embedding documents by ``texts`` (given a list) and the query by ``query``,
    named after the model's class: what both adapters' ``embeddings=`` build.

    >>> class Model:
    ...     def documents(self, texts): return [[1.0, len(t)] for t in texts]
    ...     def question(self, text): return [1.0, 0.0]
    >>> model = Model()
    >>> embedder = model_embedder(model, model.documents, model.question)
    >>> embedder.name, model_embedder(model, model.documents, model.question) is embedder
    ('Model', True)
    """
    return shared_embedder(
        model,
        lambda: Embedder(lambda batch: texts(list(batch)), query, name=type(model).__name__),
    )
