"""Fuzzing helpers shared by ``tests/unit/test_fuzz_decode.py`` and the long campaign.

Run the campaign with ``python -m tests.fuzz.campaign --minutes 3`` from the
repository root (see ``campaign.py``).
"""
