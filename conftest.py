"""Test-session settings shared by the unit tests and nbval.

Chapter notebooks collected by nbval run at the `smoke` scale unless ICML26_SCALE says otherwise,
in batch mode (plain progress bars, no live widgets), and write their results into a scratch folder
so a test run never overwrites the book's results. Under pytest-xdist each worker gets one thread
per core it owns, so two workers do not fight over the two cores.
"""
import os
import tempfile

os.environ.setdefault("ICML26_SCALE", "smoke")
os.environ.setdefault("ICML26_BATCH", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("ICML26_RESULTS_DIR", os.path.join(tempfile.gettempdir(), f"icml26-test-results-{os.getpid()}"))
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
if os.environ.get("PYTEST_XDIST_WORKER"):
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    threads = str(max(1, (os.cpu_count() or 1) // workers))
    os.environ.setdefault("OMP_NUM_THREADS", threads)
    os.environ.setdefault("MKL_NUM_THREADS", threads)
