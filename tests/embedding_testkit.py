"""A small deterministic embedding with meaning, for the adapters' tests: words of one
concept (``sister`` / ``sibling``, ``city`` / ``lives`` / ``Lisbon``, ...) share a
dimension, every other term is hashed into the rest (``hashed_terms``). So a question
worded differently from a fact ("Where does my sibling reside?") is near it by meaning
while sharing no word with it: semantic relevance finds what lexical relevance cannot."""

from __future__ import annotations

from collections.abc import Sequence

from cupel.scorers.relevance import hashed_terms, terms

CONCEPTS: dict[str, int] = {
    **dict.fromkeys(["sister", "sibl", "brother"], 0),
    **dict.fromkeys(["city", "liv", "resid", "lisbon", "mov", "town", "hom"], 1),
    **dict.fromkeys(["dog", "puppy", "pet"], 2),
}
DIMENSION = 64


def concept_vectors(texts: Sequence[str]) -> list[list[float]]:
    """One vector per text: concept counts in the first dimensions, hashed terms after."""
    out = []
    for text, hashed in zip(texts, hashed_terms(texts, DIMENSION), strict=True):
        vector = [0.0] * len(set(CONCEPTS.values())) + hashed
        for term in terms(text):
            concept = CONCEPTS.get(term)
            if concept is not None:
                vector[concept] += 3.0
        out.append(vector)
    return out
