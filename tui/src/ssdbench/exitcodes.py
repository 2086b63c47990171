"""Exit codes of the `ssdbench` command line (documented in docs/cli.md)."""

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILURE = 1  # a stage or command failed; details on stderr and in log.txt
    USAGE = 2  # bad arguments or a bad config/plan value (names the key)
    NO_SUCH_DRIVE = 3  # the named drive was not found; a kiosk `select` entry matched none
    REFUSED = 4  # safety: protected drive, missing or wrong --destroy consent
    UNSUPPORTED = 5  # the drive or machine cannot do what was asked (e.g. no erase method)
    INTERRUPTED = 130  # cancelled by the user (Ctrl-C)
