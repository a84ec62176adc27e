"""RelevanceScorer: the terms rule, BM25 against a per-item reference, binding a query
through scorer trees and pipelines, validation, and determinism across hash seeds."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import unicodedata
from collections.abc import Sequence

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from scorers_testkit import assert_same_scores

from cupel import (
    CompositeScorer,
    ConfigurationError,
    ContextBudget,
    ContextItem,
    KindScorer,
    Pipeline,
    RecencyScorer,
    RelevanceScorer,
    ScaledScorer,
    ScorerConfigError,
)
from cupel.scorers import BaseScorer, score_all
from cupel.scorers.relevance import (
    STOPWORDS,
    _token_stream,
    _tokens,
    bind_query,
    needs_query,
    terms,
)


def item(content: str) -> ContextItem:
    return ContextItem(content=content, tokens=1)


# -- the reference: BM25 per item, with dicts ----------------------------------------------
def reference(query: str, contents: Sequence[str], k1: float = 1.2, b: float = 0.75) -> list[float]:
    docs = [terms(text) for text in contents]
    n = len(docs)
    query_terms = list(dict.fromkeys(terms(query)))
    if n == 0:
        return []
    avgdl = sum(len(d) for d in docs) / n
    raw = []
    for doc in docs:
        counts: dict[str, int] = {}
        for term in doc:
            counts[term] = counts.get(term, 0) + 1
        total = 0.0
        for term in query_terms:
            tf = counts.get(term, 0)
            if tf == 0:
                continue
            df = sum(1 for other in docs if term in other)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            total += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / avgdl))
        raw.append(total)
    best = max(raw)
    return [0.0 if best <= 0 else r / best for r in raw]


WORDS = ["cat", "cats", "dog", "running", "run", "box", "boxes", "the", "a", "invoice",
         "東京", "タワー", "tried", "try", "Ünïcode", "ﬁle", "42", "snake_case", "is"]  # fmt: skip
texts = st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join)
contents_ = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)


@settings(max_examples=examples(200))
@given(
    query=texts,
    contents=st.lists(contents_, max_size=12),
    k1=st.floats(0, 3),
    b=st.floats(0, 1),
)
def test_scores_agree_with_the_reference_bm25(
    query: str, contents: list[str], k1: float, b: float
) -> None:
    items = [item(c) for c in contents]
    scorer = RelevanceScorer(query, k1=k1, b=b)
    expected = reference(query, contents, k1, b)
    batch = scorer.score_all(items)
    assert_same_scores(batch, expected)
    assert_same_scores([scorer.score(i, items) for i in items], batch)
    assert all(0.0 <= s <= 1.0 for s in batch)


SPECIAL = st.sampled_from("aA_ -'.éﬁ東京タワー\u0301")
unicode_texts = st.text(st.characters(codec="utf-8") | SPECIAL, min_size=1, max_size=30)


@settings(max_examples=examples(200))
@given(query=st.text(max_size=20) | unicode_texts, contents=st.lists(unicode_texts, max_size=8))
def test_any_text_agrees_with_the_reference_bm25(query: str, contents: list[str]) -> None:
    items = [item(c) for c in contents]
    assert_same_scores(RelevanceScorer(query).score_all(items), reference(query, contents))


@settings(max_examples=examples(100))
@given(st.text(max_size=30), st.text(max_size=30))
def test_terms_of_spaced_texts_are_concatenated(left: str, right: str) -> None:
    found = terms(left)
    assert terms(f"{left} {right}") == found + terms(right)
    assert all(t and t not in STOPWORDS for t in found)


@settings(max_examples=examples(200))
@given(st.text(st.characters(max_codepoint=127), max_size=60))
def test_ascii_texts_take_the_translate_route_to_the_same_tokens(text: str) -> None:
    stream = _token_stream([text, text + "é"])
    first = stream.index(b"\x01")
    assert [token.decode() for token in stream[:first]] == _tokens(text)
    assert [token.decode() for token in stream[first + 1 : -1]] == _tokens(text + "é")


@settings(max_examples=examples(200))
@given(query=st.text(max_size=20) | unicode_texts, content=unicode_texts)
@example(query="\u00b4\u3400", content="\u00b4\u3400")
def test_matches_are_the_query_words_of_the_matched_terms(query: str, content: str) -> None:
    """Matching is by terms; what ``matches`` gives is, for each matched term, the query
    word (casefolded, NFKC) it first came from."""
    scorer = RelevanceScorer(query)
    words = scorer.matches(item(content))
    own = set(terms(content))
    # (a run of marks split off a CJK token, '´㐀' after NFKC, is a term of its own
    # there but has no letter to be a token alone: the word is then its term)
    assert [(terms(word) or [word])[-1] for word in words] == [
        t for t in scorer.query_terms if t in own
    ]
    written = unicodedata.normalize("NFKC", query).casefold()
    assert all(word in written for word in words)


@pytest.mark.parametrize(
    ("query", "content", "words"),
    [
        ("What NAME did we give the Kittens?", "the kitten's name is Mochi", ("name", "kittens")),
        ("Names, then a name", "names", ("names",)),
        ("Did you ＦＩＮＩＳＨ it? finished!", "finishing", ("finish",)),
        ("東京タワーに行った?", "東京に住む", ("東京",)),
        ("user's API keys", "the api key", ("api", "keys")),
    ],
)
def test_matches_give_the_query_words_as_written(
    query: str, content: str, words: tuple[str, ...]
) -> None:
    assert RelevanceScorer(query).matches(item(content)) == words


def test_the_best_item_scores_one_and_unmatched_zero() -> None:
    items = [item("invoice paid"), item("cats"), item("invoice invoice due")]
    scores = RelevanceScorer("invoice due").score_all(items)
    assert scores[2] == 1.0 and scores[1] == 0.0 and 0 < scores[0] < 1


@pytest.mark.parametrize("query", ["", "the of and", "zebra"])
def test_no_terms_or_no_match_scores_zero(query: str) -> None:
    items = [item("invoice paid"), item("cats")]
    assert RelevanceScorer(query).score_all(items) == [0.0, 0.0]


def test_empty_pass_and_empty_texts() -> None:
    assert RelevanceScorer("x").score_all([]) == []
    assert RelevanceScorer("x").score_all([item("?"), item("!!")]) == [0.0, 0.0]


def test_an_item_outside_the_pass_scores_nan() -> None:
    assert math.isnan(RelevanceScorer("cat").score(item("cat"), [item("cat")]))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("studies classes boxes matches wishes", ["study", "class", "box", "match", "wish"]),
        ("cats glass status analysis bus", ["cat", "glass", "status", "analysis", "bus"]),
        ("tried running stopped falling", ["try", "run", "stop", "fall"]),
        ("thing red needed string", ["thing", "red", "need", "string"]),
        ("make making makes made", ["mak", "mak", "mak", "mad"]),
        ("use used uses using", ["us", "us", "us", "us"]),
        ("speed speeds agreed", ["speed", "speed", "agreed"]),
        ("Don't STOP: it's ﬁne", ["stop", "fin"]),
        ("snake_case v2 3.14", ["snak", "cas", "v2", "3", "14"]),
        ("東京都", ["東京", "京都"]),
        ("猫 と 犬", ["猫", "と", "犬"]),
        ("abc東京def", ["abc", "東京", "def"]),
        ("नमस्ते दुनिया", ["नमस्ते", "दुनिया"]),
        ("ＡＢＣ ｶﾀｶﾅ", ["abc", "カタ", "タカ", "カナ"]),
    ],
)
def test_terms(text: str, expected: list[str]) -> None:
    assert terms(text) == expected


def test_cjk_queries_match() -> None:
    items = [item("我们明天去东京旅行"), item("今天天气很好"), item("東京タワーに行きました")]
    scores = RelevanceScorer("东京旅行").score_all(items)
    assert scores[0] == 1.0 and scores[1] == 0.0
    assert RelevanceScorer("東京タワー").matches(items[2]) == ("東京", "京タ", "タワ", "ワー")


def test_idf_favours_the_rare_term() -> None:
    items = [item("alpha beta"), item("alpha gamma"), item("alpha delta"), item("alpha")]
    scores = RelevanceScorer("alpha gamma").score_all(items)
    assert scores.index(1.0) == 1


def test_length_normalisation_follows_b() -> None:
    items = [item("cat"), item("cat dog fish bird")]
    assert RelevanceScorer("cat", b=0.75).score_all(items)[1] < 1.0
    assert RelevanceScorer("cat", b=0.0).score_all(items) == [1.0, 1.0]


def test_matches_in_query_order() -> None:
    scorer = RelevanceScorer("boxes of cats, and a box")
    assert scorer.query_terms == ("box", "cat")
    assert scorer.matches(item("the cat sat in a box")) == ("boxes", "cats")
    assert scorer.matches(item("nothing")) == ()
    assert RelevanceScorer().matches(item("cat")) == ()


def test_properties_and_repr() -> None:
    scorer = RelevanceScorer("cats", k1=2, b=0.5)
    assert (scorer.query, scorer.k1, scorer.b, scorer.bound) == ("cats", 2.0, 0.5, True)
    assert repr(scorer) == "RelevanceScorer('cats', k1=2.0, b=0.5)"
    assert repr(RelevanceScorer()) == "RelevanceScorer()"
    assert scorer.get_params() == {
        "query": "cats",
        "k1": 2.0,
        "b": 0.5,
        "semantic_weight": 0.5,
        "embed": None,
    }
    rebound = scorer.with_query("dogs")
    assert (rebound.query, rebound.k1, rebound.b) == ("dogs", 2.0, 0.5)
    assert scorer.query == "cats"


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        ({"query": 3}, "query", "query must be text"),
        ({"query": "bad \udc00"}, "query", "lone surrogates"),
        ({"k1": -0.1}, "k1", "k1 must be a finite number >= 0"),
        ({"k1": math.inf}, "k1", "k1 must be a finite number >= 0"),
        ({"k1": "1"}, "k1", "k1 must be a number"),
        ({"b": 1.5}, "b", r"b must be a finite number in \[0.0, 1.0\]"),
        ({"b": math.nan}, "b", "b must be a finite number"),
        ({"b": True}, "b", "b must be a number"),
    ],
)
def test_bad_parameters_are_refused(kwargs: dict[str, object], field: str, message: str) -> None:
    with pytest.raises(ScorerConfigError, match=message) as info:
        RelevanceScorer(**kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


def test_an_unbound_scorer_refuses_to_score() -> None:
    with pytest.raises(ConfigurationError, match=r"Pipeline.with_query\(...\)"):
        RelevanceScorer().score_all([item("x")])
    with pytest.raises(ConfigurationError, match="unbound"):
        RelevanceScorer().score(item("x"), [])


# -- binding a query ------------------------------------------------------------------------
def test_bind_query_through_nested_trees_keeps_sharing_and_bound_scorers() -> None:
    unbound = RelevanceScorer(k1=1.5)
    bound = RelevanceScorer("fixed")
    kind = KindScorer()
    inner = CompositeScorer([(unbound, 1), (kind, 3)])
    tree = CompositeScorer([(inner, 1), (ScaledScorer(unbound), 2), (bound, 1), (inner, 1)])
    assert needs_query(tree)
    result = bind_query(tree, "cats")
    assert isinstance(result, CompositeScorer) and not needs_query(result)
    (new_inner, _), (scaled, _), (kept, _), (again, _) = result.entries
    assert again is new_inner and kept is bound and new_inner is not inner
    new_relevance = new_inner.children()[0]
    assert isinstance(new_relevance, RelevanceScorer)
    assert (new_relevance.query, new_relevance.k1) == ("cats", 1.5)
    assert isinstance(scaled, ScaledScorer) and scaled.inner is new_relevance
    assert new_inner.children()[1] is kind
    assert [w for _, w in result.entries] == [w for _, w in tree.entries]  # not re-normalised
    assert needs_query(tree) and unbound.query is None  # the original is untouched


def test_bind_query_returns_a_tree_without_unbound_scorers_as_is() -> None:
    tree = CompositeScorer([(RelevanceScorer("x"), 1), (KindScorer(), 1)])
    assert bind_query(tree, "cats") is tree


class Holder(BaseScorer):
    def __init__(self, inner: RelevanceScorer) -> None:
        self.inner = inner

    def children(self) -> tuple[RelevanceScorer, ...]:
        return (self.inner,)

    def score(self, item: ContextItem, all_items: Sequence[ContextItem]) -> float:
        return self.inner.score(item, all_items)


def test_a_custom_scorer_holding_an_unbound_scorer_cannot_be_bound() -> None:
    with pytest.raises(ConfigurationError, match="Holder holds an unbound RelevanceScorer"):
        bind_query(Holder(RelevanceScorer()), "cats")
    with pytest.raises(ConfigurationError, match="query must be text"):
        bind_query(RelevanceScorer(), None)  # type: ignore[arg-type]


BUDGET = ContextBudget(max_tokens=10, target_tokens=10)


def test_pipeline_with_query_binds_and_runs() -> None:
    pipeline = Pipeline(CompositeScorer([(RecencyScorer(), 1), (RelevanceScorer(), 2)]))
    items = [ContextItem(content=c, tokens=10) for c in ("the cat sat", "dogs bark")]
    assert pipeline.needs_query
    bound = pipeline.with_query("dog")
    assert not bound.needs_query and pipeline.needs_query
    assert bound.slicer is pipeline.slicer and bound.placer is pipeline.placer
    assert [i.content for i in bound.run(items, BUDGET).items] == ["dogs bark"]
    assert bound.with_query("cat") is bound


def test_running_an_unbound_pipeline_fails_before_any_stage() -> None:
    pipeline = Pipeline(ScaledScorer(RelevanceScorer()))
    for run in (pipeline.run, pipeline.dry_run):
        with pytest.raises(ConfigurationError, match="--query") as info:
            run([item("x")], BUDGET)
        assert info.value.field == "scorer"
    with pytest.raises(ConfigurationError, match="with_query"):
        pipeline.run("not items", "not a budget")  # type: ignore[arg-type]


def test_score_all_helper_and_batches_agree() -> None:
    items = [item("red box"), item("blue box box"), item("green")]
    scorer = CompositeScorer([(RelevanceScorer("box"), 1), (KindScorer(), 1)])
    assert_same_scores(score_all(scorer, items), [scorer.score(i, items) for i in items])


SCRIPT = textwrap.dedent(
    """
    import json, random
    from cupel import ContextItem, RelevanceScorer
    rng = random.Random(3)
    words = ["cat", "dogs", "running", "box", "東京タワー", "invoice", "due", "tax", "x1"]
    items = [ContextItem(content=" ".join(rng.choices(words, k=rng.randint(1, 20))), tokens=1)
             for _ in range(300)]
    scorer = RelevanceScorer("running cats and the invoice due 東京 tax box")
    print(json.dumps([s.hex() for s in scorer.score_all(items)]))
    """
)


@pytest.mark.slow
def test_identical_across_hash_seeds() -> None:
    outputs = set()
    for seed in ("0", "1", "12345", "random"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1
