"""Example data shipped with cupel (``demo_conversation.jsonl``, used by ``cupel demo``).

Regenerate it with ``python scripts/make_demo_data.py``.
"""
