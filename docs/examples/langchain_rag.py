"""A RAG chain with ``CupelRetriever`` (run: python this_file.py).

A vector store returns the 8 nearest passages; cupel keeps what fits a 110-token context
budget (duplicates dropped, most relevant first, the best passages at both edges of the
context), at most 4 of them, and says why each passage was left out.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore

from cupel import SelectionReport
from cupel_langchain import REPORT_EVENT, CupelRetriever, report_from_event

PASSAGES = [
    "The Nile is about 6,650 km long.",
    "The Amazon discharges more water than the next seven largest rivers combined.",
    "The Nile is about 6,650 km long.",  # indexed twice by accident
    "The Yangtze is the longest river in Asia and the third longest in the world. " * 3,
    "The Danube flows through ten countries.",
    "The Mississippi drains about 40% of the continental United States.",
    "The Rhine is a major European trade route.",
    "The Thames flows through London.",
]


def build_retriever() -> CupelRetriever:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    store.add_documents([Document(text, id=f"p{i}") for i, text in enumerate(PASSAGES)])
    return CupelRetriever(
        base_retriever=store.as_retriever(search_kwargs={"k": 8}), max_tokens=110, k=4
    )


class Reports(BaseCallbackHandler):
    """Keeps the latest "cupel_selection" report."""

    latest: SelectionReport | None = None

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        if name == REPORT_EVENT:
            self.latest = report_from_event(data)


def format_documents(documents: list[Document]) -> str:
    return "\n\n".join(d.page_content for d in documents)


def main() -> None:
    retriever = build_retriever()
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from this context:\n\n{context}"), ("human", "{question}")]
    )
    chain = (
        {"context": retriever | RunnableLambda(format_documents), "question": RunnablePassthrough()}
        | prompt
        | FakeListChatModel(responses=["The Nile, at about 6,650 km."])
        | StrOutputParser()
    )
    reports = Reports()
    print(chain.invoke("Which river is the longest?", config={"callbacks": [reports]}))

    report = reports.latest  # the retriever ran inside the chain: its report is an event
    print(f"\ncontext: {report.included_tokens} tokens from {report.total_candidates} passages")
    for entry in report.included:
        print(f"  kept  score {entry.score:.2f}  {entry.item.content[:50]!r}")
    for left_out in report.excluded:
        print(f"  out   {left_out.reason.describe():<42} {left_out.item.content[:30]!r}")


if __name__ == "__main__":
    main()
