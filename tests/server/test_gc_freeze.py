"""What the server holds at start is frozen out of the cyclic collector's full passes."""

from __future__ import annotations

import gc

from mqnamesrv.server.app import freeze_start_up_objects


def test_objects_alive_at_start_are_frozen_and_later_ones_are_not() -> None:
    held = [{"alive": "at start"}]
    try:
        freeze_start_up_objects()
        assert gc.get_freeze_count() > 0
        assert all(obj is not held for obj in gc.get_objects())  # the collector no longer walks it
        later = [{"made": "after"}]
        assert any(obj is later for obj in gc.get_objects())
    finally:
        gc.unfreeze()
