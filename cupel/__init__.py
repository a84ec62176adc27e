"""cupel: deterministic, explainable context-window selection (the Cupel specification)."""

from cupel._errors import (
    BudgetError,
    ConfigurationError,
    CountRequirementError,
    CupelError,
    CycleError,
    InvalidOperationError,
    ItemError,
    OverflowBudgetError,
    PinnedBudgetError,
    ScorerConfigError,
    SlicerConfigError,
    TableTooLargeError,
)
from cupel._model import (
    ContextBudget,
    ContextItem,
    ContextKind,
    ContextSource,
    OverflowStrategy,
    ScoredItem,
)

__version__ = "0.1.0"
