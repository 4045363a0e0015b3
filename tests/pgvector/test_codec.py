"""vectorport's own psycopg adapters for pgvector's ``vector`` and ``halfvec`` types
(``backends/pgvector/_codec.py``): values load bit for bit as the server holds them, in binary
and in text, the same as pgvector-python loads them (whichever version is installed: 0.3 beside
langchain-postgres and vecs, 0.4+ otherwise), numpy parameters arrive unchanged, a database
without the extension is left alone, and a store works with pgvector-python not importable."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from vectorport.backends.pgvector._codec import register_vector_types

pytestmark = pytest.mark.pgvector

DIM = 9
# bit patterns that a decimal detour or a float64 detour could get wrong
SPECIAL = [0.0, -0.0, 1e-45, -1e-45, 1.17549435e-38, 3.0e18, -2.5e-30, 1.0000001, 0.1, 1 / 3, 65504.0]


def _vectors() -> np.ndarray:
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((40, DIM)).astype(np.float32) * np.float32(1e3)
    for i, v in enumerate(SPECIAL):
        vecs[i, i % DIM] = v
    return vecs


@pytest.fixture
def conn(pg_uri: str, admin: Any) -> Iterator[Any]:
    """A plain autocommit connection with vectorport's adapters, and a table of vectors in
    both types (``h`` holds each vector rounded to halfvec by the server)."""
    import psycopg

    admin.execute("DROP TABLE IF EXISTS codec_t")
    admin.execute(f"CREATE TABLE codec_t (id int PRIMARY KEY, v vector({DIM}), h halfvec({DIM}))")
    with admin.cursor() as cur:
        cur.executemany(
            "INSERT INTO codec_t VALUES (%s, %s::text::vector, %s::text::halfvec)",
            [(i, _text(v), _text(np.clip(v, -6e4, 6e4))) for i, v in enumerate(_vectors())],
        )
    with psycopg.connect(pg_uri, autocommit=True) as c:
        assert register_vector_types(c) == {"vector", "halfvec"}
        yield c
    admin.execute("DROP TABLE codec_t")


def _text(v: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in v) + "]"


def _server_floats(conn: Any, column: str) -> list[np.ndarray]:
    """Each value as the server prints it (shortest decimal that round-trips float32), parsed
    by Python: independent of any loader."""
    rows = conn.execute(f"SELECT {column}::text FROM codec_t ORDER BY id").fetchall()
    return [np.array([np.float32(x) for x in r[0][1:-1].split(",")], dtype=np.float32) for r in rows]


@pytest.mark.parametrize("column", ["v", "h"])
@pytest.mark.parametrize("binary", [True, False], ids=["binary", "text"])
def test_values_load_as_float32_bit_for_bit(conn: Any, column: str, binary: bool) -> None:
    want = _server_floats(conn, column)
    rows = conn.execute(f"SELECT {column} FROM codec_t ORDER BY id", binary=binary).fetchall()
    assert len(rows) == len(want) == 40
    for (got,), exp in zip(rows, want, strict=True):
        assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.flags.writeable
        assert got.tobytes() == exp.tobytes()
    if column == "v":
        assert want[0].tobytes() == _vectors()[0].tobytes()  # what was inserted, signed zero included


def test_arrays_of_vectors_and_nulls_load(conn: Any) -> None:
    for binary in (True, False):
        (arr,) = conn.execute("SELECT array_agg(v ORDER BY id) FROM codec_t", binary=binary).fetchone()
        (null,) = conn.execute("SELECT NULL::vector", binary=binary).fetchone()
        assert len(arr) == 40 and arr[5].tobytes() == _vectors()[5].tobytes()
        assert null is None


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "text"])
def test_same_bits_as_pgvector_python(conn: Any, pg_uri: str, binary: bool) -> None:
    """The loader vectorport used before (pgvector-python's) and its own agree exactly."""
    pgvector_psycopg = pytest.importorskip("pgvector.psycopg")
    import psycopg

    with psycopg.connect(pg_uri, autocommit=True) as theirs:
        pgvector_psycopg.register_vector(theirs)
        for column in ("v", "h"):
            query = f"SELECT {column} FROM codec_t ORDER BY id"
            for (mine,), (other,) in zip(
                conn.execute(query, binary=binary).fetchall(),
                theirs.execute(query, binary=binary).fetchall(),
                strict=True,
            ):
                # 0.3 loads numpy arrays (float16 for halfvec), 0.4+ Vector / HalfVector objects
                as_np = other.to_numpy() if hasattr(other, "to_numpy") else other
                assert mine.tobytes() == np.asarray(as_np).astype(np.float32).tobytes()


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "text"])
def test_numpy_parameters_arrive_unchanged(conn: Any, binary: bool) -> None:
    vecs = _vectors()
    for i, v in enumerate(vecs):
        # typed by the dumper (no cast in the statement): the server compares vector = vector
        row = conn.execute("SELECT id FROM codec_t WHERE v = %s", [v], binary=binary).fetchone()
        assert row == (i,)
    (back,) = conn.execute("SELECT %s", [vecs[3]], binary=binary).fetchone()
    assert back.tobytes() == vecs[3].tobytes()
    # a float64 array is sent as float32, as the column holds it
    wide = vecs[20].astype(np.float64)
    (same,) = conn.execute("SELECT %s = v FROM codec_t WHERE id = 20", [wide]).fetchone()
    assert same is True
    # the parameter is typed vector, so the halfvec search operators take it with a cast
    (hit,) = conn.execute(
        "SELECT id FROM codec_t ORDER BY h <-> %s::halfvec LIMIT 1", [vecs[17]], binary=binary
    ).fetchone()
    assert hit == 17


def test_a_parameter_that_is_not_one_row_of_numbers_is_refused(conn: Any) -> None:
    import psycopg

    for bad in (np.zeros((2, 3), dtype=np.float32), np.zeros(0, dtype=np.float32)):
        shape = re.escape(str(bad.shape))
        with pytest.raises(psycopg.DataError, match=rf"vector parameter .* shape {shape}"):
            conn.execute("SELECT %s", [bad])
    # lists stay PostgreSQL arrays (vectorport's own statements pass keys as lists)
    assert conn.execute("SELECT %s::int[]", [[1, 2]]).fetchone() == ([1, 2],)


@pytest.fixture
def bare_db(admin: Any, pg_uri: str) -> Iterator[str]:
    """A database of the session server without the vector extension."""
    from urllib.parse import urlsplit, urlunsplit

    admin.execute("DROP DATABASE IF EXISTS codec_bare")
    admin.execute("CREATE DATABASE codec_bare")
    parts = urlsplit(pg_uri)
    yield urlunsplit(parts._replace(path="/codec_bare"))
    admin.execute("DROP DATABASE codec_bare WITH (FORCE)")


def test_a_database_without_the_extension_registers_nothing(bare_db: str) -> None:
    import psycopg

    with psycopg.connect(bare_db, autocommit=True) as c:
        assert register_vector_types(c) == frozenset()
        assert c.execute("SELECT 1").fetchone() == (1,)
        c.execute("CREATE EXTENSION vector")
        assert register_vector_types(c) == {"vector", "halfvec"}
        (v,) = c.execute("SELECT '[1,2]'::vector", binary=True).fetchone()
        assert v.tolist() == [1.0, 2.0]


def test_the_extension_in_a_schema_off_the_search_path(bare_db: str) -> None:
    """Found through pg_extension, not by name (Supabase keeps it in ``extensions``)."""
    import psycopg

    with psycopg.connect(bare_db, autocommit=True) as c:
        c.execute("CREATE SCHEMA ext")
        c.execute("CREATE EXTENSION vector SCHEMA ext")
        c.execute("SET search_path = public")
        assert register_vector_types(c) == {"vector", "halfvec"}
        (v,) = c.execute("SELECT '[1,2.5]'::ext.vector", binary=True).fetchone()
        assert v.tolist() == [1.0, 2.5]


def test_a_store_needs_no_pgvector_python(pg_url: Callable[..., str]) -> None:
    """With ``import pgvector`` made to fail, writes, scans, gets and queries all work."""
    url = pg_url()
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["pgvector"] = None  # any import of pgvector-python now raises ImportError
        import numpy as np
        import vectorport
        vecs = np.random.default_rng(1).standard_normal((50, 6)).astype(np.float32)
        store = vectorport.connect({url!r}, dimension=6, metric="cosine")
        store.upsert([vectorport.Record(f"k{{i}}", v, {{"i": i}}, f"t{{i}}") for i, v in enumerate(vecs)])
        got = {{r.key: r.vector for p in store.scan(batch_size=7, include=["vector"]) for r in p.records}}
        assert len(got) == 50 and all(got[f"k{{i}}"].tobytes() == v.tobytes() for i, v in enumerate(vecs))
        assert store.get(["k3"], include=["vector"])[0].vector.tobytes() == vecs[3].tobytes()
        hit = store.query(vecs[7], k=3, include=["vector"]).matches[0]
        assert hit.key == "k7" and hit.vector.tobytes() == vecs[7].tobytes()
        store.drop()
        store.close()
        assert "pgvector" not in {{m.split(".")[0] for m in sys.modules if sys.modules[m] is not None}}
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]
