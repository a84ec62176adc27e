"""CupelNodePostprocessor against real llama-index-core query engines and instrumentation."""

from __future__ import annotations

import asyncio
import pickle
from collections.abc import Iterator

import pytest
from li_testkit import SelectionRecorder, recording
from llama_index.core import VectorStoreIndex
from llama_index.core.chat_engine import ContextChatEngine
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall
from llama_index.core.postprocessor import LongContextReorder
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

from cupel import (
    ConfigurationError,
    ContextItem,
    GreedySlice,
    Pipeline,
    ReflexiveScorer,
    UShapedPlacer,
)
from cupel.policy import Policy, PolicyError
from cupel.presets import preset
from cupel_llamaindex import CupelChatMemory, CupelNodePostprocessor, CupelSelectionEvent


@pytest.fixture
def recorder() -> Iterator[SelectionRecorder]:
    yield from recording()


def _words(prefix: str, n: int) -> str:
    return " ".join(f"{prefix}w{j}" for j in range(n))


def _index(count: int = 6, length: int = 10) -> VectorStoreIndex:
    # Node i's embedding leans further towards MockEmbedding's query vector [0.5, 0.5] as i
    # grows, so the retriever ranks n5 > n4 > ... > n0 with distinct cosine scores.
    nodes = [
        TextNode(text=_words(f"n{i}", length), id_=f"n{i}", embedding=[1.0, 0.2 * i])
        for i in range(count)
    ]
    return VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=2))


def _scored(*scores: float | None, length: int = 10) -> list[NodeWithScore]:
    return [
        NodeWithScore(node=TextNode(text=_words(f"d{i}", length), id_=f"d{i}"), score=s)
        for i, s in enumerate(scores)
    ]


# -- in a real query engine ------------------------------------------------------------
def test_query_engine_synthesizes_only_the_selected_nodes_best_first() -> None:
    post = CupelNodePostprocessor(max_tokens=35, tokenizer_fn=str.split)
    engine = _index().as_query_engine(llm=MockLLM(), similarity_top_k=6, node_postprocessors=[post])

    response = engine.query("which nodes?")

    # Three 10-token nodes fit 35 tokens; U-shaped: best first, second best last.
    assert [n.node.node_id for n in response.source_nodes] == ["n5", "n3", "n4"]
    # MockLLM echoes its prompt: the synthesizer sent exactly these texts, in this order.
    prompt = str(response)
    positions = [prompt.index(_words(f"n{i}", 10)) for i in (5, 3, 4)]
    assert positions == sorted(positions)
    for dropped in (0, 1, 2):
        assert f"n{dropped}w0" not in prompt
    report = post.last_report
    assert report is not None
    assert {e.reason.name for e in report.excluded} == {"BudgetExceeded"}
    assert report.included_tokens == 30


def test_the_same_node_objects_reach_the_synthesizer() -> None:
    captured: list[list[NodeWithScore]] = []

    class Spy(LongContextReorder):  # a real postprocessor after ours, recording its input
        def _postprocess_nodes(
            self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
        ) -> list[NodeWithScore]:
            captured.append(list(nodes))
            return nodes

    post = CupelNodePostprocessor(max_tokens=25, tokenizer_fn=str.split)
    retriever = _index().as_retriever(similarity_top_k=6)
    retrieved = retriever.retrieve("q")
    before = [(n.node.node_id, n.score, n.node.get_content()) for n in retrieved]
    selected = post.postprocess_nodes(retrieved, query_str="q")

    assert all(any(s is r for r in retrieved) for s in selected)
    assert [(n.node.node_id, n.score, n.node.get_content()) for n in retrieved] == before
    engine = _index().as_query_engine(
        llm=MockLLM(), similarity_top_k=6, node_postprocessors=[post, Spy()]
    )
    response = engine.query("q")
    assert [n.node.node_id for n in captured[0]] == [n.node.node_id for n in selected]
    assert all(a is b for a, b in zip(captured[0], response.source_nodes, strict=True))


def test_tokens_are_counted_on_what_the_llm_sees() -> None:
    node = TextNode(text="alpha beta", metadata={"file": "a very long file name"})
    nodes = [NodeWithScore(node=node, score=0.9)]
    llm_view = len(node.get_content(metadata_mode=MetadataMode.LLM).split())

    too_small = CupelNodePostprocessor(max_tokens=llm_view - 1, tokenizer_fn=str.split)
    exact = CupelNodePostprocessor(max_tokens=llm_view, tokenizer_fn=str.split)
    bare = CupelNodePostprocessor(max_tokens=2, tokenizer_fn=str.split, metadata_mode="none")

    assert too_small.postprocess_nodes(nodes) == []
    assert exact.postprocess_nodes(nodes)[0] is nodes[0]
    assert bare.postprocess_nodes(nodes)[0] is nodes[0]


def test_context_chat_engine_uses_the_postprocessor_and_the_memory() -> None:
    index = _index()
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=None, is_chat_model=True)
    post = CupelNodePostprocessor(max_tokens=15, tokenizer_fn=str.split)
    memory = CupelChatMemory.from_defaults(token_limit=500, tokenizer_fn=str.split)
    engine = ContextChatEngine.from_defaults(
        retriever=index.as_retriever(similarity_top_k=6),
        llm=llm,
        memory=memory,
        node_postprocessors=[post],
    )

    engine.chat("first question")
    engine.chat("second question")

    sent = llm.last_chat_messages
    assert sent is not None
    system = str(sent[0].content)
    assert _words("n5", 10) in system  # the one node that fits 15 tokens
    assert "n4w0" not in system
    assert [m.content for m in sent[1:3]] == ["first question", str(memory.get_all()[1].content)]
    assert len(memory.get_all()) == 4


def test_a_token_counter_counts_the_llm_view_instead_of_the_tokenizer() -> None:
    seen: list[str] = []

    def counter(text: str) -> int:
        seen.append(text)
        return 4

    nodes = _scored(0.9, 0.8, 0.7)
    post = CupelNodePostprocessor(max_tokens=9, token_counter=counter, tokenizer_fn=str.split)
    assert post.postprocess_nodes(nodes) == [nodes[0], nodes[1]]
    assert seen == [n.node.get_content(metadata_mode=MetadataMode.LLM) for n in nodes]
    report = post.last_report
    assert report is not None and report.included_tokens == 8


def test_a_token_counter_must_return_a_non_negative_int() -> None:
    post = CupelNodePostprocessor(max_tokens=9, token_counter=lambda text: "4")
    with pytest.raises(
        ConfigurationError,
        match=r"token_counter must return a non-negative int, got '4' for nodes\[0\]",
    ):
        post.postprocess_nodes(_scored(0.5))


# -- placement ---------------------------------------------------------------------------
@pytest.mark.parametrize("count", [4, 5, 6, 7])
def test_best_node_is_first_whatever_the_parity_unlike_long_context_reorder(count: int) -> None:
    scores = [round(0.1 * (i + 1), 1) for i in range(count)]  # the last node is the best
    nodes = _scored(*scores)
    best = nodes[-1]
    second = nodes[-2]

    ours = CupelNodePostprocessor(max_tokens=1000, tokenizer_fn=str.split).postprocess_nodes(nodes)
    theirs = LongContextReorder().postprocess_nodes(list(nodes))

    assert ours[0] is best and ours[-1] is second
    assert (theirs[0] is best) == (count % 2 == 1)
    assert (theirs[-1] is best) == (count % 2 == 0)


def test_identical_node_texts_are_deduplicated_keeping_the_better_score() -> None:
    text = _words("same", 5)
    low = NodeWithScore(node=TextNode(text=text, id_="low"), score=0.2)
    high = NodeWithScore(node=TextNode(text=text, id_="high"), score=0.8)
    post = CupelNodePostprocessor(max_tokens=100, tokenizer_fn=str.split)

    assert post.postprocess_nodes([low, high]) == [high]
    report = post.last_report
    assert report is not None
    (dropped,) = report.excluded
    assert dropped.reason.name == "Deduplicated"
    assert dropped.item.metadata["llamaindex_node_id"] == "low"


def test_deduplicate_overrides_the_policy_and_the_pipeline_in_a_query_engine() -> None:
    """``deduplicate`` (the same setting as LangChain's) turns deduplication on or off
    whatever the policy or explicit pipeline says; ``None`` leaves it to them."""
    text = _words("same", 5)
    nodes = [TextNode(text=text, id_=f"n{i}") for i in range(3)]
    index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=2))

    def kept(post: CupelNodePostprocessor) -> list[str]:
        engine = index.as_query_engine(
            llm=MockLLM(), similarity_top_k=3, node_postprocessors=[post]
        )
        return [n.node.node_id for n in engine.query("q").source_nodes]

    post = CupelNodePostprocessor(max_tokens=100, tokenizer_fn=str.split)  # rag: deduplicates
    assert len(kept(post)) == 1
    post.deduplicate = False
    assert len(kept(post)) == 3
    assert post.last_report is not None and post.last_report.excluded == ()
    chat = CupelNodePostprocessor(max_tokens=100, tokenizer_fn=str.split, policy="chat")
    assert len(kept(chat)) == 3  # the chat preset keeps equal texts
    chat.deduplicate = True
    assert len(kept(chat)) == 1
    assert {e.reason.name for e in chat.last_report.excluded} == {"Deduplicated"}  # type: ignore[union-attr]
    explicit = Pipeline(ReflexiveScorer(), GreedySlice(), UShapedPlacer(), deduplication=False)
    forced = CupelNodePostprocessor(
        max_tokens=100, tokenizer_fn=str.split, pipeline=explicit, deduplicate=True
    )
    assert len(kept(forced)) == 1
    assert explicit.deduplication is False  # the given pipeline is left as it is
    with pytest.raises(ConfigurationError, match=r"CupelNodePostprocessor.deduplicate: "):
        CupelNodePostprocessor(max_tokens=100, deduplicate="yes")


def test_nodes_without_scores_are_ranked_by_retrieval_order() -> None:
    nodes = _scored(None, None, None)
    post = CupelNodePostprocessor(max_tokens=20, tokenizer_fn=str.split)
    assert post.postprocess_nodes(nodes) == [nodes[0], nodes[1]]


def test_target_tokens_caps_the_window_below_max_tokens() -> None:
    nodes = _scored(0.9, 0.8, 0.7)
    post = CupelNodePostprocessor(max_tokens=30, target_tokens=20, tokenizer_fn=str.split)
    assert len(post.postprocess_nodes(nodes)) == 2


def test_empty_input_gives_an_empty_selection_and_a_report() -> None:
    post = CupelNodePostprocessor(max_tokens=10, tokenizer_fn=str.split)
    assert post.postprocess_nodes([]) == []
    assert post.last_report is not None and post.last_report.total_candidates == 0


def test_async_postprocessing_matches_sync() -> None:
    nodes = _scored(0.1, 0.9, 0.5, 0.7)
    post = CupelNodePostprocessor(max_tokens=25, tokenizer_fn=str.split)
    sync = post.postprocess_nodes(nodes)
    result = asyncio.run(post.apostprocess_nodes(nodes, query_str="q"))
    assert result == sync and all(a is b for a, b in zip(result, sync, strict=True))


# -- policy and pipeline ------------------------------------------------------------------
def test_policy_accepts_a_preset_name_or_a_policy_object() -> None:
    nodes = _scored(0.1, 0.9, 0.5, 0.7)
    by_name = CupelNodePostprocessor(max_tokens=25, policy="document_qa", tokenizer_fn=str.split)
    by_object = CupelNodePostprocessor(
        max_tokens=25, policy=preset("document_qa"), tokenizer_fn=str.split
    )
    assert by_name.postprocess_nodes(nodes) == by_object.postprocess_nodes(nodes)


def test_an_explicit_pipeline_overrides_the_policy() -> None:
    pipeline = Pipeline(ReflexiveScorer(), GreedySlice(), UShapedPlacer(), deduplication=False)
    text = _words("same", 5)
    twins = [NodeWithScore(node=TextNode(text=text), score=s) for s in (0.5, 0.6)]
    post = CupelNodePostprocessor(max_tokens=100, pipeline=pipeline, tokenizer_fn=str.split)
    assert len(post.postprocess_nodes(twins)) == 2  # no deduplication in this pipeline


def test_reassigning_the_policy_takes_effect_on_the_next_call() -> None:
    nodes = _scored(0.1, 0.9)
    post = CupelNodePostprocessor(max_tokens=100, tokenizer_fn=str.split)
    assert post.postprocess_nodes(nodes)[0] is nodes[1]  # rag: best first
    post.policy = "chat"  # chronological placement, input order here
    assert post.postprocess_nodes(nodes)[0] is nodes[0]


# -- construction errors -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_tokens": 0}, r"CupelNodePostprocessor.max_tokens: must be an int >= 1, got 0"),
        ({"max_tokens": "9"}, r"max_tokens: must be an int >= 1, got '9'"),
        ({"max_tokens": True}, r"max_tokens: must be an int >= 1, got True"),
        ({"max_tokens": 10, "target_tokens": 11}, r"target_tokens: must be <= max_tokens \(10\)"),
        ({"max_tokens": 10, "target_tokens": -1}, r"target_tokens: must be an int >= 0, got -1"),
        ({"max_tokens": 10, "relevance": "best"}, r"relevance: must be one of 'auto'"),
        (
            {"max_tokens": 10, "tokenizer_fn": 5},
            r"^CupelNodePostprocessor.tokenizer_fn must be 'approximate', a tiktoken Encoding, a "
            r"HuggingFace tokenizer, or a callable .*; got int 5$",
        ),
        (
            {"max_tokens": 10, "headroom": 1.5},
            r"^CupelNodePostprocessor.headroom must be a number with 0 <= headroom < 1 .*got 1.5$",
        ),
        ({"max_tokens": 10, "headroom": True}, r"headroom must be a number .*got True"),
        ({"max_tokens": 10, "metadata_mode": "some"}, r"metadata_mode: Input should be"),
        ({"max_tokens": 10, "pipeline": "rag"}, r"pipeline: .*got 'rag'"),
        ({}, r"^CupelNodePostprocessor.max_tokens: is required$"),
        (
            {"max_tokens": 10, "max_token": 5},
            r"CupelNodePostprocessor: unknown field 'max_token'; allowed: .*max_tokens",
        ),
        (
            {"max_tokens": 10, "policy": ["rag"]},
            r"CupelNodePostprocessor.policy: must be a Policy or a preset name "
            r"\(chat, code_review, rag, .*\), got list \['rag'\]",
        ),
        ({"max_tokens": 10, "token_counter": 3}, r"token_counter: must be callable, got int 3"),
        (
            {"max_tokens": 10, "metadata_mode": "some"},
            r"metadata_mode: Input should be 'all', 'embed', 'llm' or 'none', got 'some'",
        ),
    ],
)
def test_bad_configuration_fails_at_construction_naming_field_and_value(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        CupelNodePostprocessor(**kwargs)


def test_unknown_preset_fails_at_construction_listing_the_presets() -> None:
    with pytest.raises(PolicyError, match=r"CupelNodePostprocessor.policy: unknown preset 'x'"):
        CupelNodePostprocessor(max_tokens=10, policy="x")


def test_a_pipeline_given_with_a_policy_wins_and_survives_from_dict_overrides() -> None:
    pipeline = Pipeline(ReflexiveScorer(), deduplication=False)
    post = CupelNodePostprocessor(max_tokens=10, policy="chat", pipeline=pipeline)
    clone = CupelNodePostprocessor.from_dict(post.to_dict(), pipeline=pipeline)
    twins = [NodeWithScore(node=TextNode(text="same text"), score=s) for s in (0.5, 0.6)]
    for component in (post, clone):
        component.tokenizer_fn = str.split
        assert len(component.postprocess_nodes(twins)) == 2


# -- serialization ----------------------------------------------------------------------
def test_to_dict_from_dict_round_trip_with_a_preset_name() -> None:
    post = CupelNodePostprocessor(
        max_tokens=300,
        target_tokens=200,
        policy="document_qa",
        metadata_mode="embed",
        relevance="rank",
    )
    data = post.to_dict()
    assert data["class_name"] == "CupelNodePostprocessor"
    clone = CupelNodePostprocessor.from_dict(data)
    assert clone.to_dict() == data
    assert (clone.max_tokens, clone.target_tokens, clone.policy) == (300, 200, "document_qa")
    assert clone.metadata_mode == MetadataMode.EMBED and clone.relevance == "rank"


def test_json_round_trip_with_a_policy_object_selects_the_same_nodes() -> None:
    policy = Policy.from_dict(
        {
            "scorer": "reflexive",
            "slicer": {"type": "knapsack", "bucket_size": 1},
            "placer": "u_shaped",
        }
    )
    post = CupelNodePostprocessor(max_tokens=25, policy=policy, tokenizer_fn=str.split)
    clone = CupelNodePostprocessor.from_json(post.to_json(), tokenizer_fn=str.split)
    assert isinstance(clone.policy, Policy) and clone.policy == policy
    nodes = _scored(0.3, 0.9, 0.6, 0.1)
    assert clone.postprocess_nodes(nodes) == post.postprocess_nodes(nodes)


def test_pickle_round_trip_rebuilds_the_pipeline(caplog: pytest.LogCaptureFixture) -> None:
    post = CupelNodePostprocessor(max_tokens=25, policy="document_qa", tokenizer_fn=str.split)
    with caplog.at_level("WARNING"):
        clone = pickle.loads(pickle.dumps(post))
    assert not caplog.records
    nodes = _scored(0.3, 0.9, 0.6, 0.1)
    assert [n.node.node_id for n in clone.postprocess_nodes(nodes)] == [
        n.node.node_id for n in post.postprocess_nodes(nodes)
    ]


def test_class_name_is_the_serialization_id() -> None:
    assert CupelNodePostprocessor.class_name() == "CupelNodePostprocessor"


# -- instrumentation --------------------------------------------------------------------
def test_each_selection_is_dispatched_to_llamaindex_event_handlers(
    recorder: SelectionRecorder,
) -> None:
    post = CupelNodePostprocessor(max_tokens=25, tokenizer_fn=str.split)
    engine = _index().as_query_engine(llm=MockLLM(), similarity_top_k=6, node_postprocessors=[post])

    engine.query("instrumented?")

    (event,) = recorder.events
    assert isinstance(event, CupelSelectionEvent)
    assert event.component == "CupelNodePostprocessor"
    assert event.report is post.last_report
    assert (event.candidates, event.selected, event.selected_tokens) == (6, 2, 20)
    assert (event.max_tokens, event.target_tokens, event.query) == (25, 25, "instrumented?")
    assert event.span_id is not None and "_postprocess_nodes" in event.span_id
    dumped = event.model_dump()
    assert dumped["class_name"] == "CupelSelectionEvent"
    assert len(dumped["report"]["included"]) == 2


def test_report_items_are_cupel_items_mirroring_the_nodes() -> None:
    nodes = _scored(0.9, 0.1)
    post = CupelNodePostprocessor(max_tokens=10, tokenizer_fn=str.split)
    post.postprocess_nodes(nodes)
    report = post.last_report
    assert report is not None
    (included,) = report.included
    assert isinstance(included.item, ContextItem)
    assert included.item.metadata["llamaindex_node_id"] == nodes[0].node.node_id


@pytest.mark.parametrize("score", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_score_is_refused_like_the_langchain_adapter_does(score: float) -> None:
    from langchain_core.documents import Document

    from cupel import ItemError
    from cupel_langchain import CupelDocumentCompressor

    nodes = [NodeWithScore(node=TextNode(text="alpha"), score=0.5)]
    nodes.append(NodeWithScore(node=TextNode(text="beta"), score=score))
    with pytest.raises(ItemError, match=r"nodes\[1\]\.score must be a finite number"):
        CupelNodePostprocessor(max_tokens=100).postprocess_nodes(nodes)
    documents = [Document("alpha"), Document("beta", metadata={"relevance_score": score})]
    with pytest.raises(ItemError, match=r"documents\[1\]\.metadata\['relevance_score'\]"):
        CupelDocumentCompressor(max_tokens=100).compress_documents(documents, "q")
    documents[1] = Document("beta", metadata={"relevance_score": 10**400})  # no float
    with pytest.raises(ItemError, match="must be a finite number"):
        CupelDocumentCompressor(max_tokens=100).compress_documents(documents, "q")
