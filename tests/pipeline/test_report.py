"""report.html opened in headless Chromium: three charts drawn, the summary table filled,
and nothing fetched from the network."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from mqadmin.pipeline.report import CHART_IDS

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def open_page(path: Path, tmp_path: Path) -> Any:
    """A headless Chromium (Debian's chromium + chromium-driver) showing ``path``."""
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        if os.environ.get("CI"):
            pytest.fail("chromium and chromium-driver must be installed (.ci/run installs them)")
        pytest.skip("chromium / chromium-driver not installed")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage",
                f"--user-data-dir={tmp_path / 'chromium-profile'}", "--window-size=1280,2000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    driver.get(path.as_uri())
    return driver


def wait_for(driver: Any, script: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = driver.execute_script(script)
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def assert_charts_drawn(path: Path, tmp_path: Path) -> Any:
    driver = open_page(path, tmp_path)
    try:
        for chart in CHART_IDS:
            # plotly draws each chart as SVG: a main-svg per plot, one g.trace per trace.
            traces = wait_for(driver, f"return document.querySelectorAll('#{chart} .main-svg .trace').length")
            assert traces, f"{chart}: no trace drawn"
            width = driver.execute_script(
                f"return document.querySelector('#{chart} .main-svg').getBoundingClientRect().width")
            assert width > 300
        assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0
        return driver.execute_script("return document.body.innerText")
    finally:
        driver.quit()


def test_report_charts_are_drawn_offline(hand_history: dict[str, Any], tmp_path: Path) -> None:
    page = hand_history["out"] / "report.html"
    html = page.read_text()
    assert "<script src=" not in html and "<link " not in html  # plotly.js is inlined
    text = assert_charts_drawn(page, tmp_path)
    assert "DefaultCluster" in text and "37.50 %" in text  # consistent share of the summary row
    assert "2026-01-01 00:02:00" in text  # the partition window of 'orders'
    assert "orders 3.0 min (" in text  # its duration among the summary's worst windows, to 0.1 min


def test_bars_show_window_durations(hand_history: dict[str, Any], tmp_path: Path) -> None:
    driver = open_page(hand_history["out"] / "report.html", tmp_path)
    try:
        wait_for(driver, "return document.querySelectorAll('#chart-windows .main-svg .trace').length")
        data = driver.execute_script(
            "return document.getElementById('chart-windows').data.map(t => [t.name, t.y.reduce((a, b) => a + b, 0)])")
    finally:
        driver.quit()
    assert dict(data)["broker_missing"] >= 1


def test_timeline_counts_topics_per_round_and_server(spark: Any, hand_history: dict[str, Any]) -> None:
    """The timeline's numbers: per round, the inconsistent topics in all and, per server,
    those on which it is outside the majority."""
    from mqadmin.pipeline.report import collect_report_data

    out, times = hand_history["out"], hand_history["times"]
    frames = {name: spark.read.parquet(str(out / name))
              for name in ("captures", "divergence", "windows", "broker_events", "summary")}
    data = collect_report_data(frames)
    A, B, C = "10.0.0.1:9876", "10.0.0.2:9876", "10.0.0.3:9876"
    assert data["rounds"] == times and data["servers"] == [A, B, C]
    per_round: dict[int, dict[str, int]] = {}
    for t, server, n in data["per_server"]:
        per_round.setdefault(t, {})[server] = n
    # 2-4: B lost broker-b (orders and t2). 6: orders, where A (wipe, order conf) and B
    # (empty order namespace) each stand apart, and C's t2 and t3.
    assert [data["totals"].get(t, 0) for t in times[:7]] == [0, 0, 2, 2, 2, 0, 3]
    assert [per_round.get(t, {}) for t in times[:7]] == [{}, {}, {B: 2}, {B: 2}, {B: 2}, {}, {A: 1, B: 1, C: 2}]
    assert data["totals"].get(times[8], 0) == 0
