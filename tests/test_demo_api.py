"""The demo uses the API it teaches, not a deprecated spelling: it called the
``vectorport.migrate`` module itself, and ``make demo`` printed its own DeprecationWarning."""

from __future__ import annotations

import warnings

import pytest

import vectorport
from vectorport.examples.demo import Demo

pytestmark = pytest.mark.memory


def test_the_demo_migrates_with_migrate_run() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        migrate = Demo._need_migrate(None)  # type: ignore[arg-type]
    assert migrate is vectorport.migrate.run
