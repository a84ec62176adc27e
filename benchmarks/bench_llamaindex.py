"""LlamaIndex workloads W6 and W7 (docs/performance.md) against the incumbents.

W6: a conversation of N LlamaIndex ``ChatMessage`` s (alternating user/assistant, ~50 words
each; every 10th assistant turn makes a tool call answered by a tool message), selected by
``ChatMemoryBuffer(token_limit=B, tokenizer_fn=lambda s: range(len(s)//4)).get()`` and by
``CupelChatMemory.get()`` with the same tokenizer and B = 25% of the conversation's total by
that tokenizer.

W7: 200 ``NodeWithScore`` (TextNode of 100..800 tokens, scores uniform in [0, 1]);
incumbent: a top-k cut by score (k = 8,000 // mean node tokens) followed by
``LongContextReorder``; cupel: ``CupelNodePostprocessor(max_tokens=8000)``.

Data is generated with a fixed seed before timing; only the selection call is timed; each
timing is the median of >= 7 runs after 2 warm-ups, in one process (ratios are what
count on a shared machine). ``ChatMemoryBuffer.get()`` at 10,000 messages takes many
seconds per call, so it gets ``--slow-runs`` runs (default 3) and no warm-up — the output
says so. Peak memory (tracemalloc, one untimed call) is reported except for that case.

    python benchmarks/bench_llamaindex.py              # W6 (1k, 10k) and W7
    python benchmarks/bench_llamaindex.py W6 --sizes 1000
    python benchmarks/bench_llamaindex.py W8          # small histories, 10 ... 1,000 messages

W8 (small histories) has three rows per size: ``get()`` repeated on an unchanged history
(the memory recalls its last window), one chat turn (:func:`chat_turn`: a new user
message is put, ``get()`` selects, the message is deleted again so the size stays n),
which is what a chat engine pays per turn, and the same turn with ``last_report`` read
(every included and excluded entry's item, score and reason: the report built and read).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence, Sized
from pathlib import Path
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.postprocessor import LongContextReorder
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.core.storage.chat_store import SimpleChatStore

if __package__ in (None, ""):  # run as a script: the repository root holds the package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.harness import Case, traced_build
from benchmarks.timing import per_call_us
from cupel_llamaindex import CupelChatMemory, CupelNodePostprocessor, tool_call_ids

SEED = 20261122
VOCAB = tuple(
    f"{a}{b}"
    for a in ("al", "be", "ga", "de", "ep", "ze", "et", "th")
    for b in ("pha", "ta", "mma", "lta", "silon", "ta", "ron", "eta", "on", "ix")
)
W7_BUDGET = 8_000


def quarter_tokenizer(text: str) -> Sized:
    """The workload's tokenizer: ~4 characters per token, as a sized sequence."""
    return range(len(text) // 4)


# -- data ---------------------------------------------------------------------------------
def conversation(n: int, seed: int = SEED) -> list[ChatMessage]:
    """N messages: user/assistant turns of ~50 words; every 10th assistant turn calls a tool
    (a ``ToolCallBlock``) and is answered by a tool message. Exactly N messages."""
    rng = random.Random(seed)

    def text(tag: str) -> str:
        return f"{tag} " + " ".join(rng.choice(VOCAB) for _ in range(rng.randint(45, 55)))

    out: list[ChatMessage] = []
    turn = 0
    while len(out) < n:
        out.append(ChatMessage(role="user", content=text(f"user-{turn}")))
        if turn % 10 == 9:
            call_id = f"call-{turn}"
            out.append(
                ChatMessage(
                    role="assistant",
                    blocks=[
                        TextBlock(text=text(f"assistant-{turn}")),
                        ToolCallBlock(
                            tool_call_id=call_id, tool_name="lookup", tool_kwargs={"turn": turn}
                        ),
                    ],
                )
            )
            out.append(
                ChatMessage(
                    role="tool",
                    content=text(f"tool-{turn}"),
                    additional_kwargs={"tool_call_id": call_id},
                )
            )
        else:
            out.append(ChatMessage(role="assistant", content=text(f"assistant-{turn}")))
        turn += 1
    del out[n:]
    return out


def scored_nodes(count: int = 200, seed: int = SEED) -> list[NodeWithScore]:
    """``count`` TextNodes of 100..800 tokens (~4 characters per token), scores in [0, 1)."""
    rng = random.Random(seed)
    nodes = []
    for i in range(count):
        tokens = rng.randint(100, 800)
        body = " ".join(rng.choice(VOCAB) for _ in range(tokens))
        text = f"node-{i} {body}"[: tokens * 4]
        nodes.append(NodeWithScore(node=TextNode(text=text, id_=f"node-{i}"), score=rng.random()))
    return nodes


# -- measurement ----------------------------------------------------------------------------
def median_seconds(fn: Callable[[], object], runs: int, warmups: int = 2) -> float:
    for _ in range(warmups):
        fn()
    samples = []
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def peak_mib(fn: Callable[[], object]) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def window_problems(window: Sequence[ChatMessage], history: Sequence[ChatMessage]) -> list[str]:
    """What is wrong with a chat window: a leading tool message, split tool groups."""
    problems = []
    conversation_part = [m for m in window if m.role != MessageRole.SYSTEM]
    if conversation_part and conversation_part[0].role == MessageRole.TOOL:
        problems.append("starts with a tool message")
    caller: dict[str, int] = {}
    for i, message in enumerate(history):
        for call_id in tool_call_ids(message)[0]:
            caller[call_id] = i
    kept = {id(m) for m in window}
    split = 0
    for message in history:
        answered = message.additional_kwargs.get("tool_call_id")
        if (
            message.role == MessageRole.TOOL
            and answered in caller
            and (id(message) in kept) != (id(history[caller[answered]]) in kept)
        ):
            split += 1
    if split:
        problems.append(f"{split} split tool groups")
    return problems


def w6(n: int, runs: int, slow_runs: int) -> None:
    history = conversation(n)
    total = len(quarter_tokenizer(" ".join(str(m.content) for m in history)))
    budget = total // 4

    def store(messages: list[ChatMessage]) -> SimpleChatStore:
        chat_store = SimpleChatStore()
        chat_store.set_messages("chat_history", list(messages))
        return chat_store

    incumbent = ChatMemoryBuffer(
        token_limit=budget, tokenizer_fn=quarter_tokenizer, chat_store=store(history)
    )
    shared = store(history)

    def cold() -> list[ChatMessage]:
        # A fresh memory: every message is mapped and counted.
        return CupelChatMemory(
            token_limit=budget, tokenizer_fn=quarter_tokenizer, chat_store=shared
        ).get()

    warm_memory = CupelChatMemory(
        token_limit=budget, tokenizer_fn=quarter_tokenizer, chat_store=shared
    )
    growing = CupelChatMemory(
        token_limit=budget, tokenizer_fn=quarter_tokenizer, chat_store=store(history)
    )
    new_turns = iter(conversation(2 * (runs + 4), seed=SEED + 1))

    def next_turn() -> list[ChatMessage]:
        # The chat-engine steady state: a user message and a reply arrive, then get().
        growing.put(next(new_turns))
        growing.put(next(new_turns))
        return growing.get()

    our_window = cold()
    cold_ms = median_seconds(cold, runs) * 1000
    warm_memory.get()
    warm_ms = median_seconds(warm_memory.get, runs) * 1000
    growing.get()
    turn_ms = median_seconds(next_turn, runs) * 1000
    our_peak = peak_mib(cold)

    slow = n >= 5_000
    their_runs = slow_runs if slow else runs
    their_ms = median_seconds(incumbent.get, their_runs, warmups=0 if slow else 2) * 1000
    their_window = incumbent.get()
    their_peak = None if slow else peak_mib(incumbent.get)

    print(f"W6 N={n:,}: {len(history):,} messages, total {total:,} tokens, budget B={budget:,}")
    runs_note = f"median of {their_runs}, no warm-up (slow)" if slow else f"median of {runs}"
    print(
        f"  ChatMemoryBuffer.get()            {their_ms:10.2f} ms  ({runs_note})  "
        f"{len(their_window):,} messages, peak "
        + ("n/a (too slow to trace)" if their_peak is None else f"{their_peak:.1f} MiB")
        + f", problems: {', '.join(window_problems(their_window, history)) or 'none'}"
    )
    print(
        f"  CupelChatMemory.get() cold        {cold_ms:10.2f} ms  (fresh memory, median of "
        f"{runs})  {len(our_window):,} messages, peak {our_peak:.1f} MiB, "
        f"problems: {', '.join(window_problems(our_window, history)) or 'none'}"
    )
    print(
        f"  CupelChatMemory.get() repeated    {warm_ms:10.2f} ms  (same history, median of {runs})"
    )
    print(
        f"  CupelChatMemory.get() +1 turn     {turn_ms:10.2f} ms  (2 new messages, median {runs})"
    )
    for label, ours in (("cold", cold_ms), ("repeated", warm_ms), ("+1 turn", turn_ms)):
        ratio = ours / their_ms
        verdict = ""
        if n >= 10_000:
            verdict = "  target <= 0.01: " + ("met" if ratio <= 0.01 else "NOT met")
        print(f"  cupel {label:8s} / incumbent = {ratio:.4f}  (1/{1 / ratio:,.0f}){verdict}")


def chat_turn(memory: Any, calls: int = 1, *, read: bool = False) -> Callable[[], None]:
    """``calls`` chat turns on ``memory`` (a ``CupelChatMemory`` or ``ChatMemoryBuffer``,
    treated identically): each puts a NEW user message with a new text (so nothing is
    recalled from the previous call), calls ``get()`` (``read``: then reads every entry of
    the memory's ``last_report``, :func:`~benchmarks.bench_langchain.read_report`), then
    deletes the message from the chat store again, so the history keeps its size."""
    from benchmarks.bench_langchain import read_report

    numbers = itertools.count()
    store = memory.chat_store
    key = memory.chat_store_key

    def turns() -> None:
        for _ in range(calls):
            number = next(numbers)
            memory.put(ChatMessage(role="user", content=f"next question {number}: and then?"))
            memory.get()
            if read:
                read_report(memory.last_report)
            store.delete_last_message(key)

    return turns


def turn_window(memory: CupelChatMemory) -> tuple[list[ChatMessage], list[ChatMessage]]:
    """One chat turn's window and history (the message is deleted again afterwards)."""
    memory.put(ChatMessage(role="user", content="a checked question: and then?"))
    window, history = memory.get(), list(memory.get_all())  # a copy: the store list shrinks
    memory.chat_store.delete_last_message(memory.chat_store_key)
    return window, history


def _memories(n: int) -> tuple[list[ChatMessage], CupelChatMemory, ChatMemoryBuffer]:
    """The W6 conversation of ``n`` messages, and both memories over it (B = 25%), each
    with its own ``SimpleChatStore``."""
    history = conversation(n)
    budget = len(quarter_tokenizer(" ".join(str(m.content) for m in history))) // 4
    stores = []
    for _ in range(2):
        chat_store = SimpleChatStore()
        chat_store.set_messages("chat_history", list(history))
        stores.append(chat_store)
    ours = CupelChatMemory(token_limit=budget, tokenizer_fn=quarter_tokenizer, chat_store=stores[0])
    theirs = ChatMemoryBuffer(
        token_limit=budget, tokenizer_fn=quarter_tokenizer, chat_store=stores[1]
    )
    return history, ours, theirs


def small(n: int, runs: int = 51) -> tuple[float, float, float, float, float]:
    """W8 (small histories): ``CupelChatMemory.get()`` with its defaults and
    ``ChatMemoryBuffer.get()`` over the W6 conversation of ``n`` messages held by the same
    kind of store, budget B = 25%: medians in µs of ``get()`` repeated on the unchanged
    history and of one chat turn (:func:`chat_turn`), as (cupel repeated, incumbent
    repeated, cupel per turn, incumbent per turn, cupel per turn with its report read).
    The memory builds its report on first read of ``last_report`` (at once if an
    instrumentation handler listens), so ``get()`` alone is what a chat engine pays per
    turn."""
    history, ours, theirs = _memories(n)
    problems = window_problems(ours.get(), history)
    assert not problems, problems
    window, grown = turn_window(ours)
    problems = window_problems(window, grown)
    assert not problems, problems
    repeated = per_call_us(ours.get, runs), per_call_us(theirs.get, runs)
    turn = per_call_us(chat_turn(ours), runs), per_call_us(chat_turn(theirs), runs)
    return (*repeated, *turn, per_call_us(chat_turn(ours, read=True), runs))


def w6_cases(sizes: list[int]) -> Iterator[Case]:
    from llama_index.core.memory import ChatMemoryBuffer
    from llama_index.core.storage.chat_store import SimpleChatStore

    from cupel_llamaindex import CupelChatMemory

    tokenizer = quarter_tokenizer
    for size in sizes:
        history, input_mib = traced_build(lambda size=size: conversation(size))  # type: ignore[misc]
        messages: list = history  # type: ignore[type-arg, assignment]
        total = len(tokenizer(" ".join(str(m.content) for m in messages)))
        budget = total // 4

        def store(messages: list = messages) -> SimpleChatStore:  # type: ignore[type-arg]
            chat_store = SimpleChatStore()
            chat_store.set_messages("chat_history", list(messages))
            return chat_store

        incumbent = ChatMemoryBuffer(token_limit=budget, tokenizer_fn=tokenizer, chat_store=store())
        shared = store()

        memory = CupelChatMemory(token_limit=budget, tokenizer_fn=tokenizer, chat_store=store())

        def fresh(budget: int = budget, shared: SimpleChatStore = shared) -> object:
            # A new memory per call: every message is mapped and counted again.
            return CupelChatMemory(
                token_limit=budget, tokenizer_fn=tokenizer, chat_store=shared
            ).get()

        yield Case(
            "W6",
            "W6 llamaindex memory",
            size,
            memory.get,
            input_mib=input_mib,
            incumbent=incumbent.get,
            incumbent_label="ChatMemoryBuffer.get",
            note="get() on one memory holding the history, like the incumbent",
        )
        yield Case(
            "W6",
            "W6 llamaindex memory, fresh",
            size,
            fresh,
            input_mib=input_mib,
            incumbent=incumbent.get,
            incumbent_label="ChatMemoryBuffer.get",
            note="a new CupelChatMemory per call (maps and counts every message)",
        )


def w7_cases(sizes: list[int]) -> Iterator[Case]:
    from llama_index.core.postprocessor import LongContextReorder

    from cupel_llamaindex import CupelNodePostprocessor

    tokenizer = quarter_tokenizer
    budget = W7_BUDGET
    for size in sizes:
        built, input_mib = traced_build(lambda size=size: scored_nodes(size))  # type: ignore[misc]
        nodes: list = built  # type: ignore[type-arg, assignment]
        mean_tokens = statistics.mean(len(tokenizer(n.node.get_content())) for n in nodes)
        k = int(budget // mean_tokens)
        reorder = LongContextReorder()
        ours_post = CupelNodePostprocessor(max_tokens=budget, tokenizer_fn=tokenizer)

        def theirs(
            nodes: list = nodes,  # type: ignore[type-arg]
            k: int = k,
            reorder: LongContextReorder = reorder,
        ) -> object:
            top = sorted(nodes, key=_node_score, reverse=True)[:k]
            return reorder.postprocess_nodes(top)

        def ours(
            nodes: list = nodes,  # type: ignore[type-arg]
            post: CupelNodePostprocessor = ours_post,
        ) -> object:
            return post.postprocess_nodes(nodes)

        yield Case(
            "W7",
            "W7 llamaindex postprocess",
            size,
            ours,
            input_mib=input_mib,
            incumbent=theirs,
            incumbent_label=f"top-{k} + LongContextReorder",
        )


def _node_score(node: object) -> float:
    return getattr(node, "score", None) or 0.0


def w8_cases(sizes: list[int]) -> Iterator[Any]:
    """W8 rows for ``python -m benchmarks``: ``CupelChatMemory`` (defaults) against
    ``ChatMemoryBuffer`` on the W6 conversation at ``n`` messages (at most 1,000: the
    incumbent is quadratic), each repeated ``2000 // n`` times per timed sample. Two rows
    per size: ``get()`` repeated on the unchanged history ("W8 chat memory": the memory
    recalls its last window), one chat turn ("W8 chat memory, per turn": put a new
    user message, ``get()``, delete it again; :func:`chat_turn`) and the same turn with
    ``last_report`` read ("W8 chat memory, per turn, report read")."""
    from benchmarks.bench_langchain import batched

    for n in (size for size in sizes if size <= 1000):
        history, ours, theirs = _memories(n)
        calls = max(1, 2000 // n)
        per_sample = f"{calls} calls per sample; " if calls > 1 else ""
        problems = window_problems(ours.get(), history)
        yield Case(
            "W8",
            "W8 chat memory",
            n,
            batched(ours.get, calls),
            incumbent=batched(theirs.get, calls),
            incumbent_label="ChatMemoryBuffer.get",
            note=f"{per_sample}repeated get(), unchanged history; "
            f"window problems: {', '.join(problems) or 'none'}",
            checks={"cupel window valid": not problems},
        )
        turn_problems = window_problems(*turn_window(ours))
        yield Case(
            "W8",
            "W8 chat memory, per turn",
            n,
            chat_turn(ours, calls),
            incumbent=chat_turn(theirs, calls),
            incumbent_label="ChatMemoryBuffer put + get + delete",
            note=f"{per_sample}put a new user message, get(), delete it; "
            f"window problems: {', '.join(turn_problems) or 'none'}",
            checks={"cupel window valid": not turn_problems},
        )
        yield Case(
            "W8",
            "W8 chat memory, per turn, report read",
            n,
            chat_turn(ours, calls, read=True),
            incumbent=chat_turn(theirs, calls),
            incumbent_label="ChatMemoryBuffer put + get + delete",
            note=f"{per_sample}put a new user message, get(), read every entry of "
            "last_report, delete the message",
            checks={"cupel window valid": not turn_problems},
        )


def w7(runs: int) -> None:
    nodes = scored_nodes()
    mean_tokens = statistics.mean(len(quarter_tokenizer(n.node.get_content())) for n in nodes)
    k = int(W7_BUDGET // mean_tokens)
    reorder = LongContextReorder()

    def incumbent() -> list[NodeWithScore]:
        top = sorted(nodes, key=lambda n: n.score or 0.0, reverse=True)[:k]
        return reorder.postprocess_nodes(top)

    ours = CupelNodePostprocessor(max_tokens=W7_BUDGET, tokenizer_fn=quarter_tokenizer)
    ours_default_tokenizer = CupelNodePostprocessor(max_tokens=W7_BUDGET)

    def tokens(selection: list[NodeWithScore]) -> int:
        return sum(len(quarter_tokenizer(n.node.get_content())) for n in selection)

    their_sel = incumbent()
    our_sel = ours.postprocess_nodes(nodes)
    their_ms = median_seconds(incumbent, runs) * 1000
    our_ms = median_seconds(lambda: ours.postprocess_nodes(nodes), runs) * 1000
    tiktoken_ms = median_seconds(lambda: ours_default_tokenizer.postprocess_nodes(nodes), runs)
    their_peak = peak_mib(incumbent)
    our_peak = peak_mib(lambda: ours.postprocess_nodes(nodes))

    def best_first(selection: list[NodeWithScore]) -> bool:
        return bool(selection) and selection[0] is max(selection, key=lambda n: n.score or 0.0)

    def score_sum(selection: list[NodeWithScore]) -> float:
        return sum(n.score or 0.0 for n in selection)

    print(f"W7: {len(nodes)} nodes, mean {mean_tokens:.0f} tokens, budget {W7_BUDGET:,}, k={k}")
    print(
        f"  top-k + LongContextReorder      {their_ms:8.3f} ms  {len(their_sel)} nodes, "
        f"{tokens(their_sel):,} tokens (within budget: {tokens(their_sel) <= W7_BUDGET}), "
        f"score sum {score_sum(their_sel):.2f}, best selected node first: "
        f"{best_first(their_sel)}, "
        f"peak {their_peak:.2f} MiB"
    )
    print(
        f"  CupelNodePostprocessor          {our_ms:8.3f} ms  {len(our_sel)} nodes, "
        f"{tokens(our_sel):,} tokens (within budget: {tokens(our_sel) <= W7_BUDGET}), "
        f"score sum {score_sum(our_sel):.2f}, best selected node first: "
        f"{best_first(our_sel)}, "
        f"peak {our_peak:.2f} MiB"
    )
    print(f"  CupelNodePostprocessor (default tiktoken tokenizer) {tiktoken_ms * 1000:8.3f} ms")
    print(f"  cupel / incumbent = {our_ms / their_ms:.2f}  (medians of {runs})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workloads", nargs="*", default=["W6", "W7"])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--slow-runs", type=int, default=3, help="runs for ChatMemoryBuffer at 10k")
    parser.add_argument("--sizes", default="1000,10000", help="conversation sizes for W6")
    args = parser.parse_args(argv)
    if args.runs < 7:
        parser.error("--runs must be >= 7 (docs/performance.md)")
    if args.slow_runs < 1:
        parser.error("--slow-runs must be >= 1")
    print(f"python {sys.version.split()[0]}")
    for name in args.workloads:
        key = name.upper()
        if key == "W6":
            for n in (int(s) for s in args.sizes.split(",")):
                w6(n, args.runs, args.slow_runs)
        elif key == "W7":
            w7(args.runs)
        elif key == "W8":
            print(
                f"{'N':>6} {'':>13} {'ChatMemoryBuffer':>17} {'CupelChatMemory':>16} {'ratio':>6}"
            )
            for n in (10, 50, 200, 1000):
                ours, theirs, ours_turn, theirs_turn, read = small(n, max(args.runs, 21))
                for what, cupel, incumbent in (
                    ("repeated get", ours, theirs),
                    ("per turn", ours_turn, theirs_turn),
                    ("+report read", read, theirs_turn),
                ):
                    print(
                        f"{n:>6} {what:>13} {incumbent:>14.0f} us {cupel:>13.0f} us "
                        f"{cupel / incumbent:>6.2f}"
                    )
        else:
            parser.error(f"unknown workload {name!r}; choose W6, W7 or W8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
