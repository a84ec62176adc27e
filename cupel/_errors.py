"""The cupel exception hierarchy: every error cupel raises, in one tree.

Every error derives from :class:`CupelError`, and each subclass also derives from the
builtin a caller would naturally catch::

    CupelError
    ├── ConfigurationError (ValueError)      bad scorer / slicer / placer / policy parameters
    │   ├── BudgetError                      ContextBudget validation
    │   ├── ItemError                        ContextItem validation
    │   ├── ScorerConfigError                scorer construction
    │   │   └── CycleError                   CompositeScorer cycle
    │   ├── SlicerConfigError                slicer construction
    │   └── PolicyError                      a policy (cupel.policy), with the path of the value
    ├── ScoreError (ValueError)              a scorer returned something that is not a score
    ├── EmbeddingError (ValueError)          an embedding model gave no usable vector
    ├── TableTooLargeError (ValueError)      KnapsackSlice DP table over the cell limit
    ├── PinnedBudgetError (ValueError)       pinned items exceed max_tokens - output_reserve
    ├── OverflowBudgetError (RuntimeError)   window over target under OverflowStrategy.THROW
    ├── CountRequirementError (RuntimeError) count quota unmet under ScarcityBehavior.THROW
    ├── InvalidOperationError (RuntimeError) an operation refused for this configuration
    ├── SelectionReportAssertionError        a report assertion of cupel.testing failed
    │   (AssertionError)
    ├── CliError                             the ``cupel`` command line: bad input or usage
    └── VectorError                          a conformance vector is malformed or unknown

Errors carry structured fields (``field``, ``value`` and friends) besides their message,
so callers can react programmatically. They are all importable from ``cupel`` (and show
as ``cupel.<Name>`` in tracebacks).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "BudgetError",
    "CliError",
    "ConfigurationError",
    "CountRequirementError",
    "CupelError",
    "CycleError",
    "EmbeddingError",
    "InvalidOperationError",
    "ItemError",
    "OverflowBudgetError",
    "PinnedBudgetError",
    "PolicyError",
    "ScoreError",
    "ScorerConfigError",
    "SelectionReportAssertionError",
    "SlicerConfigError",
    "TableTooLargeError",
    "VectorError",
]


class CupelError(Exception):
    """Base class of every error raised by cupel."""


class ConfigurationError(CupelError, ValueError):
    """A parameter is invalid. ``field`` names it and ``value`` holds what was given."""

    def __init__(self, message: str, *, field: str | None = None, value: Any = None) -> None:
        super().__init__(message)
        self.field = field
        self.value = value

    @classmethod
    def from_validation(
        cls,
        error: ValidationError,
        owner: str,
        fields: Iterable[str] = (),
        *,
        noun: str = "field",
        hints: Mapping[str, str] | None = None,
    ) -> ConfigurationError:
        """The :class:`ConfigurationError` for a pydantic validation failure of ``owner``'s
        fields (the adapters' components are pydantic models): the one a validator raised,
        else one naming the first bad field, its value and what was expected — an unknown
        name (a misspelt ``noun``) first, with its ``hints`` entry and the allowed
        ``fields``; for a union field, every alternative.

        >>> from pydantic import BaseModel, ConfigDict, ValidationError
        >>> class Options(BaseModel):
        ...     model_config = ConfigDict(extra="forbid")
        ...     max_tokens: int
        >>> try:
        ...     Options(max_tokens=1, max_token=2)
        ... except ValidationError as exc:
        ...     raise ConfigurationError.from_validation(exc, "Options", ["max_tokens"]) from None
        Traceback (most recent call last):
        ...
        cupel.ConfigurationError: Options: unknown field 'max_token'; allowed: max_tokens
        """
        errors = error.errors(include_url=False)
        for entry in errors:  # a validator's own ConfigurationError says it best
            original = (entry.get("ctx") or {}).get("error")
            if isinstance(original, ConfigurationError):
                return original
        unknown = [e for e in errors if e.get("type") == "extra_forbidden"]
        first = unknown[0] if unknown else errors[0]  # a misspelt name, before "missing"
        location = tuple(first.get("loc", ())) or ("<input>",)
        value: object = first.get("input")
        if unknown:
            name = str(location[0])
            allowed = ", ".join(f for f in fields if not f.startswith("_"))
            hint = (hints or {}).get(name, "")
            return cls(
                f"{owner}: unknown {noun} {name!r}{hint}; allowed: {allowed}",
                field=name,
                value=value,
            )
        field = ".".join(str(part) for part in location)
        if first.get("type") == "missing":
            return cls(f"{owner}.{field}: is required", field=field, value=None)
        alternatives = [e for e in errors if tuple(e.get("loc", ()))[:1] == location[:1]]
        if len(alternatives) > 1:  # a union field: every alternative failed
            field = str(location[0])
            expected = dict.fromkeys(
                str(e.get("msg", "invalid")).removeprefix("Input should be ") for e in alternatives
            )
            message = f"Input should be {' or '.join(expected)}"
        else:
            message = str(first.get("msg", "invalid value"))
        return cls(f"{owner}.{field}: {message}, got {value!r}", field=field, value=value)


class BudgetError(ConfigurationError):
    """A :class:`~cupel.ContextBudget` field breaks one of the spec's validation rules."""


class ItemError(ConfigurationError):
    """A :class:`~cupel.ContextItem` field is invalid (for example empty content)."""


class ScorerConfigError(ConfigurationError):
    """A scorer was constructed with invalid parameters."""


class SlicerConfigError(ConfigurationError):
    """A slicer was constructed with invalid parameters."""


class CycleError(ScorerConfigError):
    """A :class:`~cupel.CompositeScorer` appears in its own dependency graph."""


class ScoreError(CupelError, ValueError):
    """A scorer returned a value that is not a score: scores are real numbers (``float``,
    ``int`` or another real type) that fit an IEEE 754 double (NaN and infinities are
    scores; ``None``, text, complex numbers and ``10**400`` are not). ``scorer`` is the
    offending scorer, ``item`` the item it was scoring (``None`` when unknown) and
    ``value`` what it returned."""

    def __init__(
        self, message: str, *, scorer: Any = None, item: Any = None, value: Any = None
    ) -> None:
        super().__init__(message)
        self.scorer = scorer
        self.item = item
        self.value = value


class EmbeddingError(CupelError, ValueError):
    """An embedding model gave something that is not a usable vector (not a sequence of
    finite numbers, a dimension unlike the others, a wrong count of vectors), or raised.
    ``model`` names the model and ``index`` is the position of the text in the pass
    (``None`` for the query)."""

    def __init__(self, message: str, *, model: str = "", index: int | None = None) -> None:
        super().__init__(message)
        self.model = model
        self.index = index


class TableTooLargeError(CupelError, ValueError):
    """KnapsackSlice refused a DP table with more cells than its limit."""

    def __init__(self, candidates: int, capacity: int, cells: int, limit: int) -> None:
        super().__init__(
            f"KnapsackSlice DP table too large: {candidates} candidates x "
            f"({capacity} + 1) capacity = {cells} cells exceeds the limit of {limit} cells; "
            f"increase bucket_size or reduce the budget"
        )
        self.candidates = candidates
        self.capacity = capacity
        self.cells = cells
        self.limit = limit


class PinnedBudgetError(CupelError, ValueError):
    """Pinned items alone need more tokens than ``max_tokens - output_reserve``."""

    def __init__(self, pinned_tokens: int, available_tokens: int) -> None:
        super().__init__(
            f"Pinned items require {pinned_tokens} tokens, "
            f"but only {available_tokens} are available"
        )
        self.pinned_tokens = pinned_tokens
        self.available_tokens = available_tokens


class OverflowBudgetError(CupelError, RuntimeError):
    """The merged selection exceeds ``target_tokens`` under ``OverflowStrategy.THROW``."""

    def __init__(self, merged_tokens: int, target_tokens: int) -> None:
        super().__init__(
            f"Selected items require {merged_tokens} tokens, "
            f"exceeding target budget of {target_tokens}"
        )
        self.merged_tokens = merged_tokens
        self.target_tokens = target_tokens


class CountRequirementError(CupelError, RuntimeError):
    """A count quota's ``require_count`` cannot be met under ``ScarcityBehavior.THROW``."""

    def __init__(self, slicer: str, kind: str, satisfied: int, required: int) -> None:
        super().__init__(
            f"{slicer}: candidate pool for kind '{kind}' has {satisfied} items "
            f"but RequireCount is {required}."
        )
        self.kind = kind
        self.satisfied = satisfied
        self.required = required


class InvalidOperationError(CupelError, RuntimeError):
    """An operation is not valid for the given configuration (e.g. budget simulation
    over a non-monotonic slicer)."""


class PolicyError(ConfigurationError):
    """A policy is invalid. ``field`` holds the path of the (first) offending value
    (``"scorer.scorers[2].weight"``), ``value`` the value found there and ``problems``
    every ``(path, message, value)`` found."""

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        value: Any = None,
        problems: Sequence[tuple[str, str, Any]] = (),
    ) -> None:
        super().__init__(message, field=field, value=value)
        self.problems: tuple[tuple[str, str, Any], ...] = tuple(problems) or (
            (field or "", message, value),
        )

    @classmethod
    def of(cls, problems: Sequence[tuple[str, str, Any]]) -> PolicyError:
        """One error for ``problems``: ``"<path>: <rule>; <path>: <rule>"``."""
        message = "; ".join(f"{path or 'policy'}: {rule}" for path, rule, _ in problems)
        path, _, value = problems[0]
        return cls(message, field=path or None, value=value, problems=problems)


class SelectionReportAssertionError(CupelError, AssertionError):
    """A report assertion of :mod:`cupel.testing` failed; ``assertion`` is the vocabulary
    name (e.g. ``"IncludeItemWithKind"``) and the message says what was expected and
    found."""

    def __init__(self, assertion: str, message: str) -> None:
        super().__init__(message)
        self.assertion = assertion


class CliError(CupelError):
    """An input or usage problem of the ``cupel`` command line, reported as one
    ``cupel: error: ...`` line (exit status 2)."""


class VectorError(CupelError):
    """A conformance vector is malformed or names something the runner does not know
    (the runner reports it as a failure, never a skip)."""


for _name in __all__:  # the public path (every error is importable from cupel)
    globals()[_name].__module__ = "cupel"
del _name


def refusal(
    owner: str,
    field: str,
    rule: str,
    value: Any,
    error: type[ConfigurationError] = ConfigurationError,
    *,
    typed: bool = False,
) -> ConfigurationError:
    """The usual construction-time error, naming the field and the value:
    ``error("<owner>: <field> <rule>, got <value!r>")`` (``typed``: ``got <type> <value!r>``).

    >>> refusal("Pipeline", "deduplication", "must be a bool", 1)
    ConfigurationError('Pipeline: deduplication must be a bool, got 1')
    """
    shown = f"{type(value).__name__} {value!r}" if typed else repr(value)
    return error(f"{owner}: {field} {rule}, got {shown}", field=field, value=value)
