"""A session's record id and its trace lines' ids are the uuid5s they always were (ids.py
computes them without building UUID objects)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sidecar.base import ids


@given(st.text())
def test_a_record_and_trace_id_is_the_uuid5_it_always_was(name):
    try:
        expected = str(uuid.uuid5(uuid.UUID(ids.NAMESPACE), name))
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            ids.uuid5(name)
        return
    assert ids.uuid5(name) == expected
