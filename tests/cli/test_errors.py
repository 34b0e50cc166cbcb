"""Usage errors, help, and the single place that turns exceptions into one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest
from typer.testing import CliRunner

from mqadmin import views
from mqadmin.cli import app
from mqadmin.errors import AddressError
from tests.cli.conftest import Run
from tests.cli.helpers import flat
from tests.nsprocess import NameServerProcess

Cli = Callable[..., Run]

EXIT_CODES = ("Exit codes: 0 ok; 1 error (bad input, nothing succeeded); 2 usage; 3 partial failure "
              "(some name servers failed or unreachable); 4 name servers disagree.")
ADMIN_COMMANDS = ["clusterList", "topicRoute", "topicList", "getKvConfig", "getNamesrvConfig", "wipeWritePerm",
                  "addWritePerm", "updateKvConfig", "deleteKvConfig", "updateNamesrvConfig", "updateOrderConf",
                  "deleteTopic"]


@pytest.mark.parametrize("args,message", [
    (["topicRoute"], "Missing option '-t' / '--topic'."),
    (["updateKvConfig", "-s", "ns", "-k", "k"], "Missing option '-v' / '--value'."),
    (["deleteTopic", "-t", "t"], "Missing option '-c' / '--clusterName'."),
    (["wipeWritePerm", "-b", "x", "-z"], "No such option: -z"),
    (["topicList", "-o", "xml"], "Invalid value for '-o' / '--output'"),
    (["updateOrderConf", "-t", "t", "-m", "post"], "Invalid value for '-m' / '--method'"),
    (["topicList", "--timeout", "0", "-n", "127.0.0.1:1"], "Invalid value for '--timeout': must be a positive number"),
    (["topicList", "--timeout", "nan", "-n", "127.0.0.1:1"], "Invalid value for '--timeout': must be a positive"),
    (["snapshot", "--out", "x", "--timeout", "-1", "-n", "127.0.0.1:1"], "Invalid value for '--timeout': must be"),
    (["diff-namesrv", "--watch", "nan", "-n", "127.0.0.1:1"], "Invalid value for '--watch': must be a positive"),
    (["topicRoute", "-t", "  ", "-n", "127.0.0.1:1"], "Invalid value for '-t': must not be empty"),
    (["clusterList", "-i", "-1"], "Invalid value for '-i' / '--interval'"),
    (["noSuchCommand"], "No such command 'noSuchCommand'."),
])
def test_usage_errors_exit_2(cli: Cli, args: list[str], message: str) -> None:
    run = cli(*args)
    assert run.code == 2 and run.out == ""
    assert message in flat(run.err)


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

    monkeypatch.setattr(views, "sorted_map", broken)
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
