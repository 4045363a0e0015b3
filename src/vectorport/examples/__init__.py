"""Runnable examples built on the public API, outside the library's core: ``python -m
vectorport.examples.demo`` (``make demo``) walks a corpus through ingest, search, migration and
comparison on every installed backend (``docs/demo.md``)."""
