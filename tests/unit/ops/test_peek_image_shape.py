"""``peek_image_shape`` (and ``fn.experimental.peek_image_shape``) against DALI 2.4 on real files: exact."""

from __future__ import annotations

import pytest
from dali_reference.geometry_cases import PEEK_IMAGE_SHAPE, check_case


@pytest.mark.parametrize("case", PEEK_IMAGE_SHAPE, ids=lambda c: c.name)
def test_peek_image_shape_matches_dali(case) -> None:
    check_case("peek_image_shape", case)
