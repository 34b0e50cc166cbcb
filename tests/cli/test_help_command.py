"""``mqadmin help <command>``, as Java's mqadmin has it: the command's own --help."""

from __future__ import annotations

from typing import Callable

import pytest

from tests.cli.conftest import Run
from tests.cli.helpers import flat

Cli = Callable[..., Run]


@pytest.mark.parametrize("words,same_as", [
    (["topicRoute"], ["topicRoute", "--help"]),
    (["topicroute"], ["topicRoute", "--help"]),
    (["TOPICCLUSTERLIST"], ["topicClusterList", "-h"]),
    (["allocatemq"], ["allocateMQ", "--help"]),
    ([], ["--help"]),
    (["fixture", "up"], ["fixture", "up", "--help"]),
    (["NAMESRV"], ["namesrv", "--help"]),
], ids=["exact-name", "lower-case", "upper-case", "new-command", "top-level", "group-and-sub-command", "group"])
def test_help_prints_the_commands_own_help(cli: Cli, words: list[str], same_as: list[str]) -> None:
    expected = cli(*same_as)
    assert expected.code == 0 and expected.out
    run = cli("help", *words)
    assert (run.code, run.out, run.err) == (0, expected.out, "")


def test_help_of_a_command_shows_its_options_and_usage(cli: Cli) -> None:
    run = cli("help", "wipewriteperm")
    assert run.code == 0
    assert "Usage: mqadmin wipeWritePerm [OPTIONS]" in run.out
    assert "--brokerName" in run.out and "Exit codes:" in flat(run.out)


def test_help_is_listed_with_a_short_line(cli: Cli) -> None:
    listing = cli("--help")
    assert "help Show a command's help (as Java's `mqadmin help <command>`)." in flat(listing.out)
    for name in ("topicClusterList", "allocateMQ"):
        assert f" {name} " in listing.out
    own = cli("help", "help")
    assert own.code == 0 and "Usage: mqadmin help [OPTIONS] [COMMAND]..." in own.out


@pytest.mark.parametrize("words,message", [
    (["nosuch"], "mqadmin: error: unknown command 'nosuch'; 'mqadmin --help' lists them"),
    (["topicrout"], "mqadmin: error: unknown command 'topicrout' (did you mean 'topicRoute' or 'topicList'?); "
                    "'mqadmin --help' lists them"),
    (["fixture", "chek"], "mqadmin: error: unknown command 'chek' (did you mean 'check'?); "
                         "'mqadmin fixture --help' lists them"),
    (["topicRoute", "extra"], "mqadmin: error: 'mqadmin topicRoute' has no sub-command 'extra'"),
], ids=["unknown", "near-miss", "unknown-in-group", "below-a-command"])
def test_unknown_command_is_one_line_and_exit_2(cli: Cli, words: list[str], message: str) -> None:
    run = cli("help", *words)
    assert (run.code, run.out, run.err_lines) == (2, "", [message])
