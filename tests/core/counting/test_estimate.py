"""estimate_tokens against the real cl100k_base (llama-index-core ships it) on the committed
corpus of benchmarks/token_corpus.py: the issue's accuracy targets per category and
overall, odd inputs, concatenation, and the corpus file matching its generator."""

from __future__ import annotations

import functools
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from llama_index.core.utils import get_tokenizer

from benchmarks import token_corpus
from cupel.counting import estimate_tokens

CATEGORIES = {
    "english", "latin", "chinese", "japanese", "korean", "cyrillic", "arabic", "devanagari",
    "emoji", "json", "code", "url", "base64", "logs", "mixed",
}  # fmt: skip


@functools.cache
def corpus() -> list[dict[str, str]]:
    return token_corpus.read_corpus()


@functools.cache
def true_counts() -> tuple[int, ...]:
    encode = get_tokenizer()
    return tuple(len(encode(row["text"])) for row in corpus())


@functools.cache
def ratios() -> dict[str, list[float]]:
    by_category: dict[str, list[float]] = {}
    for row, true in zip(corpus(), true_counts(), strict=True):
        by_category.setdefault(row["category"], []).append(estimate_tokens(row["text"]) / true)
    return by_category


def test_committed_corpus_is_the_generator_output() -> None:
    expected = token_corpus.to_jsonl(token_corpus.generate())
    assert token_corpus.CORPUS_PATH.read_text(encoding="utf-8") == expected


def test_corpus_covers_every_category_at_50_to_2000_tokens() -> None:
    assert set(ratios()) == CATEGORIES
    assert all(len(values) >= 25 for values in ratios().values())
    assert min(true_counts()) >= 50
    assert max(true_counts()) <= 2000


@pytest.mark.parametrize("category", [*sorted(CATEGORIES), "overall"])
def test_p99_undercount_at_most_10_percent(category: str) -> None:
    values = (
        [r for rs in ratios().values() for r in rs] if category == "overall" else ratios()[category]
    )
    assert token_corpus.percentile(values, 1) >= 0.90


def test_median_english_overcount_at_most_25_percent() -> None:
    assert token_corpus.percentile(ratios()["english"], 50) <= 1.25


def test_percentile_interpolates() -> None:
    assert token_corpus.percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5
    assert token_corpus.percentile([1.0, 2.0], 1) == pytest.approx(1.01)


@pytest.mark.parametrize(
    ("text", "least"),
    [
        ("", 0),
        ("a", 1),
        (" ", 1),
        ("\x00\x01\x7f", 1),
        ("\ud800", 1),  # a lone surrogate (tiktoken sees U+FFFD)
        ("\udfff\ud800 text \ud83d", 2),
        ("\U0010ffff", 1),
        ("<|endoftext|>", 1),
        ("x" * 1_000_000, 1),
    ],
)
def test_any_string_gives_a_count(text: str, least: int) -> None:
    estimate = estimate_tokens(text)
    assert isinstance(estimate, int)
    assert estimate >= least
    assert estimate == estimate_tokens(text)
    assert (estimate == 0) == (text == "")


def test_concatenation_counts_at_least_either_part() -> None:
    texts = [row["text"] for row in corpus()[::15]]
    for first, second in itertools.pairwise(texts):
        joined = estimate_tokens(first + second)
        assert joined >= max(estimate_tokens(first), estimate_tokens(second))


@given(st.text(), st.text())
def test_concatenation_of_any_strings_counts_at_least_either_part(first: str, second: str) -> None:
    assert estimate_tokens(first + second) >= max(estimate_tokens(first), estimate_tokens(second))


@functools.cache
def short_messages() -> dict[str, tuple[list[int], list[int]]]:
    """Estimates and cl100k counts of chat messages of random common short words (the
    provider-bill benchmark's prose chat) and of single English sentences."""
    encode = get_tokenizer()
    texts = {
        "chat": token_corpus.chat_messages(),
        "sentences": token_corpus.english_sentences(corpus()),
    }
    return {
        name: ([estimate_tokens(t) for t in some], [len(encode(t)) for t in some])
        for name, some in texts.items()
    }


@pytest.mark.parametrize("messages", ["chat", "sentences"])
def test_short_common_words_are_not_undercounted_over_a_window(messages: str) -> None:
    """cl100k makes one token of nearly every common English word, however long: twenty
    chat messages in a row are counted at least in full, and a single one rarely under."""
    estimates, counts = short_messages()[messages]
    assert len(counts) >= 200
    assert min(token_corpus.window_ratios(estimates, counts)) >= 1.0
    each = [e / c for e, c in zip(estimates, counts, strict=True)]
    assert token_corpus.percentile(each, 5) >= 0.85
