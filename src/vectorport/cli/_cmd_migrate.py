"""``vectorport migrate SRC DST`` and ``vectorport verify SRC DST``.

Exit codes (both commands; ``verify`` never returns 4), from :class:`vectorport._exit.ExitCode`:

* 0 ``OK`` — copied and verified (``--plan``: the plan is accepted; ``--no-verify``: copied)
* 1 ``PROBLEM`` — copied, but verification found data differences (missing, extra or changed records)
* 2 ``USAGE`` — bad URL, option, shard or checkpoint (and typer's code for a malformed command line)
* 3 ``FAILURE`` — operational failure: a backend failed or was unreachable; progress is kept in
  the checkpoint, re-run with ``--resume``
* 4 ``REFUSED`` — plan refused, nothing written: the output names the records and the flag to pass
* 5 ``QUALITY`` — the data is equal, but the target's search quality on the sampled queries is
  below both the source's on the same queries and its declared recall against exact truth
"""

from __future__ import annotations

import contextlib
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from .._exit import ExitCode
from .._registry import available_backends
from .._url import mask_url
from ..exceptions import UnsupportedFeatureError, VectorportError
from ..migrate import (
    Checkpoint,
    MetadataPolicy,
    MigrateOptions,
    MigrationPlan,
    MigrationReport,
    PlanRefusedError,
    VerifyReport,
    parse_shard,
    shard_path,
)
from ..migrate import run as run_migration
from ..migrate import verify as run_verify
from ..verify._options import VerifyOptions
from ._common import (
    JsonOption,
    ReportOption,
    cli_text,
    cli_words,
    emit_json,
    err_console,
    fail,
    out_console,
    print_error,
    write_report,
)
from ._engine import AddressOption, Engine, EngineOption, WorkersOption, print_workers, runner
from ._options import with_options
from ._state import default_checkpoint

SHOWN = 5
"""Examples printed per group in human output (``--json`` has up to 100 per group)."""


def resume_command(argv: list[str], extra: list[tuple[str, str | None]]) -> str:
    """The command line that continues an interrupted run: this one (URL passwords masked),
    plus each ``(option, value)`` of ``extra`` whose option it lacks (``value`` ``None``: a flag)."""
    words = ["vectorport", *(mask_url(a) if "://" in a else a for a in argv)]
    for option, value in extra:
        if not any(a == option or a.startswith(option + "=") for a in argv):
            words += [option] if value is None else [option, value]
    return shlex.join(words)


def _defers_index(target: str) -> bool:
    """Does the target's backend build an index after a bulk load (pgvector), so that a copy cut
    short at its end may have cut that build? (A bucket or Chroma target has nothing deferred.)"""
    scheme = target.split("://", 1)[0].lower()
    for info in available_backends():
        if scheme in info.schemes and info.installed:
            try:
                return hasattr(info.load(), "build_index")
            except Exception:  # a broken backend: say less rather than fail the Ctrl-C message
                return False
    return False


def _interrupted(path: Path) -> None:
    """After Ctrl-C: what the checkpoint holds, where it is, and the command that resumes."""
    try:
        ck = Checkpoint.load(path)
    except VectorportError:
        ck = None
    if ck is None:
        err_console.print("interrupted before anything was copied", highlight=False, markup=False)
        return
    if ck.complete:
        what = f"all {ck.copied:,} records copied and the target complete; verification was cut short"
    elif ck.scanned and _defers_index(ck.target):
        what = f"all {ck.copied:,} records copied; the target's index build was cut short"
    elif ck.scanned:
        what = f"all {ck.copied:,} records copied; the copy was cut short before it was marked complete"
    else:
        what = f"{ck.copied:,} records committed"
    err_console.print(f"interrupted: {what}", highlight=False, markup=False)
    err_console.print(f"checkpoint: {path}", highlight=False, markup=False, soft_wrap=True)
    extra = [("--checkpoint", str(path)), ("--resume", None)]
    command = resume_command(sys.argv[1:], extra)
    err_console.print(f"resume: {command}", highlight=False, markup=False, soft_wrap=True)


def _print_plan(plan: MigrationPlan) -> None:
    table = Table(title="migration plan", show_header=False)
    table.add_row("source", f"{plan.source} ({plan.source_backend})")
    table.add_row("target", f"{plan.target} ({plan.target_backend})")
    src, dst = plan.source_spec, plan.target_spec
    table.add_row("vectors", f"{src.dimension} dims, {src.metric.value}")
    verb = "exists" if plan.target_exists else "will be created"
    table.add_row("target collection", f"{dst.name!r} {verb}: {dst.dimension} dims, {dst.metric.value}")
    if plan.target_count is not None:
        table.add_row("target records now", str(plan.target_count))
    shard = f" (shard {plan.shard[0]}/{plan.shard[1]})" if plan.shard[1] > 1 else ""
    table.add_row("records", f"{plan.records}{shard}")
    if plan.reembed_estimate is not None:
        table.add_row(f"re-embedding with {plan.reembed}", plan.reembed_estimate.describe())
    table.add_row(
        "metadata policy", plan.policy.value + (f", text key {plan.text_key!r}" if plan.text_key else "")
    )
    table.add_row("records with metadata the target cannot hold", str(plan.records_with_problems))
    table.add_row("records transformed", str(plan.records_transformed))
    out_console.print(table)
    sections = [("what will change", plan.transforms), ("left unwritable", plan.unresolved)]
    if plan.policy is MetadataPolicy.ERROR:  # then "unwritable" is exactly "cannot hold"
        sections = [("metadata the target cannot hold", plan.metadata_problems), sections[0]]
    for title, groups in sections:
        if not groups:
            continue
        out_console.print(f"[bold]{title}[/bold]")
        for group in groups.values():
            out_console.print(
                f"  {group.kind}: {group.records} records, {group.occurrences.total} values",
                highlight=False,
            )
            for occ in group.occurrences.items[:SHOWN]:
                out_console.print(f"    {occ['key']!r} at {occ['path']}", highlight=False, markup=False)
            if group.occurrences.total > SHOWN:
                out_console.print(f"    … and {group.occurrences.total - SHOWN} more (see --json)")
    if plan.no_text:
        out_console.print(f"[bold]records with no text to re-embed[/bold]: {plan.no_text.records}")
        for occ in plan.no_text.occurrences.items[:SHOWN]:
            out_console.print(f"    {occ['key']!r}", highlight=False, markup=False)
    if plan.key_problems:
        out_console.print(
            f"[bold]record keys {plan.target_backend} rejects[/bold]: {plan.key_problems.message}"
        )
        for occ in plan.key_problems.occurrences.items[:SHOWN]:
            out_console.print(f"    {occ['key']!r}", highlight=False, markup=False)
    for note in plan.notes:
        out_console.print(f"note: {escape(cli_text(note))}", highlight=False)
    if plan.refused:
        for reason in plan.reasons():
            out_console.print(f"[red]refused:[/red] {escape(cli_text(reason))}", highlight=False)
        hint = plan.suggestion()
        if hint:
            out_console.print(f"[yellow]to proceed:[/yellow] {escape(cli_text(hint))}", highlight=False)


FAIL = "[red]✗[/red]"
PASS = "[green]✓[/green]"


def _print_verification(v: VerifyReport) -> None:
    """The table: data first (equal or how many differences), then search quality apart; a
    failing row is marked ✗ in its first column."""
    table = Table(title="verification", show_header=False)
    table.add_column(width=1)
    table.add_column()
    table.add_column()

    def row(name: str, value: str, failed: bool | None = None) -> None:
        table.add_row("" if failed is None else (FAIL if failed else PASS), name, value)

    data = "[green]equal[/green]" if v.data_equal else f"[red]{v.differences} differences[/red]"
    row("data", data, not v.data_equal)
    row("counts (source / target)", f"{v.source_count} / {v.target_count}", v.count_mismatch or None)
    row("records compared", str(v.compared))
    if v.bins is not None:
        how = "by digest, " + (
            "all agree" if not v.bins["differing"] else f"{v.bins['differing']} re-read record by record"
        )
        row("key bins", f"{v.bins['parts']} ({how})")
    for name, capped in (("missing in target", v.missing), ("extra in target", v.extra)):
        row(name, str(capped.total), bool(capped) or None)
    row("vector differences", str(v.vectors.total), bool(v.vectors) or None)
    row("metadata differences", str(v.metadata.total), bool(v.metadata) or None)
    row("text differences", str(v.text.total), bool(v.text) or None)
    if v.duplicates:
        row("duplicate keys in target", str(v.duplicates), True)
    if v.queries is not None:
        q = v.queries
        quality = "[green]passed[/green]" if q.ok else "[red]failed[/red]"
        row(f"search quality ({q.queries} queries, k={q.k})", quality, not q.ok)
        row(
            "  target vs source (same queries)",
            f"recall {q.target_recall:.3f} vs {q.source_recall:.3f}, overlap {q.mean_overlap:.3f} "
            f"(min {q.min_overlap:.2f})",
            not q.as_good_as_source,
        )
        row(
            "  target vs exact truth",
            f"recall {q.target_recall:.3f}, needs {q.required_recall - q.slack:.2f}",
            not q.meets_required,
        )
    for skipped in v.skipped:
        row("skipped", skipped)
    out_console.print(table)
    if v.queries is not None:
        out_console.print(f"search quality {v.queries.verdict}", highlight=False, markup=False)
    for line in v.diff_lines(SHOWN):
        out_console.print(line, highlight=False, markup=False)


def _print_report(report: MigrationReport) -> None:
    if report.plan is not None:
        _print_plan(report.plan)
    if report.already_complete:
        out_console.print("this migration had already finished (checkpoint): nothing copied, verifying only")
    if report.copy is not None:
        c = report.copy
        resumed = f", resumed after {c.resumed_from}" if c.resumed_cursor is not None else ""
        index = f"; index build {c.index_seconds:.1f}s" if c.index_seconds >= 0.05 else ""
        out_console.print(
            f"copied {c.records} records in {c.seconds:.1f}s ({c.rate:,.0f} rec/s, {c.batches} batches, "
            f"{c.retries} retries{resumed}){index}",
            highlight=False,
        )
    if report.timings:
        t = report.timings
        parts = [f"{name} {t[name]:.1f}s" for name in ("plan", "copy", "index", "verify") if name in t]
        out_console.print(f"time: {', '.join(parts)}; total {t.get('total', 0.0):.1f}s", highlight=False)
    if report.verification is not None:
        _print_verification(report.verification)
    for note in report.notes:
        out_console.print(f"note: {cli_text(note)}", highlight=False, markup=False)
    if report.checkpoint:
        out_console.print(f"checkpoint: {report.checkpoint}", highlight=False, markup=False)
    print_workers(report.to_dict())
    out_console.print(f"status: [bold]{report.status}[/bold] (exit {report.exit_code})")


ExpectDigestOption = Annotated[
    str | None,
    typer.Option(
        "--expect-digest",
        metavar="DIGEST",
        help="The snapshot digest export printed (sha256:…): any other or altered snapshot is "
        "refused before a record is read.",
    ),
]


MIGRATE_FLAGS = {
    "plan_only": "--plan",
    "single_pass": "--single-pass/--two-pass",
    "sample_queries": "--queries",
    "k": "-k",
}
"""The flags whose name is not the option's own (``batch_size`` is ``--batch-size``)."""


@with_options(MigrateOptions, MIGRATE_FLAGS, {"progress": None, "single_pass": None})
def migrate(
    source: Annotated[str, typer.Argument(help="Source store URL (must exist).")],
    target: Annotated[
        str, typer.Argument(help="Target store URL (created with the source's spec if missing).")
    ],
    report_path: ReportOption = None,
    as_json: bool = JsonOption,
    engine: EngineOption = Engine.local,
    address: AddressOption = None,
    workers: WorkersOption = 2,
    *,
    options: dict[str, Any],
) -> None:
    """Copy a collection to another store, then verify it. Exit 0 ok, 1 data, 3 failure, 4 refused, 5 quality.

    Progress is checkpointed after every batch, by default in one file per URL pair under the
    folder named by the environment variable VECTORPORT_STATE_DIR (default: ~/.local/state/vectorport);
    --resume continues from it.
    """
    if options["checkpoint"] is None and not options["plan_only"]:
        options["checkpoint"] = default_checkpoint(source, target)
    if options["progress"] is None:
        options["progress"] = sys.stderr.isatty()
    try:
        report = run_migration(source, target, runner=runner(engine, workers, address), **options)
    except KeyboardInterrupt:
        if options["checkpoint"] is not None:
            with contextlib.suppress(VectorportError):
                _interrupted(shard_path(options["checkpoint"], parse_shard(options["shard"])))
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    except PlanRefusedError as exc:
        refused = exc.report if isinstance(exc.report, MigrationReport) else None
        data = cli_words(refused.to_dict() if refused else {"status": "refused", "plan": exc.plan.to_dict()})
        write_report(report_path, data)
        if as_json:
            emit_json(data, MigrationReport.SCHEMA)
        else:
            _print_plan(exc.plan)
        print_error(exc)  # the plan on stdout; why it was refused, like every error, on stderr
        raise typer.Exit(ExitCode.REFUSED) from None
    except VectorportError as exc:
        raise fail(exc, {UnsupportedFeatureError: ExitCode.REFUSED}) from None
    data = cli_words(report.to_dict())
    write_report(report_path, data)
    if as_json:
        emit_json(data)
    else:
        _print_report(report)
    if report.exit_code != ExitCode.OK:
        raise typer.Exit(report.exit_code)


VERIFY_FLAGS = {"sample_queries": "--queries", "k": "-k"}
"""The flags whose name is not the option's own (``text_key`` is ``--text-key``)."""


@with_options(VerifyOptions, VERIFY_FLAGS, {"progress": None})
def verify(
    source: Annotated[str, typer.Argument(help="Source store URL.")],
    target: Annotated[str, typer.Argument(help="Target store URL.")],
    report_path: ReportOption = None,
    expect_digest: ExpectDigestOption = None,
    as_json: bool = JsonOption,
    engine: EngineOption = Engine.local,
    address: AddressOption = None,
    workers: WorkersOption = 2,
    *,
    options: dict[str, Any],
) -> None:
    """Compare two stores: data (counts, keys, vectors, metadata, text), then search quality. Exit 0/1/3/5.

    Data differences exit 1; equal data with search quality below both the source's (same
    queries) and the target's declared recall against exact truth exits 5. With --engine ray
    each store is read by Ray tasks that return per-key-bin digests, merged on the driver;
    only the bins that differ are compared record by record (--shard and --concurrency are
    refused there: Ray splits the work).
    """
    if options["progress"] is None:
        options["progress"] = sys.stderr.isatty()
    try:
        source, target = _expecting(source, target, expect_digest)
        result = run_verify(source, target, runner=runner(engine, workers, address), **options)
    except VectorportError as exc:
        raise fail(exc) from None
    _show_verification(result, report_path, as_json)


def _expecting(source: str, target: str, digest: str | None) -> tuple[str, str]:
    """``--expect-digest``: the snapshot among the two (the source when both are) must be it."""
    if digest is None:
        return source, target
    from ..snapshot._export import expecting

    if source.lower().startswith("parquet:"):
        return expecting(source, digest), target
    return source, expecting(target, digest)


def _show_verification(result: VerifyReport, report_path: Path | None, as_json: bool) -> None:
    """The report to ``--report``, then to stdout (JSON or text); the exit code when not ok."""
    write_report(report_path, result.to_dict())
    if as_json:
        emit_json(result.to_dict())
    else:
        _print_verification(result)
        print_workers(result.to_dict())
    if not result.ok:
        raise typer.Exit(result.exit_code)


def register(app: typer.Typer) -> None:
    app.command("migrate")(migrate)
    app.command("verify")(verify)
