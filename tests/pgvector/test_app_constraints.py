"""An application's table with defaults and constraints, as a SQLAlchemy model declares it:
a ``created_at`` the table fills (``server_default=func.now()``, ``NOT NULL DEFAULT now()``)
keeps its default when the records carry none (an explicit NULL once failed the copy after a
silent plan), a constant default (``server_default="import"``) fills a record without the field
and the plan and the verification expect it (the copy once ended "differences (exit 1)"), and
``migrate --plan`` names, before any write, every constraint the copy would
hit: a ``NOT NULL`` column without a default, a ``CHECK``, a unique key."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport import Record
from vectorport.cli import app

pytestmark = pytest.mark.pgvector
sqlalchemy = pytest.importorskip("sqlalchemy")
pgvector_sqlalchemy = pytest.importorskip("pgvector.sqlalchemy")

from sqlalchemy import CheckConstraint, DateTime, String, Text, func, select  # noqa: E402
from sqlalchemy.dialects.postgresql import JSONB  # noqa: E402
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column  # noqa: E402

DIM = 3
_names = itertools.count()


class Base(DeclarativeBase):
    pass


class Note(Base):
    __tablename__ = "app_notes"
    __table_args__ = (CheckConstraint("score >= 0", name="score_not_negative"),)
    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)
    content: Mapped[str] = mapped_column(Text)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONB, default=dict)
    embedding: Mapped[Any] = mapped_column(pgvector_sqlalchemy.Vector(DIM))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    origin: Mapped[str] = mapped_column(String(20), server_default="import")
    kind: Mapped[str] = mapped_column(String(20))
    score: Mapped[int | None]
    slug: Mapped[str | None] = mapped_column(unique=True)


@pytest.fixture
def engine(pg_uri: str) -> Iterator[Any]:
    from psycopg.conninfo import conninfo_to_dict

    url = sqlalchemy.engine.URL.create(
        "postgresql+psycopg",
        username="postgres",
        database="postgres",
        query={"host": conninfo_to_dict(pg_uri)["host"]},
    )
    engine = sqlalchemy.create_engine(url)
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    yield engine
    Base.metadata.drop_all(engine)
    engine.dispose()


def _source(records: list[Record]) -> str:
    url = f"memory://app-constraints-{next(_names)}"
    vectorport.connect(url, dimension=DIM, metric="cosine").upsert(records)
    return url


def _key(i: int) -> str:
    return str(uuid.UUID(int=i + 1))


def test_a_column_the_table_fills_keeps_its_default(engine: Any) -> None:
    records = [
        Record(_key(i), [1.0, float(i), 0.0], {"kind": "note", "score": i}, f"note {i}") for i in range(5)
    ]
    records[4].metadata["origin"] = "web"
    source = _source(records)
    with vectorport.connect(Note, bind=engine) as target:
        assert target.info()["layout"]["roles"]["metadata"]["filled_by_table"] == [
            "created_at (DEFAULT now())"
        ]
        plan = vectorport.migrate.run(source, target, plan_only=True).to_dict()["plan"]
        (change,) = plan["transforms"]
        assert change["kind"].startswith("defaulted") and change["records"] == 4, change
        report = vectorport.migrate.run(source, target)
        assert report.status == "verified", report.to_dict()
    with Session(engine) as session:
        rows = session.scalars(select(Note).order_by(Note.id)).all()
        now = session.scalar(select(func.now()))
    assert [(str(r.id), r.kind, r.score, r.content, r.origin) for r in rows] == [
        (r.key, "note", i, f"note {i}", "web" if i == 4 else "import") for i, r in enumerate(records)
    ]
    assert all(r.created_at is not None and abs((now - r.created_at).total_seconds()) < 60 for r in rows)


def test_the_plan_names_every_constraint_the_copy_would_hit_before_any_write(engine: Any) -> None:
    with Session(engine) as session:
        session.add(Note(content="theirs", embedding=[0.0, 0.0, 1.0], kind="app", slug="taken"))
        session.commit()
    records = [
        Record(_key(0), [1.0, 0.0, 0.0], {"kind": "a", "score": -1}, "negative score"),
        Record(_key(1), [1.0, 1.0, 0.0], {"kind": "a", "slug": "taken"}, "slug of another row"),
        Record(_key(2), [1.0, 2.0, 0.0], {"score": 1}, "no kind"),
        Record(_key(3), [1.0, 3.0, 0.0], {"kind": "a", "slug": "twice"}, "first"),
        Record(_key(4), [1.0, 4.0, 0.0], {"kind": "a", "slug": "twice"}, "second"),
        Record(_key(5), [1.0, 5.0, 0.0], {"kind": "a", "score": 3}, "fine"),
    ]
    source = _source(records)
    target = engine.url.render_as_string(hide_password=False).replace("+psycopg", "") + "&table=app_notes"
    out = CliRunner().invoke(app, ["migrate", source, target, "--plan", "--json"])
    assert out.exit_code == 4, out.output
    plan = vectorport.migrate.run(source, target, plan_only=True).to_dict()["plan"]
    found = {
        (item["key"], item["message"])
        for group in plan["unresolved"]
        for item in group["occurrences"]["items"]
    }
    assert found == {
        (_key(0), "the CHECK constraint 'score_not_negative' ((score >= 0)) refuses it"),
        (_key(1), "the unique key 'app_notes_slug_key' (slug) holds its values in another row of the table"),
        (_key(2), "the column 'kind' is NOT NULL without a default and the record has no 'kind'"),
        (
            _key(4),
            "the unique key 'app_notes_slug_key' (slug) gives it the values of another record of the copy",
        ),
    }
    for name in ("score_not_negative", "app_notes_slug_key", "'kind' is NOT NULL"):
        assert name in out.stdout
    with Session(engine) as session:
        assert session.scalars(select(Note.content)).all() == ["theirs"]  # nothing written
