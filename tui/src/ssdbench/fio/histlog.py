"""A fast reader for fio's latency histogram log, keeping only its non-zero counts.

A ``log_hist_msec=1000`` log holds one line per second: ``time_ms, ddir, bs, c0, …, c231``
(232 bins at ``log_hist_coarseness=3``). A 24-hour run is 86,400 lines and 20 million numbers,
nearly all of them ``0``: a generic text-to-array parse costs more than a second. This one
looks only at the numbers that are not zero:

* the starts of non-zero numbers are found with a few byte-wise numpy passes over 256 KiB
  chunks (a digit 1–9 after a separator; fio never prints leading zeros);
* each number is read from the 8 bytes at its start as one 64-bit word (its length is the
  first non-digit byte; the digits are combined in three multiply-and-shift steps); the rare
  longer number (timestamps past 27 hours) is finished digit by digit;
* a number's column follows from the gap to the previous one: between two non-zero numbers of
  a line there are only zero fields, each exactly ``"0, "`` (3 bytes).

Anything that is not fio's exact layout (other characters, other separators, lines of
different widths) makes :func:`parse_sparse` return ``None``,
and the caller parses the file the general way. The answers are the same either way
(tests/unit/fio/test_histlog.py compares them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
U8 = npt.NDArray[np.uint8]

CHUNK = 1 << 18
ALLOWED = b"0123456789, \n"
_U = np.uint64
_ZEROS = _U(0x3030303030303030)  # "00000000"
_DIGIT_BIT = _U(0x1010101010101010)  # set in every ASCII digit, clear in ',', ' ', '\n'
_BYTE_INDEX = _U(0x0001020304050607)  # multiply by 2^(8j): top byte becomes j


class _NotFioLayout(Exception):
    pass


@dataclass(frozen=True)
class SparseLog:
    """The non-zero numbers of a log: ``values[k]`` is at ``rows[k]``, column ``cols[k]``."""

    nrows: int
    ncols: int
    rows: I64
    cols: I64
    values: F64  # (fio prints integers; float keeps what the general parser reads)

    def column(self, col: int) -> F64:
        """One whole column (zeros included)."""
        out = np.zeros(self.nrows)
        pick = self.cols == col
        out[self.rows[pick]] = self.values[pick]
        return out

    @classmethod
    def from_dense(cls, table: npt.NDArray[np.float64]) -> SparseLog:
        rows, cols = np.nonzero(table)
        return cls(int(table.shape[0]), int(table.shape[1]), rows.astype(np.int64),
                   cols.astype(np.int64), table[rows, cols].astype(np.float64))


def _swar_digits(words: U64, length: U64) -> U64:
    """The value of the first ``length`` (1–8) ASCII digits of each little-endian word."""
    shift = length << _U(3)
    x = np.where(length == 8, words, (words << (_U(64) - shift)) | (_ZEROS >> shift))
    x = x - _ZEROS
    x = ((x * _U(10)) + (x >> _U(8))) & _U(0x00FF00FF00FF00FF)
    x = ((x * _U(100)) + (x >> _U(16))) & _U(0x0000FFFF0000FFFF)
    return ((x * _U(10000)) + (x >> _U(32))) & _U(0xFFFFFFFF)


def _finish_long(buf: U8, starts: I64, values: I64, lengths: I64, longer: I64) -> None:
    """Numbers of more than 8 digits: read on digit by digit (at most 18 in all)."""
    pos = starts[longer] + 8
    val = values[longer]
    todo = np.arange(longer.size)
    for _ in range(11):
        char = buf[pos[todo]]
        digit = char >= 48
        todo = todo[digit]
        if not todo.size:
            break
        val[todo] = val[todo] * 10 + (char[digit].astype(np.int64) - 48)
        pos[todo] += 1
    else:
        raise _NotFioLayout("a number of more than 18 digits")
    values[longer] = val
    lengths[longer] = pos - starts[longer]


def _word_reader(data: bytes) -> Callable[[I64], U64]:
    """words(starts)[k] = the 8 bytes from starts[k] as one little-endian word (past the
    end: newlines), read in place through an overlapping view (no copy of the log)."""
    n = len(data)
    pad = b"\n" * 8
    if n < 8:
        small: U64 = np.ndarray(shape=(n,), dtype="<u8", buffer=data + pad, strides=(1,))
        return lambda starts: small[starts]
    main: U64 = np.ndarray(shape=(n - 7,), dtype="<u8", buffer=data, strides=(1,))
    tail: U64 = np.ndarray(shape=(8,), dtype="<u8", buffer=data[-8:] + pad, strides=(1,))

    def words(starts: I64) -> U64:
        late = starts > n - 8
        out = main[np.minimum(starts, n - 8)]
        if late.any():
            out[late] = tail[starts[late] - (n - 8)]
        return out

    return words


def _chunk(buf: U8, words: Callable[[I64], U64], off: int,
           end: int) -> tuple[int, I64, I64, I64, I64]:
    """Whole lines ``buf[off:end]``: (lines, row, col, value) of its non-zero numbers and
    the number of fields of each line."""
    b = buf[off:end]
    sep = b < 48
    starts = np.flatnonzero((b[1:] > 48) & sep[:-1])
    starts += off + 1
    if b[0] > 48:
        starts = np.concatenate((np.array([off], dtype=np.int64), starts))
    newlines = np.flatnonzero(b == 10)
    newlines += off
    if not starts.size or not newlines.size:
        raise _NotFioLayout("no number that is not zero")

    word = words(starts)
    non_digit = ~word & _DIGIT_BIT
    length = (((non_digit & (~non_digit + _U(1))) >> _U(4)) * _BYTE_INDEX) >> _U(56)
    longer = non_digit == 0
    length[longer] = 8
    values = _swar_digits(word, length).view(np.int64)
    lengths = length.view(np.int64)
    if longer.any():
        _finish_long(buf, starts, values, lengths, np.flatnonzero(longer))
    ends = starts + lengths

    count = starts.size
    lines = newlines.size
    line_begin = np.empty(lines, dtype=np.int64)
    line_begin[0] = off
    line_begin[1:] = newlines[:-1] + 1
    row = np.searchsorted(newlines, starts)
    first_of_line = np.empty(count, dtype=bool)
    first_of_line[0] = True
    first_of_line[1:] = row[1:] != row[:-1]
    firsts = np.flatnonzero(first_of_line)
    # Bytes between a number and the previous one (after its ", "), or the line's start:
    # zero fields of 3 bytes ("0, ") each.
    after_prev = np.empty(count, dtype=np.int64)
    after_prev[0] = 0
    after_prev[1:] = ends[:-1] + 2
    after_prev[firsts] = line_begin[row[firsts]]
    gap = starts - after_prev
    step = gap // 3
    if (step * 3 != gap).any():
        raise _NotFioLayout("a separator other than ', '")
    step += 1
    running = np.cumsum(step)
    per_line = np.diff(firsts, append=count)
    col = running - np.repeat(running[firsts] - step[firsts] + 1, per_line)
    lasts = firsts + per_line - 1
    tail = newlines[row[lasts]] - ends[lasts]  # ", 0" per trailing zero field
    trailing = tail // 3
    if (trailing * 3 != tail).any():
        raise _NotFioLayout("a line that does not end in a number")
    # A line of zeros only is "0, 0, …, 0\n": 3 bytes a field, the last one 2.
    fields = (newlines - line_begin + 2) // 3
    if lasts.size != lines:
        zeros_only = np.ones(lines, dtype=bool)
        zeros_only[row[lasts]] = False
        if ((newlines - line_begin + 2)[zeros_only] % 3).any():
            raise _NotFioLayout("a line of zeros with other separators")
    fields[row[lasts]] = col[lasts] + 1 + trailing
    return lines, row, col, values, fields


def parse_sparse(data: bytes) -> SparseLog | None:
    """The non-zero numbers of a log in fio's exact layout; None for anything else."""
    if not data.endswith(b"\n") or data.translate(None, ALLOWED):
        return None
    n = len(data)
    buf: U8 = np.frombuffer(data, dtype=np.uint8)
    words = _word_reader(data)
    parts: list[tuple[I64, I64, I64, I64]] = []
    nrows = 0
    off = 0
    try:
        while off < n:
            end = data.rfind(b"\n", off, off + CHUNK) + 1 if off + CHUNK < n else n
            if end <= off:  # a line longer than a chunk
                end = data.find(b"\n", off) + 1
            lines, row, col, values, fields = _chunk(buf, words, off, end)
            parts.append((row + nrows, col, values, fields))
            nrows += lines
            off = end
    except _NotFioLayout:
        return None
    fields = np.concatenate([p[3] for p in parts])
    ncols = int(fields[0])
    if (fields != ncols).any():
        return None
    return SparseLog(nrows, ncols, np.concatenate([p[0] for p in parts]),
                     np.concatenate([p[1] for p in parts]),
                     np.concatenate([p[2] for p in parts]).astype(np.float64))
