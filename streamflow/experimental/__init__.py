"""DALI's ``experimental`` spelling: ``import streamflow.experimental.dynamic as ndd`` is ``streamflow.dynamic``."""

from . import dynamic

__all__ = ["dynamic"]
