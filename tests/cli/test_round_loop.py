"""core.repeat_rounds, the one loop of ``-i``/``-c`` and ``diff-namesrv --watch``."""

from __future__ import annotations

import pytest

from mqadmin.core import repeat_rounds
from mqadmin.exit import ExitStatus


def test_once_without_an_interval() -> None:
    calls: list[int] = []

    def round_() -> int:
        calls.append(1)
        return 4

    assert repeat_rounds(round_, every=None, count=5) == 4
    assert calls == [1]


@pytest.mark.parametrize("paced", [False, True])
def test_count_rounds_and_the_last_rounds_status(paced: bool) -> None:
    statuses = iter([ExitStatus.DISAGREE, ExitStatus.PARTIAL, ExitStatus.OK])
    assert repeat_rounds(lambda: int(next(statuses)), every=0.0, count=3, paced_from_start=paced) == 0
    assert next(statuses, None) is None


def test_ctrl_c_escapes_to_guard() -> None:
    def interrupted() -> int:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        repeat_rounds(interrupted, every=0.0, count=None)
