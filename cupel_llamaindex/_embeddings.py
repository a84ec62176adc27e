"""A LlamaIndex ``BaseEmbedding`` as the core's :class:`~cupel.scorers.embedding.Embedder`
(the memories' ``embeddings=`` field)."""

from __future__ import annotations

from llama_index.core.base.embeddings.base import BaseEmbedding

from cupel import ConfigurationError
from cupel.scorers.embedding import Embedder, model_embedder

__all__ = ["embedder_of"]


def embedder_of(embeddings: object, owner: str) -> Embedder:
    """The :class:`~cupel.scorers.embedding.Embedder` of a LlamaIndex ``BaseEmbedding``
    (``get_text_embedding_batch`` for the messages, ``get_query_embedding`` for the
    latest user message), the same one for the same model object on every call, so each
    text is embedded once (:func:`~cupel.scorers.embedding.model_embedder`). An
    ``Embedder`` is taken as it is.

    >>> from llama_index.core.embeddings import MockEmbedding
    >>> model = MockEmbedding(embed_dim=8)
    >>> embedder_of(model, "memory") is embedder_of(model, "memory")
    True
    """
    if isinstance(embeddings, Embedder):
        return embeddings
    if not isinstance(embeddings, BaseEmbedding):
        raise ConfigurationError(
            f"{owner}.embeddings must be a LlamaIndex BaseEmbedding "
            f"(llama_index.core.embeddings) or a cupel Embedder, got "
            f"{type(embeddings).__name__} {embeddings!r}",
            field="embeddings",
            value=embeddings,
        )
    return model_embedder(
        embeddings, embeddings.get_text_embedding_batch, embeddings.get_query_embedding
    )
