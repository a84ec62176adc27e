"""Benchmarks of ../shared/bench/WORKLOADS.md: ``python -m benchmarks`` (see benchmarks/run.py)."""
