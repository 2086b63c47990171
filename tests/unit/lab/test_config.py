"""The kiosk config's [store] section: strictly validated, secrets never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from ssdbench.lab.config import StoreConfigError, parse_store, scrub

S3 = {"kind": "s3", "endpoint": "https://s3.lab.example:9000", "bucket": "ssdbench",
      "prefix": "lab1", "access_key": "AKIAEXAMPLEKEY", "secret_key": "wJalrXUtnFEMI-secret"}


def test_s3_section_and_secrets_hidden_in_repr() -> None:
    cfg = parse_store(dict(S3), Path("/stick"))
    assert cfg.describe() == "s3 https://s3.lab.example:9000/ssdbench/lab1"
    assert cfg.access_key is not None and cfg.access_key.reveal() == "AKIAEXAMPLEKEY"
    shown = repr(cfg) + str(cfg) + f"{cfg.secret_key}"
    assert "wJalrXUtnFEMI-secret" not in shown and "AKIAEXAMPLEKEY" not in shown
    assert scrub("key AKIAEXAMPLEKEY x", cfg.secrets()) == "key *** x"


@pytest.mark.parametrize(("change", "key"), [
    ({"kind": "ftp"}, "store.kind"),
    ({"endpoint": "s3.lab.example"}, "store.endpoint"),
    ({"endpoint": "https://u:p@s3.lab.example"}, "store.endpoint"),
    ({"bucket": "No_Such"}, "store.bucket"),
    ({"prefix": "a/../b"}, "store.prefix"),
    ({"secret_key": ""}, "store.access_key"),
    ({"username": "x"}, "store.username"),
    ({"colour": "red"}, "store.colour"),
    ({"status_seconds": 0}, "store.status_seconds"),
    ({"bench": "bench 7"}, "store.bench"),
    ({"ca_file": "missing.pem"}, "store.ca_file"),
])
def test_a_bad_value_names_its_key(change: dict[str, object], key: str) -> None:
    with pytest.raises(StoreConfigError) as err:
        parse_store({**S3, **change}, Path("/nonexistent"))
    assert err.value.key == key


def test_credentials_file_relative_to_the_config(tmp_path: Path) -> None:
    (tmp_path / "store.ini").write_text(
        "[bench]\naws_access_key_id = AKIAFILE\naws_secret_access_key = from-the-file\n")
    section = {k: v for k, v in S3.items() if not k.endswith("_key")}
    cfg = parse_store({**section, "credentials_file": "store.ini", "profile": "bench"}, tmp_path)
    assert cfg.secret_key is not None and cfg.secret_key.reveal() == "from-the-file"
    with pytest.raises(StoreConfigError, match=r"no \[default\]"):
        parse_store({**section, "credentials_file": "store.ini"}, tmp_path)


def test_webdav_section() -> None:
    cfg = parse_store({"kind": "webdav", "endpoint": "https://dav.lab/", "username": "b",
                       "password": "pw-1234"}, Path("."))
    assert cfg.endpoint == "https://dav.lab" and cfg.secrets() == ["pw-1234"]
    with pytest.raises(StoreConfigError, match="is for s3"):
        parse_store({"kind": "http", "endpoint": "https://dav.lab", "bucket": "x"}, Path("."))


def test_kiosk_config_names_the_store_key() -> None:
    from ssdbench.kiosk.config import ConfigError, parse_config

    cfg = parse_config({"plan": "diagnose", "store": dict(S3)}, "/stick/ssdbench.toml")
    assert cfg.store is not None and cfg.store.bucket == "ssdbench"
    with pytest.raises(ConfigError) as err:
        parse_config({"plan": "diagnose", "store": {**S3, "endpoint": "ftp://x"}},
                     "/stick/ssdbench.toml")
    assert err.value.key == "store.endpoint"
    assert str(err.value).startswith("/stick/ssdbench.toml: `store.endpoint`: expected")


@pytest.mark.parametrize("endpoint", ["ftp://bench:Zq7-pw@dav.lab/", "htps://bench:Zq7-pw@dav.lab",
                                      "https://bench:Zq7 pw/x@dav.lab/"])
def test_a_bad_endpoint_is_named_without_its_password(endpoint: str) -> None:
    """#42 item 4: the error quoted the endpoint as written, its password with it."""
    with pytest.raises(StoreConfigError) as err:
        parse_store({"kind": "webdav", "endpoint": endpoint}, Path("."))
    assert err.value.key == "store.endpoint" and "Zq7" not in str(err.value), err.value


def test_the_endpoint_scheme_is_matched_without_case() -> None:
    cfg = parse_store({"kind": "webdav", "endpoint": " HTTPS://dav.lab:8443/dav/ "}, Path("."))
    assert cfg.endpoint == "https://dav.lab:8443/dav"
