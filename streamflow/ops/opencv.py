"""OpenCV for the operators that run it (``clahe``, ``debayer``): an optional dependency, imported on first use."""

from __future__ import annotations

from typing import Any

from ..errors import MissingDependencyError

__all__ = ["opencv"]


def opencv(feature: str) -> Any:
    """The ``cv2`` module, or a ``MissingDependencyError`` naming ``feature`` and ``pip install 'streamflow[opencv]'``."""
    try:
        import cv2
    except ImportError as exc:
        raise MissingDependencyError("opencv-python-headless", "opencv", feature) from exc
    return cv2
