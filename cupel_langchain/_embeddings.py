"""A LangChain ``Embeddings`` as the core's :class:`~cupel.scorers.embedding.Embedder`
(the ``embeddings=`` option of the message-history components)."""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from cupel.scorers.embedding import Embedder, model_embedder
from cupel_langchain._options import refused

__all__ = ["embedder_of"]


def embedder_of(embeddings: object) -> Embedder:
    """The :class:`~cupel.scorers.embedding.Embedder` of a LangChain ``Embeddings``
    (``embed_documents`` for the messages, ``embed_query`` for the latest human
    message), the same one for the same model object on every call, so each text is
    embedded once (:func:`~cupel.scorers.embedding.model_embedder`). An ``Embedder``
    is taken as it is.

    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> model = DeterministicFakeEmbedding(size=8)
    >>> embedder_of(model) is embedder_of(model), embedder_of(model).name
    (True, 'DeterministicFakeEmbedding')
    """
    if isinstance(embeddings, Embedder):
        return embeddings
    if not isinstance(embeddings, Embeddings):
        rule = "must be a LangChain Embeddings (langchain_core.embeddings) or a cupel Embedder"
        raise refused("embeddings", rule, embeddings, typed=True)
    return model_embedder(embeddings, embeddings.embed_documents, embeddings.embed_query)
