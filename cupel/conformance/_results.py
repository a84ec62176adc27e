"""What a conformance run reports (private): one result per vector file, and the suite's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ConformanceResult", "VectorResult"]


@dataclass(frozen=True)
class VectorResult:
    """The outcome of one vector file: no ``messages`` means it passed. ``warnings``
    (unknown keys that were ignored) do not fail it."""

    path: str
    name: str | None
    stage: str | None
    messages: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """True when every assertion held."""
        return not self.messages

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "path": self.path,
            "name": self.name,
            "stage": self.stage,
            "status": "passed" if self.passed else "failed",
            "messages": list(self.messages),
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class ConformanceResult:
    """The outcome of a suite run."""

    vectors: tuple[VectorResult, ...] = field(default=())

    @property
    def passed(self) -> int:
        """Number of passing vectors."""
        return sum(1 for v in self.vectors if v.passed)

    @property
    def failed(self) -> int:
        """Number of failing vectors."""
        return len(self.vectors) - self.passed

    @property
    def ok(self) -> bool:
        """True when no vector failed."""
        return self.failed == 0

    def summary(self) -> str:
        """The closing line: ``N passed, N failed``."""
        return f"{self.passed} passed, {self.failed} failed"

    def failure_lines(self) -> list[str]:
        """One ``FAIL <path>: <difference>`` line per failed assertion."""
        return [f"FAIL {v.path}: {m}" for v in self.vectors for m in v.messages]

    def warning_lines(self) -> list[str]:
        """One ``WARN <path>: <what was ignored>`` line per warning."""
        return [f"WARN {v.path}: {w}" for v in self.vectors for w in v.warnings]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: every vector plus the totals."""
        return {
            "vectors": [v.to_dict() for v in self.vectors],
            "passed": self.passed,
            "failed": self.failed,
            "total": len(self.vectors),
        }
