"""Timing helpers shared by the benchmark modules."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def per_call_us(fn: Callable[[], object], runs: int) -> float:
    """Median µs per call over ``runs`` samples, each a batch of calls lasting ~2 ms (a
    single call of tens of µs is below the timer's resolution and the machine's noise)."""
    for _ in range(5):
        fn()
    start = time.perf_counter()
    fn()
    batch = max(1, int(0.002 / max(time.perf_counter() - start, 1e-7)))
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        samples.append((time.perf_counter() - start) / batch)
    return statistics.median(samples) * 1e6
