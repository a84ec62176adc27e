"""The agent-budget benchmark runs offline and keeps its bound on every request."""

from __future__ import annotations

import pytest

from benchmarks import agent_budget

pytestmark = pytest.mark.filterwarnings(
    "ignore::pydantic.warnings.PydanticDeprecatedSince20",
    "ignore::pydantic.warnings.PydanticDeprecatedSince211",
)


@pytest.mark.slow
def test_every_request_keeps_the_bound(capsys: pytest.CaptureFixture[str]) -> None:
    assert agent_budget.main(["--quick"]) == 0  # 1 would mean a request broke the bound
    printed = capsys.readouterr().out
    assert printed.count("| True |") == 2 * len(agent_budget.LIMITS) * len(agent_budget.RESERVES)
    assert "| False |" not in printed
