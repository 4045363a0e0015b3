"""``python -m vectorport.backends.s3vectors.server``: the local server without the CLI."""

from __future__ import annotations

from ._main import main

raise SystemExit(main())
