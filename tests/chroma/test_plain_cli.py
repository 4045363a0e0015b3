"""The command line on a collection made by plain ``chromadb`` with every default: Chroma's
own embedding function made the vectors, no vectorport metadata anywhere. ``search``,
``doctor`` and ``compare`` with text queries work with no flags."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app

from ._plain import collection_name, plain_client

pytestmark = pytest.mark.chroma

TICKETS = {
    "t1": "I cannot log in after resetting my password; the login page says my account is locked.",
    "t2": "The invoice for March was charged twice to my credit card.",
    "t3": "How do I export my data as CSV from the dashboard?",
    "t4": "Two-factor authentication codes never arrive by SMS, so sign-in fails.",
    "t5": "Please cancel my subscription at the end of the billing period.",
    "t6": "The mobile app crashes when I open the settings screen.",
    "t7": "Refund request: I was billed after cancelling.",
    "t8": "Password reset e-mails land in spam and the link has expired.",
}


@pytest.fixture
def tickets(embedded_url: Callable[[], str], chroma_default_ef: Path) -> str:
    """A collection exactly as a Chroma user makes one: ``create_collection(name)`` and ``add``
    with documents only (chromadb embeds them with its default function)."""
    url = embedded_url()
    with plain_client(url) as client:
        coll = client.create_collection(collection_name(url))
        coll.add(
            ids=list(TICKETS),
            documents=list(TICKETS.values()),
            metadatas=[{"queue": "billing" if i in ("t2", "t5", "t7") else "support"} for i in TICKETS],
        )
    return url


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_search_doctor_compare_need_no_flags(tickets: str, tmp_path: Path) -> None:
    with vectorport.connect(tickets) as store:
        assert store.spec.embedding_model == "chroma:default" and store.spec.metric.value == "euclidean"

    code, out, err = run("search", tickets, "login problems", "--json")
    assert code == 0, out + err
    found = json.loads(out)
    assert found["embedding_model"] == "chroma:default"
    assert {m["key"] for m in found["matches"][:3]} <= {"t1", "t4", "t8"}

    code, out, err = run("search", tickets, "login problems")
    assert code == 0 and "t1" in out, out + err

    code, out, err = run("doctor", tickets, "--json")
    assert code == 0, out + err
    report = json.loads(out)
    assert report["ok"] and "embedding-drift" in report["checks_run"]
    assert report["stats"]["embedding_drift"]["min_similarity"] >= 0.999

    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        "\n".join(
            json.dumps(q)
            for q in (
                {"text": "login problems"},
                {"text": "charged twice"},
                {"text": "refund", "filter": {"queue": "billing"}},
            )
        )
        + "\n"
    )
    code, out, err = run("compare", tickets, "--queries", str(queries), "-k", "3", "--json")
    assert code == 0, out + err
    compared = json.loads(out)
    assert compared["stores"][0]["overall"]["recall"] == pytest.approx(1.0)


def test_the_suggested_embedder_works_when_typed(tickets: str) -> None:
    code, out, err = run("search", tickets, "login problems", "--embedder", "hash:384")
    assert code == 2
    message = " ".join((out + err).split())
    assert "--embedder chroma:default" in message
    code, out, err = run("search", tickets, "login problems", "--embedder", "chroma:default")
    assert code == 0 and "t1" in out, out + err
    # the model by its sentence-transformers name is the same model
    code, out, err = run("search", tickets, "login", "-e", "sentence-transformers:all-MiniLM-L6-v2")
    assert code == 0, out + err


def test_ingest_into_a_plain_collection_keeps_its_metric_and_model(tickets: str, tmp_path: Path) -> None:
    (tmp_path / "faq.md").write_text("# Login\n\nIf you cannot log in, reset your password first.\n")
    code, out, err = run("ingest", str(tmp_path / "faq.md"), tickets, "--json")
    assert code == 0, out + err
    with vectorport.connect(tickets) as store:
        assert store.spec.metric.value == "euclidean" and store.count() == len(TICKETS) + 1
    code, out, err = run("doctor", tickets, "--json")
    assert code == 0, out + err


def test_mistyped_collection_or_path_names_the_nearest(embedded_url: Callable[[], str]) -> None:
    url = embedded_url()
    with plain_client(url) as client:
        client.create_collection(collection_name(url)).add(ids=["a"], embeddings=[[1.0, 0.0]])
    name = collection_name(url)
    code, _, err = run("info", url.replace(f"collection={name}", f"collection={name}x"))
    assert code == 2 and f"did you mean {name!r}?" in err, err
    path = url.split("://", 1)[1].split("?")[0]
    code, _, err = run("info", url.replace(path, path + "x"))
    assert code == 2 and "no Chroma database" in err and "did you mean" in err, err
    assert "dimension=" not in err
