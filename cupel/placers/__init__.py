"""Placers decide the presentation order of the selected items.

=====================  =========================================  ==========================
placer                 order                                      use it for
=====================  =========================================  ==========================
ChronologicalPlacer    timestamp ascending, untimestamped last     conversations, logs
UShapedPlacer          best at both edges, weakest in the middle   RAG / long contexts
=====================  =========================================  ==========================
"""

from cupel._public import publish
from cupel.placers._base import BasePlacer, Placer
from cupel.placers.chronological import ChronologicalPlacer
from cupel.placers.u_shaped import UShapedPlacer

__all__ = ["BasePlacer", "ChronologicalPlacer", "Placer", "UShapedPlacer"]

publish(__name__, globals(), __all__)
