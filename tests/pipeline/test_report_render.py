"""report.html's rendering from hand-made aggregates (no Spark): system topics and
pseudo-topics apart behind a checkbox, windows grouped by incident, "no data" on empty
charts, yes/no for booleans."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from mqadmin.pipeline.report import convergence_figure, render_html, timeline_figure, windows_figure
from tests.pipeline.test_report import open_page, wait_for

DAY = dt.date(2026, 1, 1)
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def _group(cause: str, topics: list[str], minutes: float, *, open_: bool = False) -> dict[str, Any]:
    return {"cause": cause, "topics": topics, "windows": len(topics), "start_ms": T0, "end_ms": T0 + minutes * 60_000,
            "duration_s": minutes * 60, "unknown_s": 0.0, "open": open_, "servers": ["ns3"], "brokers": ["broker-a"],
            "max_unassigned": 4, "max_doubly_assigned": 0}


def _data() -> dict[str, Any]:
    wipe = [f"t{i:02}" for i in range(30)]
    return {
        "rounds": [T0, T0 + 60_000], "servers": ["ns1", "ns2", "ns3"], "per_server": [], "totals": {},
        "hist": [(1, "perm", 30)], "events": [],
        "summary": [{"date": DAY, "cluster": "cluster-a", "consistent_share": 0.5, "unknown_s": 0, "observed_s": 120,
                     "windows": 33, "longest_window_s": 600, "worst_windows": [],
                     "unassigned_queue_minutes": 1.0, "doubly_assigned_queue_minutes": 0.0,
                     "affected_consumer_minutes": 2.0, "broker_events": 0, "max_converge_s": None}],
        "worst": [_group("perm", wipe, 5.0, open_=True), _group("broker_missing", ["orders"], 3.0)],
        "worst_system": [_group("perm", ["TBW102", "SELF_TEST_TOPIC", "cluster-a"], 10.0)],
        "per_day": {(DAY, "cluster-a"): [{"duration_s": 300.0, "topic": "t00", "cause": "perm"}]},
        "per_day_system": {(DAY, "cluster-a"): [{"duration_s": 600.0, "topic": "TBW102", "cause": "perm"}]},
    }


def test_one_incident_is_one_row_and_booleans_read_yes_no() -> None:
    page = render_html(_data())
    assert "t00, t01, t02, t03, t04 and 25 more" in page  # the 30-topic perm wipe: one row
    business = page.split('id="worst"', 1)[1].split("</table>", 1)[0]
    assert business.count("<tr><td>perm</td>") == 1
    assert "<td>yes</td>" in page and "<td>no</td>" in page
    assert ">True<" not in page and ">False<" not in page


def test_empty_charts_say_no_data() -> None:
    empty: dict[str, Any] = {"rounds": [], "servers": [], "per_server": [], "totals": {}, "hist": [], "events": []}
    for figure in (timeline_figure(empty), windows_figure(empty), convergence_figure(empty)):
        texts = [a.text for a in figure.layout.annotations]
        assert texts and texts[0].startswith("no data"), texts
        assert figure.layout.xaxis.visible is False
    full = _data()
    assert not windows_figure(full).layout.annotations  # a chart with data says nothing of the kind


def test_system_topics_are_apart_until_the_checkbox_says_otherwise(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    path.write_text(render_html(_data()), encoding="utf-8")
    driver = open_page(path, tmp_path)
    try:
        wait_for(driver, "return document.querySelectorAll('#chart-windows .main-svg .trace').length")
        shown = driver.execute_script("return document.body.innerText")
        assert "t00 5.0 min (perm)" in shown and "broker_missing" in shown
        assert "TBW102 10.0 min" not in shown and "TBW102, SELF_TEST_TOPIC, cluster-a" not in shown
        driver.find_element("id", "show-system").click()
        both = driver.execute_script("return document.body.innerText")
        assert "TBW102 10.0 min (perm)" in both and "TBW102, SELF_TEST_TOPIC, cluster-a" in both
    finally:
        driver.quit()
