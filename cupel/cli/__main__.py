"""``python -m cupel.cli``: the ``cupel`` command line (the same as ``python -m cupel``)."""

from cupel.cli import main

raise SystemExit(main())
