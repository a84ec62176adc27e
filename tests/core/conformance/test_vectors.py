"""Every conformance vector of the repository passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from cupel.conformance import run_vector

ROOT = Path(__file__).resolve().parents[3] / "conformance"
VECTORS = sorted(ROOT.rglob("*.toml"))


def test_the_suite_is_found() -> None:
    assert VECTORS, f"no vectors under {ROOT}"


@pytest.mark.parametrize("path", VECTORS, ids=[p.relative_to(ROOT).as_posix() for p in VECTORS])
def test_vector_passes(path: Path) -> None:
    result = run_vector(path)
    assert result.passed, "\n".join(result.messages)
