"""``diff-namesrv --watch --metrics-port``: scraped over HTTP while a fixture partitions a
broker from one name server, the difference appears in the metrics and then clears."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Callable, Iterator

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures_sim.harness import FixtureProcess
from tests.fixtures_sim.test_fixtures_up import EXPIRY_FIXTURE

MQADMIN = str(Path(sys.executable).parent / "mqadmin")
#: broker-b loses ns2 at 5 s (ns2 lets it expire 30 s later) and gets it back at 80 s: the
#: partition fixture of the fixture tests, up to its heal
PARTITION = EXPIRY_FIXTURE.split("  - {at: 100s")[0]
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=5) as answer:
        assert answer.status == 200
        text = answer.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def until(url: str, check: Callable[[Samples], bool], timeout: float = 20.0) -> Samples:
    deadline = time.monotonic() + timeout
    while True:
        samples = scrape(url)
        if check(samples):
            return samples
        assert time.monotonic() < deadline, f"not seen within {timeout} s; last scrape: {samples}"
        time.sleep(0.1)


def diff(samples: Samples, kind: str) -> float:
    """Differences of ``kind``; -1 before the first round has been compared."""
    return samples.get(("mqadmin_diff_differences", (("kind", kind),)), -1.0)


@pytest.fixture
def partitioned(tmp_path: Path) -> Iterator[FixtureProcess]:
    file = tmp_path / "partition.yaml"
    file.write_text(PARTITION)
    proc = FixtureProcess(file, "--speed", "20")
    try:
        proc.wait_ready()
        yield proc
        # Ctrl-C, not a kill: the runner stops its child-process name server (ns2) itself
        assert proc.interrupt() == 130
    finally:
        proc.kill()


def test_metrics_show_a_partition_appear_and_clear(partitioned: FixtureProcess) -> None:
    ns1, ns2 = partitioned.servers["ns1"], partitioned.servers["ns2"]
    watch = subprocess.Popen(
        [MQADMIN, "diff-namesrv", "--watch", "0.2", "--metrics-port", "0", "--metrics-host", "127.0.0.1",
         "--metrics-top", "5", "-n", f"{ns1};{ns2}", "-o", "json"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"})
    try:
        assert watch.stderr is not None
        first = watch.stderr.readline()
        assert first.startswith("mqadmin: metrics on http://127.0.0.1:"), first
        url = first.split(" on ", 1)[1].strip()

        # ns2 drops broker-b (expired behind the partition): a broker_missing difference,
        # orders' consumers miss broker-b's queues in the worst case, the age grows.
        seen = until(url, lambda s: diff(s, "broker_missing") > 0)
        assert seen[("mqadmin_diff_namesrv_up", (("namesrv", ns1),))] == 1
        assert seen[("mqadmin_diff_namesrv_up", (("namesrv", ns2),))] == 1
        assert seen[("mqadmin_diff_status", ())] == 4
        assert seen[("mqadmin_diff_topic_unassigned_queues", (("topic", "orders"),))] > 0
        assert seen[("mqadmin_diff_unassigned_queues", ())] >= seen[
            ("mqadmin_diff_topic_unassigned_queues", (("topic", "orders"),))]
        assert diff(seen, "kv_value") == 0  # every kind has a series
        later = until(url, lambda s: s.get(("mqadmin_diff_oldest_difference_age_seconds", ()), 0) >= 0.3)
        assert later[("mqadmin_diff_namesrv_content_hash_age_seconds", (("namesrv", ns1),))] > 0

        # the heal: broker-b registers with ns2 again and every difference clears
        partitioned.expect(r"heal broker-b/0 from ns2$", timeout=15)
        clear = until(url, lambda s: s.get(("mqadmin_diff_status", ())) == 0)
        assert all(v == 0 for (name, _), v in clear.items() if name == "mqadmin_diff_differences")
        assert clear[("mqadmin_diff_oldest_difference_age_seconds", ())] == 0
        assert clear[("mqadmin_diff_unassigned_queues", ())] == 0
        assert not any(name == "mqadmin_diff_topic_unassigned_queues" for name, _ in clear)
        assert clear[("mqadmin_diff_rounds_total", ())] >= 3
        _rules_use_only(set(name for name, _ in clear))
    finally:
        watch.terminate()
        watch.wait(10)


RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "diff-namesrv-rules.yml"


def _rules_use_only(exported: set[str]) -> None:
    """The shipped alert rules are valid YAML and every metric they read is exported."""
    doc = yaml.safe_load(RULES.read_text())
    rules = [r for g in doc["groups"] for r in g["rules"]]
    assert rules and all({"alert", "expr", "labels", "annotations"} <= set(r) for r in rules)
    used = {m for r in rules for m in re.findall(r"mqadmin_diff_\w+", r["expr"])}
    assert used and used <= exported, used - exported
