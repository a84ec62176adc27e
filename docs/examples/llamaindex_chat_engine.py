"""A chat engine whose history is selected by CupelChatMemory (a ChatMemoryBuffer drop-in).

Runs offline with MockLLM (its replies are "text text ...").

    python docs/examples/llamaindex_chat_engine.py
"""

from __future__ import annotations

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.core.memory import ChatMemoryBuffer

from cupel_llamaindex import CupelChatMemory

HISTORY = [
    ChatMessage(role="system", content="You are a concise travel assistant for Portugal."),
    ChatMessage(role="user", content="I want to visit Lisbon in spring."),
    ChatMessage(role="assistant", content="April and May are mild and sunny in Lisbon."),
    ChatMessage(role="user", content="Which neighbourhoods should I stay in?"),
    ChatMessage(
        role="assistant", content="Alfama for charm, Chiado for shopping, Belem for museums."
    ),
]


def main() -> None:
    memory = CupelChatMemory.from_defaults(chat_history=list(HISTORY), token_limit=45)
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=6), memory=memory)

    engine.chat("And how do I get there from the airport?")
    engine.chat("Is the metro open at night?")

    window = memory.get()
    print("CupelChatMemory sends:")
    for message in window:
        print(f"  {message.role.value:9s} {str(message.content)[:60]}")
    report = memory.last_report
    assert report is not None
    for excluded in report.excluded:
        print(f"  left out: {excluded.item.content[:50]!r} -> {excluded.reason.describe()}")

    buffer = ChatMemoryBuffer.from_defaults(chat_history=memory.get_all(), token_limit=45)
    print("ChatMemoryBuffer sends:")
    for message in buffer.get():
        print(f"  {message.role.value:9s} {str(message.content)[:60]}")
    print("system prompt kept by cupel:", window[0].role.value == "system")


if __name__ == "__main__":
    main()
