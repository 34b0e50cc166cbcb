"""Times given on the command line, as ``analyze --from/--to`` and ``synth-history
--start`` take them; without Spark, so that the CLI can check them before it starts."""

from __future__ import annotations

from datetime import datetime, UTC


def parse_time(text: str) -> int:
    """``2026-11-23``, ``2026-11-23T08:00``, ``...Z`` or ``...+01:00`` (UTC unless
    given), or milliseconds since the epoch; -> ms."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not a time: {text!r} (use 2026-11-23, 2026-11-23T08:00[Z|+hh:mm] or epoch ms)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)
