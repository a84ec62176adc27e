"""``python -m benchmarks``: run the benchmark harness (benchmarks/run.py)."""

from benchmarks.run import main

raise SystemExit(main())
