"""Exit statuses, one table for every command (README and --help show it)."""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    OK = 0
    #: bad input, or nothing succeeded
    ERROR = 1
    #: command-line usage error (unknown option, missing argument)
    USAGE = 2
    #: some name servers failed or were unreachable
    PARTIAL = 3
    #: name servers answered but disagree
    DISAGREE = 4
    #: Ctrl-C (128 + SIGINT); an interrupted write still reports each server
    INTERRUPTED = 130
    #: the reader of stdout went away (128 + SIGPIPE), as a shell pipeline expects
    BROKEN_PIPE = 141


EXIT_CODES_HELP = (
    "Exit codes: 0 ok; 1 error (bad input, nothing succeeded); 2 usage; "
    "3 partial failure (some name servers failed or unreachable); 4 name servers disagree; "
    "130 interrupted (Ctrl-C); 141 the output's reader went away."
)
