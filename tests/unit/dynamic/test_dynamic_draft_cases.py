"""The helper that drafts every-operator cases (``tests/unit/dynamic/draft_cases.py``) keeps working."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import draft_cases
import test_dynamic_every_operator as table


def test_drafts_run_or_say_what_to_fill_in(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    cases = dict(table.CASES)
    for name in ("flip", "decoders.image", "readers.file", "box_encoder"):
        del cases[name]
    monkeypatch.setattr(table, "CASES", cases)
    assert draft_cases.draft("flip")[0] == '    "flip": Case([IMGS], layout="HWC"),'
    assert draft_cases.draft("decoders.image")[0] == '    "decoders.image": Case([ENCODED]),'
    assert "Case(reader=_TODO_files" in draft_cases.draft("readers.file")[0]
    assert draft_cases.draft("box_encoder")[0] == '    "box_encoder": Case([TODO, TODO], {"anchors": TODO}),'
    # file_reader is the same function as readers.file: without its case it is missing too; decoders.image
    # is covered by the case of experimental.decoders.image (the same function)
    missing = set(table.missing_cases())
    assert {"flip", "readers.file", "file_reader", "box_encoder"} <= missing and "decoders.image" not in missing
    assert draft_cases.main(["--no-stubs"]) == 1
    out = capsys.readouterr().out
    assert '"flip": Case([IMGS], layout="HWC"),' in out and "runs on [IMGS] and agrees" in out


def test_nothing_to_draft_when_every_function_has_a_case(capsys: pytest.CaptureFixture[str]) -> None:
    assert draft_cases.main(["--no-stubs"]) == 0
    assert "every fn function has a dynamic-mode case" in capsys.readouterr().out
