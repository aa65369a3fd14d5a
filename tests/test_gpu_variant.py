"""A reader with a GPU: `repro run SLUG --scale full` runs the `gpu` variant of the preset on CUDA (issue 60).

`icml26.Chapter` asks `icml26.device()` for its device and passes ``on_gpu`` to `select_preset` when it is a
CUDA device. Here torch reports a CUDA device (`torch.cuda.is_available` patched; nothing touches a GPU), and
the real `device()` and `Chapter` do the rest. book/running.md's table of every chapter's variant is the one
tools/gpu_variants.py generates.
"""
import importlib.util
from pathlib import Path

import pytest
import torch

from icml26 import Chapter, device

ROOT = Path(__file__).resolve().parent.parent
TABLE = {"smoke": {"steps": 1, "width": 8}, "book": {"steps": 10, "width": 8},
         "full": {"steps": 100, "width": 8, "gpu": {"steps": 1000, "width": 64}}}


@pytest.fixture
def cuda_present(monkeypatch):
    monkeypatch.delenv("ICML26_DEVICE", raising=False)
    monkeypatch.delenv("ICML26_PRESET_SCALE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)


def test_on_cuda_full_runs_the_gpu_variant(cuda_present):
    assert device().type == "cuda"
    chapter = Chapter("toy-gpu", scale="full", presets=TABLE, title="Toy")
    assert chapter.device.type == "cuda"
    assert dict(chapter.preset) == {"steps": 1000, "width": 64}


def test_on_cuda_a_scale_without_a_variant_keeps_its_sizes(cuda_present):
    assert dict(Chapter("toy-gpu", scale="book", presets=TABLE, title="Toy").preset) == {"steps": 10, "width": 8}


def test_icml26_device_cpu_keeps_the_cpu_sizes_on_a_gpu_machine(cuda_present, monkeypatch):
    monkeypatch.setenv("ICML26_DEVICE", "cpu")
    chapter = Chapter("toy-gpu", scale="full", presets=TABLE, title="Toy")
    assert chapter.device.type == "cpu" and dict(chapter.preset) == {"steps": 100, "width": 8}


def test_without_cuda_full_runs_the_cpu_sizes(monkeypatch):
    monkeypatch.delenv("ICML26_DEVICE", raising=False)
    monkeypatch.delenv("ICML26_PRESET_SCALE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert dict(Chapter("toy-gpu", scale="full", presets=TABLE, title="Toy").preset) == {"steps": 100, "width": 8}


def _tool():
    spec = importlib.util.spec_from_file_location("gpu_variants", ROOT / "tools" / "gpu_variants.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_running_md_lists_every_chapters_gpu_variant_as_generated():
    """Every chapter's `full` preset resolves on CUDA (a `gpu` entry overrides only keys the preset has), and
    book/running.md shows what each variant changes as tools/gpu_variants.py prints it (regenerate with
    `.venv/bin/python tools/gpu_variants.py --write`)."""
    tool = _tool()
    page = (ROOT / "book" / "running.md").read_text()
    assert tool.page_table(page) == tool.table(), \
        "book/running.md's table of gpu variants is out of date: run `.venv/bin/python tools/gpu_variants.py --write`"


def test_the_tool_reports_what_a_variant_changes():
    tool = _tool()
    assert tool.changes({"steps": 100, "net": {"width": 8, "depth": 2}}, {"steps": 1000, "net": {"width": 64, "depth": 2}}) \
        == ["`net.width` 8 → 64", "`steps` 100 → 1,000"]
    assert tool.changes({"steps": 100}, {"steps": 100}) == []
