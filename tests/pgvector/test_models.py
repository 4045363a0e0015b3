"""``vectorport.connect(Chunk, bind=engine)``: the tables of SQLAlchemy applications, filled from
Chroma by ``migrate`` and read back with SQLAlchemy and psycopg as the application wrote them:

* an async FastAPI service's model: uuid key, ``Text`` content, JSONB metadata, ``Vector(384)``;
* a composite natural key: ``bigserial`` id, ``UNIQUE(file_path, chunk_index)``, keys such as
  ``docs/a.md#chunk3`` (``key_template`` inferred from the model).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import vectorport
from vectorport import Record

pytestmark = [pytest.mark.pgvector, pytest.mark.chroma]
sqlalchemy = pytest.importorskip("sqlalchemy")
pgvector_sqlalchemy = pytest.importorskip("pgvector.sqlalchemy")
psycopg = pytest.importorskip("psycopg")

from sqlalchemy import BigInteger, Identity, Index, Integer, String, Text, UniqueConstraint, select  # noqa: E402
from sqlalchemy.dialects.postgresql import JSONB  # noqa: E402
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column  # noqa: E402

Vector = pgvector_sqlalchemy.Vector
DIM = 384
_names = itertools.count()


class Base(DeclarativeBase):
    pass


class Chunk(Base):
    """As an async FastAPI service declares it."""

    __tablename__ = "app_chunks"
    __table_args__ = (
        Index(
            "app_chunks_embedding_idx",
            "embedding",
            postgresql_using="hnsw",
            postgresql_ops={"embedding": "vector_cosine_ops"},
        ),
    )
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    content: Mapped[str] = mapped_column(Text)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONB, default=dict)
    embedding: Mapped[Any] = mapped_column(Vector(DIM))


class DocChunk(Base):
    """A hand-made table keyed by the file and the chunk's position in it."""

    __tablename__ = "doc_chunks"
    __table_args__ = (
        UniqueConstraint("file_path", "chunk_index"),
        Index(
            "doc_chunks_embedding_idx",
            "embedding",
            postgresql_using="hnsw",
            postgresql_ops={"embedding": "vector_cosine_ops"},
        ),
    )
    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    file_path: Mapped[str] = mapped_column(String(500))
    chunk_index: Mapped[int] = mapped_column(Integer)
    content: Mapped[str] = mapped_column(Text)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONB, default=dict)
    embedding: Mapped[Any] = mapped_column(Vector(DIM))


@pytest.fixture(scope="module")
def engine(pg_uri: str) -> Iterator[Any]:
    from psycopg.conninfo import conninfo_to_dict

    socket_dir = conninfo_to_dict(pg_uri)["host"]
    url = sqlalchemy.engine.URL.create(
        "postgresql+psycopg", username="postgres", database="postgres", query={"host": socket_dir}
    )
    engine = sqlalchemy.create_engine(url)
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    yield engine
    Base.metadata.drop_all(engine)
    engine.dispose()


@pytest.fixture(autouse=True)
def empty_tables(engine: Any) -> None:
    """Each test fills the tables from nothing (verify compares whole collections)."""
    with engine.begin() as conn:
        conn.execute(sqlalchemy.text("TRUNCATE app_chunks, doc_chunks"))


def _vectors(n: int) -> np.ndarray:
    rng = np.random.default_rng(3)
    v = rng.normal(size=(n, DIM)).astype("float32")
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _chroma(chroma_dir: str, records: list[Record]) -> str:
    url = f"chroma://{chroma_dir}?collection=app{next(_names)}"
    with vectorport.connect(url, dimension=DIM, metric="cosine") as store:
        store.upsert(records)
    return url


def test_fastapi_model_filled_from_chroma_reads_back_as_the_app_wrote_it(
    engine: Any, chroma_dir: str
) -> None:
    vectors = _vectors(30)
    records = [
        Record(str(uuid.UUID(int=i + 1)), vectors[i], {"source": f"docs/{i % 4}.md", "page": i}, f"chunk {i}")
        for i in range(30)
    ]
    source = _chroma(chroma_dir, records)
    with vectorport.connect(Chunk, bind=engine) as target:
        info = target.info()
        assert info["layout"]["writable"]
        roles = info["layout"]["roles"]
        assert roles["key"]["kind"] == "uuid" and roles["key"]["column"] == "id"
        assert roles["embedding"]["column"] == "embedding" and roles["text"]["column"] == "content"
        assert roles["metadata"]["column"] == "metadata" and target.spec.dimension == DIM
        assert info["pgvector"]["sqlalchemy_model"] == f"{__name__}.Chunk"
        report = vectorport.migrate.run(source, target)
        assert report.status == "verified", report.to_dict()
        assert vectorport.verify(source, target).ok
        assert vectorport.verify(target, source).ok
    with Session(engine) as session:
        rows = {row.id: row for row in session.scalars(select(Chunk))}
    assert len(rows) == 30
    for i, rec in enumerate(records):
        row = rows[uuid.UUID(rec.key)]
        assert row.content == f"chunk {i}" and row.metadata_ == {"source": f"docs/{i % 4}.md", "page": i}
        assert np.allclose(row.embedding, vectors[i], atol=1e-6)
    with psycopg.connect(engine.url.render_as_string(hide_password=False).replace("+psycopg", "")) as conn:
        got = conn.execute("SELECT id::text, content, metadata FROM app_chunks ORDER BY id").fetchall()
    assert got == sorted((r.key, r.text, r.metadata) for r in records)


def test_composite_key_model_filled_from_chroma_and_verified_both_ways(engine: Any, chroma_dir: str) -> None:
    vectors = _vectors(24)
    records = [
        Record(f"docs/{i % 3}.md#chunk{i // 3}", vectors[i], {"lang": "en" if i % 2 else "fr"}, f"text {i}")
        for i in range(24)
    ]
    source = _chroma(chroma_dir, records)
    with vectorport.connect(DocChunk, bind=engine) as target:
        roles = target.info()["layout"]["roles"]
        assert roles["key"]["template"] == "{file_path}#chunk{chunk_index}"
        assert target.info()["layout"]["writable"]
        report = vectorport.migrate.run(source, target, batch_size=5)
        assert report.status == "verified", report.to_dict()
        # a second run over the same rows replaces them (ON CONFLICT on the natural key)
        again = vectorport.migrate.run(source, target)
        assert again.status == "verified" and target.count() == 24
        assert vectorport.verify(source, target).ok
        assert vectorport.verify(target, source).ok
        with pytest.raises(vectorport.ValidationError, match="does not fit key_template"):
            target.upsert([Record("docs/x.md#chunk9", vectors[0]), Record("no-chunk-here", vectors[1])])
        assert target.get(["docs/x.md#chunk9"]) == []  # nothing of the batch was written
    with Session(engine) as session:
        rows = session.scalars(select(DocChunk).order_by(DocChunk.file_path, DocChunk.chunk_index)).all()
    assert [(r.file_path, r.chunk_index, r.content, r.metadata_) for r in rows] == sorted(
        (f"docs/{i % 3}.md", i // 3, f"text {i}", {"lang": "en" if i % 2 else "fr"}) for i in range(24)
    )


def test_async_engine_and_aconnect_open_the_model(engine: Any) -> None:
    from sqlalchemy.ext.asyncio import create_async_engine

    async def main() -> list[str]:
        aengine = create_async_engine(engine.url)
        try:
            async with await vectorport.aconnect(Chunk, bind=aengine) as store:
                vec = -_vectors(1)[0]  # no row of the other tests is near it
                key = str(uuid.UUID(int=999))
                await store.aupsert([Record(key, vec, {"a": 1}, "async")])
                found = await store.aquery(vec, k=1)
                await store.adelete([key])
                return found.keys
        finally:
            await aengine.dispose()

    assert asyncio.run(main()) == [str(uuid.UUID(int=999))]


def test_a_model_without_bind_or_a_vector_column_is_refused_in_one_line(engine: Any) -> None:
    with pytest.raises(vectorport.ConfigurationError, match="needs bind="):
        vectorport.connect(Chunk)
    with pytest.raises(vectorport.ConfigurationError, match="bind= goes with a SQLAlchemy mapped class"):
        vectorport.connect("memory://x", bind=engine)
    meta = sqlalchemy.MetaData()
    plain = sqlalchemy.Table("no_vectors", meta, sqlalchemy.Column("id", Text, primary_key=True))
    with pytest.raises(vectorport.ConfigurationError, match="0 pgvector Vector/HALFVEC columns"):
        vectorport.connect(plain, bind=engine)


def test_a_key_that_does_not_fit_the_template_refuses_the_migration_before_any_write(
    engine: Any, chroma_dir: str
) -> None:
    from vectorport.migrate import PlanRefusedError

    vectors = _vectors(12)
    records = [Record(f"refused/{i}.md#chunk{i}", vectors[i], {}, "t") for i in range(11)]
    records.append(Record("refused/README", vectors[11], {}, "t"))  # no #chunkN
    source = _chroma(chroma_dir, records)
    with vectorport.connect(DocChunk, bind=engine) as target:
        before = target.count()
        with pytest.raises(PlanRefusedError) as err:
            vectorport.migrate.run(source, target, batch_size=2)
        assert "refused/README" in json.dumps(err.value.plan.to_dict())
        assert target.count() == before


def test_a_killed_migration_into_the_composite_table_resumes_and_verifies(
    engine: Any, chroma_dir: str, tmp_path: Any
) -> None:
    vectors = _vectors(40)
    records = [Record(f"resume/{i % 4}.md#chunk{i}", vectors[i], {"i": i}, f"r{i}") for i in range(40)]
    source = _chroma(chroma_dir, records)
    checkpoint = tmp_path / "ck.json"
    target = vectorport.connect(DocChunk, bind=engine)
    real = type(target)

    class Dying(real):  # type: ignore[misc, valid-type]
        """The real store, whose process dies at its fourth batch."""

        writes = 0

        def _write(self, batch: Any) -> None:
            Dying.writes += 1
            if Dying.writes == 4:
                raise vectorport.BackendError("killed")
            super()._write(batch)

    target.__class__ = Dying
    with pytest.raises(vectorport.BackendError, match="killed"):
        vectorport.migrate.run(
            source, target, batch_size=5, concurrency=1, checkpoint=checkpoint, verify=False
        )
    target.close()
    with vectorport.connect(DocChunk, bind=engine) as fresh:
        report = vectorport.migrate.run(source, fresh, batch_size=5, checkpoint=checkpoint, resume=True)
        assert report.status == "verified", report.to_dict()
        assert report.copy is not None and report.copy.resumed_from and report.copy.resumed_from >= 15
        keys = [r.key for r in records]
        assert [r.key for r in fresh.get(keys, include=[])] == keys


def test_the_cli_migrates_into_the_composite_table_by_its_sqlalchemy_url(
    engine: Any, chroma_dir: str
) -> None:
    import subprocess
    import sys
    from urllib.parse import quote

    vectors = _vectors(9)
    records = [Record(f"cli/{i % 2}.md#chunk{i}", vectors[i], {"i": i}, f"c{i}") for i in range(9)]
    source = _chroma(chroma_dir, records)
    target = (
        engine.url.render_as_string(hide_password=False)
        + "&table=doc_chunks&key_template="
        + quote("{file_path}#chunk{chunk_index}", safe="")
    )
    assert target.startswith("postgresql+psycopg://")
    out = subprocess.run(
        [sys.executable, "-m", "vectorport", "migrate", source, target, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["status"] == "verified"
    with Session(engine) as session:
        rows = session.execute(
            select(DocChunk.file_path, DocChunk.chunk_index).order_by(DocChunk.chunk_index)
        )
        assert [tuple(r) for r in rows] == [(f"cli/{i % 2}.md", i) for i in range(9)]


APP_MODULE = """
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import BigInteger, Identity, Integer, String, Text, UniqueConstraint
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class DocChunk(Base):
    __tablename__ = "doc_chunks"
    __table_args__ = (UniqueConstraint("file_path", "chunk_index"),)
    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    file_path: Mapped[str] = mapped_column(String(500))
    chunk_index: Mapped[int] = mapped_column(Integer)
    content: Mapped[str] = mapped_column(Text)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONB, default=dict)
    embedding: Mapped[Any] = mapped_column(Vector(384))
"""


def test_info_shows_what_it_inferred_from_an_applications_model(engine: Any, tmp_path: Any) -> None:
    import subprocess
    import sys

    (tmp_path / "appmodels.py").write_text(APP_MODULE)
    url = engine.url.render_as_string(hide_password=False)

    def info(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "vectorport", "info", url, *args],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )

    out = info("--model", "appmodels:DocChunk", "--json")
    assert out.returncode == 0, out.stderr
    layout = json.loads(out.stdout)["layout"]
    assert layout["inferred_from"] == "SQLAlchemy model appmodels.DocChunk"
    roles = layout["roles"]
    assert roles["key"]["template"] == "{file_path}#chunk{chunk_index}"
    assert roles["text"]["column"] == "content" and roles["metadata"]["column"] == "metadata"
    assert roles["embedding"]["column"] == "embedding" and layout["writable"]
    # the URL it prints to use opens the same table as printed, without the model (it once
    # lacked table= and failed)
    printed = layout["url"].replace("postgresql://postgres:***@", "postgresql://postgres@")
    assert "table=doc_chunks" in printed
    again = subprocess.run(
        [sys.executable, "-m", "vectorport", "info", printed, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["layout"]["roles"] == roles
    human = info("--model", "appmodels:DocChunk")
    assert human.returncode == 0 and "inferred from" in human.stdout and "appmodels.DocChunk" in human.stdout
    bad = info("--model", "appmodels:Nope")
    assert bad.returncode == 2 and "--model 'appmodels:Nope': cannot import it" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
