"""OUT/report.html: the summary table and three charts, in one self-contained file.

Charts are drawn by plotly in the browser; its JavaScript (about 4.5 MB) is inlined in
the page, so the file opens offline and fetches nothing: no CDN, no fonts, no MathJax.
Only small aggregates leave Spark: a row per round, per (bounds, server) of the
disagreeing divergence rows, per duration bucket and cause, per broker event (at most
``MAX_EVENTS``), per (date, cluster), the worst windows and the cluster and broker names,
in two Spark jobs (the job asks them all with its own questions: none of its own).
"""

from __future__ import annotations

import bisect
import html
from datetime import datetime, UTC
from pathlib import Path
from typing import Any, Collection, Mapping, Sequence

import plotly.graph_objects as go
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from mqadmin.pipeline.tables import collect_small

#: Upper bounds (seconds) of the window-duration buckets; the last is open-ended.
BUCKETS: tuple[tuple[float, str], ...] = (
    (60, "< 1 min"), (300, "1-5 min"), (900, "5-15 min"), (1800, "15-30 min"), (3600, "30-60 min"),
    (7200, "1-2 h"), (21600, "2-6 h"), (float("inf"), "> 6 h"),
)
MAX_EVENTS = 5000
WORST = 20
#: business windows shown per (date, cluster) in the summary, as the summary table's own three
PER_DAY = 3
CHART_IDS = ("chart-timeline", "chart-windows", "chart-convergence")
#: RocketMQ's system topics (TopicValidator) and prefixes of generated ones; with the
#: per-cluster and per-broker pseudo-topics (a broker registers its cluster's and its own
#: name as topics) they are shown apart from business topics, behind a checkbox
SYSTEM_TOPICS = frozenset({
    "TBW102", "SELF_TEST_TOPIC", "SCHEDULE_TOPIC_XXXX", "BenchmarkTest", "OFFSET_MOVED_EVENT",
    "TRANS_CHECK_MAX_TIME_TOPIC", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "RMQ_SYS_TRACE_TOPIC",
    "DefaultHeartBeatSyncerTopic",
})
SYSTEM_PREFIXES = ("rmq_sys_", "RMQ_SYS_", "%RETRY%", "%DLQ%", "%SYS%")


def system_topic(topic: Any) -> Any:
    """Spark condition: ``topic`` (a column) is a system topic by name."""
    cond = topic.isin(sorted(SYSTEM_TOPICS))
    for prefix in SYSTEM_PREFIXES:
        cond = cond | topic.startswith(prefix)
    return cond


def _pseudo_topics(wins: DataFrame, events: DataFrame) -> DataFrame:
    """Cluster and broker names of windows and broker events (with the summary's clusters:
    every name seen in the history): their topics are pseudo-topics."""
    return (window_names(wins).union(events.select(F.col("broker").alias("n")))
            .union(events.select(F.col("cluster").alias("n"))).where("n is not null").distinct())


def window_names(wins: DataFrame) -> DataFrame:
    """The cluster and broker names of the windows (``_pseudo_topics``' part of them)."""
    return (wins.select(F.explode("clusters").alias("n")).union(wins.select(F.explode("brokers").alias("n")))
            .where("n is not null").distinct())


def _grouped(wins: DataFrame, apart: Column) -> DataFrame:
    """The longest windows, those that share cause, start, end, servers and brokers as one
    row (one perm wipe makes a window per topic of the broker: one incident, one row):
    the ``WORST`` longest of business topics and of the others (``apart``), ranked."""
    groups = (wins.groupBy(apart.alias("apart"), "cause", "start_ms", "end_ms", "duration_s", "unknown_s", "open",
                           F.sort_array("servers").alias("servers"), F.sort_array("brokers").alias("brokers"))
              .agg(F.count("*").alias("windows"), F.sort_array(F.collect_list("topic")).alias("topics"),
                   F.max("max_unassigned").alias("max_unassigned"),
                   F.max("max_doubly_assigned").alias("max_doubly_assigned")))
    rank = F.row_number().over(Window.partitionBy("apart").orderBy(F.desc("duration_s"), "start_ms", "cause"))
    return groups.withColumn("rank", rank).where(F.col("rank") <= WORST)


def _per_day(wins: DataFrame, apart: Column) -> DataFrame:
    """(apart, date, cluster) and its ``PER_DAY`` longest windows, longest first."""
    # a window on no known cluster counts under "-", as the summary table does
    cluster = F.explode(F.when(F.size("clusters") > 0, F.col("clusters")).otherwise(F.array(F.lit("-"))))
    return (wins.select(apart.alias("apart"), "date", cluster.alias("cluster"), "duration_s", "topic", "cause")
            .groupBy("apart", "date", "cluster")
            .agg(F.slice(F.sort_array(F.collect_list(F.struct("duration_s", "topic", "cause")), asc=False),
                         1, PER_DAY).alias("worst")))


def per_time(times: Sequence[int], held: Sequence[Mapping[str, Any]]) -> dict[tuple[int, str | None], int]:
    """(round time, server) -> how many of the ``held`` rows (``valid_from_ms``,
    ``valid_to_ms``, ``server``, ``count``) hold at that time: from their start until
    before their end (none: the history's end). ``times`` sorted, as the rounds' times
    (two rounds of one time count twice, as a join on the time would)."""
    spread: dict[str | None, list[int]] = {}
    for h in held:
        start, end = h["valid_from_ms"], h["valid_to_ms"]
        if start is None:
            continue
        lo = bisect.bisect_left(times, start)
        hi = len(times) if end is None else bisect.bisect_left(times, end)
        if lo < hi:
            change = spread.setdefault(h["server"], [0] * (len(times) + 1))
            change[lo] += h["count"]
            change[hi] -= h["count"]
    out: dict[tuple[int, str | None], int] = {}
    for server, change in spread.items():
        n = 0
        for t, step in zip(times, change):
            n += step
            if n:
                out[(t, server)] = out.get((t, server), 0) + n
    return out


def first_questions(frames: Mapping[str, DataFrame]) -> dict[str, DataFrame]:
    """What the page asks of ``captures``, ``divergence``, ``windows`` and
    ``broker_events`` before anything else (small results: tables.collect_small): a row
    per round, per (bounds, server) of the disagreeing divergence rows, per broker event
    (at most ``MAX_EVENTS``), and the cluster and broker names of windows and events."""
    div, wins, events, captures = frames["divergence"], frames["windows"], frames["broker_events"], frames["captures"]
    return {
        "rounds": captures.groupBy("round").agg(
            F.min(F.when(~F.col("unreadable"), F.col("capture_ms"))).alias("capture_ms"),
            F.collect_set(F.when(~F.col("unreadable"), F.col("server"))).alias("servers")),
        "held": held(div),
        "events": (events.where("converge_s is not null").orderBy("start_ms")
                   .select("start_ms", "converge_s", "kind", "broker").limit(MAX_EVENTS)),
        "names": _pseudo_topics(wins, events),
    }


def driver_answers(captures: Sequence[Mapping[str, Any]], events: Sequence[Mapping[str, Any]]
                   ) -> dict[str, list[dict[str, Any]]]:
    """The first questions whose inputs the job holds on the driver, answered there as
    ``first_questions`` answers them in Spark: ``rounds`` from the captures' rows
    (rounds.captures_rows), ``events`` from the broker events' (presence.broker_events),
    and ``names``' part from those events (the windows' part: ``window_names``)."""
    per: dict[Any, dict[str, Any]] = {}
    for c in captures:
        if c["unreadable"] is not False:
            continue
        r = per.setdefault(c["round"], {"round": c["round"], "capture_ms": None, "servers": set()})
        if c["capture_ms"] is not None:
            r["capture_ms"] = c["capture_ms"] if r["capture_ms"] is None else min(r["capture_ms"], c["capture_ms"])
        if c["server"] is not None:
            r["servers"].add(c["server"])
    timed = sorted((e for e in events if e["converge_s"] is not None),
                   key=lambda e: (e["start_ms"] is not None, e["start_ms"] or 0))
    return {"rounds": [{**r, "servers": sorted(r["servers"])} for r in per.values()],
            "events": [{k: e[k] for k in ("start_ms", "converge_s", "kind", "broker")} for e in timed[:MAX_EVENTS]],
            "names": [{"n": n} for n in sorted({e[k] for e in events for k in ("broker", "cluster")} - {None})]}


def held(div: DataFrame) -> DataFrame:
    """Per round, the inconsistent topics in all (server null) and per server outside the
    majority: each topic counts once under null and once per server, at every round a
    divergence row holds for. Rows with the same bounds and server are counted here, in
    Spark, and spread over the rounds on the driver (per_time)."""
    marks = F.explode(F.concat(F.array(F.lit(None).cast("string")), F.col("differing")))
    return (div.where("scope = 'topic' and not agree").select("valid_from_ms", "valid_to_ms", marks.alias("server"))
            .groupBy("valid_from_ms", "valid_to_ms", "server").count())


def window_questions(wins: DataFrame, names: Collection[str], more_names: DataFrame | None = None
                     ) -> dict[str, DataFrame]:
    """What the page asks of the windows (small results: tables.collect_small): a row per
    duration bucket and cause, the longest windows grouped by incident, and per (date,
    cluster) the longest, each of business topics apart from the others. The pseudo-topics
    are ``names`` and, when given, ``more_names``: a one-partition frame of names (``n``,
    distinct, none null) that Spark works out in the same job, so that the job asks
    these questions with its first ones instead of in a Spark job after them."""
    bucket = F.lit(len(BUCKETS) - 1)
    for i, (bound, _) in reversed(list(enumerate(BUCKETS[:-1]))):
        bucket = F.when(F.col("duration_s") < bound, F.lit(i)).otherwise(bucket)
    hist = wins.groupBy(bucket.alias("bucket"), "cause").count()
    apart = system_topic(F.col("topic")) | F.col("topic").isin(sorted(names))
    if more_names is not None:
        # broadcast: the windows keep their one partition, so the aggregates below need
        # no shuffle (a sort-merge join would shuffle both sides)
        wins = wins.join(F.broadcast(more_names.select(F.col("n").alias("topic"), F.lit(True).alias("named"))),
                         "topic", "left")
        apart = apart | F.coalesce(F.col("named"), F.lit(False))
    return {"hist": hist, "grouped": _grouped(wins, apart), "per_day": _per_day(wins, apart)}


def collect_report_data(frames: Mapping[str, DataFrame], first: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
                        summary: Sequence[Mapping[str, Any]] | None = None,
                        second: Mapping[str, Sequence[Mapping[str, Any]]] | None = None) -> dict[str, Any]:
    """The small aggregates the page shows (plain Python values), from the tables
    ``captures``, ``divergence``, ``windows``, ``broker_events`` and ``summary``.

    ``first`` holds the answers to ``first_questions(frames)``, ``summary`` the summary
    table's rows and ``second`` the answers to ``window_questions`` when the caller has
    them already (the job asks the first and the windows' with its own small questions,
    and works out the summary itself); what is missing is asked in one Spark job, and
    the windows' questions, which need the pseudo-topics, in another."""
    if first is None or summary is None:
        asked = collect_small({**(first_questions(frames) if first is None else {}),
                               **({"summary": frames["summary"]} if summary is None else {})})
        first = asked if first is None else first
        summary = asked["summary"] if summary is None else summary
    rounds = first["rounds"]
    times = sorted(r["capture_ms"] for r in rounds if r["capture_ms"] is not None)
    counts = per_time(times, first["held"])
    if second is None:
        names = {r["n"] for r in first["names"]} | {s["cluster"] for s in summary if s["cluster"] is not None}
        second = collect_small(window_questions(frames["windows"], names))
    grouped = sorted(second["grouped"], key=lambda g: (g["apart"], g["rank"]))
    per_day: dict[bool, dict[tuple[Any, Any], list[dict[str, Any]]]] = {False: {}, True: {}}
    for r in second["per_day"]:
        per_day[r["apart"]][(r["date"], r["cluster"])] = r["worst"]
    return {
        "rounds": times,
        "servers": sorted({server for r in rounds for server in r["servers"]}),
        "per_server": [(t, server, n) for (t, server), n in counts.items() if server is not None],
        "totals": {t: n for (t, server), n in counts.items() if server is None},
        "hist": [(r["bucket"], r["cause"], r["count"]) for r in second["hist"]],
        "events": sorted(first["events"], key=lambda e: e["start_ms"]),
        "summary": sorted(summary, key=lambda r: (r["date"], r["cluster"] is not None, r["cluster"] or "")),
        "worst": [_group(g) for g in grouped if not g["apart"]],
        "worst_system": [_group(g) for g in grouped if g["apart"]],
        "per_day": per_day[False],
        "per_day_system": per_day[True],
    }


def _group(g: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in g.items() if k not in ("apart", "rank")}


def _ts(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def timeline_figure(data: dict[str, Any]) -> go.Figure:
    times = data["rounds"]
    x = [_ts(t) for t in times]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=[data["totals"].get(t, 0) for t in times], name="inconsistent topics",
                             mode="lines", line={"width": 1, "color": "#888", "dash": "dot"}))
    counts: dict[tuple[int, str], int] = {(t, s): n for t, s, n in data["per_server"]}
    for server in data["servers"]:
        fig.add_trace(go.Scatter(x=x, y=[counts.get((t, server), 0) for t in times], name=server, mode="lines",
                                 line={"shape": "hv"}))
    fig.update_layout(title="Inconsistent topics per server (the server is outside the majority)",
                      xaxis_title="capture time (UTC)", yaxis_title="topics", height=380, margin={"t": 50})
    return fig if times else _no_data(fig, "no data: no round was captured")


def _no_data(fig: go.Figure, text: str) -> go.Figure:
    """An empty chart says so, instead of bare axes that read as "all zero"."""
    fig.add_annotation(text=text, xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False,
                       font={"size": 18, "color": "#666"})
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def windows_figure(data: dict[str, Any]) -> go.Figure:
    labels = [label for _, label in BUCKETS]
    causes = sorted({c for _, c, _ in data["hist"]})
    fig = go.Figure()
    for cause in causes:
        y = [0] * len(BUCKETS)
        for b, c, n in data["hist"]:
            if c == cause:
                y[b] += n
        fig.add_trace(go.Bar(x=labels, y=y, name=cause))
    if not causes:
        fig.add_trace(go.Bar(x=labels, y=[0] * len(labels), name="no windows"))
    fig.update_layout(title="Inconsistency windows by duration and cause", barmode="stack",
                      xaxis_title="window duration", yaxis_title="windows", height=380, margin={"t": 50})
    return fig if causes else _no_data(fig, "no data: the name servers never disagreed")


def convergence_figure(data: dict[str, Any]) -> go.Figure:
    fig = go.Figure()
    kinds = sorted({e["kind"] for e in data["events"]})
    for kind in kinds:
        rows = [e for e in data["events"] if e["kind"] == kind]
        fig.add_trace(go.Scatter(
            x=[_ts(e["start_ms"]) for e in rows], y=[e["converge_s"] for e in rows], mode="markers", name=kind,
            text=[e["broker"] for e in rows], hovertemplate="%{text}<br>%{x}<br>%{y:.0f} s<extra>" + kind + "</extra>",
        ))
    if not kinds:
        fig.add_trace(go.Scatter(x=[], y=[], mode="markers", name="no broker events"))
    fig.update_layout(title="Time until every name server agreed on a broker, per broker event",
                      xaxis_title="event start (UTC)", yaxis_title="seconds to converge", height=380,
                      margin={"t": 50})
    return fig if kinds else _no_data(fig, "no data: no broker appeared, disappeared or flapped")


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):  # before numbers: True is an int
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.1f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_fmt(v) for v in value)
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], table_id: str, css: str = "",
           apart: Sequence[int] = ()) -> str:
    """An HTML table; the columns at indexes ``apart`` are system/pseudo-topic ones
    (hidden until the page's checkbox shows them)."""
    def cell(tag: str, i: int, text: str) -> str:
        return f'<{tag} class="system">{text}</{tag}>' if i in apart else f"<{tag}>{text}</{tag}>"

    head = "".join(cell("th", i, html.escape(h)) for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(cell("td", i, html.escape(_fmt(v))) for i, v in enumerate(row)) + "</tr>"
                   for row in rows)
    klass = f' class="{css}"' if css else ""
    return f'<table id="{table_id}"{klass}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _windows_text(windows: Sequence[Mapping[str, Any]]) -> str:
    return "; ".join(f"{w['topic']} {w['duration_s'] / 60:.1f} min ({w['cause']})" for w in windows) or "-"


def _summary_rows(data: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for s in data["summary"]:
        key = (s["date"], s["cluster"])
        share = s["consistent_share"]
        unknown = s["unknown_s"] / s["observed_s"] if s["unknown_s"] and s["observed_s"] else None
        rows.append([s["date"], s["cluster"], "-" if share is None else f"{share * 100:.2f} %",
                     "-" if unknown is None else f"{unknown * 100:.2f} %", s["windows"],
                     s["longest_window_s"] and s["longest_window_s"] / 60,
                     _windows_text(data.get("per_day", {}).get(key, [])),
                     _windows_text(data.get("per_day_system", {}).get(key, [])),
                     s["unassigned_queue_minutes"], s["doubly_assigned_queue_minutes"],
                     s["affected_consumer_minutes"], s["broker_events"], s["max_converge_s"]])
    return rows


def _topics_text(w: Mapping[str, Any]) -> str:
    """``orders, payments and 28 more`` for a group of windows."""
    topics, n = list(w["topics"])[:5], w["windows"]
    return ", ".join(topics) + (f" and {n - len(topics)} more" if n > len(topics) else "")


def _longest(windows: Sequence[Mapping[str, Any]], table_id: str, css: str = "") -> str:
    return _table(["cause", "topics", "windows", "start", "end", "duration (min)", "of it a server silent (min)",
                   "open", "servers", "brokers", "max unassigned", "max doubly assigned"],
                  [[w["cause"], _topics_text(w), w["windows"], _ts(w["start_ms"]), _ts(w["end_ms"]),
                    w["duration_s"] / 60, w["unknown_s"] / 60 if w["unknown_s"] else "-", w["open"], w["servers"],
                    w["brokers"], w["max_unassigned"], w["max_doubly_assigned"]] for w in windows],
                  table_id, css)


STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; }
table { border-collapse: collapse; margin: 8px 0 24px; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; }
th { background: #f3f3f3; }
.chart { margin-bottom: 24px; }
.system { display: none; }
body.with-system .system { display: revert; }
"""
#: the checkbox that shows system topics and pseudo-topics (they are in the page, hidden)
SYSTEM_TOGGLE = ('<p><label><input type="checkbox" id="show-system" '
                 'onchange="document.body.classList.toggle(\'with-system\', this.checked)"> '
                 "include system topics (TBW102, SELF_TEST_TOPIC, ...) and the per-cluster and per-broker "
                 "pseudo-topics</label></p>")


def render_html(data: dict[str, Any]) -> str:
    figures = (timeline_figure(data), windows_figure(data), convergence_figure(data))
    charts = []
    for i, (fig, div_id) in enumerate(zip(figures, CHART_IDS)):
        charts.append('<div class="chart">' + fig.to_html(
            full_html=False, include_plotlyjs=(i == 0), div_id=div_id,
            config={"displaylogo": False, "responsive": True}) + "</div>")
    summary = _table(["date", "cluster", "consistent", "unknown (a server silent)", "windows", "longest (min)",
                      "worst windows", "worst windows of system and pseudo-topics", "unassigned queue-min",
                      "doubly assigned queue-min", "consumer-min affected", "broker events", "slowest convergence (s)"],
                     _summary_rows(data), "summary", apart=(7,))
    worst = _longest(data["worst"], "worst") if data["worst"] else "<p>no data: no window of a business topic</p>"
    worst += ('<div class="system"><h3>System topics and pseudo-topics</h3>'
              + (_longest(data.get("worst_system", []), "worst-system") if data.get("worst_system") else "<p>none</p>")
              + "</div>")
    span = ""
    if data["rounds"]:
        span = f"{_fmt(_ts(data['rounds'][0]))} to {_fmt(_ts(data['rounds'][-1]))} UTC, "
    head = (f"<h1>Name-server consistency</h1><p>{span}{len(data['rounds'])} rounds, "
            f"{len(data['servers'])} name servers: {html.escape(', '.join(data['servers']))}</p>")
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>mqadmin analyze report</title>"
            f"<style>{STYLE}</style></head><body>{head}{SYSTEM_TOGGLE}<h2>Summary per day and cluster</h2>{summary}"
            + "".join(charts) + f"<h2>Longest windows, by incident (same cause, start and end)</h2>{worst}"
            "</body></html>")


def write_report(out: str, frames: Mapping[str, DataFrame], first: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
                 summary: Sequence[Mapping[str, Any]] | None = None,
                 second: Mapping[str, Sequence[Mapping[str, Any]]] | None = None) -> Path:
    """Write OUT/report.html (OUT a local directory) from the tables in ``frames``
    (``first``, ``summary``, ``second``: as collect_report_data takes them)."""
    path = Path(out.removeprefix("file:")) / "report.html"
    text = render_html(collect_report_data(frames, first, summary, second))
    tmp = path.with_name(".report.html.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
