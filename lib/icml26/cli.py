"""The `repro` command: list, run, report and build the book's chapters.

    repro list [--scale S]
    repro run SLUG... | --all  [--scale S] [--jobs N] [--scheduler ADDRESS]
    repro report [--scale S] [--markdown]
    repro book [--jobs N] [--no-execute]

Exit status: 0 when everything ran and every declared claim held, 1 when a chapter failed, 2 for a
usage error (an unknown scale or chapter).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .paths import repo_root
from .registry import SLUGS
from .runner import RunResult, run_chapters
from .scales import SCALES

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


def _paths(args) -> tuple[Path, Path, Path]:
    root = repo_root()
    notebooks = Path(args.notebooks) if args.notebooks else root / "notebooks"
    runs = Path(args.runs) if args.runs else root / "runs"
    results = Path(args.results) if args.results else Path(os.environ.get("ICML26_RESULTS_DIR") or root / "results")
    return notebooks, runs, results


def select_notebooks(notebooks_dir: Path, slugs: list[str], run_all: bool) -> list[Path]:
    """The notebooks to run; an unknown or not-yet-written chapter is a `UsageError`."""
    available = {p.stem: p for p in sorted(notebooks_dir.glob("*.ipynb"))}
    if run_all:
        if slugs:
            raise UsageError("give chapter names or --all, not both")
        if not available:
            raise UsageError(f"no chapter notebooks in {notebooks_dir}")
        return list(available.values())
    if not slugs:
        raise UsageError("name at least one chapter, or use --all")
    chosen = []
    for slug in slugs:
        if slug in available:
            chosen.append(available[slug])
        elif slug in SLUGS:
            raise UsageError(f"chapter {slug!r} is not written yet (no {notebooks_dir / (slug + '.ipynb')})")
        else:
            raise UsageError(f"unknown chapter {slug!r}; available: {', '.join(available) or 'none'}; "
                             f"all chapters of the book: {', '.join(SLUGS)}")
    return chosen


def _print_progress(total: int):
    count = [0]

    def report(result: RunResult) -> None:
        count[0] += 1
        claims = (f"{result.paper_reproduced}/{result.paper_total} paper claims reproduced "
                  f"({result.claims_held}/{result.claims_total} of all kinds"
                  + (f"; {result.claims_failed} flagged" if result.claims_failed else "") + ")") if result.claims_total else "no claims"
        extra = f"  {result.error}" if result.error else ""
        print(f"[{count[0]}/{total}] {result.slug:<26} {result.status:<7} {result.seconds:7.1f} s  {claims}{extra}", flush=True)

    return report


def summary_table(results: list[RunResult]) -> str:
    lines = [f"{'chapter':<26} {'status':<7} {'seconds':>8}  paper claims reproduced  all kinds", "-" * 72]
    for r in sorted(results, key=lambda r: r.slug):
        lines.append(f"{r.slug:<26} {r.status:<7} {r.seconds:8.1f}  {r.paper_reproduced:>6}/{r.paper_total:<16} {r.claims_held}/{r.claims_total}")
    failed = [r for r in results if not r.ok]
    flagged = [r for r in failed if r.claims_failed_only]
    crashed = [r for r in failed if not r.claims_failed_only]
    lines.append("-" * 72)
    lines.append(f"paper claims reproduced: {sum(r.paper_reproduced for r in results)} of {sum(r.paper_total for r in results)}")
    lines.append(f"{len(results) - len(failed)} of {len(results)} chapters ok"
                 + (f"; claims flagged (not reproduced where declared to hold): {', '.join(r.slug for r in flagged)}" if flagged else "")
                 + (f"; failed: {', '.join(r.slug for r in crashed)}" if crashed else ""))
    for r in failed:
        lines.append(f"  {r.slug}: {r.error or 'see log'}  (log: {r.log})")
    return "\n".join(lines)


def cmd_run(args) -> int:
    notebooks_dir, runs, results = _paths(args)
    selected = select_notebooks(notebooks_dir, args.slugs, args.all)
    where = f"Dask scheduler {args.scheduler}" if args.scheduler else (f"{args.jobs} local processes" if args.jobs > 1 else "this process")
    print(f"running {len(selected)} chapter(s) at scale {args.scale!r} on {where}; notebooks and logs in {runs / args.scale}", flush=True)
    outcome = run_chapters(selected, args.scale, runs / args.scale, results, jobs=args.jobs,
                           scheduler=args.scheduler, reuse=args.reuse, on_result=_print_progress(len(selected)))
    print()
    print(summary_table(outcome))
    return EXIT_OK if all(r.ok for r in outcome) else EXIT_FAILED


def default_jobs() -> int:
    """Chapters run at once by default: one per core (each computes on one pinned thread,
    `icml26.chapter.COMPUTE_THREADS`, so its numbers do not depend on this), at most 8."""
    try:
        cores = len(os.sched_getaffinity(0))  # the cores this process may use (a container's limit too)
    except AttributeError:  # pragma: no cover - not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def _scorecard_inputs(args):
    from .scorecard import PUBLISHED_SCALE, load_results

    notebooks_dir, _, results = _paths(args)
    written = {p.stem for p in notebooks_dir.glob("*.ipynb")}
    return load_results(results, args.scale), written, load_results(results, PUBLISHED_SCALE), notebooks_dir


def cmd_list(args) -> int:
    from .scorecard import _full_text, headline, summary_rows, verdict_counts

    records, written, full, notebooks_dir = _scorecard_inputs(args)
    rows = summary_rows(records, written, full_records=full, notebooks_dir=notebooks_dir)
    print(headline(rows, args.scale).replace("`", ""))
    print("counts: reproduced / not reproduced / inconclusive / not reached of all")
    print(f"{'chapter':<26} {'notebook':<9} {'paper at full':<28} {'paper at ' + args.scale:<20} {'+ctl':>4} "
          f"{'derived':>8} {'checks':>7}  last {args.scale} run")
    for r in rows:
        record = records.get(r["slug"])
        last = (f"{record.get('status')}, {record.get('timings', {}).get('total', 0):.0f} s, {record.get('finished', '')}"
                if record else "none")
        print(f"{r['slug']:<26} {'yes' if r['slug'] in written else 'not yet':<9} "
              f"{_full_text(r['full']).replace('**', ''):<28} {verdict_counts(r['paper']):<20} "
              f"{r['paper']['with_positive_control']:>4} {r['derived']['reproduced']:>4}/{r['derived']['total']:<3} "
              f"{r['check']['reproduced']:>3}/{r['check']['total']:<3}  {last}")
    return EXIT_OK


def cmd_report(args) -> int:
    from .scorecard import render_markdown, render_text

    records, written, full, notebooks_dir = _scorecard_inputs(args)
    if args.markdown:
        print(render_markdown(records, args.scale, written, full_records=full, notebooks_dir=notebooks_dir))
    else:
        print(render_text(records, args.scale, written, full_records=full, notebooks_dir=notebooks_dir))
    return EXIT_OK


def cmd_book(args) -> int:
    from .bookbuild import jupyter_book_build, stage_book, written_notebooks

    root = repo_root()
    notebooks_dir, runs, results = _paths(args)
    run_notebooks: dict[str, Path] = {}
    run_status: dict[str, str] = {}
    run_errors: dict[str, str] = {}
    outcome: list[RunResult] = []
    if args.execute:
        selected = written_notebooks(notebooks_dir)
        print(f"executing {len(selected)} chapter(s) at scale {args.scale!r} (cached: unchanged chapters are reused)", flush=True)
        outcome = run_chapters(selected, args.scale, runs / args.scale, results, jobs=args.jobs,
                               reuse=not args.force, on_result=_print_progress(len(selected)))
        run_notebooks = {r.slug: Path(r.notebook) for r in outcome if Path(r.notebook).exists()}
        run_status = {r.slug: r.status for r in outcome}
        run_errors = {r.slug: f"{r.error} (log: {Path(r.log).name})" if r.log else str(r.error) for r in outcome if not r.ok}
        print()
        print(summary_table(outcome))
    build = root / "_build"
    stage = stage_book(build / "src", args.scale, run_notebooks, run_status, results, execute=args.execute,
                       run_errors=run_errors, claims_failed={r.slug for r in outcome if r.claims_failed_only})
    code = jupyter_book_build(stage, build, strict=True)
    index = build / "_build" / "html" / "index.html"
    if code != 0:
        print(f"the book build failed (exit {code}); see the messages above", file=sys.stderr)
        return EXIT_FAILED
    print(f"\nThe book is built: open file://{index.resolve()}")
    findings = [r for r in outcome if r.claims_failed_only]
    if findings:  # complete runs with claims not reproduced where declared: findings the pages and scorecard show
        print("chapters with claims flagged (declared to hold at this scale, verdict not 'reproduced'; complete runs: "
              "their pages and the scorecard show each verdict and its reason; `repro run` exits non-zero on them): "
              + ", ".join(f"{r.slug} ({r.claims_failed})" for r in findings), file=sys.stderr)
    if any(not r.ok and not r.claims_failed_only for r in outcome):
        print("some chapters failed; their pages show the error", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="repro", description="Run and report the ICML 2026 reproduction book's chapters.")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p, default_scale: str):
        p.add_argument("--scale", choices=SCALES, default=default_scale, help=f"one of {', '.join(SCALES)} (default {default_scale})")
        p.add_argument("--notebooks", help=argparse.SUPPRESS)  # another notebooks folder (used by the tests)
        p.add_argument("--runs", help=argparse.SUPPRESS)
        p.add_argument("--results", help=argparse.SUPPRESS)

    p_list = sub.add_parser("list", help="chapters and their last results")
    common(p_list, "book")
    p_run = sub.add_parser("run", help="execute chapters with papermill")
    p_run.add_argument("slugs", nargs="*", metavar="SLUG")
    p_run.add_argument("--all", action="store_true", help="every written chapter")
    common(p_run, os.environ.get("ICML26_SCALE") or "book")
    p_run.add_argument("--jobs", type=int, default=1, help="chapters run in parallel (local Dask processes)")
    p_run.add_argument("--scheduler", metavar="ADDRESS", help="send the runs to an existing Dask scheduler, e.g. tcp://host:8786")
    p_run.add_argument("--reuse", action="store_true", help="skip chapters whose executed notebook is up to date")
    p_report = sub.add_parser("report", help="the scorecard of a scale's results")
    common(p_report, "book")
    p_report.add_argument("--markdown", action="store_true", help="print the scorecard page's Markdown")
    p_book = sub.add_parser("book", help="execute (cached) and build the HTML book")
    common(p_book, "book")
    p_book.add_argument("--jobs", type=int, default=None,
                        help="chapters executed at once (default: one per core, at most 8; each on one pinned thread)")
    p_book.add_argument("--no-execute", dest="execute", action="store_false", help="structure check: build from the stripped notebooks")
    p_book.add_argument("--force", action="store_true", help="re-execute every chapter even if cached")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "scale", None) not in SCALES:  # a bad $ICML26_SCALE default escapes argparse's choices
        parser.error(f"unknown scale {args.scale!r} (from $ICML26_SCALE); valid scales are: {', '.join(SCALES)}")
    if args.command == "book" and args.jobs is None:
        args.jobs = default_jobs()
    if getattr(args, "jobs", 1) < 1:
        parser.error("--jobs must be at least 1")
    handler = {"run": cmd_run, "list": cmd_list, "report": cmd_report, "book": cmd_book}[args.command]
    try:
        return handler(args)
    except UsageError as exc:
        print(f"repro {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
