"""The process boundary, exercised with real processes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ssdbench.system import (
    CommandError,
    CommandLogFile,
    CommandNotFound,
    CommandRecord,
    CommandTimeout,
    SystemRunner,
)


def test_run_returns_output_and_records() -> None:
    records: list[CommandRecord] = []
    runner = SystemRunner()
    runner.add_sink(records.append)
    result = runner.run(["sh", "-c", "echo hello; echo warn >&2; echo $LANG"])
    assert result.text == "hello\nC.UTF-8\n"
    assert result.stderr_text == "warn\n"
    assert records[0].argv == ("sh", "-c", "echo hello; echo warn >&2; echo $LANG")
    assert records[0].returncode == 0 and records[0].outcome == "ok"
    assert records[0].stdout_bytes == len(b"hello\nC.UTF-8\n")


def test_stdin_is_dev_null() -> None:
    assert SystemRunner().run(["cat"], timeout=5).stdout == b""


def test_environment_is_explicit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSDBENCH_LEAK_CHECK", "leaked")
    out = SystemRunner().run(["sh", "-c", "echo ${SSDBENCH_LEAK_CHECK:-clean}"]).text
    assert out == "clean\n"


def test_bad_exit_code_raises_with_command_and_stderr() -> None:
    with pytest.raises(CommandError) as info:
        SystemRunner().run(["sh", "-c", "echo broken drive >&2; exit 3"])
    assert info.value.returncode == 3
    assert "sh -c 'echo broken drive >&2; exit 3'" in str(info.value)
    assert "broken drive" in str(info.value)


def test_allowed_exit_codes() -> None:
    assert SystemRunner().run(["sh", "-c", "exit 2"], ok_codes=(0, 2)).returncode == 2


def test_timeout_kills_the_whole_group() -> None:
    records: list[CommandRecord] = []
    runner = SystemRunner()
    runner.add_sink(records.append)
    t0 = time.monotonic()
    with pytest.raises(CommandTimeout):
        runner.run(["sh", "-c", "sleep 30 & sleep 30; wait"], timeout=0.5)
    assert time.monotonic() - t0 < 10
    assert records[-1].outcome == "timeout"


def test_missing_program() -> None:
    with pytest.raises(CommandNotFound, match="not installed"):
        SystemRunner().run(["ssdbench-no-such-tool-xyz"])


def test_shell_strings_are_refused() -> None:
    with pytest.raises(TypeError):
        SystemRunner().run("ls -l")


def test_stream_chunks_and_wait() -> None:
    runner = SystemRunner()
    with runner.stream(["sh", "-c", "for i in 1 2 3; do echo $i; done"]) as proc:
        data = b"".join(proc.chunks(idle_timeout=10))
        result = proc.wait()
    assert data == b"1\n2\n3\n" and result.returncode == 0


def test_stream_idle_watchdog_stops_a_hung_command() -> None:
    runner = SystemRunner()
    proc = runner.stream(["sh", "-c", "echo start; sleep 60"])
    got = []
    with pytest.raises(CommandTimeout, match="no output"):
        for chunk in proc.chunks(idle_timeout=0.5):
            got.append(chunk)
    assert got == [b"start\n"]
    proc.wait()  # already terminated: recorded as killed, not raised


def test_log_file_sink(tmp_path: Path) -> None:
    runner = SystemRunner()
    log = tmp_path / "log.txt"
    runner.add_sink(CommandLogFile(log))
    runner.run(["true"])
    with pytest.raises(CommandError):
        runner.run(["sh", "-c", "echo nope >&2; exit 1"])
    text = log.read_text()
    assert "rc=0 ok" in text and "$ true" in text
    assert "rc=1 failed" in text and "stderr: nope" in text


def test_a_hidden_secret_reaches_the_command_but_no_log_line_or_error() -> None:
    """hidden_in_logs (a PSID on sedutil-cli's command line): the process gets the real
    argument; the CommandRecord (log.txt, the run screen) and the CommandError show ***."""
    from ssdbench.system import CommandError, SystemRunner, hidden_in_logs

    runner = SystemRunner()
    records: list[CommandRecord] = []
    runner.add_sink(records.append)
    with hidden_in_logs("PSIDABCDEF123"):
        res = runner.run(["echo", "x-PSIDABCDEF123"])
        with pytest.raises(CommandError) as failed:
            runner.run(["sh", "-c", "exit 3", "PSIDABCDEF123"])
    assert res.text == "x-PSIDABCDEF123\n"
    assert [r.argv[-1] for r in records] == ["x-***", "***"]
    assert "PSIDABCDEF123" not in "".join(r.log_line() for r in records)
    assert "PSIDABCDEF123" not in str(failed.value) + repr(failed.value.argv)
    runner.run(["echo", "PSIDABCDEF123"])  # outside: shown as given
    assert records[-1].argv[-1] == "PSIDABCDEF123"
