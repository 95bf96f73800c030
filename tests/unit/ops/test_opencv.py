"""The operators that run OpenCV say what to install when it is missing."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from streamflow.errors import MissingDependencyError
from streamflow.ops.clahe import equalize_clahe
from streamflow.ops.debayer import demosaic


def test_missing_opencv_names_the_operator_and_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cv2", None)  # import cv2 now raises ImportError
    image = np.zeros((8, 8, 1), np.uint8)
    with pytest.raises(MissingDependencyError, match=r"clahe needs the package 'opencv-python-headless'.*\[opencv\]"):
        equalize_clahe(image, 2, 2, 2.0, True)
    with pytest.raises(MissingDependencyError, match=r"debayer needs the package 'opencv-python-headless'"):
        demosaic(image[:, :, 0], (0, 0), "bilinear_ocv")
