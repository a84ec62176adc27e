"""Example counts that follow the hypothesis profile (registered in ``conftest.py``).

``ci`` is hypothesis' own default, 100 examples a test; ``dev`` runs a tenth.
``examples(n)`` is ``n`` under ``ci`` and scales with the loaded profile otherwise, so a
test that CI runs 400 times keeps four times the default under every profile:
``@settings(max_examples=examples(400))``.
"""

from __future__ import annotations

from hypothesis import settings

CI_EXAMPLES = 100
DEV_EXAMPLES = 10


def examples(ci_count: int) -> int:
    """``ci_count`` examples under the ``ci`` profile, scaled by the loaded profile's
    ``max_examples`` otherwise (at least one)."""
    return max(1, round(ci_count * settings.default.max_examples / CI_EXAMPLES))
