"""Shared fixtures: small real image folders and helpers to inspect resources."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
from pathlib import Path

import pytest

# Test modules import the shared helpers as plain modules: ``from helpers import run_batch``.
sys.path.insert(0, str(Path(__file__).parent))

from helpers import BROKEN_JPEGS, GOOD_JPEGS


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked ``gpu`` when no usable GPU is present."""
    from streamflow.backend import gpu_count

    if gpu_count() > 0:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none usable here)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def image_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """root/a/*.jpg (3 files), root/b/*.jpg (3 files): labels 0 and 1."""
    root = tmp_path_factory.mktemp("images")
    for label, files in (("a", GOOD_JPEGS[:3]), ("b", GOOD_JPEGS[3:])):
        (root / label).mkdir()
        for f in files:
            shutil.copy(f, root / label / f.name)
    return root


@pytest.fixture(scope="session")
def many_files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """64 small JPEG files (copies of real ones, distinct names)."""
    root = tmp_path_factory.mktemp("many")
    paths = []
    for i in range(64):
        src = GOOD_JPEGS[i % 4]
        dst = root / f"img_{i:03d}.jpg"
        shutil.copy(src, dst)
        paths.append(str(dst))
    return paths


@pytest.fixture
def broken_root(tmp_path: Path) -> Path:
    """Good JPEGs plus a truncated JPEG and a PNG with a garbage header, in one class."""
    cls = tmp_path / "only"
    cls.mkdir()
    for f in GOOD_JPEGS[:4] + BROKEN_JPEGS:
        shutil.copy(f, cls / f.name)
    return tmp_path


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def ctrl_c():
    """Makes ``_thread.interrupt_main()`` raise KeyboardInterrupt in the main thread, as Ctrl-C does, even
    when the test run was started with SIGINT ignored (a background job, nohup), where it does nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture
def no_leaks():
    """Fails the test if it leaves threads or file descriptors behind."""
    threads_before = {t.ident for t in threading.enumerate()}
    fds_before = open_fds()
    yield
    leaked = [t for t in threading.enumerate() if t.ident not in threads_before and t.is_alive()]
    assert not leaked, f"threads left running: {[t.name for t in leaked]}"
    assert open_fds() <= fds_before, f"file descriptors leaked: {fds_before} -> {open_fds()}"
