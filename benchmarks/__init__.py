"""Benchmarks of the workloads in docs/performance.md: ``python -m benchmarks``."""
