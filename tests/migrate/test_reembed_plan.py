"""``migrate --reembed MODEL --plan``: what the model will be sent (texts, tokens) and, for a paid
provider, the estimated cost, before anything starts; a record without text refused by name."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport import Record
from vectorport._exit import ExitCode
from vectorport.cli import app
from vectorport.ingest.embedders import approx_token_counts
from vectorport.ingest.embedders.voyage import PRICES_PER_MILLION_TOKENS
from vectorport.migrate import Checkpoint

from ..ingest.voyage_server import VoyageServer

pytestmark = pytest.mark.memory
runner = CliRunner()


def _source(texts: list[str | None]) -> str:
    url = f"memory://reembed-plan-{uuid.uuid4().hex[:8]}"
    with vectorport.connect(url, dimension=2) as src:
        src.upsert([Record(f"k{i}", [1.0, i], {"i": i}, t) for i, t in enumerate(texts)])
    return url


def test_plan_counts_tokens_and_estimates_a_paid_providers_cost() -> None:
    texts = [f"chunk {i}: " + "lorem ipsum dolor " * (i % 7) for i in range(300)]
    source = _source(list(texts))
    target = f"memory://reembed-plan-dst-{uuid.uuid4().hex[:8]}"
    args = ["migrate", source, target, "--reembed", "voyage:voyage-3.5", "--plan"]
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == ExitCode.OK, res.output
    estimate = json.loads(res.stdout)["plan"]["reembed_estimate"]
    tokens = sum(approx_token_counts(texts))
    assert estimate["texts"] == 300 and estimate["tokens"] == tokens
    price = PRICES_PER_MILLION_TOKENS["voyage-3.5"]
    assert estimate["usd_per_million_tokens"] == price
    assert estimate["estimated_cost_usd"] == round(tokens * price / 1e6, 4)
    assert "docs.voyageai.com" in estimate["price_source"]
    shown = runner.invoke(app, args, terminal_width=400)
    assert shown.exit_code == ExitCode.OK, shown.output
    assert f"300 texts, {tokens} tokens, estimated $" in shown.stdout
    with pytest.raises(vectorport.NotFoundError):  # a plan writes nothing
        vectorport.connect(target)


def test_a_local_model_is_counted_without_a_price() -> None:
    source = _source(["one two", "three"])
    target = f"memory://reembed-plan-dst-{uuid.uuid4().hex[:8]}"
    report = vectorport.migrate.run(source, target, reembed="hash:8", plan_only=True)
    assert report.plan is not None and report.plan.reembed_estimate is not None
    assert report.plan.reembed_estimate.to_dict() | {"tokens": 0} == {
        "model": "hash:8",
        "texts": 2,
        "tokens": 0,
        "already_done": 0,
        "usd_per_million_tokens": None,
        "estimated_cost_usd": None,
        "price_source": None,
    }


def test_a_record_without_text_is_refused_by_name_before_any_write() -> None:
    source = _source(["has text", None, "more text"])
    target = f"memory://reembed-plan-dst-{uuid.uuid4().hex[:8]}"
    res = runner.invoke(app, ["migrate", source, target, "--reembed", "hash:8", "--json"])
    assert res.exit_code == ExitCode.REFUSED, res.output
    plan = json.loads(res.stdout)["plan"]
    assert plan["refused"] and plan["no_text"]["records"] == 1
    assert [o["key"] for o in plan["no_text"]["occurrences"]["items"]] == ["k1"]
    assert plan["reasons"] == ["1 records have no text to re-embed with hash:8: 'k1'"]
    assert "metadata_policy" not in plan["suggestion"]
    shown = runner.invoke(app, ["migrate", source, target, "--reembed", "hash:8"], terminal_width=400)
    assert shown.exit_code == ExitCode.REFUSED
    assert "records with no text to re-embed: 1\n    'k1'" in shown.stdout
    with pytest.raises(vectorport.NotFoundError):
        vectorport.connect(target)


def test_a_resumed_runs_plan_counts_only_what_is_left(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The checkpoint of a run interrupted after its first page: the plan counts the texts past
    its cursor and says how many are done; the resumed run sends the model just those (counted
    by the local server speaking Voyage's protocol)."""
    texts = [f"chunk {i}: " + "lorem ipsum " * (i % 5) for i in range(300)]
    source = _source(list(texts))
    target = f"memory://reembed-plan-dst-{uuid.uuid4().hex[:8]}"
    ck = tmp_path / "ck.json"
    with VoyageServer("vk-plan") as srv:
        monkeypatch.setenv("VOYAGE_API_KEY", srv.api_key)
        monkeypatch.setenv("VOYAGE_BASE_URL", srv.base_url)
        opts = {"reembed": "voyage:voyage-test", "checkpoint": ck, "batch_size": 100}
        assert vectorport.migrate.run(source, target, **opts).exit_code == ExitCode.OK
        done = _interrupt_after_first_page(source, target, ck)
        sent = _sent(srv)
        args = ["migrate", source, target, "--reembed", "voyage:voyage-test", "--checkpoint", str(ck)]
        res = runner.invoke(app, [*args, "--resume", "--plan", "--json"])
        assert res.exit_code == ExitCode.OK, res.output
        estimate = json.loads(res.stdout)["plan"]["reembed_estimate"]
        left = sum(approx_token_counts([t for i, t in enumerate(texts) if f"k{i}" not in done]))
        assert (estimate["texts"], estimate["tokens"], estimate["already_done"]) == (200, left, 100)
        shown = runner.invoke(app, [*args, "--resume", "--plan"], terminal_width=400)
        assert f"200 texts, {left} tokens left (100 already embedded by the interrupted run" in shown.stdout
        resumed = vectorport.migrate.run(source, target, resume=True, **opts)
        assert resumed.exit_code == ExitCode.OK and _sent(srv) - sent == 200
        assert resumed.plan is not None and resumed.plan.reembed_estimate is not None
        assert resumed.plan.reembed_estimate.texts == 200


def _sent(srv: VoyageServer) -> int:
    return sum(n for text, n in srv.embedded.items() if text != "dimension probe")


def _interrupt_after_first_page(source: str, target: str, ck: Path) -> set[str]:
    """Make ``ck`` and ``target`` what a run killed after acknowledging its first page leaves;
    the keys of that page."""
    saved = Checkpoint.load(ck)
    assert saved is not None
    with vectorport.connect(source) as src:
        first = next(iter(src.scan(batch_size=100, include=[])))
    done = {rec.key for rec in first}
    with vectorport.connect(target) as dst:
        dst.delete([f"k{i}" for i in range(300) if f"k{i}" not in done])
    saved.cursor, saved.copied = first.cursor, 100
    saved.scanned = saved.complete = False
    saved.verified, saved.source_count = None, None
    saved.save()
    return done
