"""A scripted runner for the erase tests: recorded outputs per argv, in sequence.

Each argv has a queue of replies, consumed in order; an argv with no (more) replies raises
RecordingMissing naming it. ``calls`` keeps every argv in the order it ran, so tests can
check the sequence (and the journal callback order, via ``events``).

(``ssdbench.devices.bundle.ReplayRunner`` from the discovery room is the general one; this
is the small fake the brief allows until that lands.)
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ssdbench.erase.journal import MemoryPasswordJournal, PasswordEntry
from ssdbench.system import (
    CommandError,
    CommandSink,
    RecordingMissing,
    Result,
    RunningProcess,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "erase"
END_OF_HEADER = "# --- end of header; verbatim content follows ---\n"


def fixture(rel: str) -> str:
    """A test data file's content, without its ``# source:`` header."""
    text = (DATA / rel).read_text(encoding="utf-8")
    if END_OF_HEADER in text:
        text = text.split(END_OF_HEADER, 1)[1]
    return text


@dataclass(frozen=True)
class Reply:
    stdout: bytes = b""
    stderr: str = ""
    returncode: int = 0
    exception: Exception | None = None


class FakeClock:
    """monotonic() moves only when sleep() is called (polling loops never really wait)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class ScriptedRunner:
    def __init__(self, *, scratch: Path | None = None) -> None:
        self.queues: dict[tuple[str, ...], deque[Reply]] = {}
        self.calls: list[tuple[str, ...]] = []
        self.timeouts: dict[str, float | None] = {}  # argv[0..1] joined -> last timeout
        self.events: list[str] = []  # calls and journal events interleaved
        self.scratch = str(scratch) if scratch else None

    def _key(self, argv: Sequence[str]) -> tuple[str, ...]:
        if self.scratch is None:
            return tuple(argv)
        return tuple(a.replace(self.scratch, "{SCRATCH}") for a in argv)

    def add(
        self,
        argv: Sequence[str],
        stdout: str | bytes = b"",
        *,
        stderr: str = "",
        returncode: int = 0,
        exception: Exception | None = None,
    ) -> ScriptedRunner:
        out = stdout.encode() if isinstance(stdout, str) else stdout
        self.queues.setdefault(tuple(argv), deque()).append(
            Reply(out, stderr, returncode, exception)
        )
        return self

    def run(
        self,
        argv: Sequence[str],
        *,
        ok_codes: Sequence[int] = (0,),
        timeout: float | None = 60.0,
        env: Mapping[str, str] | None = None,
    ) -> Result:
        key = self._key(argv)
        self.calls.append(key)
        self.timeouts[" ".join(key[:4])] = timeout
        self.events.append("run " + " ".join(key))
        queue = self.queues.get(key)
        if not queue:
            raise RecordingMissing(argv, "no (more) recorded output for this argv")
        reply = queue.popleft()
        if reply.exception is not None:
            raise reply.exception
        if reply.returncode not in ok_codes:
            raise CommandError(
                argv, f"exit code {reply.returncode}", returncode=reply.returncode,
                stderr=reply.stderr, stdout=reply.stdout,
            )
        return Result(tuple(argv), reply.returncode, reply.stdout, reply.stderr.encode(), 0.0)

    def stream(
        self,
        argv: Sequence[str],
        *,
        ok_codes: Sequence[int] = (0,),
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
    ) -> RunningProcess:
        raise RecordingMissing(argv, "the erase room never streams")

    def add_sink(self, sink: CommandSink) -> None:
        pass

    def remove_sink(self, sink: CommandSink) -> None:
        pass

    def unused(self) -> list[tuple[str, ...]]:
        return [k for k, q in self.queues.items() if q]

    @classmethod
    def from_recording(cls, directory: Path, *, scratch: Path | None = None) -> ScriptedRunner:
        """Load a recording made by tests/integration/guest_erase.py."""
        runner = cls(scratch=scratch)
        for call in json.loads((directory / "commands.json").read_text()):
            runner.add(
                call["argv"],
                (directory / call["stdout"]).read_bytes(),
                stderr=call["stderr"],
                returncode=call["returncode"],
            )
        return runner


class FakeFS:
    def __init__(self, files: dict[str, str] | None = None) -> None:
        self.files = files or {}

    def read_text(self, path: str) -> str | None:
        return self.files.get(path)

    def listdir(self, path: str) -> list[str]:
        return []

    def readlink(self, path: str) -> str | None:
        return None

    def exists(self, path: str) -> bool:
        return path in self.files


class EventJournal(MemoryPasswordJournal):
    """A MemoryPasswordJournal that also logs into the runner's event list (ordering)."""

    def __init__(self, runner: ScriptedRunner, passwords: dict[str, str] | None = None) -> None:
        super().__init__(passwords)
        self.runner = runner

    def record_password(self, entry: PasswordEntry) -> None:
        super().record_password(entry)
        self.runner.events.append(f"journal record {entry.serial}")

    def clear_password(self, entry: PasswordEntry) -> None:
        super().clear_password(entry)
        self.runner.events.append(f"journal clear {entry.serial}")
