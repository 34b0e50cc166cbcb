"""Usage errors, help, and the single place that turns exceptions into one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest
from typer.testing import CliRunner

from mqadmin.render import answers
from mqadmin.cli import app
from mqadmin.errors import AddressError
from tests.cli.conftest import Run
from tests.cli.helpers import flat
from tests.nsprocess import NameServerProcess

Cli = Callable[..., Run]

EXIT_CODES = ("Exit codes: 0 ok; 1 error (bad input, nothing succeeded); 2 usage; 3 partial failure "
              "(some name servers failed or unreachable); 4 name servers disagree; 130 interrupted (Ctrl-C); "
              "141 the output's reader went away.")
ADMIN_COMMANDS = ["clusterList", "topicRoute", "topicList", "getKvConfig", "getNamesrvConfig", "wipeWritePerm",
                  "addWritePerm", "updateKvConfig", "deleteKvConfig", "updateNamesrvConfig", "updateOrderConf",
                  "deleteTopic"]


@pytest.mark.parametrize("args,message", [
    (["topicRoute"], "mqadmin: error: topicRoute: missing option -t/--topic (required) (see 'mqadmin topicRoute -h')"),
    (["updateKvConfig", "-s", "ns", "-k", "k"], "updateKvConfig: missing option -v/--value (required)"),
    (["deleteTopic", "-t", "t"], "deleteTopic: missing option -c/--clusterName (required)"),
    (["wipeWritePerm", "-b", "x", "-z"], "wipeWritePerm: No such option: -z"),
    (["topicList", "-o", "xml"], "topicList: -o/--output: 'xml' is not accepted; use one of table, json, yaml"),
    (["updateOrderConf", "-t", "t", "-m", "post"], "-m/--method: 'post' is not accepted; use one of get, put, delete"),
    (["topicList", "--timeout", "0", "-n", "127.0.0.1:1"], "topicList: --timeout: must be a positive number"),
    (["topicList", "--timeout", "nan", "-n", "127.0.0.1:1"], "--timeout: must be a positive"),
    (["topicList", "--timeout", "soon", "-n", "127.0.0.1:1"], "topicList: --timeout: 'soon' is not a number"),
    (["snapshot", "--out", "x", "--timeout", "-1", "-n", "127.0.0.1:1"], "snapshot: --timeout: must be"),
    (["diff-namesrv", "--watch", "nan", "-n", "127.0.0.1:1"], "diff-namesrv: --watch: must be a positive"),
    (["topicRoute", "-t", "  ", "-n", "127.0.0.1:1"], "topicRoute: -t: must not be empty"),
    (["clusterList", "-i", "-1"], "clusterList: -i/--interval: must be a positive number of seconds, got -1"),
    (["clusterList", "-i", "0"], "clusterList: -i/--interval: must be a positive number of seconds, got 0"),
    (["clusterList", "-i", "abc"], "clusterList: -i/--interval: 'abc' is not a number"),
    (["analyze", "caps", "--out", "o", "--from", "tomorrow"], "analyze: --from: not a time: 'tomorrow'"),
    (["noSuchCommand"], "No such command 'noSuchCommand' (see 'mqadmin -h')"),
])
def test_usage_errors_exit_2(cli: Cli, args: list[str], message: str) -> None:
    """One line on stderr (no box): which option, what was wrong, what is accepted."""
    run = cli(*args)
    assert run.code == 2 and run.out == ""
    assert len(run.err_lines) == 1 and run.err.startswith("mqadmin: error: "), run.err
    assert message in run.err and "Value error" not in run.err and "Input should" not in run.err


@pytest.mark.parametrize("output", ["json", "yaml"])
@pytest.mark.parametrize("args,status,error", [
    (["topicList", "-n", "bad"], 1, "-n/--namesrvAddr: 'bad' is not host:port"),
    (["topicList", "-n", "127.0.0.1:1"], 1, "127.0.0.1:1: GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206): connection refused"),
    (["topicRoute", "-t", "x", "--timeout", "soon"], 2, "topicRoute: --timeout: 'soon' is not a number"),
    (["diff-namesrv", "-n", "bad"], 1, "-n/--namesrvAddr: 'bad' is not host:port"),
])
def test_every_outcome_is_a_document_under_json_and_yaml(cli: Cli, output: str, args: list[str], status: int,
                                                         error: str) -> None:
    """``jq`` always reads something: bad -n, every server refused, a usage error. The
    error is never null when the status is not ok; stderr keeps the human line."""
    run = cli(*args, "-o", output)
    doc = run.json() if output == "json" else run.yaml()
    assert run.code == status and doc["exit_status"] == status
    assert doc["status"] in ("error", "usage") and error in doc["error"]
    assert f"mqadmin: error: {doc['error']}" in run.err_lines


def test_help_short_option_and_plain_metavars(cli: Cli) -> None:
    top = cli("-h")
    assert top.code == 0 and "topicList" in top.out and "--install-completion" in top.out
    assert "<bool>" not in top.out
    for command in ("analyze", "topicRoute", "fixture", "namesrv"):
        run = cli(command, "-h")
        assert run.code == 0 and "No such option" not in run.err, command
    analyze = cli("analyze", "-h")
    assert "{captures}" not in analyze.out and "[OPTIONS] CAPTURES" in analyze.out
    assert "<bool>" not in cli("topicRoute", "-h").out and "<bool>" not in analyze.out
    assert all("<bool>" not in cli(group, "-h").out for group in ("namesrv", "fixture", "bench"))


def test_help_is_not_cut_mid_phrase_at_80_columns() -> None:
    """Paragraphs are reflowed: a pipe at 80 columns shows no line of one or two words
    that the docstring's own line breaks left behind ("158" then "dashes")."""
    env = {**__import__("os").environ, "COLUMNS": "80"}
    proc = subprocess.run([sys.executable, "-m", "mqadmin", "topicRoute", "-h"], capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 0
    text = proc.stdout
    assert "one line per broker, 158 dashes" in " ".join(text.split())
    assert not any(line.strip() in ("158", "same", "(exit", "queue", "changes") for line in text.splitlines())
    assert all(len(line) <= 80 for line in text.splitlines())


def test_help_lists_the_commands_and_exit_codes(cli: Cli) -> None:
    run = cli("--help")
    assert run.code == 0 and EXIT_CODES in flat(run.out)
    for name in ADMIN_COMMANDS:
        assert f" {name} " in run.out
    route = cli("topicRoute", "-h")  # Java's -h works too
    assert route.code == 0
    for option in ("--topic", "-t", "--namesrvAddr", "-n", "--output", "-o", "--timeout", "--profile"):
        assert option in route.out
    assert "--traceback" not in route.out and EXIT_CODES in flat(route.out)


def test_command_names_match_whatever_the_case_as_in_java(cli: Cli, addrs: list[str]) -> None:
    for name in ("clusterlist", "CLUSTERLIST", "ClusterList"):
        run = cli(name, "-n", addrs[0], "-o", "json")
        assert run.code == 0 and run.out.lstrip().startswith("{"), name
    assert cli("topicroute", "-h").code == 0
    unknown = cli("clusterlists")
    assert unknown.code == 2 and "No such command 'clusterlists'" in flat(unknown.err)


def test_help_in_a_real_process() -> None:
    proc = subprocess.run([sys.executable, "-m", "mqadmin", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "clusterList" in proc.stdout and "Exit codes:" in proc.stdout


def test_traceback_flag_reraises() -> None:
    result = CliRunner().invoke(app, ["topicRoute", "-t", "x", "-n", "bad", "--traceback"], env={"NAMESRV_ADDR": None})
    assert isinstance(result.exception, AddressError)


def test_a_bug_is_one_line_unless_traceback(cli: Cli, addrs: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(table: object) -> dict[str, str]:
        raise RuntimeError("boom")

    monkeypatch.setattr(answers, "sorted_map", broken)
    run = cli("getNamesrvConfig", "-n", addrs[0])
    assert run.code == 1 and run.out == ""
    assert run.err_lines == ["mqadmin: error: unexpected RuntimeError: boom (run with --traceback for details)"]
    result = CliRunner().invoke(app, ["getNamesrvConfig", "-n", addrs[0], "--traceback"])
    assert isinstance(result.exception, RuntimeError)


def test_a_path_that_cannot_be_used_is_one_line_naming_it(tmp_path: Path) -> None:
    occupied = tmp_path / "a-file"
    occupied.write_text("not a directory")
    result = CliRunner().invoke(app, ["snapshot", "-n", "127.0.0.1:1", "--out", str(occupied / "captures"),
                                      "--rounds", "1", "--timeout", "0.2"])
    assert result.exit_code == 1
    assert f"mqadmin: error: {occupied / 'captures'}: Not a directory" in result.output
    assert "unexpected" not in result.output and "Traceback" not in result.output


def test_a_reader_that_goes_away_stops_the_command_quietly(namesrv: NameServerProcess) -> None:
    """`diff-namesrv --watch ... | head -1`: exit 141 (128 + SIGPIPE), nothing on stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "mqadmin", "diff-namesrv", "-n", namesrv.addr, "--watch", "0.05",
                             "--count", "2000", "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b'{"schema_version":1')
    proc.stdout.close()
    assert proc.wait(timeout=60) == 141
    assert proc.stderr.read() == b""
