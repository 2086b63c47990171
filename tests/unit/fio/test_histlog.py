"""The fast histogram-log reader gives exactly what the general parser gives, or steps aside."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ssdbench.fio.histlog import SparseLog, parse_sparse
from ssdbench.fio.logs import bin_edges_ns, hist_percentiles, load_hist_log, load_log

DATA = Path(__file__).resolve().parents[2] / "data" / "fio"
REAL_LOGS = sorted(DATA.glob("*/fio/*_clat_hist.1.log"))


def dense(log: SparseLog) -> np.ndarray:
    table = np.zeros((log.nrows, log.ncols))
    table[log.rows, log.cols] = log.values
    return table


def row_percentiles(counts: np.ndarray, percentiles: tuple[float, ...]
                    ) -> tuple[list[float], float]:
    """One row the plain way: the midpoint of the first bin whose running count reaches each
    percentile, and of the highest non-empty bin (µs)."""
    lower, upper = bin_edges_ns(counts.size)
    mid = (lower + upper) / 2000.0
    running, total = np.cumsum(counts), counts.sum()
    pct = [float(mid[np.flatnonzero(running >= total * p / 100.0 - 1e-9)[0]])
           for p in percentiles]
    return pct, float(mid[np.flatnonzero(counts)[-1]])


def fio_text(table: np.ndarray) -> bytes:
    """A table written the way fio writes its logs: ", " between fields, "\\n" after each row."""
    return b"".join(b", ".join(b"%d" % v for v in row) + b"\n" for row in table.tolist())


def test_real_fio_histogram_logs_take_the_fast_path_and_agree() -> None:
    assert len(REAL_LOGS) >= 3  # write (torture, cancelled) and read (randread) logs
    for path in REAL_LOGS:
        fast = parse_sparse(path.read_bytes())
        assert fast is not None, path
        general = load_log(path, min_cols=4)
        assert fast.ncols == 3 + 232
        np.testing.assert_array_equal(dense(fast), general)


def test_the_read_log_has_direction_zero() -> None:
    log = parse_sparse((DATA / "randread-3s/fio/randread_clat_hist.1.log").read_bytes())
    assert log is not None
    assert log.column(1).tolist() == [0] * log.nrows
    assert log.column(2).tolist() == [4096] * log.nrows


@pytest.mark.parametrize("seed", range(5))
def test_random_tables_with_long_numbers_and_zero_edges(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows, bins = int(rng.integers(1, 400)), 232
    table = np.zeros((rows, 3 + bins), dtype=np.int64)
    table[:, 0] = np.cumsum(rng.integers(990, 1010, rows))
    table[:, 1] = rng.integers(0, 2, rows)
    table[:, 2] = 4096
    for r in range(rows):
        hot = rng.integers(0, bins, int(rng.integers(0, 60)))
        # every length from 1 to 18 digits, and values that end a row or start the bins
        digits = rng.integers(1, 19, hot.size)
        table[r, 3 + hot] = [int(rng.integers(10 ** (d - 1), 10**d)) for d in digits]
    table[0, -1] = 7
    table[rows - 1, 0] = 0  # a row that starts with zero (a timestamp of 0 ms)
    if rows > 2:
        table[1, :] = 0  # a row of zeros only
    table[-1, 3] = 123456789012  # 12 digits
    table[rows // 2, 0] = 86_400_123  # a timestamp of 8 digits: one whole 64-bit word
    log = parse_sparse(fio_text(table))
    assert log is not None
    np.testing.assert_array_equal(dense(log), table)


@pytest.mark.parametrize("text", [
    b"1000,1,4096,0,5\n",  # no space after the commas
    b"1000, 1, 4096, 0, 5",  # torn last line
    b"1000, 1, 4096, 0, 5\n2000, 1, 4096, 0\n",  # rows of different widths
    b"1000, 1, 4096, 0.5, 5\n",  # not an integer
    b"1000, 1, 4096,  0, 5\n",  # two spaces
    b"1000, 1, 4096, 00, 5\n",  # a leading zero
    b"1000, 1, 4096, 1234567890123456789012, 5\n",  # beyond 64 bits
    b"",
    b"\n",
])
def test_other_layouts_step_aside_and_the_general_parser_answers(
        text: bytes, tmp_path: Path) -> None:
    assert parse_sparse(text) is None
    path = tmp_path / "x_clat_hist.1.log"
    path.write_bytes(text)
    try:
        expected = load_log(path, min_cols=4)
    except ValueError:
        return  # not a log at all: both ways refuse it
    np.testing.assert_array_equal(dense(load_hist_log(path)), expected)


def test_percentiles_per_second_match_the_dense_computation() -> None:
    rng = np.random.default_rng(3)
    rows, bins = 50, 232
    table = np.zeros((rows, 3 + bins), dtype=np.int64)
    table[:, 0] = np.arange(1, rows + 1) * 1000 + 1
    table[:, 1] = 1
    table[:, 2] = 4096
    table[10, 1] = 0  # a read row: not the write direction
    table[20, 0] = table[19, 0] + 3  # a second stamp of second 19: the first row wins
    for r in range(rows):
        table[r, 3 + rng.integers(100, 140, 20)] = rng.integers(1, 5000, 20)
    table[30, 3:] = 0  # a second without samples
    log = parse_sparse(fio_text(table))
    assert log is not None
    pct, mx = hist_percentiles(log, 1, rows, (99.0, 99.99))

    want = np.full((rows, 2), np.nan)
    want_max = np.full(rows, np.nan)
    for r in range(rows):
        sec = int(np.rint(table[r, 0] / 1000)) - 1
        if table[r, 1] != 1 or r == 20 or not table[r, 3:].any():
            continue
        want[sec], want_max[sec] = row_percentiles(table[r, 3:], (99.0, 99.99))
    np.testing.assert_array_equal(pct, want)
    np.testing.assert_array_equal(mx, want_max)
    assert np.isnan(pct[10]).all()  # the read row is not counted
    assert np.isnan(mx[30])
