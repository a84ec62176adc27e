"""``python -m cupel.conformance``."""

from cupel.conformance import main

raise SystemExit(main())
