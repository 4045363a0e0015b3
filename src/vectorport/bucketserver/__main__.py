"""``python -m vectorport.bucketserver``: the local server without the CLI."""

from __future__ import annotations

from ._main import main

raise SystemExit(main())
