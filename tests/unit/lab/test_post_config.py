"""``[post]`` of the kiosk config (lab/config.py parse_post, docs/lab.md "Results out: POST to
an asset system"): every bad value names its key and the form expected, and no message, repr
or warning ever shows the token or the password."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ssdbench.lab.config import PostConfig, StoreConfigError, parse_post

TOKEN = "Tk9-post-secret"
PASSWORD = "Pw7-post-secret"


def bad(section: object, tmp_path: Path) -> StoreConfigError:
    with pytest.raises(StoreConfigError) as info:
        parse_post(section, tmp_path)
    for secret in (TOKEN, PASSWORD):
        assert secret not in str(info.value)
    return info.value


def test_a_full_https_section_parses(tmp_path: Path) -> None:
    (tmp_path / "lab-ca.pem").write_text("x")
    cfg = parse_post({"url": " HTTPS://assets.lab.example/api/ssdbench ", "token": TOKEN,
                      "ca_file": "lab-ca.pem", "what": "runs"}, tmp_path)
    assert cfg.url == "https://assets.lab.example/api/ssdbench"
    assert cfg.token is not None and cfg.token.reveal() == TOKEN
    assert cfg.ca_file == tmp_path / "lab-ca.pem"
    assert cfg.what == "runs"
    assert cfg.warning is None
    assert cfg.describe() == "https://assets.lab.example/api/ssdbench"
    for text in (repr(cfg), str(cfg), f"{cfg}"):
        assert TOKEN not in text


def test_defaults_are_records_and_no_credentials(tmp_path: Path) -> None:
    cfg = parse_post({"url": "https://assets.lab.example/in"}, tmp_path)
    assert cfg == PostConfig(url="https://assets.lab.example/in")
    assert cfg.secrets() == []


def test_basic_auth_is_a_secret_too(tmp_path: Path) -> None:
    cfg = parse_post({"url": "https://a.example/in", "username": "bench",
                      "password": PASSWORD}, tmp_path)
    assert cfg.password is not None and cfg.secrets() == [PASSWORD]
    assert PASSWORD not in repr(cfg)


@pytest.mark.parametrize("url, words", [
    ("", "missing"),
    ("assets.lab.example/api", "not a URL"),
    ("ftp://assets.lab.example/api", "not http or https"),
    ("htps://assets.lab.example/api", "not http or https"),
    ("https://", "no host"),
    ("https://assets.lab.example:99999/api", "port"),
    ("https:assets.lab.example", "write http:// or https://"),
    ("https://assets.lab.example/a path", "space"),
])
def test_bad_urls_name_the_key(tmp_path: Path, url: str, words: str) -> None:
    err = bad({"url": url, "token": TOKEN}, tmp_path)
    assert err.key == "post.url"
    assert words in err.problem


def test_a_password_in_the_url_is_refused_and_never_shown(tmp_path: Path) -> None:
    err = bad({"url": f"https://bench:{PASSWORD}@assets.lab.example/api"}, tmp_path)
    assert err.key == "post.url" and "token" in err.problem
    err = bad({"url": f"ftp://bench:{PASSWORD}@assets.lab.example/api"}, tmp_path)
    assert err.key == "post.url"


def test_plain_http_with_a_token_is_a_clear_warning(tmp_path: Path) -> None:
    cfg = parse_post({"url": "http://assets.lab.example/api", "token": TOKEN}, tmp_path)
    assert cfg.warning is not None
    assert "plain HTTP" in cfg.warning and "https://" in cfg.warning
    assert TOKEN not in cfg.warning
    # without credentials there is nothing to read on the wire but the records
    assert parse_post({"url": "http://assets.lab.example/api"}, tmp_path).warning is None


@pytest.mark.parametrize("section, key, words", [
    ({"url": "https://a.example/", "colour": "red"}, "post.colour", "unknown key"),
    ({"url": "https://a.example/", "what": "everything"}, "post.what", "records, runs"),
    ({"url": "https://a.example/", "username": "bench"}, "post.password", "go together"),
    ({"url": "https://a.example/", "password": PASSWORD}, "post.username", "go together"),
    ({"url": "https://a.example/", "token": TOKEN, "username": "b", "password": PASSWORD},
     "post.token", "either"),
    ({"url": "https://a.example/", "token": 12345}, "post.token", "expected a string"),
    ({"url": "https://a.example/", "token": "a\nb"}, "post.token", "line break"),
    ({"url": "https://a.example/", "username": "a:b", "password": PASSWORD}, "post.username",
     "':'"),
    ({"url": "https://a.example/", "ca_file": "missing.pem"}, "post.ca_file", "no such file"),
])
def test_bad_values_name_their_key(tmp_path: Path, section: dict[str, Any], key: str,
                                   words: str) -> None:
    err = bad(section, tmp_path)
    assert err.key == key and words in err.problem


def test_a_ca_file_for_plain_http_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("x")
    err = bad({"url": "http://a.example/", "ca_file": "ca.pem"}, tmp_path)
    assert err.key == "post.ca_file" and "https" in err.problem


def test_not_a_table(tmp_path: Path) -> None:
    assert bad("https://a.example/", tmp_path).key == "post"
