"""The sanitiser for untrusted strings (ssdbench.untrusted, #28): its three rules. Where
they are used: tests/unit/test_hostile_strings.py."""

from __future__ import annotations

import pytest

from ssdbench.untrusted import csv_cell, path_part, shown, without_url_secrets


@pytest.mark.parametrize(("raw", "out"), [
    ("plain ASCII", "plain ASCII"), ("\x1b[2J\x07\r\x00", "?[2J???"),
    ("tab\there", "tab?here"), ("\u202eevil\u200b", "?evil?"), ("\x9b31m", "?31m"),
    ("Ünïcödé model", "Ünïcödé model")])
def test_shown_replaces_control_and_invisible_characters(raw: str, out: str) -> None:
    assert shown(raw) == out
    assert shown("x" * 500, limit=10) == "x" * 9 + "…"


@pytest.mark.parametrize(("raw", "out"), [
    (".", "_"), ("..", "_."), ("../..", "_._.."), ("a/b\\c", "a_b_c"), ("", "_"),
    ("  ", "_"), ("nul\x00", "nul_"), (".hidden", "_hidden"), ("SN-123_4.5", "SN-123_4.5")])
def test_path_part_never_gives_a_dot_segment_or_a_separator(raw: str, out: str) -> None:
    assert path_part(raw) == out
    assert len(path_part("x" * 300)) == 64


@pytest.mark.parametrize(("raw", "out"), [
    ("=1+1", "'=1+1"), ("+cmd", "'+cmd"), ("-cmd", "'-cmd"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\tx", "'\tx"), ("\rx", "'\rx"), ("-3.5", "-3.5"), ("+12", "+12"), ("1e-3", "1e-3"),
    ("Samsung SSD", "Samsung SSD")])
def test_csv_cells_cannot_be_formulas_but_numbers_stay_numbers(raw: str, out: str) -> None:
    assert csv_cell(raw) == out


@pytest.mark.parametrize(("text", "kept"), [
    ("ssdbench.config=https://lab:pw@cfg.lab/k.toml x=1",
     "ssdbench.config=https://REMOVED@cfg.lab/k.toml x=1"),
    ("u=http://cfg.lab:8080/k.toml?token=abc#frag y", "u=http://cfg.lab:8080/k.toml?REMOVED y"),
    ("s3 https://key:se@cr:et@store.lab/b?X-Amz=1", "s3 https://REMOVED@store.lab/b?REMOVED"),
    ("no url here: root=/dev/sda2 a@b", "no url here: root=/dev/sda2 a@b"),
    ("http://host/path", "http://host/path"),
])
def test_without_url_secrets(text: str, kept: str) -> None:
    assert without_url_secrets(text) == kept
