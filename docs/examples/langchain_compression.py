"""``CupelDocumentCompressor`` behind ``ContextualCompressionRetriever`` (run: python
this_file.py; needs ``langchain-classic``, where LangChain keeps that retriever now).

A vector store returns 8 passages; a reranker scores them against the question (here a
keyword-overlap stand-in for a cross-encoder, writing ``metadata["relevance_score"]`` as
rerankers do); cupel keeps the most relevant passages that fit 60 tokens (the room left
goes to the next ones), drops the duplicate, puts the best at both edges of the context,
and explains every decision.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_classic.retrievers.document_compressors import DocumentCompressorPipeline
from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from cupel_langchain import CupelDocumentCompressor

PASSAGES = [
    "The Nile is the longest river in Africa, about 6,650 km long.",
    "The Amazon discharges more water than the next seven largest rivers combined.",
    "The Nile is the longest river in Africa, about 6,650 km long.",  # indexed twice
    "The Yangtze is the longest river in Asia and the third longest in the world. " * 3,
    "The Danube flows through ten countries.",
    "The Mississippi is the longest river system in North America.",
    "The Rhine is a major European trade route.",
    "The Thames flows through London.",
]


STOP_WORDS = {"a", "in", "is", "the", "which", "what"}


class KeywordReranker(BaseDocumentCompressor):
    """Stands in for a reranker: the share of the question's words each passage has."""

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        words = set(query.lower().rstrip("?").split()) - STOP_WORDS
        return [
            Document(
                d.page_content,
                id=d.id,
                metadata={
                    **d.metadata,
                    "relevance_score": len(words & set(d.page_content.lower().split()))
                    / len(words),
                },
            )
            for d in documents
        ]


def build_retriever() -> tuple[ContextualCompressionRetriever, CupelDocumentCompressor]:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    store.add_documents([Document(text, id=f"p{i}") for i, text in enumerate(PASSAGES)])
    cupel = CupelDocumentCompressor(max_tokens=60)  # relevance_key="relevance_score"
    retriever = ContextualCompressionRetriever(
        base_compressor=DocumentCompressorPipeline(transformers=[KeywordReranker(), cupel]),
        base_retriever=store.as_retriever(search_kwargs={"k": 8}),
    )
    return retriever, cupel


def main() -> None:
    retriever, cupel = build_retriever()
    documents = retriever.invoke("Which is the longest river?")
    print(f"{len(documents)} passages for the prompt:")
    for document in documents:
        score = document.metadata["relevance_score"]
        print(f"  {score:.2f}  {document.page_content[:60]!r}")

    report = cupel.last_report
    assert report is not None
    print(f"\n{report.included_tokens}/60 tokens; left out:")
    for left_out in report.excluded:
        print(f"  {left_out.reason.describe():<44} {left_out.item.content[:36]!r}")


if __name__ == "__main__":
    main()
