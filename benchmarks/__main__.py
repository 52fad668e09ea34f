"""``python -m benchmarks``: see `benchmarks.cli`."""

from .cli import main

raise SystemExit(main())
