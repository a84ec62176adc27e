"""Semantic relevance: the combined score against a straightforward reference
(hypothesis), the embedding cache (the model sees only texts it has not embedded),
vector checks, construction errors, policies (``semantic_weight`` is a key, ``embed``
is not) and copies."""

from __future__ import annotations

import copy
import math
import os
import pickle
import subprocess
import sys
import textwrap
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from cupel import (
    CompositeScorer,
    ConfigurationError,
    ContextBudget,
    ContextItem,
    EmbeddingError,
    KindScorer,
    Pipeline,
    PolicyError,
    RelevanceScorer,
    ScorerConfigError,
)
from cupel.policy import Policy, resolve_pipeline
from cupel.scorers.embedding import Embedder, shared_embedder
from cupel.scorers.relevance import has_relevance, hashed_terms, with_embedder

WORDS = ["invoice", "cat", "cats", "box", "red", "paid", "march", "due", "dog", "tea"]


def items(contents: Sequence[str]) -> list[ContextItem]:
    return [ContextItem(content=c, tokens=1) for c in contents]


def small(texts: Sequence[str]) -> list[list[float]]:
    return hashed_terms(texts, dimension=5)  # few buckets: collisions, varied cosines


def reference(query: str, contents: Sequence[str], weight: float) -> list[float]:
    """The documented rule, written out: lexical BM25 (the lexical scorer, tested against
    its own reference) mixed with max(0, cos) of the raw vectors."""
    lexical = RelevanceScorer(query).score_all(items(contents))
    q = small([query])[0]
    out = []
    for text, lex in zip(contents, lexical, strict=True):
        d = small([text])[0]
        dot = math.fsum(a * b for a, b in zip(q, d, strict=True))
        norms = math.sqrt(math.fsum(a * a for a in q)) * math.sqrt(math.fsum(b * b for b in d))
        semantic = max(0.0, dot / norms) if norms > 0 else 0.0
        out.append((1 - weight) * lex + weight * semantic)
    return out


texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)


@settings(max_examples=examples(200), deadline=None)
@given(
    query=texts,
    contents=st.lists(texts, min_size=1, max_size=8),
    weight=st.floats(0.0, 1.0),
)
def test_the_combined_score_follows_the_documented_rule(
    query: str, contents: list[str], weight: float
) -> None:
    scorer = RelevanceScorer(query, semantic_weight=weight, embed=small)
    got = scorer.score_all(items(contents))
    assert got == pytest.approx(reference(query, contents, weight), abs=1e-9)
    assert all(0.0 <= s <= 1.0 for s in got)
    again = RelevanceScorer(query, semantic_weight=weight, embed=small).score_all(items(contents))
    assert list(got) == list(again)  # same inputs, same scores (bit for bit)


def test_weight_zero_is_lexical_and_one_is_semantic() -> None:
    contents = ["the invoice was paid", "a red box", "cats and a box"]
    lexical = RelevanceScorer("red box").score_all(items(contents))
    assert list(
        RelevanceScorer("red box", semantic_weight=0.0, embed=small).score_all(items(contents))
    ) == list(lexical)
    only = RelevanceScorer("red box", semantic_weight=1.0, embed=hashed_terms)
    assert only.score_all(items(contents))[1] == pytest.approx(1.0)
    assert only.matches(items(contents)[2]) == ("box",)  # matches() stays lexical


class Counting:
    """An embedding function that records what it is asked to embed."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        self.asked.append(list(texts))
        return hashed_terms(texts, dimension=16)


def test_the_model_embeds_only_texts_it_has_not_embedded() -> None:
    model = Counting()
    embedder = Embedder(model, name="counting")
    scorer = RelevanceScorer("red box", embed=embedder)
    history = ["a red box", "the invoice", "a red box"]  # a repeated text: embedded once
    scorer.score_all(items(history))
    assert model.asked == [["red box"], ["a red box", "the invoice"]]
    for turn in range(3):
        history += [f"turn {turn}", "the invoice"]
        RelevanceScorer(f"box {turn}", embed=embedder).score_all(items(history))
        assert model.asked[-1] == [f"turn {turn}"]  # only the new text
        assert model.asked[-2] == [f"box {turn}"]  # the new query
    scorer.score_all(items(history))  # nothing new at all: no call
    assert len(model.asked) == 8
    assert (embedder.calls, embedder.embedded) == (8, 9)


def test_the_cache_is_bounded_and_keyed_by_text() -> None:
    model = Counting()
    embedder = Embedder(model, max_texts=2)
    embedder.vectors(["a", "b", "c"])  # one call even beyond the bound
    embedder.vectors(["b", "c"])  # kept (the most recent two)
    embedder.vectors(["a"])  # evicted: embedded again
    assert model.asked == [["a", "b", "c"], ["a"]]
    equal_text = "".join(["re", "d"])  # another str object, same text
    first = embedder.vectors(["red"])
    assert embedder.vectors([equal_text]).tolist() == first.tolist()
    assert model.asked[-1] == ["red"]


@settings(max_examples=examples(200))
@given(
    calls=st.lists(st.lists(st.sampled_from(WORDS), max_size=6), max_size=12),
    bound=st.integers(1, 5),
)
def test_the_cache_matrix_acts_as_a_least_recently_used_dict(
    calls: list[list[str]], bound: int
) -> None:
    """The row matrix and its free rows against an ordered dict of vectors: the same
    texts sent to the model, the same vectors returned, whatever the evictions."""
    model = Counting()
    embedder = Embedder(model, max_texts=bound)
    kept: dict[str, None] = {}  # the oracle's texts, least recently used first
    for texts in calls:
        missing = list(dict.fromkeys(t for t in texts if t not in kept))
        asked = len(model.asked)
        got = embedder.vectors(texts)
        assert model.asked[asked:] == ([missing] if missing else [])
        for text in [t for t in texts if t in kept] + missing:  # the known, then the new
            kept.pop(text, None)
            kept[text] = None
        while len(kept) > bound:
            del kept[next(iter(kept))]
        assert got.tolist() == Embedder(Counting()).vectors(texts).tolist()


def test_a_shared_embedder_is_found_again_for_the_same_model_object() -> None:
    one, two = Counting(), Counting()
    first = shared_embedder(one, lambda: Embedder(one))
    assert shared_embedder(one, lambda: Embedder(one)) is first
    assert shared_embedder(two, lambda: Embedder(two)) is not first


@pytest.mark.parametrize(
    ("returned", "message"),
    [
        ([[1.0, math.nan]], "NaN or infinite value for text 0"),
        ([[1.0, math.inf]], "NaN or infinite value"),
        ([[1.0, "x"]], "holds something other than numbers"),
        ([[]], "empty"),
        (["ab"], "returned str for text 0"),
        ([[1.0, 2.0], [1.0]], "2 vectors for 1 texts"),
        ("nope", "not a sequence of vectors"),
        ([[True, False]], "other than numbers"),
    ],
)
def test_bad_vectors_name_the_model_and_the_text(returned: object, message: str) -> None:
    embedder = Embedder(lambda texts: returned, query=lambda q: [1.0, 0.0], name="broken")  # type: ignore[arg-type,return-value]
    scorer = RelevanceScorer("box", embed=embedder)
    with pytest.raises(EmbeddingError, match=message) as caught:
        scorer.score_all(items(["a box"]))
    assert "embedding model broken" in str(caught.value)
    assert caught.value.model == "broken"


def test_a_dimension_unlike_the_others_is_refused_with_the_text_index() -> None:
    def uneven(texts: Sequence[str]) -> list[list[float]]:
        return [[1.0] * (2 if t == "b" else 3) for t in texts]

    with pytest.raises(EmbeddingError, match=r"dimension 2 for text 1 \('b'\)") as caught:
        Embedder(uneven, name="uneven").vectors(["a", "b"])
    assert caught.value.index == 1
    query = Embedder(uneven, query=lambda q: [1.0], name="q")
    query.query("x")
    with pytest.raises(EmbeddingError, match="dimension 3 for text 0"):
        query.vectors(["a"])


def test_a_failing_model_is_an_embedding_error() -> None:
    def down(texts: Sequence[str]) -> list[list[float]]:
        raise TimeoutError("the service is down")

    failing = r"model down failed on the query \('box'\): TimeoutError"
    with pytest.raises(EmbeddingError, match=failing):
        RelevanceScorer("box", embed=Embedder(down, name="down")).score_all(items(["x"]))


def test_zero_vectors_score_zero_meaning() -> None:
    scorer = RelevanceScorer("zzz", semantic_weight=1.0, embed=lambda ts: [[0.0, 0.0] for _ in ts])
    assert list(scorer.score_all(items(["a", "b"]))) == [0.0, 0.0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"semantic_weight": 1.5}, "semantic_weight must be a finite number in"),
        ({"semantic_weight": -0.1}, "semantic_weight"),
        ({"semantic_weight": math.nan}, "semantic_weight"),
        ({"semantic_weight": True}, "semantic_weight"),
        ({"semantic_weight": "0.5"}, "semantic_weight"),
        ({"embed": 3}, "embed must be an Embedder, a callable"),
    ],
)
def test_construction_errors_name_the_field(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ScorerConfigError, match=message):
        RelevanceScorer("x", **kwargs)  # type: ignore[arg-type]


def test_embedder_construction_errors() -> None:
    with pytest.raises(ConfigurationError, match="embed must be a callable"):
        Embedder(3)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="query must be a callable"):
        Embedder(small, query="q")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="max_texts must be an int >= 1"):
        Embedder(small, max_texts=0)


def test_binding_and_attaching_keep_each_other() -> None:
    tree = CompositeScorer([(KindScorer(), 1), (RelevanceScorer(semantic_weight=0.3), 2)])
    assert has_relevance(tree) and not has_relevance(KindScorer())
    embedded = with_embedder(tree, small)
    bound = Pipeline(embedded).with_query("red box").scorer
    relevance = bound.children()[1]  # type: ignore[attr-defined]
    assert isinstance(relevance, RelevanceScorer)
    assert (relevance.query, relevance.semantic_weight) == ("red box", 0.3)
    assert relevance.embed is not None
    assert relevance.with_embedder(None).embed is None
    with pytest.raises(ConfigurationError, match="embeddings= needs a policy with relevance"):
        with_embedder(KindScorer(), small)
    with pytest.raises(ConfigurationError, match="policy='recall'"):
        resolve_pipeline("chat", pipelines=False).with_embedder(small)


def test_the_recall_preset_with_an_embedding_selects() -> None:
    pipeline = resolve_pipeline("recall", pipelines=False).with_embedder(hashed_terms)
    window = pipeline.with_query("cats").run(
        items(["cats here", "dogs", "tea"]), ContextBudget(max_tokens=3, target_tokens=3)
    )
    assert len(window.items) == 3


def test_semantic_weight_is_a_policy_key_and_embed_is_not() -> None:
    policy = Policy.from_dict({"scorer": {"type": "relevance", "semantic_weight": 0.25}})
    assert Policy.from_toml(policy.to_toml()) == policy
    assert Policy.from_json(policy.to_json()) == policy
    built = policy.build().scorer
    assert isinstance(built, RelevanceScorer)
    assert (built.semantic_weight, built.embed) == (0.25, None)
    with pytest.raises(PolicyError, match=r"scorer\.embed: unknown key"):
        Policy.from_dict({"scorer": {"type": "relevance", "embed": "x"}})
    with pytest.raises(PolicyError, match=r"scorer\.semantic_weight"):
        Policy.from_dict({"scorer": {"type": "relevance", "semantic_weight": 2}})


def test_copies_and_pickles_keep_the_model_and_start_a_new_cache() -> None:
    embedder = Embedder(hashed_terms, name="hashed")
    scorer = RelevanceScorer("red box", embed=embedder)
    before = scorer.score_all(items(["a red box", "tea"]))
    for copied in (pickle.loads(pickle.dumps(scorer)), copy.deepcopy(scorer)):
        assert copied.embed is not None and copied.embed.name == "hashed"
        assert copied.embed.calls == 0
        assert np.array_equal(copied.score_all(items(["a red box", "tea"])), before)


SCRIPT = textwrap.dedent(
    """
    import json, random
    from cupel import ContextItem, RelevanceScorer
    from cupel.scorers.relevance import hashed_terms
    rng = random.Random(3)
    words = ["cat", "dogs", "running", "box", "東京タワー", "invoice", "due", "tax", "x1"]
    items = [ContextItem(content=" ".join(rng.choices(words, k=rng.randint(1, 20))), tokens=1)
             for _ in range(200)]
    scorer = RelevanceScorer("running cats and the invoice", embed=hashed_terms)
    print(json.dumps([s.hex() for s in scorer.score_all(items)]))
    """
)


@pytest.mark.slow
def test_identical_across_hash_seeds() -> None:
    outputs = set()
    for seed in ("0", "1", "random"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1
