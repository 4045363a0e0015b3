"""Which files an ingest reads, their ``source`` names, and which stored sources it owns.

``source`` is the path relative to the root, with ``/`` separators. Hidden files and folders,
``__pycache__`` and ``node_modules`` are skipped, as are suffixes no loader reads. The *scope*
of a run is the set of paths it was given: only stored documents under those paths are removed
when their file is gone, so ingesting ``docs/`` never deletes what ``corpus/`` put there.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..exceptions import Advice, Advised, ConfigurationError
from .loaders import LOADERS, loader_for

__all__ = ["Corpus", "SourceFile"]

_SKIP_DIRS = frozenset({"__pycache__", "node_modules"})


@dataclass(frozen=True)
class SourceFile:
    """One file to ingest: its ``source`` name and where it is."""

    source: str
    path: Path


class Corpus:
    """The files under ``paths`` (default: ``root``), named relative to ``root``.

    Parameters
    ----------
    root
        Base of the relative ``source`` names. Default: the single path when it is a folder,
        else its parent folder.
    paths
        Files or folders inside ``root``.
    include, exclude
        Glob patterns matched against ``source`` (``*.md``, ``drafts/*``).
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        paths: Iterable[str | os.PathLike[str]] | None = None,
        *,
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
    ) -> None:
        given = [Path(p).expanduser().resolve() for p in (paths or [])]
        if root is None:
            if len(given) != 1:
                raise ConfigurationError(
                    Advised.of("give {} when ingesting several paths (or none)", Advice("root"))
                )
            root = given[0] if given[0].is_dir() else given[0].parent
        self.root = Path(root).expanduser().resolve()
        if not self.root.is_dir():
            raise ConfigurationError(f"the ingest root {self.root} is not a folder")
        self.paths = given or [self.root]
        self.prefixes: list[str] = []
        for p in self.paths:
            if not p.exists():
                raise ConfigurationError(f"{p} does not exist")
            try:
                rel = p.relative_to(self.root).as_posix()
            except ValueError:
                raise ConfigurationError(f"{p} is not inside the root {self.root}") from None
            self.prefixes.append("" if rel == "." else rel)
        self.include = tuple(include)
        self.exclude = tuple(exclude)

    def in_scope(self, source: str) -> bool:
        """Does this run own ``source`` (may it remove it when the file is gone)?"""
        return any(not p or source == p or source.startswith(p + "/") for p in self.prefixes)

    def _wanted(self, source: str) -> bool:
        if self.include and not any(fnmatch.fnmatch(source, pat) for pat in self.include):
            return False
        return not any(fnmatch.fnmatch(source, pat) for pat in self.exclude)

    def _walk(self, path: Path) -> Iterator[Path]:
        if path.is_file():
            yield path
            return
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS)
            for name in sorted(filenames):
                if not name.startswith("."):
                    yield Path(dirpath) / name

    def files(self) -> list[SourceFile]:
        """Every readable file, sorted by ``source``, each once."""
        found: dict[str, SourceFile] = {}
        for p in self.paths:
            for file in self._walk(p):
                if loader_for(file) is None:
                    continue
                source = file.relative_to(self.root).as_posix()
                if self._wanted(source):
                    found.setdefault(source, SourceFile(source, file))
        return [found[s] for s in sorted(found)]

    def require_files(self) -> None:
        """Refuse a corpus without a file to read (an empty folder, the wrong one, patterns that
        match nothing): ingesting it into a new collection would only make an empty one."""
        if self.files():
            return
        where = ", ".join(str(p) for p in self.paths)
        patterns = " matching the include/exclude patterns" if self.include or self.exclude else ""
        raise ConfigurationError(
            f"nothing to ingest in {where}: no file{patterns} of a type vectorport reads "
            f"({', '.join(sorted(LOADERS))}); point at the folder that holds the documents "
            "(nothing was created)"
        )
