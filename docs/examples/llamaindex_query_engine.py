"""A query engine whose retrieved nodes are selected by cupel within a token budget.

Runs offline: MockEmbedding for retrieval, MockLLM (which echoes its prompt) for answers.

    python docs/examples/llamaindex_query_engine.py
"""

from __future__ import annotations

from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.postprocessor import LongContextReorder
from llama_index.core.schema import TextNode

from cupel_llamaindex import CupelNodePostprocessor

PASSAGES = [
    "Cupel selects context items within a token budget.",
    "The U-shaped placer puts the best passages at both edges of the window.",
    "Greedy slicing fills the budget by relevance per token.",
    "Every exclusion comes with a reason: budget, deduplication, pinned override.",
    "LongContextReorder puts the best node last when the node count is even.",
    "A SelectionReport lists every included and excluded item with its score.",
]


def build_index() -> VectorStoreIndex:
    # Pre-computed embeddings give each passage a distinct similarity to MockEmbedding's
    # constant query vector, so the retriever ranks them (the last passage best).
    nodes = [
        TextNode(text=text, id_=f"p{i}", embedding=[1.0, 0.2 * i], metadata={"doc": "guide"})
        for i, text in enumerate(PASSAGES)
    ]
    return VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=2))


def main() -> None:
    index = build_index()
    cupel = CupelNodePostprocessor(max_tokens=60)  # LlamaIndex's offline tokenizer
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=6, node_postprocessors=[cupel])

    response = engine.query("How does cupel order passages?")

    print("sent to the LLM, in this order:")
    for node in response.source_nodes:
        print(f"  {node.node.node_id}  score={node.score:.4f}  {node.node.get_content()}")
    report = cupel.last_report
    assert report is not None
    print(f"window: {report.included_tokens} tokens of a 60-token budget")
    for excluded in report.excluded:
        print(
            f"  left out {excluded.item.metadata['llamaindex_node_id']}: "
            f"{excluded.reason.describe()}"
        )

    # The incumbent, on the same retrieval: even count -> the best node goes last.
    retrieved = index.as_retriever(similarity_top_k=6).retrieve("How does cupel order passages?")
    reordered = LongContextReorder().postprocess_nodes(retrieved)
    print("LongContextReorder order:", " ".join(n.node.node_id for n in reordered))
    print("CupelNodePostprocessor order:", " ".join(n.node.node_id for n in response.source_nodes))


if __name__ == "__main__":
    main()
