"""What the video references and their tests share: the frame hash and the on-disk layout the cases read.

Used by ``record_video.py`` (DALI's side) and ``tests/unit/ops/test_readers_video.py`` /
``test_decoders_video.py`` (streamflow's side). Neither DALI nor streamflow is imported here.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np

CLIPS = Path(__file__).resolve().parents[1] / "data" / "dali" / "video"


def frame_hashes(video: np.ndarray) -> list[str]:
    """Per frame, the sha1 of its bytes (16 hex digits): what the reference stores of the frames."""
    return [hashlib.sha1(np.ascontiguousarray(f).tobytes()).hexdigest()[:16] for f in video]


def layout(tmp: Path) -> dict[str, str]:
    """Under ``tmp``: a labelled folder tree of the clips and two file lists (``times.txt`` in seconds,
    ``frames.txt`` in frame numbers); their paths by ``root`` and by list file name."""
    root = tmp / "root"
    (root / "cat").mkdir(parents=True)
    (root / "dog").mkdir()
    shutil.copy(CLIPS / "a.webm", root / "cat" / "a.webm")
    shutil.copy(CLIPS / "b.webm", root / "dog" / "b.webm")
    shutil.copy(CLIPS / "c.avi", root / "dog" / "c.avi")
    b = CLIPS / "b.webm"
    (tmp / "times.txt").write_text(f"{b} 5 0.1 0.5\n{b} 6 0.2 0.61\n{b} 7 0.05 0.95\n")
    (tmp / "frames.txt").write_text(f"{b} 1 3 20\n{b} 2 -10 -1\n{b} 3 5 -3\n{CLIPS / 'a.webm'} 4\n")
    return {"root": str(root), "times.txt": str(tmp / "times.txt"), "frames.txt": str(tmp / "frames.txt")}
