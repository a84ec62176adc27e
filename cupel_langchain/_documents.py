"""Documents <-> context items, :class:`CupelDocumentCompressor` and :class:`CupelRetriever`.

Mapping rules: one item per ``Document``, kind ``Document`` (configurable), source
``Rag``; ``tokens`` = the counter on ``page_content``; ``future_relevance_hint`` = the
number under ``metadata[relevance_key]`` (default ``"relevance_score"``, as rerankers
set it) or, when absent, the input rank (``1 - i/n``: the first document 1.0);
``metadata`` holds ``langchain.index`` and ``langchain.id``. Mapping back returns the
same ``Document`` objects in the pipeline's placed order (U-shaped with the ``rag``
preset: the best documents at both edges).

>>> from langchain_core.documents import Document
>>> docs = [Document("alpha " * 50), Document("beta " * 10, metadata={"relevance_score": 0.2})]
>>> mapped = documents_to_items(docs)
>>> [(i.tokens, i.future_relevance_hint) for i in mapped.items]
[(57, 1.0), (11, 0.2)]
>>> mapped.documents_for(mapped.items[::-1]) == docs[::-1]
True
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
    Callbacks,
)
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.load.serializable import (
    Serializable,
    SerializedConstructor,
    SerializedNotImplemented,
)
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable

from cupel import (
    ConfigurationError,
    ContextBudget,
    ContextItem,
    ContextKind,
    ContextSource,
    Filtered,
    ItemError,
    Pipeline,
    SelectionReport,
)
from cupel.counting import check_headroom, request_budget
from cupel.policy import resolve_pipeline
from cupel_langchain._options import (
    PolicyLike,
    check_kind,
    check_max_tokens,
    check_name,
    refused,
)
from cupel_langchain._pydantic import Fraction, LiveComponent, StrictBool, StrictInt, serialized
from cupel_langchain._reports import (
    ReportEventData,
    adispatch_report,
    dispatch_report,
    last_report_of,
    remember_report,
    report_event_data,
)
from cupel_langchain._selection import resolve_max_tokens, shared
from cupel_langchain._tokens import DocumentTokenCounter, resolve_document_counter

__all__ = [
    "CupelDocumentCompressor",
    "CupelRetriever",
    "DocumentItems",
    "DocumentSelection",
    "documents_to_items",
]


@dataclass(frozen=True, slots=True, eq=False)
class DocumentItems:
    """Documents mapped to items (``items[i]`` is ``documents[i]``) and the way back."""

    documents: Sequence[Document]
    items: Sequence[ContextItem]

    def documents_for(self, selected: Iterable[ContextItem]) -> list[Document]:
        """The same ``Document`` objects behind ``selected`` (this mapping's items, by
        identity: they are alive while the mapping holds them), in the order given."""
        positions = {id(item): k for k, item in enumerate(self.items)}
        out = []
        for item in selected:
            position = positions.get(id(item))
            if position is None:
                raise ConfigurationError(
                    f"item {item.content[:40]!r} is not one of this mapping's items",
                    field="items",
                    value=item,
                )
            out.append(self.documents[position])
        return out


def _relevance(document: Document, index: int, count: int, key: str | None) -> float:
    if key is not None:
        value = document.metadata.get(key)
        if value is not None:
            # numbers.Real: Python numbers and numpy scalars (np.float32 from rerankers)
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise ItemError(
                    f"documents[{index}].metadata[{key!r}] must be a number (the relevance "
                    f"score), got {type(value).__name__} {value!r}",
                    field=f"documents[{index}].metadata[{key!r}]",
                    value=value,
                )
            try:
                score = float(value)
            except OverflowError:  # an int too large for a float
                score = math.inf
            if not math.isfinite(score):
                raise ItemError(
                    f"documents[{index}].metadata[{key!r}] must be a finite number (the "
                    f"relevance score), got {_shown(value)}",
                    field=f"documents[{index}].metadata[{key!r}]",
                    value=value,
                )
            return score
    return 1.0 - index / count


def _shown(value: object) -> str:
    """``repr(value)``, or for an int of more than 18 digits its size (one short line)."""
    if isinstance(value, int) and abs(value) >= 10**18:
        return f"an int of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    return repr(value)


def _map_documents(
    documents: Sequence[Document],
    count: Callable[[str], int],
    *,
    kind: ContextKind,
    relevance_key: str | None,
) -> DocumentItems:
    items = []
    total = len(documents)
    rag = ContextSource.RAG
    for index, document in enumerate(documents):
        if not isinstance(document, Document):
            raise ItemError(
                f"documents[{index}] must be a langchain_core Document, got "
                f"{type(document).__name__}",
                field=f"documents[{index}]",
                value=document,
            )
        text = document.page_content
        metadata: dict[str, Any] = {"langchain.index": index}
        if document.id is not None:
            metadata["langchain.id"] = document.id
        items.append(
            ContextItem(
                content=text if text else "[empty document]",
                tokens=count(text),
                kind=kind,
                source=rag,
                metadata=metadata,
                future_relevance_hint=_relevance(document, index, total, relevance_key),
            )
        )
    return DocumentItems(list(documents), items)


def documents_to_items(
    documents: Sequence[Document],
    *,
    token_counter: DocumentTokenCounter = "approximate",
    relevance_key: str | None = "relevance_score",
    kind: str = "Document",
) -> DocumentItems:
    """Map documents to items (see the module docstring for the rules)."""
    return _map_documents(
        documents,
        resolve_document_counter(token_counter),
        kind=check_kind("kind", kind),
        relevance_key=check_name("relevance_key", relevance_key),
    )


class DocumentSelection:
    """A validated document-selection configuration; :meth:`select` runs it."""

    __slots__ = ("budget", "count", "k", "kind", "pipeline", "relevance_key")

    def __init__(self, settings: Mapping[str, Any]) -> None:
        """``settings``: the fields of :class:`_DocumentOptions` but ``report``."""
        counter = settings["token_counter"]
        max_tokens = check_max_tokens(settings["max_tokens"])
        tokens = resolve_max_tokens(max_tokens, counter, "token_counter")
        headroom = check_headroom(settings["headroom"])
        self.budget: ContextBudget = request_budget(
            tokens,
            settings["target_tokens"],
            settings["output_reserve"],
            headroom=headroom,
            fixed=0,
        )
        self.pipeline = resolve_pipeline(
            settings["policy"],
            pipelines=False,
            pipeline=settings["pipeline"],
            deduplicate=settings["deduplicate"],
        )
        self.count = resolve_document_counter(counter)
        self.relevance_key = check_name("relevance_key", settings["relevance_key"])
        self.kind = check_kind("kind", settings["kind"])
        self.k = check_k(settings["k"])

    def select(
        self, documents: Sequence[Document], *, with_report: bool, k: int | None = None
    ) -> tuple[list[Document], SelectionReport | None]:
        """The selected documents (same objects, placed order), at most ``k`` of them
        (the call's ``k``, else the configured one), and optionally the report."""
        limit = self.k if k is None else check_k(k)
        mapping = _map_documents(
            list(documents), self.count, kind=self.kind, relevance_key=self.relevance_key
        )
        if with_report or limit is not None:
            result = self.pipeline.dry_run(mapping.items, self.budget)
        else:
            result = self.pipeline.run(mapping.items, self.budget)
        placed = result.items
        report = result.report
        if limit is not None and report is not None and len(placed) > limit:
            placed, dropped = _top_k(placed, report, limit)
            reason = Filtered(f"k={limit}")
            report = report.with_excluded(moved=[(item, reason) for item in dropped])
        return mapping.documents_for(placed), report if with_report else None


def check_k(k: object) -> int | None:
    """``k`` as a count cap (``None``: no cap)."""
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise refused("k", "must be a non-negative int or None", k)
    return k


def _top_k(
    placed: list[ContextItem], report: SelectionReport, k: int
) -> tuple[list[ContextItem], list[ContextItem]]:
    """Keep the ``k`` best-scored items (the report's scores) in their placed order; ties
    keep placed order. Removing the weakest items from a U-shaped order leaves the
    U-shaped order of the rest."""
    scores = {id(entry.item): entry.score for entry in report.included}
    ranked = sorted(range(len(placed)), key=lambda i: -scores[id(placed[i])])
    keep = set(ranked[:k])
    kept = [item for i, item in enumerate(placed) if i in keep]
    dropped = [item for i, item in enumerate(placed) if i not in keep]
    return kept, dropped


class _DocumentOptions(LiveComponent):
    """The fields the compressor and the retriever share (read on every call: assignment
    and ``model_copy(update=...)`` take effect)."""

    max_tokens: StrictInt | Fraction
    """The token budget for the selected documents (or ``("fraction", f)`` of the
    ``token_counter`` chat model's input window)."""
    target_tokens: StrictInt | None = None
    """A softer target the slicer aims for (default: ``max_tokens``)."""
    output_reserve: StrictInt = 0
    """Tokens kept free (for the prompt around the documents or the answer)."""
    policy: PolicyLike = "rag"
    """A :class:`~cupel.policy.Policy` or preset name (default ``"rag"``)."""
    pipeline: Pipeline | None = None
    """An explicit :class:`~cupel.Pipeline`, used instead of ``policy``."""
    token_counter: Any = "approximate"
    """``"approximate"`` (:func:`cupel.counting.estimate_tokens`), a tokenizer, a language
    model or a callable on text."""
    headroom: float = 0.0
    """A share of ``max_tokens`` kept free for a provider whose tokenizer counts more."""
    relevance_key: str | None = "relevance_score"
    """Metadata key of the retriever's relevance score (absent: the input rank)."""
    deduplicate: StrictBool = True
    """Drop documents repeating another's ``page_content`` (the best-scored stays)."""
    k: StrictInt | None = None
    """At most this many documents: the best-scored of the selection."""
    kind: str = "Document"
    """The kind given to documents."""
    report: StrictBool = True
    """Build and emit the SelectionReport of each run."""

    def _selection(self) -> DocumentSelection:
        values = {name: getattr(self, name) for name in _DocumentOptions.model_fields}
        del values["report"]
        return shared({"<documents>": True, **values}, lambda: DocumentSelection(values))

    @property
    def last_report(self) -> SelectionReport | None:
        """The report of this component's latest selection *in the current thread or
        asyncio task* (``None`` before it or with ``report=False``; runs in other threads
        or tasks, e.g. inside a chain's ``batch``, are not seen: read the
        ``"cupel_selection"`` event there)."""
        return last_report_of(self)

    def _select(
        self, documents: Sequence[Document], k: int | None = None
    ) -> tuple[list[Document], ReportEventData | None]:
        selection = self._selection()
        selected, report = selection.select(documents, with_report=self.report, k=k)
        if report is None:
            return selected, None
        remember_report(self, report)
        return selected, report_event_data(type(self).__name__, report, selection.budget)


class CupelDocumentCompressor(_DocumentOptions, BaseDocumentCompressor, Serializable):
    """A document compressor selecting documents within a token budget: deduplicated,
    relevance-led, U-shaped (the ``rag`` preset), optionally at most ``k``.

    Use it in document pipelines or as the ``base_compressor`` of
    ``ContextualCompressionRetriever`` (``langchain-classic``). Returns the same
    ``Document`` objects. With ``report=True`` the :class:`~cupel.SelectionReport` is sent
    to ``callbacks`` as the ``"cupel_selection"`` custom event (JSON-ready data) and is
    :attr:`last_report` in the calling thread or task. Copies, pickles and
    ``langchain_core.load`` serialization work as for
    :class:`~cupel_langchain.CupelMessageSelector`.

    >>> from langchain_core.documents import Document
    >>> docs = [Document("short and relevant"), Document("long " * 400), Document("ok " * 20)]
    >>> compressor = CupelDocumentCompressor(max_tokens=100)
    >>> [d.page_content[:10] for d in compressor.compress_documents(docs, "query")]
    ['short and ', 'ok ok ok o']
    """

    model_config = LiveComponent.model_config  # not the LangChain base's extra="ignore"

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Select from ``documents`` (the query is not used: relevance comes from the
        documents' metadata or their order)."""
        selected, event = self._select(documents)
        if event is not None:
            dispatch_report(callbacks, event)
        return selected

    def to_json(self) -> SerializedConstructor | SerializedNotImplemented:
        """The ``langchain_core.load`` form (the policy as its dict form); the "not
        implemented" form, saying why, with a pipeline or a callable counter."""
        return serialized(self, super().to_json, {})

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Async :meth:`compress_documents`."""
        selected, event = self._select(documents)
        if event is not None:
            await adispatch_report(callbacks, event)
        return selected


class CupelRetriever(_DocumentOptions, BaseRetriever):
    """Wrap any retriever: retrieve, then select within a token budget (deduplicated,
    relevance-led, U-shaped by default), at most ``k`` documents.

    ``base_retriever`` is the wrapped retriever (the name ``ContextualCompressionRetriever``
    uses). Per call, ``k`` caps the count (``retriever.invoke(query, k=3)``) and every
    other keyword argument goes to the wrapped retriever (e.g. a vector store's
    ``filter``). The wrapped retriever's own settings are untouched. The report goes to
    the run's callbacks as the ``"cupel_selection"`` custom event and is
    :attr:`last_report` in the calling thread or task. Serializable with
    ``langchain_core.load`` when the wrapped retriever is.

    >>> from langchain_core.documents import Document
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.vectorstores import InMemoryVectorStore
    >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    >>> _ = store.add_documents([Document(f"fact {i} " * 30) for i in range(6)])
    >>> retriever = CupelRetriever(base_retriever=store.as_retriever(search_kwargs={"k": 6}),
    ...                            max_tokens=250)
    >>> len(retriever.invoke("fact")), len(retriever.invoke("fact", k=2))
    (4, 2)
    """

    model_config = LiveComponent.model_config  # not the LangChain base's extra="ignore"

    base_retriever: Runnable[str, list[Document]]
    """The retriever (any Runnable from a query to documents) whose results are selected."""

    def __init__(self, **kwargs: Any) -> None:
        if "retriever" in kwargs and "base_retriever" not in kwargs:
            raise ConfigurationError(
                "CupelRetriever.retriever: renamed base_retriever (the name "
                "ContextualCompressionRetriever uses)",
                field="retriever",
                value=kwargs["retriever"],
            )
        super().__init__(**kwargs)

    def to_json(self) -> SerializedConstructor | SerializedNotImplemented:
        """The ``langchain_core.load`` form (the policy as its dict form); the "not
        implemented" form, saying why, with a pipeline, a callable counter or a wrapped
        retriever that is not serializable."""
        return serialized(self, super().to_json, {})

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        documents = self.base_retriever.invoke(
            query, config={"callbacks": run_manager.get_child()}, **kwargs
        )
        selected, event = self._select(documents, k)
        if event is not None:
            dispatch_report(run_manager.get_child(), event)
        return selected

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        documents = await self.base_retriever.ainvoke(
            query, config={"callbacks": run_manager.get_child()}, **kwargs
        )
        selected, event = self._select(documents, k)
        if event is not None:
            await adispatch_report(run_manager.get_child(), event)
        return selected
