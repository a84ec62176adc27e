"""The recall benchmark: do the windows keep what the question needs? (issue 29)

    python -m benchmarks.recall                          # 10 dialogues, budgets 2,000 and 4,000
    python -m benchmarks.recall --conversations 4 --budgets 1000,3000 --json out.json
    python -m benchmarks.recall --quick                  # 2 dialogues (tests)
    python -m benchmarks.recall --docs docs/recall.md    # refresh the doc's table
    python -m benchmarks.recall --locomo locomo10.json   # the public LoCoMo file instead

Long generated conversations (:mod:`benchmarks.recall_data`: hundreds of turns over many
sessions, facts planted early, questions worded differently from them, each annotated with
its evidence turns). For each question the history is the whole conversation plus the
question as the latest user message; each component selects a window at each budget, and
the benchmark measures:

- **evidence recall**: the share of evidence turns present in the window (as a message, or
  inside a message: a memory block's retrieved text), over all the questions' evidence
  turns; **all evidence**: the share of questions whose every evidence turn is there;
- **window quality**, with cupel's conversation layer (``Conversation.check_window``) on the
  window's positions in the history: **holes** in the recent window (the window without the
  units recalled out of order; see :class:`Window`), **invalid** tool calls, **over budget**
  by the component's own counter, **task lost** (the question missing);
- recall by question group (:func:`breakdown`): questions sharing a word with their
  evidence or none, on updated facts, with two evidence turns;
- the mean time per call (machine-dependent; the other figures depend on the seed alone).

Components, each with the budget ``B`` as its only setting beyond the defaults:

- LangChain, tokens by ``count_tokens_approximately``: cupel's chat default
  ``select_messages`` and ``trim_messages`` (``strategy="last"``, ``include_system=True``,
  ``start_on="human"``);
- LlamaIndex, tokens by each component's own counter: ``CupelChatMemory``,
  ``ChatMemoryBuffer`` and ``Memory`` with a ``VectorMemoryBlock`` (a ``SimpleVectorStore``
  that keeps the nodes' text, ``MockEmbedding``, a flush size of a tenth of the budget; the
  history put into the memory, then ``get(input=question)``);
- two **reference baselines**, not products: a plain lexical ranking (BM25 over the
  individual turns against the question, greedy to the budget) and the same ranking over
  whole exchanges (a user message with its replies) beside a recent window holding half the
  budget. They count tokens with ``count_tokens_approximately``.

Everything but the timings is deterministic: the same seed gives the same table anywhere.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage
from pydantic import Field

if __package__ in (None, ""):  # run as a script: python benchmarks/recall.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness import replace_block
from benchmarks.recall_data import Dialogue, Question, generate_dialogues, load_locomo
from benchmarks.window_cases import Case, Message, to_langchain, to_llamaindex
from cupel.conversation import SYSTEM, Conversation

__all__ = [
    "BM25",
    "SELECTORS",
    "History",
    "Outcome",
    "Selector",
    "Summary",
    "Window",
    "breakdown",
    "groups",
    "main",
    "run",
    "summarize",
    "table",
]

SEED = 20261127
CONVERSATIONS = 10
QUICK_CONVERSATIONS = 2
BUDGETS = (2000, 4000)
RECENT_SHARE = 0.5
"""The share of the budget the exchange-ranking baseline keeps for its recent window."""
TABLE_START = "<!-- recall table: start -->"
TABLE_END = "<!-- recall table: end -->"


# -- the history as each framework sees it ----------------------------------------------------
@dataclass(frozen=True)
class History:
    """One question's history in one framework: the conversation's messages then the
    question (the latest user message), with the structure and texts the checks use."""

    framework: str
    messages: list[Any]
    texts: list[str]
    """Each message's text (unique in the history)."""
    conversation: Conversation
    question: str
    index: BM25Index
    """The lexical index of the conversation's turns and exchanges (the question left out)."""

    @property
    def task(self) -> int:
        return len(self.messages) - 1


def structure(messages: Sequence[Message]) -> Conversation:
    """The conversation layer's view of neutral messages (roles and tool-call links)."""
    return Conversation(
        [m.role for m in messages],
        calls={i: [c.id for c in m.calls] for i, m in enumerate(messages) if m.calls},
        answers={i: m.answers for i, m in enumerate(messages) if m.role == "tool"},
    )


def _with_question(dialogue: Dialogue, question: Question) -> tuple[Message, ...]:
    return (*dialogue.messages, Message("user", question.text))


def histories(
    dialogue: Dialogue, frameworks: Sequence[str]
) -> dict[str, Callable[[Question], History]]:
    """For each framework, the history of a question of ``dialogue`` (the conversation is
    converted and indexed once)."""
    neutral = dialogue.messages
    index = BM25Index.of(neutral, structure(neutral))
    out: dict[str, Callable[[Question], History]] = {}
    for framework in frameworks:
        if framework == "langchain":
            from langchain_core.messages import HumanMessage

            converted = to_langchain(dialogue.case())
            make: Callable[[str], Any] = HumanMessage
        else:
            from llama_index.core.base.llms.types import ChatMessage

            converted = to_llamaindex(dialogue.case())

            def make(text: str) -> Any:
                return ChatMessage(role="user", content=text)

        def build(
            question: Question,
            converted: list[Any] = converted,
            make: Any = make,
            framework: str = framework,
        ) -> History:
            messages = [*converted, make(question.text)]
            full = _with_question(dialogue, question)
            return History(
                framework,
                messages,
                [m.text for m in full],
                structure(full),
                question.text,
                index,
            )

        out[framework] = build
    return out


# -- the reference ranking: BM25 ----------------------------------------------------------------
def _words(text: str) -> list[str]:
    return text.split()


_STOP = frozenset(
    _words(
        """a an the and or but if of to in on at by for with from as is are was were be been am i
        me my you your we our he she it its they them their this that these those do does did
        what which who whom when where how why will would can could should have has had not no
        so just about into than then there here all any some"""
    )
)
_WORD = re.compile(r"[a-z0-9]+")


def terms(text: str) -> list[str]:
    """The text's terms: lower-case alphanumeric words, stop words left out.

    >>> terms("Which city does my sibling live in, these days?")
    ['city', 'sibling', 'live', 'days']
    """
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


class BM25:
    """Okapi BM25 over a list of documents (``k1 = 1.5``, ``b = 0.75``, ``idf = ln(1 + (N -
    df + 0.5) / (df + 0.5))``): the straightforward reference ranking, not a product.

    >>> bm25 = BM25([terms("my sister moved to Lisbon"), terms("rain again today")])
    >>> [round(s, 3) for s in bm25.scores(terms("Lisbon sister"))]
    [1.386, 0.0]
    """

    K1 = 1.5
    B = 0.75

    def __init__(self, documents: Sequence[Sequence[str]]) -> None:
        self.counts = [Counter(d) for d in documents]
        self.lengths = [len(d) for d in documents]
        self.average = statistics.fmean(self.lengths) if documents and any(self.lengths) else 1.0
        frequency: Counter[str] = Counter()
        for counts in self.counts:
            frequency.update(counts.keys())
        n = len(documents)
        self.idf = {t: math.log(1 + (n - df + 0.5) / (df + 0.5)) for t, df in frequency.items()}

    def scores(self, query: Sequence[str]) -> list[float]:
        """The score of every document against the query's terms."""
        out = []
        for counts, length in zip(self.counts, self.lengths, strict=True):
            norm = self.K1 * (1 - self.B + self.B * length / self.average)
            score = 0.0
            for term in query:
                tf = counts.get(term, 0)
                if tf:
                    score += self.idf[term] * tf * (self.K1 + 1) / (tf + norm)
            out.append(score)
        return out


@dataclass(frozen=True)
class BM25Index:
    """BM25 over a conversation's turns (every non-system message) and over its
    exchanges (each user turn: the user message with its replies and tool rounds)."""

    turns: list[int]
    """The message index of each turn document."""
    turn_ranking: BM25
    exchanges: list[list[int]]
    """The messages of each exchange document."""
    exchange_ranking: BM25
    system: list[int]

    @classmethod
    def of(cls, messages: Sequence[Message], conversation: Conversation) -> BM25Index:
        turns = [i for i, m in enumerate(messages) if m.role != SYSTEM]
        by_turn: dict[int, list[int]] = {}
        system: list[int] = []
        for k in range(len(conversation)):
            members = list(conversation.messages_of(k))
            if conversation.role(k) == SYSTEM:
                system.extend(members)
            else:
                by_turn.setdefault(conversation.turn(k), []).extend(members)
        exchanges = [sorted(v) for _, v in sorted(by_turn.items())]
        return cls(
            turns,
            BM25([terms(messages[i].text) for i in turns]),
            exchanges,
            BM25([terms(" ".join(messages[i].text for i in e)) for e in exchanges]),
            system,
        )


def _approximate(messages: Sequence[Any]) -> int:
    from langchain_core.messages.utils import count_tokens_approximately

    return count_tokens_approximately(messages)


def _ranked(scores: Sequence[float], positions: Sequence[int]) -> list[int]:
    """Document numbers by score, descending; ties: the newest first."""
    return sorted(range(len(scores)), key=lambda d: (-scores[d], -positions[d]))


def bm25_turns(history: History, budget: int) -> Window:
    """Reference: the system prompt and the question, then the turns by BM25 score against
    the question, each added while it fits (greedy), in conversation order. It has no
    recent window: the holes check applies to the whole window."""
    index = history.index
    messages = history.messages
    size = [_approximate([m]) for m in messages]
    kept = [*index.system, history.task]
    used = sum(size[i] for i in kept)
    scores = index.turn_ranking.scores(terms(history.question))
    for d in _ranked(scores, index.turns):
        i = index.turns[d]
        if used + size[i] <= budget:
            kept.append(i)
            used += size[i]
    kept.sort()
    return Window([messages[i] for i in kept])  # no recent window: all of it is checked


def bm25_exchanges(history: History, budget: int) -> Window:
    """Reference: the system prompt and the question, the newest whole exchanges while the
    window stays within half the budget (the recent window), then older exchanges by BM25
    score against the question, each kept whole while it fits, in conversation order."""
    index = history.index
    messages = history.messages
    size = [_approximate([m]) for m in messages]
    kept = [*index.system, history.task]
    used = sum(size[i] for i in kept)
    exchanges = index.exchanges
    cost = [sum(size[i] for i in e) for e in exchanges]
    oldest_recent = len(exchanges)
    while oldest_recent > 0 and used + cost[oldest_recent - 1] <= budget * RECENT_SHARE:
        oldest_recent -= 1
        kept.extend(exchanges[oldest_recent])
        used += cost[oldest_recent]
    recalled: list[int] = []
    older = exchanges[:oldest_recent]
    scores = index.exchange_ranking.scores(terms(history.question))[:oldest_recent]
    for d in _ranked(scores, [e[0] for e in older]):
        if used + cost[d] <= budget:
            recalled.extend(older[d])
            used += cost[d]
    kept = sorted([*kept, *recalled])
    return Window([messages[i] for i in kept], recalled=frozenset(recalled))


# -- the components ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Window:
    """A selected window: its messages, and the history positions of the units it
    recalled out of order (left out of the recent window's holes check; empty: the whole
    window is a recent window)."""

    messages: Sequence[Any]
    recalled: frozenset[int] = frozenset()
    recalled_by: Callable[[], frozenset[int]] | None = None
    """The recalled positions computed after the timed call (a component that says
    which units it recalled in its report, built separately)."""

    def recalled_units(self) -> frozenset[int]:
        """``recalled``, and what ``recalled_by`` adds."""
        return self.recalled if self.recalled_by is None else self.recalled | self.recalled_by()


@dataclass(frozen=True)
class Selector:
    """A component under its defaults: ``select(history, budget)`` returns the window,
    ``count(window)`` its tokens by the component's own counter."""

    name: str
    framework: str
    group: str
    """``cupel``, ``incumbent`` or ``reference``."""
    select: Callable[[History, int], Window]
    count: Callable[[Sequence[Any]], int]
    setup: str


def approximate_tokens(messages: list[BaseMessage]) -> int:
    """``count_tokens_approximately``, passed to ``select_messages`` as a plain counter of
    message lists: cupel reads ``count_tokens_approximately`` itself as its own
    ``"approximate"`` model, whose text estimate differs, and the benchmark counts every
    LangChain window with ``count_tokens_approximately``."""
    from langchain_core.messages.utils import count_tokens_approximately

    return count_tokens_approximately(messages)


def _select_messages(history: History, budget: int) -> Window:
    from cupel_langchain import select_messages

    return Window(
        select_messages(
            history.messages,
            max_tokens=budget,
            token_counter=approximate_tokens,
            token_counter_input="messages",
        )
    )


RECALL_POLICY = "recall"
"""The preset of cupel's recall rows (issue 29)."""


def declared(report: Any, history: History, window: Sequence[Any]) -> frozenset[int]:
    """The history positions of the units a cupel report says were recalled
    (``report.recalled``), found among the window's messages (:func:`recalled_positions`)."""
    return recalled_positions(report, history.texts, locate(window, history)[0])


def recalled_positions(
    report: Any, texts: Sequence[str], positions: Sequence[int]
) -> frozenset[int]:
    """The positions (among ``positions``, ascending: a window's messages in the history)
    of the units ``report.recalled`` lists: by the message indices LangChain items carry
    in their metadata, else by their texts (``texts``: each history message's): a unit's
    item is one message's text, or an exchange's texts joined by newlines; LlamaIndex
    labels each text with its position."""
    joined: dict[str, tuple[int, ...]] = {}
    for start, first in enumerate(positions):
        run = [first]
        for following in positions[start + 1 : start + 4]:
            if following != run[-1] + 1:
                break
            run.append(following)
        for length in range(1, len(run) + 1):
            joined.setdefault("\n".join(texts[i] for i in run[:length]), tuple(run[:length]))
    out: set[int] = set()
    for unit in report.recalled:
        for item in unit.items:
            meta = item.metadata  # LangChain: the unit's message indices
            if "langchain.indices" in meta or "langchain.index" in meta:
                out.update(meta.get("langchain.indices", (meta.get("langchain.index"),)))
                continue
            found = joined.get(item.content)
            if found is None:  # LlamaIndex: each message's text reads "[position] role: text"
                found = tuple(int(m.group(1)) for m in _LABEL.finditer(item.content))
            out.update(found)
    return frozenset(out)


_LABEL = re.compile(r"^\[(\d+)\] [a-z_]+: ", re.MULTILINE)


def _select_messages_recall(history: History, budget: int, **extra: Any) -> Window:
    from cupel_langchain import select_messages, select_messages_with_report

    options: dict[str, Any] = {
        "max_tokens": budget,
        "token_counter": approximate_tokens,
        "token_counter_input": "messages",
        "policy": RECALL_POLICY,
        **extra,
    }

    window = select_messages(history.messages, **options)

    def recalled() -> frozenset[int]:
        report = select_messages_with_report(history.messages, **options)[1]
        return declared(report, history, window)

    return Window(window, recalled_by=recalled)


class HashedTermsEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` over :func:`cupel.scorers.relevance.hashed_terms`: an
    honest offline stand-in, **not a semantic model** (texts are near when they share
    words, never for a shared meaning alone), so the rows using it show the plumbing and
    its cost, not paraphrase recall. ``texts`` counts the texts it embedded."""

    def __init__(self, dimension: int = 256) -> None:
        self.dimension = dimension
        self.texts = 0
        self.calls = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        from cupel.scorers.relevance import hashed_terms

        self.calls += 1
        self.texts += len(texts)
        return hashed_terms(texts, self.dimension)

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def hashed_terms_embedding() -> Any:
    """The LlamaIndex ``BaseEmbedding`` counterpart of :class:`HashedTermsEmbeddings`
    (with the same ``texts`` count), built on first use."""
    from llama_index.core.base.embeddings.base import BaseEmbedding

    from cupel.scorers.relevance import hashed_terms

    class _HashedTerms(BaseEmbedding):
        texts: int = 0
        calls: int = 0

        def _embed(self, texts: list[str]) -> list[list[float]]:
            self.calls += 1
            self.texts += len(texts)
            return hashed_terms(texts, 256)

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return self._embed(texts)

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._embed([text])[0]

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._embed([query])[0]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    return _HashedTerms(embed_batch_size=2048)


EMBEDDINGS = HashedTermsEmbeddings()
"""The embedding of the ``--embeddings`` rows, one object for the whole run: each text is
embedded once (cupel keeps the vectors by text for this object)."""


def _select_messages_recall_embeddings(history: History, budget: int) -> Window:
    return _select_messages_recall(history, budget, embeddings=EMBEDDINGS)


def _cupel_chat_memory_recall(history: History, budget: int) -> Window:
    from cupel_llamaindex import CupelChatMemory

    memory = CupelChatMemory.from_defaults(
        chat_history=list(history.messages), token_limit=budget, policy=RECALL_POLICY
    )
    window = memory.get()

    def recalled() -> frozenset[int]:
        report = memory.last_report
        return frozenset() if report is None else declared(report, history, window)

    return Window(window, recalled_by=recalled)


def _trim_messages(history: History, budget: int) -> Window:
    from langchain_core.messages import trim_messages
    from langchain_core.messages.utils import count_tokens_approximately

    return Window(
        trim_messages(
            history.messages,
            max_tokens=budget,
            strategy="last",
            token_counter=count_tokens_approximately,
            include_system=True,
            start_on="human",
        )
    )


def _cupel_chat_memory(history: History, budget: int) -> Window:
    from cupel_llamaindex import CupelChatMemory

    memory = CupelChatMemory.from_defaults(chat_history=list(history.messages), token_limit=budget)
    return Window(memory.get())


def _cupel_tokens(window: Sequence[Any]) -> int:
    from llama_index.core.utils import get_tokenizer

    from cupel_llamaindex import messages_to_items

    if not window:
        return 0
    return sum(messages_to_items(list(window), tokenizer_fn=get_tokenizer()).counts)


def buffer_tail(history: History, budget: int) -> list[Any]:
    """The part of the history ``ChatMemoryBuffer`` reads: the shortest suffix starting on
    a user message with more than ``budget`` tokens and a margin (or the whole history).

    ``ChatMemoryBuffer.get`` drops the oldest message (and the replies after it) until the
    rest fits, recounting the whole rest each time — quadratic, over a second per call on
    these histories. Its loop passes through every user message's position with the same
    state, so starting it at one whose suffix is over the limit returns the same window
    (the tests check it against the whole history)."""
    from llama_index.core.utils import get_tokenizer

    tokenizer = get_tokenizer()
    messages = history.messages
    total = 0
    for i in range(len(messages) - 1, -1, -1):
        total += len(tokenizer(str(messages[i].content))) + 1
        if total > budget * 1.2 + 50 and messages[i].role.value == "user":
            return list(messages[i:])
    return list(messages)


def _chat_memory_buffer(history: History, budget: int) -> Window:
    from llama_index.core.memory import ChatMemoryBuffer

    memory = ChatMemoryBuffer.from_defaults(
        chat_history=buffer_tail(history, budget), token_limit=budget
    )
    return Window(memory.get())


def _buffer_tokens(window: Sequence[Any]) -> int:
    from llama_index.core.utils import get_tokenizer

    return len(get_tokenizer()(" ".join(str(m.content) for m in window))) if window else 0


def text_vector_store() -> Any:
    """A ``SimpleVectorStore`` that also keeps its nodes' text (``VectorMemoryBlock``
    refuses a store without text, and LlamaIndex's core has no in-memory one with it):
    ``add`` remembers the nodes (numbered in insertion order, so that the ties of equal
    similarities break the same way on every run), ``query`` returns them beside the ids
    and similarities."""
    from llama_index.core.schema import BaseNode
    from llama_index.core.vector_stores import SimpleVectorStore
    from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryResult

    class TextSimpleVectorStore(SimpleVectorStore):
        stores_text: bool = True
        texts: dict[str, BaseNode] = Field(default_factory=dict)

        def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
            for node in nodes:
                # ids in insertion order, not random: MockEmbedding ties every
                # similarity, and the store breaks ties by id
                node.id_ = f"node-{len(self.texts):06d}"
                self.texts[node.node_id] = node
            return list(super().add(list(nodes), **kwargs))

        def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
            result = super().query(query, **kwargs)
            ids = result.ids or []
            return VectorStoreQueryResult(
                nodes=[self.texts[i] for i in ids], similarities=result.similarities, ids=ids
            )

    return TextSimpleVectorStore()


def _vector_memory(history: History, budget: int) -> Window:
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.memory import Memory, VectorMemoryBlock

    block = VectorMemoryBlock(
        vector_store=text_vector_store(), embed_model=MockEmbedding(embed_dim=8)
    )
    memory = Memory.from_defaults(
        token_limit=budget, token_flush_size=max(1, budget // 10), memory_blocks=[block]
    )
    memory.put_messages(list(history.messages))  # stored as copies in its SQL store
    return Window(memory.get(input=history.question))


def _memory_tokens(window: Sequence[Any]) -> int:
    """``Memory``'s own estimate: its tokenizer on each text block, plus the additional
    kwargs as a string."""
    from llama_index.core.base.llms.types import TextBlock
    from llama_index.core.utils import get_tokenizer

    tokenizer = get_tokenizer()
    total = 0
    for message in window:
        total += sum(len(tokenizer(b.text)) for b in message.blocks if isinstance(b, TextBlock))
        if message.additional_kwargs:
            total += len(tokenizer(str(message.additional_kwargs)))
    return total


SELECTORS: tuple[Selector, ...] = (
    Selector(
        "select_messages",
        "langchain",
        "cupel",
        _select_messages,
        _approximate,
        "select_messages(history, max_tokens=B, token_counter=count_tokens_approximately)",
    ),
    Selector(
        "select_messages recall",
        "langchain",
        "cupel",
        _select_messages_recall,
        _approximate,
        "select_messages(history, max_tokens=B, token_counter=count_tokens_approximately, "
        'policy="recall")',
    ),
    Selector(
        "trim_messages",
        "langchain",
        "incumbent",
        _trim_messages,
        _approximate,
        'trim_messages(history, max_tokens=B, strategy="last", '
        'token_counter=count_tokens_approximately, include_system=True, start_on="human")',
    ),
    Selector(
        "CupelChatMemory",
        "llamaindex",
        "cupel",
        _cupel_chat_memory,
        _cupel_tokens,
        "CupelChatMemory.from_defaults(chat_history=history, token_limit=B).get()",
    ),
    Selector(
        "CupelChatMemory recall",
        "llamaindex",
        "cupel",
        _cupel_chat_memory_recall,
        _cupel_tokens,
        'CupelChatMemory.from_defaults(chat_history=history, token_limit=B, policy="recall").get()',
    ),
    Selector(
        "ChatMemoryBuffer",
        "llamaindex",
        "incumbent",
        _chat_memory_buffer,
        _buffer_tokens,
        "ChatMemoryBuffer.from_defaults(chat_history=history, token_limit=B).get()",
    ),
    Selector(
        "Memory + VectorMemoryBlock",
        "llamaindex",
        "incumbent",
        _vector_memory,
        _memory_tokens,
        "Memory.from_defaults(token_limit=B, token_flush_size=B // 10, memory_blocks="
        "[VectorMemoryBlock(vector_store=SimpleVectorStore(), embed_model=MockEmbedding("
        "embed_dim=8))]); put_messages(history); get(input=question)",
    ),
    Selector(
        "BM25 turns (reference)",
        "langchain",
        "reference",
        bm25_turns,
        _approximate,
        "the turns ranked by BM25 against the question, greedy to B",
    ),
    Selector(
        "BM25 exchanges + recent (reference)",
        "langchain",
        "reference",
        bm25_exchanges,
        _approximate,
        "the newest exchanges within B/2, then older exchanges by BM25, whole, greedy to B",
    ),
)
"""Every component: cupel's, the incumbents', then the reference baselines."""

EMBEDDING_SELECTORS: tuple[Selector, ...] = (
    Selector(
        "select_messages recall + embeddings",
        "langchain",
        "cupel",
        _select_messages_recall_embeddings,
        _approximate,
        "select_messages(history, max_tokens=B, token_counter=count_tokens_approximately, "
        'policy="recall", embeddings=HashedTermsEmbeddings())  # hashed words, not semantic',
    ),
)
"""The optional rows of ``--embeddings``: the recall policy with an embedding."""

NOT_ON_LOCOMO = ("ChatMemoryBuffer", "Memory + VectorMemoryBlock")
"""The rows ``--locomo`` leaves out: the incumbents' LlamaIndex memories (the slow ones;
``trim_messages`` stands for the incumbents)."""


# -- examining a window --------------------------------------------------------------------------
def _text(message: Any) -> str:
    """A message's text: its content (LangChain), or its text blocks joined (LlamaIndex;
    a memory block injected into a message is one more text block)."""
    if hasattr(message, "blocks"):
        from llama_index.core.base.llms.types import TextBlock

        return " ".join(b.text for b in message.blocks if isinstance(b, TextBlock))
    content = message.content
    return content if isinstance(content, str) else str(content)


def locate(window: Sequence[Any], history: History) -> tuple[list[int], str]:
    """The history positions of the window's messages (by identity, else by their unique
    text, else as a history message with text prepended: a memory block injected into it)
    and the text of the window that is no history message (memory blocks)."""
    by_id = {id(m): i for i, m in enumerate(history.messages)}
    by_text = {t: i for i, t in enumerate(history.texts)}
    positions: list[int] = []
    extra: list[str] = []
    for message in window:
        if id(message) in by_id:
            positions.append(by_id[id(message)])
            continue
        text = _text(message)
        if text in by_text:
            positions.append(by_text[text])
            continue
        host = next((i for t, i in by_text.items() if t and text.endswith(" " + t)), None)
        if host is not None:
            positions.append(host)
            extra.append(text[: -len(history.texts[host])])
        else:
            extra.append(text)
    return sorted(set(positions)), "\n".join(extra)


@dataclass(frozen=True)
class Outcome:
    """One component on one question at one budget."""

    selector: str
    dialogue: int
    question: int
    budget: int
    evidence: int
    found: int
    groups: tuple[str, ...] = ()
    """The question's groups (:func:`groups`)."""
    holes: bool = False
    invalid: bool = False
    over_budget: bool = False
    task_lost: bool = False
    tokens: int = 0
    seconds: float = 0.0
    error: str | None = None
    problems: list[str] = field(default_factory=list)


GROUPS = ("shares a word", "paraphrase only", "updated fact", "two parts")
"""Question groups of the breakdown table: the question shares a term with its evidence
statements (stop words aside) or none; the fact was updated; the evidence is two turns."""


def groups(question: Question) -> tuple[str, ...]:
    """The groups of ``question`` (see :data:`GROUPS`), then its kind (a LoCoMo question's
    category)."""
    stated = {t for statement in question.statements for t in terms(statement)}
    out = ["shares a word" if set(terms(question.text)) & stated else "paraphrase only"]
    if question.updated:
        out.append("updated fact")
    if len(question.evidence) > 1:
        out.append("two parts")
    return (*out, question.kind)


def examine(
    selector: Selector, history: History, question: Question, window: Window, budget: int
) -> tuple[int, bool, bool, bool, bool, int, list[str]]:
    """(evidence found, holes, invalid, over budget, task lost, tokens, problems) of a window."""
    positions, extra = locate(window.messages, history)
    kept = set(positions)
    found = sum(1 for i in question.evidence if i in kept or history.texts[i] in extra)
    recalled = window.recalled_units()
    recent = [i for i in positions if i not in recalled or i == history.task]
    conversation = history.conversation
    recent_check = conversation.check_window(recent)
    whole = conversation.check_window(positions)
    tokens = selector.count(window.messages)
    problems = [*recent_check.holes, *whole.problems]
    return (
        found,
        bool(recent_check.holes),
        bool(whole.problems),
        tokens > budget,
        history.task not in kept,
        tokens,
        problems[:3],
    )


# -- running -------------------------------------------------------------------------------------
def run(
    dialogues: Sequence[Dialogue],
    budgets: Sequence[int] = BUDGETS,
    selectors: Sequence[Selector] = SELECTORS,
) -> list[Outcome]:
    """Every component on every question of every dialogue at every budget."""
    out: list[Outcome] = []
    frameworks = sorted({s.framework for s in selectors})
    for dialogue in dialogues:
        builders = histories(dialogue, frameworks)
        for q, question in enumerate(dialogue.questions):
            made = {framework: build(question) for framework, build in builders.items()}
            for selector in selectors:
                history = made[selector.framework]
                for budget in budgets:
                    make = partial(
                        Outcome,
                        selector.name,
                        dialogue.number,
                        q,
                        budget,
                        len(question.evidence),
                        groups=groups(question),
                    )
                    started = time.perf_counter()
                    try:
                        window = selector.select(history, budget)
                    except Exception as exc:  # an incumbent may fail: counted, not fatal
                        out.append(make(found=0, error=f"{type(exc).__name__}: {exc}"))
                        continue
                    seconds = time.perf_counter() - started
                    found, holes, invalid, over, lost, tokens, problems = examine(
                        selector, history, question, window, budget
                    )
                    out.append(
                        make(
                            found=found,
                            holes=holes,
                            invalid=invalid,
                            over_budget=over,
                            task_lost=lost,
                            tokens=tokens,
                            seconds=seconds,
                            problems=problems,
                        )
                    )
    return out


@dataclass(frozen=True)
class Summary:
    """One component at one budget."""

    selector: str
    framework: str
    group: str
    budget: int
    questions: int
    errors: int
    recall: float
    """Evidence turns found / evidence turns, over every question."""
    complete: float
    """Questions with every evidence turn in the window / questions."""
    holes: int
    invalid: int
    over_budget: int
    task_lost: int
    use: float
    """Mean window tokens / budget (by the component's counter)."""
    milliseconds: float
    """Mean time per call."""


def summarize(
    outcomes: Sequence[Outcome], selectors: Sequence[Selector] = SELECTORS
) -> list[Summary]:
    """One :class:`Summary` per component and budget (components in order)."""
    out: list[Summary] = []
    budgets = sorted({o.budget for o in outcomes})
    for selector in selectors:
        for budget in budgets:
            mine = [o for o in outcomes if o.selector == selector.name and o.budget == budget]
            if not mine:
                continue
            done = [o for o in mine if o.error is None]
            evidence = sum(o.evidence for o in mine)
            out.append(
                Summary(
                    selector=selector.name,
                    framework=selector.framework,
                    group=selector.group,
                    budget=budget,
                    questions=len(mine),
                    errors=len(mine) - len(done),
                    recall=sum(o.found for o in mine) / evidence if evidence else 0.0,
                    complete=sum(o.found == o.evidence for o in mine) / len(mine),
                    holes=sum(o.holes for o in done),
                    invalid=sum(o.invalid for o in done),
                    over_budget=sum(o.over_budget for o in done),
                    task_lost=sum(o.task_lost for o in done),
                    use=statistics.fmean(o.tokens / budget for o in done) if done else 0.0,
                    milliseconds=1000 * statistics.fmean(o.seconds for o in done) if done else 0.0,
                )
            )
    return out


def table(summaries: Sequence[Summary], timings: bool = True) -> str:
    """The results as a Markdown table: one row per component, recall at each budget, then
    the window-quality counts over all budgets."""
    budgets = sorted({s.budget for s in summaries})
    names = list(dict.fromkeys(s.selector for s in summaries))
    head = ["framework", "component"]
    head += [f"recall @ {b:,}" for b in budgets]
    head += [f"all evidence @ {b:,}" for b in budgets]
    head += ["windows", "holes", "invalid", "over budget", "task lost"]
    if timings:
        head.append("ms / call")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in names:
        rows = {s.budget: s for s in summaries if s.selector == name}
        first = next(iter(rows.values()))
        label = f"**{name}**" if first.group == "cupel" else name
        cells = [first.framework, label]
        cells += [f"{rows[b].recall:.1%}" if b in rows else "–" for b in budgets]
        cells += [f"{rows[b].complete:.1%}" if b in rows else "–" for b in budgets]
        windows = sum(r.questions - r.errors for r in rows.values())
        errors = sum(r.errors for r in rows.values())
        cells.append(f"{windows}" + (f" ({errors} errors)" if errors else ""))
        for attribute in ("holes", "invalid", "over_budget", "task_lost"):
            cells.append(str(sum(getattr(r, attribute) for r in rows.values())))
        if timings:
            ms = statistics.fmean(r.milliseconds for r in rows.values())
            cells.append(f"{ms:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def breakdown(
    outcomes: Sequence[Outcome],
    selectors: Sequence[Selector] = SELECTORS,
    names: Sequence[str] = GROUPS,
) -> str:
    """Evidence recall by question group (``names``, :func:`groups`), one row per component
    and budget, as a Markdown table; each header says how many questions the group holds."""
    budgets = sorted({o.budget for o in outcomes})
    first = [o for o in outcomes if o.selector == outcomes[0].selector and o.budget == budgets[0]]
    sizes = {g: sum(g in o.groups for o in first) for g in names}
    head = ["component", "budget", *(f"{g} ({sizes[g]})" for g in names)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for selector in selectors:
        for budget in budgets:
            mine = [o for o in outcomes if o.selector == selector.name and o.budget == budget]
            if not mine:
                continue
            cells = [selector.name, f"{budget:,}"]
            for g in names:
                rows = [o for o in mine if g in o.groups]
                evidence = sum(o.evidence for o in rows)
                cells.append(f"{sum(o.found for o in rows) / evidence:.1%}" if evidence else "–")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


COST_SIZES = (1000, 10000)
COST_BUDGET = 4000


def long_history(size: int, seed: int = SEED) -> tuple[Message, ...]:
    """About ``size`` messages: generated conversations one after the other (one system
    prompt; tool-call ids made unique), cut to ``size`` and ended by the first
    conversation's first question."""
    from dataclasses import replace

    messages: list[Message] = []
    count = 0
    first: Question | None = None
    while len(messages) < size:
        (dialogue,) = generate_dialogues(1, seed=seed + count)
        first = first or dialogue.questions[0]
        for message in dialogue.messages:
            if message.role == SYSTEM and messages:
                continue
            if message.calls:
                message = replace(
                    message, calls=tuple(replace(c, id=f"{count}-{c.id}") for c in message.calls)
                )
            if message.answers is not None:
                message = replace(message, answers=f"{count}-{message.answers}")
            messages.append(message)
        count += 1
    cut = size - 1
    while messages[cut].role == "tool":  # end on a whole exchange
        cut -= 1
    question = "" if first is None else first.text
    return (*messages[:cut], Message("user", question))


def cost(
    sizes: Sequence[int] = COST_SIZES, budget: int = COST_BUDGET, repeats: int = 5
) -> list[dict[str, Any]]:
    """The time per call of ``select_messages`` and ``CupelChatMemory.get`` with the chat
    default, with ``policy="recall"`` and with ``policy="recall"`` plus an embedding
    (:class:`HashedTermsEmbeddings`) on histories of ``sizes`` messages (the median of
    ``repeats`` calls after one warm-up call), the ratios to the chat default, and the texts
    the embedding embedded in the first call and in the timed calls (none: the history
    was embedded once)."""
    from cupel_langchain import select_messages
    from cupel_llamaindex import CupelChatMemory

    rows: list[dict[str, Any]] = []
    for size in sizes:
        neutral = long_history(size)
        case = Case("recall", 0, neutral, budget=0, call_style="openai")
        langchain = to_langchain(case)
        llamaindex = to_llamaindex(case)

        embeddings = HashedTermsEmbeddings()  # a new one per size: a cold first call
        li_embeddings = hashed_terms_embedding()

        def lc(
            policy: str, messages: list[Any] = langchain, model: Any = embeddings
        ) -> Callable[[], Any]:
            extra = {"embeddings": model} if policy == _EMBEDDED else {}
            return lambda: select_messages(
                messages,
                max_tokens=budget,
                token_counter=approximate_tokens,
                token_counter_input="messages",
                policy=RECALL_POLICY if policy == _EMBEDDED else policy,
                **extra,
            )

        def li(
            policy: str, messages: list[Any] = llamaindex, model: Any = li_embeddings
        ) -> Callable[[], Any]:
            extra = {"embeddings": model} if policy == _EMBEDDED else {}
            return lambda: CupelChatMemory.from_defaults(
                chat_history=list(messages),
                token_limit=budget,
                policy=RECALL_POLICY if policy == _EMBEDDED else policy,
                **extra,
            ).get()

        for component, make, model in (
            ("select_messages", lc, embeddings),
            ("CupelChatMemory", li, li_embeddings),
        ):
            times = {}
            for policy in ("chat", RECALL_POLICY, _EMBEDDED):
                call = make(policy)
                call()
                first_texts = model.texts
                samples = []
                for _ in range(repeats):
                    started = time.perf_counter()
                    call()
                    samples.append(time.perf_counter() - started)
                times[policy] = statistics.median(samples)
            rows.append(
                {
                    "component": component,
                    "messages": len(neutral),
                    "chat_ms": 1000 * times["chat"],
                    "recall_ms": 1000 * times[RECALL_POLICY],
                    "ratio": times[RECALL_POLICY] / times["chat"],
                    "embeddings_ms": 1000 * times[_EMBEDDED],
                    "embeddings_ratio": times[_EMBEDDED] / times["chat"],
                    "first_texts": first_texts,
                    "later_texts": model.texts - first_texts,
                }
            )
    return rows


_EMBEDDED = "recall + embeddings"


def cost_table(rows: Sequence[dict[str, Any]]) -> str:
    """The cost rows as a Markdown table."""
    lines = [
        "| component | messages | chat default (ms / call) | recall (ms / call) | ratio "
        "| recall + embeddings (ms / call) | ratio | texts embedded (first call / later calls) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['component']} | {row['messages']:,} | {row['chat_ms']:.1f} | "
            f"{row['recall_ms']:.1f} | {row['ratio']:.2f}x | {row['embeddings_ms']:.1f} | "
            f"{row['embeddings_ratio']:.2f}x | {row['first_texts']:,} / {row['later_texts']} |"
        )
    return "\n".join(lines)


def command(conversations: int, seed: int, budgets: Sequence[int]) -> str:
    """The command reproducing a run."""
    parts = ["python -m benchmarks.recall"]
    if conversations != CONVERSATIONS:
        parts.append(f"--conversations {conversations}")
    if seed != SEED:
        parts.append(f"--seed {seed}")
    if tuple(budgets) != BUDGETS:
        parts.append("--budgets " + ",".join(str(b) for b in budgets))
    return " ".join(parts)


def describe(dialogues: Sequence[Dialogue]) -> str:
    """One line on the generated data."""
    messages = [len(d.messages) for d in dialogues]
    tokens = [d.tokens() for d in dialogues]
    questions = sum(len(d.questions) for d in dialogues)
    evidence = sum(len(q.evidence) for d in dialogues for q in d.questions)
    updated = sum(q.updated for d in dialogues for q in d.questions)
    return (
        f"{len(dialogues)} dialogues of {min(messages)}-{max(messages)} messages "
        f"({min(tokens):,}-{max(tokens):,} tokens at 4 characters per token) over "
        f"{min(len(d.sessions) for d in dialogues)}-{max(len(d.sessions) for d in dialogues)} "
        f"sessions; {questions} questions, {evidence} evidence turns"
        + (f", {updated} questions on updated facts" if updated else "")
    )


def table_block(
    summaries: Sequence[Summary],
    outcomes: Sequence[Outcome],
    dialogues: Sequence[Dialogue],
    seed: int,
    budgets: Sequence[int],
) -> str:
    """The table with the command that produced it, between the doc's markers (no
    timings: the block depends on the seed alone)."""
    return (
        f"{TABLE_START}\n"
        f"{describe(dialogues)}: `{command(len(dialogues), seed, budgets)}`\n\n"
        f"{table(summaries, timings=False)}\n\n"
        f"Evidence recall by question group (questions in each group):\n\n"
        f"{breakdown(outcomes)}\n"
        f"{TABLE_END}"
    )


def update_docs(path: Path, block: str) -> None:
    """Replace the table block of the doc at ``path`` (``block`` as :func:`table_block`
    gives it, between the markers)."""
    inner = block.removeprefix(f"{TABLE_START}\n").removesuffix(f"\n{TABLE_END}")
    replace_block(path, TABLE_START, TABLE_END, inner)


def _budgets(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        message = f"budgets are integers separated by commas: {text!r}"
        raise argparse.ArgumentTypeError(message) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"budgets must be >= 1: {text!r}")
    return values


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.recall", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("--conversations", type=int, default=None, help=f"default {CONVERSATIONS}")
    parser.add_argument("--budgets", type=_budgets, default=BUDGETS, help="default 2000,4000")
    parser.add_argument("--seed", type=int, default=SEED, help=f"default {SEED}")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_CONVERSATIONS} conversations")
    parser.add_argument("--json", type=Path, help="write the summary and every outcome here")
    parser.add_argument("--docs", type=Path, help="rewrite the table block of this Markdown file")
    parser.add_argument(
        "--cost",
        action="store_true",
        help="only the time per call of the recall policy (with and without an embedding) "
        "against the chat default at 1,000 and 10,000 messages",
    )
    parser.add_argument(
        "--locomo",
        type=Path,
        help="the public LoCoMo file (locomo10.json) instead of the generated dialogues: the "
        "recall policy, the chat default, trim_messages and the BM25 references",
    )
    parser.add_argument(
        "--embeddings",
        action="store_true",
        help="add the recall policy with an embedding (hashed words: not a semantic model)",
    )
    args = parser.parse_args(argv)
    selectors = (*SELECTORS, *EMBEDDING_SELECTORS) if args.embeddings else SELECTORS
    if args.cost:
        print(cost_table(cost()))
        return 0
    count = (
        args.conversations
        if args.conversations is not None
        else (QUICK_CONVERSATIONS if args.quick else CONVERSATIONS)
    )
    if count < 1:
        parser.error(f"--conversations must be >= 1, got {count}")
    if args.locomo is not None and args.docs is not None:
        parser.error("--docs rewrites the generated dialogues' table: not with --locomo")
    started = time.perf_counter()
    names: Sequence[str] = GROUPS
    if args.locomo is not None:
        try:
            dialogues = load_locomo(args.locomo)
        except (OSError, ValueError) as exc:
            parser.error(str(exc))
        selectors = tuple(s for s in selectors if s.name not in NOT_ON_LOCOMO)
        kinds = {q.kind for d in dialogues for q in d.questions}
        names = ("shares a word", "paraphrase only", *sorted(kinds))
        reproduce = f"python -m benchmarks.recall --locomo {args.locomo}"
        if tuple(args.budgets) != BUDGETS:
            reproduce += " --budgets " + ",".join(map(str, args.budgets))
    else:
        dialogues = generate_dialogues(count, seed=args.seed)
        reproduce = command(count, args.seed, args.budgets)
    outcomes = run(dialogues, args.budgets, selectors)
    summaries = summarize(outcomes, selectors)
    print(f"Recall: {describe(dialogues)}")
    print(f"reproduce: {reproduce}\n")
    print(table(summaries))
    print("\nEvidence recall by question group (questions in each group):\n")
    print(breakdown(outcomes, selectors, names))
    if args.embeddings:
        print(f"\nthe embedding embedded {EMBEDDINGS.texts:,} texts in {EMBEDDINGS.calls:,} calls")
    elapsed = time.perf_counter() - started
    print(f"\n{len(outcomes)} windows in {elapsed:.1f} s")
    if args.json is not None:
        payload = {
            "conversations": count,
            "seed": args.seed,
            "budgets": list(args.budgets),
            "summary": [asdict(s) for s in summaries],
            "outcomes": [asdict(o) for o in outcomes],
        }
        args.json.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    if args.docs is not None:
        update_docs(args.docs, table_block(summaries, outcomes, dialogues, args.seed, args.budgets))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
