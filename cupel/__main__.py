"""``python -m cupel``: the ``cupel`` command line (see :mod:`cupel.cli`)."""

from cupel.cli import main

raise SystemExit(main())
