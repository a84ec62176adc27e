"""Example data shipped with cupel: ``demo_chat.jsonl``, an OpenAI-style chat transcript
of an agent debugging a failed deployment, used by ``cupel demo``.

Regenerate it with ``python scripts/make_demo_data.py``.
"""
