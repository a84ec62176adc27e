"""RelevanceScorer: lexical BM25 relevance of each item to a query (a spec extension).

The score of an item is its Okapi BM25 score against the query, the items of the pass
being the corpus, divided by the pass's highest score (so scores lie in [0, 1]):

- ``N`` is the number of items, ``|d|`` an item's length in terms (below), ``avgdl`` the
  mean ``|d|`` over the pass, ``df(t)`` the number of items holding term ``t`` and
  ``tf(t, d)`` the number of times ``t`` occurs in item ``d``;
- ``idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))``;
- ``bm25(d) = sum over the query's distinct terms t with tf(t, d) > 0 of
  idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))``,
  summed in the order the terms first occur in the query;
- ``score(d) = bm25(d) / max over the pass of bm25``; every score is 0.0 when no item
  holds a query term (or the query has no terms).

Terms (:func:`terms`) are computed from the text in five steps:

1. Unicode NFKC normalisation, then ``str.casefold()``.
2. Tokens: maximal runs of letters and digits (``\\w`` without the underscore) and
   combining marks (general category ``M``, up to U+FFFF) that hold at least one letter
   or digit; anything else separates tokens (``snake_case`` is two tokens).
3. CJK: a token is split into runs of CJK characters and runs of other characters. A CJK
   run (Han ideographs U+3400-U+4DBF, U+4E00-U+9FFF, U+F900-U+FAFF, U+20000-U+3FFFF,
   the marks U+3005-U+3007, hiragana U+3041-U+309F, katakana U+30A1-U+30FA and
   U+30FC-U+30FF) gives its overlapping character bigrams (``東京都`` gives ``東京``,
   ``京都``), or the character itself when the run is one character long. The steps
   below apply to the other runs only.
4. Stopwords: a token in :data:`STOPWORDS` (a fixed list of English function words and
   the pieces contractions leave, such as ``t`` of ``don't``) is dropped.
5. Suffixes, for tokens made of letters only (``str.isalpha``), applied in order:

   a. plural: ``-ies`` → ``-y`` when the token has 5 or more characters
      (``studies`` → ``study``); else ``-sses`` → ``-ss`` (``classes`` → ``class``);
      else ``-xes``, ``-zes``, ``-ches``, ``-shes`` lose ``-es`` when the token has 5 or
      more characters (``boxes`` → ``box``); else a final ``-s`` is dropped when the
      token has 4 or more characters and does not end in ``-ss``, ``-us`` or ``-is``
      (``cats`` → ``cat``; ``glass``, ``status``, ``analysis`` stay);
   b. verb endings, on the result of (a): ``-ied`` → ``-y`` when the word has 5 or more
      characters (``tried`` → ``try``); else ``-ing``, and ``-ed`` unless the word ends
      in ``-eed``, are removed when what is left has 2 or more characters and holds a
      vowel (``a e i o u y``); then a doubled final consonant other than ``l``, ``s``,
      ``z`` is undoubled (``running`` → ``run``, ``stopped`` → ``stop``,
      ``falling`` → ``fall``, ``needed`` → ``need``; ``thing`` and ``red`` stay);
   c. a final ``-e`` is dropped from a word of 3 or more characters (``make``,
      ``making`` and ``makes`` all give ``mak``).

With an embedding model (``embed=``, an :class:`~cupel.scorers.embedding.Embedder` or a
function from texts to vectors), the score mixes in *semantic* relevance:

- ``semantic(d) = max(0, cos(e(query), e(d)))``, the cosine of the query's and the
  item's embeddings (a zero vector gives 0), clipped at 0 so scores stay in [0, 1];
- ``score(d) = (1 - w) * lexical(d) + w * semantic(d)`` with ``w = semantic_weight``
  (default 0.5), ``lexical(d)`` being the scaled BM25 score above.

A weighted sum keeps each part's magnitude (rank fusion would count a near-tie like a
gap), and ``w`` reads as each part's share of the score. Cosines of real models often
cluster (0.7-0.9 for related text), so the semantic part varies less than the lexical
one: lower ``w`` to favour words, raise it to favour meaning.

The rule is deliberately light and predictable, not a full stemmer: it makes plurals
and ``-ing`` / ``-ed`` forms meet their base word. Terms depend on the Unicode data of the
running Python (NFKC, case folding, letter classes).

>>> terms("The cats were running to the boxes!")
['cat', 'run', 'box']
>>> terms("東京タワーに行きました")
['東京', '京タ', 'タワ', 'ワー', 'ーに', 'に行', '行き', 'きま', 'まし', 'した']
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from itertools import count
from typing import Annotated

import numpy as np

from cupel._errors import ConfigurationError, EmbeddingError, refusal
from cupel._model import ContextItem
from cupel._params import LIVE, NonNegative, UnitInterval
from cupel._text import is_unicode_text
from cupel.scorers._base import ArrayScorer, Batches, FloatArray, Scorer, children_of, walk
from cupel.scorers._validation import fail, finite_in_unit_interval, number
from cupel.scorers.embedding import Embedder, EmbedTexts

__all__ = [
    "EMBEDDINGS_FIX",
    "STOPWORDS",
    "UNBOUND_FIX",
    "RelevanceScorer",
    "bind_query",
    "has_relevance",
    "hashed_terms",
    "needs_query",
    "terms",
    "with_embedder",
]

_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only
    or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you
    your yours yourself yourselves
    s t d ll m re ve don doesn didn isn aren wasn weren won wouldn shouldn couldn hasn
    haven hadn
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())
"""The dropped tokens (casefolded English function words and contraction pieces)."""

_CJK = (
    "\u3005-\u3007\u3041-\u309f\u30a1-\u30fa\u30fc-\u30ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"
)
_VOWELS = frozenset("aeiouy")
_KEEP_DOUBLED = frozenset("lsz")


@cache
def _token_pattern() -> re.Pattern[str]:
    """Step 2's tokens in a normalised text (built on first use: the combining marks are
    read from the Unicode data once)."""
    marks = "".join(
        re.escape(chr(c)) for c in range(0x10000) if unicodedata.category(chr(c))[0] == "M"
    )
    return re.compile(f"[{marks}]*(?:[^\\W_]+[{marks}]*)+")


_CJK_RUNS = re.compile(f"([{_CJK}]+)|([^{_CJK}]+)")
_HAS_CJK = re.compile(f"[{_CJK}]")


def _stem(word: str) -> str:
    """Step 5 of the module's rule (a letters-only, non-stopword token)."""
    n = len(word)
    if word.endswith("ies") and n >= 5:
        word = word[:-3] + "y"
    elif word.endswith("sses") or (n >= 5 and word.endswith(("xes", "zes", "ches", "shes"))):
        word = word[:-2]
    elif n >= 4 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ied") and len(word) >= 5:
        word = word[:-3] + "y"
    else:
        cut = 3 if word.endswith("ing") else 2 if word.endswith("ed") else 0
        if cut == 2 and word.endswith("eed"):
            cut = 0
        stem = word[:-cut] if cut else word
        if cut and len(stem) >= 2 and not _VOWELS.isdisjoint(stem):
            last = stem[-1]
            if stem[-2] == last and last not in _VOWELS and last not in _KEEP_DOUBLED:
                stem = stem[:-1]
            word = stem
    if len(word) >= 3 and word.endswith("e"):
        word = word[:-1]
    return word


def _word_terms(word: str) -> list[str]:
    """Steps 4-5 for a token without CJK characters."""
    if word in STOPWORDS:
        return []
    return [_stem(word) if word.isalpha() else word]


def _token_terms(token: str) -> list[str]:
    """The terms of one token (steps 3-5)."""
    if _HAS_CJK.search(token) is None:
        return _word_terms(token)
    found: list[str] = []
    for cjk, other in _CJK_RUNS.findall(token):
        if other:
            found += _word_terms(other)
        elif len(cjk) == 1:
            found.append(cjk)
        else:
            found += [cjk[i : i + 2] for i in range(len(cjk) - 1)]
    return found


def _tokens(text: str) -> list[str]:
    """Steps 1-2: the tokens of ``text``."""
    return _token_pattern().findall(unicodedata.normalize("NFKC", text).casefold())


_ASCII_TOKENS = bytes(
    ord(c.lower()) if c.isascii() and c.isalnum() else 32 for c in map(chr, range(128))
) + bytes(range(128, 256))
"""A ``bytes.translate`` table: ASCII letters lower-cased, digits kept, every other ASCII
byte a space. On ASCII text, steps 1-2 are exactly this, then a split on spaces."""

_MARKER = b"\x01"
"""Separates the items' tokens in the pass's joined token stream (never a token)."""


def _token_stream(texts: Sequence[str]) -> list[bytes]:
    """Every item's tokens (steps 1-2) as UTF-8, item after item, each item's followed by
    :data:`_MARKER`: ASCII texts are tokenised by one ``bytes.translate`` each and one
    split of the whole pass; the others through :func:`_tokens`."""
    pieces = [
        text.encode("ascii").translate(_ASCII_TOKENS)
        if text.isascii()
        else " ".join(_tokens(text)).encode("utf-8")
        for text in texts
    ]
    pieces.append(b"")
    return b" \x01 ".join(pieces).split()


_STOPWORD_BYTES = tuple(sorted(word.encode("ascii") for word in STOPWORDS))


def _candidates(tokens: Iterable[bytes], query: tuple[str, ...]) -> list[bytes]:
    """The tokens whose terms are worked out one by one: the non-ASCII ones and the ASCII
    ones that may give a query term. Any other ASCII token gives one term, never a query
    term, unless it is a stopword: a term keeps at least its token's first
    ``len(term) - 1`` characters (``-ies`` / ``-ied`` → ``-y`` adds one)."""
    prefixes = tuple(term[: max(len(term) - 1, 1)].encode("utf-8") for term in query)
    return [token for token in tokens if not token.isascii() or token.startswith(prefixes)]


def terms(text: str) -> list[str]:
    """The terms of ``text``, in order (see the module for the rule).

    >>> terms("Don't forget: the user's API keys expired yesterday")
    ['forget', 'user', 'api', 'key', 'expir', 'yesterday']
    >>> terms("snake_case 3.14 naïve")
    ['snak', 'cas', '3', '14', 'naïv']
    """
    found: list[str] = []
    for token in _token_stream([text])[:-1]:  # the last token is the item's marker
        found += _token_terms(token.decode("utf-8"))
    return found


def _query_words(query: str) -> dict[str, str]:
    """The query's distinct terms in first-occurrence order, each with the query's word
    it first came from as written (after step 1; a CJK bigram is itself).

    >>> _query_words("Names? My name, 東京")
    {'nam': 'names', '東京': '東京'}
    """
    words: dict[str, str] = {}
    for token in _tokens(query):
        for cjk, other in _CJK_RUNS.findall(token):
            for term in _token_terms(cjk or other):
                words.setdefault(term, term if cjk else other)
    return words


def hashed_terms(texts: Sequence[str], dimension: int = 256) -> list[list[float]]:
    """A deterministic offline stand-in for an embedding model, for tests and benchmarks:
    each text's relevance terms (:func:`terms`) counted into
    ``dimension`` buckets by a stable hash (BLAKE2b, the same in every process). It is
    **not** a semantic model: two texts are similar when they share words, never when
    they only share a meaning.

    >>> vectors = hashed_terms(["red boxes", "a red box", "blue"], dimension=8)
    >>> vectors[0] == vectors[1], sum(vectors[2])
    (True, 1.0)
    """
    out: list[list[float]] = []
    for text in texts:
        vector = [0.0] * dimension
        for term in terms(text):
            digest = hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest()
            vector[int.from_bytes(digest, "big") % dimension] += 1.0
        out.append(vector)
    return out


UNBOUND_FIX = (
    "pass a query: Pipeline.with_query(...), the CLI's --query, or select through a history "
    "component, which uses the latest user message"
)


class RelevanceScorer(ArrayScorer):
    """Lexical BM25 relevance to ``query`` over the pass, scaled so the best item scores 1.0.

    See :mod:`cupel.scorers.relevance` for the exact rule (terms, BM25, scaling). ``k1``
    (finite, >= 0) saturates term frequency; ``b`` (in [0, 1]) is the strength of the
    length normalisation. A scorer built without a query is *unbound*: it may sit in a
    pipeline or policy, and is bound per selection (:meth:`with_query`,
    ``Pipeline.with_query``); scoring with it raises :class:`~cupel.ConfigurationError`.

    ``embed`` (an :class:`~cupel.scorers.embedding.Embedder`, or a function from a list
    of texts to one vector each, which is wrapped in one) adds semantic relevance,
    ``semantic_weight`` (in [0, 1]) of the score (see the module for the rule). The
    embedding is a live object: it is no policy key (``semantic_weight`` is); the
    adapters' ``embeddings=`` attach it (:func:`with_embedder`).

    ``score_all`` reads each item's text once (linear in the total text); ``score`` finds
    the item by identity in ``all_items`` and returns its score in that pass (NaN when it
    is not there).

    >>> from cupel import ContextItem
    >>> items = [ContextItem(content=c, tokens=1) for c in (
    ...     "The invoice was paid in March.", "We talked about cats.", "Invoices are due monthly.")]
    >>> scorer = RelevanceScorer("when is the invoice due?")
    >>> [round(s, 4) for s in scorer.score_all(items)]
    [0.324, 0.0, 1.0]
    >>> scorer.matches(items[2])
    ('invoice', 'due')
    >>> RelevanceScorer().bound, RelevanceScorer().with_query("cats").query
    (False, 'cats')
    """

    _fields = ("content",)

    def __init__(
        self,
        query: str | None = None,
        *,
        k1: NonNegative = 1.2,
        b: UnitInterval = 0.75,
        semantic_weight: UnitInterval = 0.5,
        embed: Annotated[Embedder | EmbedTexts | None, LIVE] = None,
    ) -> None:
        if query is not None:
            if not isinstance(query, str):
                rule = "must be text (a str) or None"
                raise fail("RelevanceScorer", "query", rule, query, typed=True)
            if not is_unicode_text(query):
                rule = "must be valid Unicode (no lone surrogates)"
                raise fail("RelevanceScorer", "query", rule, query)
        k1_value = number("RelevanceScorer", "k1", k1)
        if not (math.isfinite(k1_value) and k1_value >= 0.0):
            raise fail("RelevanceScorer", "k1", "must be a finite number >= 0", k1)
        b_value = finite_in_unit_interval("RelevanceScorer", "b", b)
        weight = finite_in_unit_interval("RelevanceScorer", "semantic_weight", semantic_weight)
        if embed is not None and not isinstance(embed, Embedder):
            if not callable(embed):
                rule = (
                    "must be an Embedder, a callable from a list of texts to one vector "
                    "each, or None"
                )
                raise fail("RelevanceScorer", "embed", rule, embed)
            embed = Embedder(embed)
        self._query = query
        self._k1 = k1_value
        self._b = b_value
        self._weight = weight
        self._embed: Embedder | None = embed
        self._words = {} if query is None else _query_words(query)
        self._terms: tuple[str, ...] = tuple(self._words)

    @property
    def query(self) -> str | None:
        """The query (``None`` when unbound)."""
        return self._query

    @property
    def k1(self) -> float:
        """The term-frequency saturation parameter."""
        return self._k1

    @property
    def b(self) -> float:
        """The length-normalisation strength."""
        return self._b

    @property
    def semantic_weight(self) -> float:
        """The semantic part's share of the score (used only with an embedding)."""
        return self._weight

    @property
    def embed(self) -> Embedder | None:
        """The embedding model's :class:`~cupel.scorers.embedding.Embedder`, if any."""
        return self._embed

    @property
    def bound(self) -> bool:
        """Whether the scorer has a query."""
        return self._query is not None

    @property
    def query_terms(self) -> tuple[str, ...]:
        """The query's distinct terms, in first-occurrence order."""
        return self._terms

    def with_query(self, query: str) -> RelevanceScorer:
        """A scorer with the same settings (and embedding), bound to ``query``."""
        if query is None:
            raise fail("RelevanceScorer", "query", "must be text (a str) to bind", query)
        return RelevanceScorer(
            query, k1=self._k1, b=self._b, semantic_weight=self._weight, embed=self._embed
        )

    def with_embedder(self, embed: Embedder | EmbedTexts | None) -> RelevanceScorer:
        """A scorer with the same settings and query, scoring with ``embed`` (``None``:
        lexical only)."""
        return RelevanceScorer(
            self._query, k1=self._k1, b=self._b, semantic_weight=self._weight, embed=embed
        )

    def matches(self, item: ContextItem) -> tuple[str, ...]:
        """The query's words whose terms ``item``'s content holds, as the query wrote them
        (casefolded; the first word of each term), in query order.

        >>> from cupel import ContextItem
        >>> RelevanceScorer("red Boxes, blue box").matches(ContextItem(content="A box", tokens=1))
        ('boxes',)
        """
        if not self._terms:
            return ()
        own = set(terms(item.content))
        return tuple(word for term, word in self._words.items() if term in own)

    def similarity(self, items: Sequence[ContextItem]) -> float | None:
        """The best cosine of ``items``' embeddings with the query's, as scored (``None``
        without an embedding, a query or items).

        >>> from cupel import ContextItem
        >>> scorer = RelevanceScorer("red box", embed=hashed_terms)
        >>> unit = [ContextItem(content=c, tokens=1) for c in ("a red cat", "tea")]
        >>> round(scorer.similarity(unit), 4)
        0.5
        >>> print(RelevanceScorer("red box").similarity([]))
        None
        """
        if self._embed is None or self._query is None or not items:
            return None
        return float(self._cosines(self._embed, [item.content for item in items]).max())

    def _cosines(self, embedder: Embedder, texts: Sequence[str]) -> FloatArray:
        """The cosine of each text's embedding with the query's."""
        query = embedder.query(self._query or "")
        vectors = embedder.vectors(texts)
        if vectors.shape[1] != len(query):
            raise EmbeddingError(
                f"embedding model {embedder.name} gave the query a vector of dimension "
                f"{len(query)} and the texts vectors of dimension {vectors.shape[1]}",
                model=embedder.name,
            )
        # einsum's own loop (no BLAS): each text's cosine is summed in the same order
        # whatever the pass
        cosines: FloatArray = np.einsum("ij,j->i", vectors, query)
        return cosines

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        scores = self._scores(all_items)
        for position in range(len(all_items) - 1, -1, -1):
            if all_items[position] is item:
                return float(scores[position])
        self._require_bound()
        return math.nan

    def _require_bound(self) -> None:
        if self._query is None:
            raise ConfigurationError(
                f"RelevanceScorer has no query (it is unbound): {UNBOUND_FIX}",
                field="query",
                value=None,
            )

    def _scores_in(self, batches: Batches) -> FloatArray:
        """The lexical scores, mixed with the semantic ones when there is an embedding."""
        self._require_bound()
        texts = batches.column("content")
        lexical = self._lexical(texts)
        if self._embed is None or not len(texts):
            return lexical
        semantic = np.maximum(self._cosines(self._embed, texts), 0.0)
        weight = self._weight
        return np.minimum((1.0 - weight) * lexical + weight * semantic, 1.0)

    def _lexical(self, texts: Sequence[str]) -> FloatArray:
        """BM25 over the pass on arrays: each distinct token of the stream is turned into
        terms once, only the query's terms are counted per item, and the per-term
        contributions are added in query order, as the definition sums them."""
        n = len(texts)
        query = self._terms
        if n == 0 or not query:
            return np.zeros(n)
        stream = _token_stream(texts)
        first: dict[bytes, int] = {}
        ids = np.fromiter(map(first.setdefault, stream, count()), np.intp, len(stream))
        marker_id = first.pop(_MARKER)
        is_marker = ids == marker_id
        owner = np.cumsum(is_marker) - is_marker
        ids, owner = ids[~is_marker], owner[~is_marker]
        sizes = np.ones(len(stream))  # at a token's id: its number of terms
        sizes[[first[word] for word in _STOPWORD_BYTES if word in first]] = 0.0
        position_of = {term: j for j, term in enumerate(query)}
        hits: list[tuple[int, int, int]] = []  # (token id, query term, occurrences)
        for token in _candidates(first, query):
            token_id = first[token]
            found = _token_terms(token.decode("utf-8"))
            sizes[token_id] = len(found)
            for j in sorted({position_of[t] for t in found if t in position_of}):
                hits.append((token_id, j, found.count(query[j])))
        doc_lengths = np.bincount(owner, sizes[ids], minlength=n)
        avgdl = float(doc_lengths.sum()) / n
        if not hits or avgdl == 0.0:
            return np.zeros(n)
        matching = np.zeros(len(stream), dtype=np.bool_)
        matching[[token_id for token_id, _, _ in hits]] = True
        where = np.flatnonzero(matching[ids])
        where_ids, where_owner = ids[where], owner[where]
        k1, b = self._k1, self._b
        norm = k1 * (1.0 - b + b * doc_lengths / avgdl)
        result = np.zeros(n)
        counts = np.zeros(len(stream))
        for j in range(len(query)):
            chosen = [(token_id, times) for token_id, term, times in hits if term == j]
            if not chosen:
                continue
            counts[:] = 0.0
            for token_id, times in chosen:
                counts[token_id] = times
            tf = np.bincount(where_owner, counts[where_ids], minlength=n)
            present = tf > 0.0
            df = int(np.count_nonzero(present))
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            tf_p = tf[present]
            result[present] += idf * (tf_p * (k1 + 1.0)) / (tf_p + norm[present])
        best = float(result.max())
        return result / best if best > 0.0 else np.zeros(n)

    def __repr__(self) -> str:
        parts = [] if self._query is None else [repr(self._query)]
        if self._k1 != 1.2:
            parts.append(f"k1={self._k1!r}")
        if self._b != 0.75:
            parts.append(f"b={self._b!r}")
        if self._weight != 0.5:
            parts.append(f"semantic_weight={self._weight!r}")
        if self._embed is not None:
            parts.append(f"embed={self._embed!r}")
        return f"RelevanceScorer({', '.join(parts)})"


def has_relevance(scorer: Scorer) -> bool:
    """Whether the scorer tree under ``scorer`` holds a :class:`RelevanceScorer`.

    >>> from cupel import CompositeScorer, KindScorer
    >>> has_relevance(KindScorer()), has_relevance(CompositeScorer([(RelevanceScorer(), 1)]))
    (False, True)
    """
    return any(isinstance(current, RelevanceScorer) for current in walk(scorer))


def needs_query(scorer: Scorer) -> bool:
    """Whether the scorer tree under ``scorer`` (``children()``) holds an unbound
    :class:`RelevanceScorer`.

    >>> from cupel import CompositeScorer, KindScorer
    >>> needs_query(CompositeScorer([(KindScorer(), 1), (RelevanceScorer(), 1)]))
    True
    """
    return any(
        isinstance(current, RelevanceScorer) and not current.bound for current in walk(scorer)
    )


EMBEDDINGS_FIX = "embeddings= needs a policy with relevance, e.g. policy='recall'"
"""The error's advice when an embedding is given for a policy without relevance."""


def with_embedder(scorer: Scorer, embed: Embedder | EmbedTexts) -> Scorer:
    """``scorer`` with every :class:`RelevanceScorer` of its tree scoring with ``embed``
    (as :meth:`RelevanceScorer.with_embedder`); a tree without one raises
    :class:`~cupel.ConfigurationError` (the embedding would do nothing). Rebuilt as
    :func:`bind_query` rebuilds.

    >>> from cupel import CompositeScorer, KindScorer
    >>> def flat(texts):
    ...     return [[1.0] for _ in texts]
    >>> with_embedder(CompositeScorer([(RelevanceScorer(), 1)]), Embedder(flat, name="flat"))
    CompositeScorer([(RelevanceScorer(embed=Embedder(flat)), 1.0)])
    """
    embedder = embed if isinstance(embed, Embedder) else Embedder(embed)
    if not has_relevance(scorer):
        raise ConfigurationError(
            f"{EMBEDDINGS_FIX}: the scorer ({type(scorer).__name__}) has no RelevanceScorer",
            field="embeddings",
            value=embed,
        )
    fix = "give the RelevanceScorer its embedding (RelevanceScorer(embed=...))"
    return _rebuild(scorer, lambda found: found.with_embedder(embedder), "with_embedder", "a", fix)


def bind_query(scorer: Scorer, query: str) -> Scorer:
    """``scorer`` with every unbound :class:`RelevanceScorer` of its tree bound to
    ``query``; bound ones are kept, and a tree without unbound ones is returned as is.
    A scorer shared by several parents stays shared. The scorers rebuilt on the way are
    cupel's composite ones (``CompositeScorer``, ``ScaledScorer``, ...); a custom scorer
    holding an unbound relevance scorer cannot be rebuilt and raises
    :class:`~cupel.ConfigurationError`.

    >>> from cupel import CompositeScorer, KindScorer
    >>> bind_query(CompositeScorer([(KindScorer(), 1), (RelevanceScorer(), 1)]), "cats")
    CompositeScorer([(KindScorer(), 0.5), (RelevanceScorer('cats'), 0.5)])
    """
    if not isinstance(query, str):
        raise refusal("with_query", "query", "must be text (a str)", query, typed=True)
    if not needs_query(scorer):
        return scorer
    return _rebuild(
        scorer,
        lambda found: found if found.bound else found.with_query(query),
        "with_query",
        "an unbound",
        "bind the RelevanceScorer (RelevanceScorer(query) or .with_query(query))",
    )


def _rebuild(
    scorer: Scorer,
    change: Callable[[RelevanceScorer], RelevanceScorer],
    where: str,
    held: str,
    fix: str,
) -> Scorer:
    """``scorer``'s tree with each :class:`RelevanceScorer` replaced by ``change`` of it,
    the scorers above rebuilt (``_with_children``) and shared ones kept shared; one that
    cannot be rebuilt raises, named with ``where``, ``held`` and ``fix``."""
    done: list[tuple[object, Scorer]] = []

    def rebuild(node: Scorer) -> Scorer:
        for old, new in done:
            if old is node:
                return new
        result: Scorer | None = node
        if isinstance(node, RelevanceScorer):
            result = change(node)
        else:
            children = children_of(node)
            rebuilt = tuple(map(rebuild, children))
            if any(new is not old for new, old in zip(rebuilt, children, strict=True)):
                result = node._with_children(rebuilt) if isinstance(node, ArrayScorer) else None
            if result is None:
                raise ConfigurationError(
                    f"{where}: {type(node).__name__} holds {held} RelevanceScorer but cannot "
                    f"be rebuilt with new children; {fix} before building it",
                    field="scorer",
                    value=node,
                )
        done.append((node, result))
        return result

    return rebuild(scorer)
