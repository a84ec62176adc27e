"""Test-run settings shared by every test directory.

No test reaches the network: HuggingFace libraries (``tokenizers`` / ``transformers``,
installed for the tokenizer-counter tests) are told they are offline before anything
imports them, so code that would download a tokenizer (LangChain's GPT-2 fallback
counter) fails at once instead of retrying for half a minute.
"""

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
