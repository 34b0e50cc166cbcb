"""Unix manners through the real entry point: shell completion and a reader that goes away."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import kept_brokers

MQADMIN = str(Path(sys.executable).parent / "mqadmin")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("_MQADMIN") and k != "NAMESRV_ADDR"}
    env["PATH"] = str(Path(MQADMIN).parent) + os.pathsep + env.get("PATH", "")
    return {**env, **extra}


#: bash -c runs a lone command in its own process (exec), so mqadmin would detect the shell
#: above the test instead, and there is none when the tests run detached from a terminal
#: (nohup, a CI runner): a second command keeps bash as mqadmin's parent.
BASH_PARENT = "%s; exit $?"


def _complete(shell: str, words: str) -> list[str]:
    """What the completion script of ``shell`` asks mqadmin for, the way the script asks."""
    if shell == "bash":
        extra = {"COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1)}
    else:
        extra = {"_TYPER_COMPLETE_ARGS": words, "_TYPER_COMPLETE_FISH_ACTION": "get-args"}
    proc = subprocess.run([MQADMIN], env=_env(_MQADMIN_COMPLETE=f"complete_{shell}", **extra),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


@pytest.mark.parametrize("shell,marker", [
    ("bash", "complete -o default -F _mqadmin_completion mqadmin"),
    ("zsh", "compdef _mqadmin_completion mqadmin"),
    ("fish", "complete --command mqadmin"),
])
def test_completion_scripts_for_bash_zsh_fish(shell: str, marker: str) -> None:
    script = subprocess.run([MQADMIN], env=_env(_MQADMIN_COMPLETE=f"source_{shell}"), capture_output=True, text=True,
                            timeout=60)
    assert script.returncode == 0 and marker in script.stdout and f"complete_{shell}" in script.stdout
    # the camelCase names complete from their first letters, options too
    assert any("topicList" in line for line in _complete(shell, "mqadmin topicL"))
    assert any("--namesrvAddr" in line for line in _complete(shell, "mqadmin topicRoute --names"))


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completes_through_the_shown_script(tmp_path: Path) -> None:
    """--show-completion (shell detected: bash) sourced into a real bash completes commands."""
    shown = subprocess.run(["bash", "-c", BASH_PARENT % "mqadmin --show-completion"], env=_env(), capture_output=True, text=True,
                           timeout=60)
    assert shown.returncode == 0, shown.stderr
    (tmp_path / "mqadmin.sh").write_text(shown.stdout)
    probe = ('source ./mqadmin.sh; COMP_WORDS=(mqadmin getN); COMP_CWORD=1; _mqadmin_completion mqadmin; '
             'printf "%s\\n" "${COMPREPLY[@]}"')
    done = subprocess.run(["bash", "-c", probe], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["getNamesrvConfig"], done.stderr


def test_install_completion_writes_the_bash_script(tmp_path: Path) -> None:
    done = subprocess.run(["bash", "-c", BASH_PARENT % "mqadmin --install-completion"], env=_env(HOME=str(tmp_path)),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    script = tmp_path / ".bash_completions" / "mqadmin.sh"
    assert "_MQADMIN_COMPLETE=complete_bash" in script.read_text()
    assert str(script) in (tmp_path / ".bashrc").read_text()


def _closed_reader(args: list[str]) -> subprocess.CompletedProcess[str]:
    """Run mqadmin with stdout a pipe whose reader has already gone (``| head`` done)."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([MQADMIN, *args], stdout=write, stderr=subprocess.PIPE, text=True, env=_env(),
                              timeout=60)
    finally:
        os.close(write)
    return proc


@pytest.mark.parametrize("args", [
    ["topicList"], ["topicList", "-o", "json"], ["topicRoute", "-t", "piped", "-l"], ["clusterList", "-o", "yaml"],
    ["getNamesrvConfig"], ["topicList", "-o", "json", "-n", "bad"], ["topicRoute", "-h"],
], ids=["table", "json", "java-layout", "yaml", "config", "error-document", "help"])
def test_a_reader_that_went_away_exits_141_quietly(addrs: list[str], args: list[str]) -> None:
    with kept_brokers() as reg:
        reg(addrs, "broker-pipe", "127.0.0.1:10999", {"piped": 4})
        full = [*args, "-n", ";".join(addrs)] if "-n" not in args and "-h" not in args else args
        proc = _closed_reader(full)
    assert proc.returncode == 141, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr
