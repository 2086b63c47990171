"""S3Get (lab/store.py): the S3 GETs the fleet build makes without boto3's per-request
machinery. Its signature is botocore's own (SigV4), byte for byte; it stands aside (boto3
reads) where boto3 would do something it does not (a proxy). The requests themselves go to
a real s3proxy: tests/integration/test_s3_fast_get.py."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import quote

import pytest

from ssdbench.lab.config import StoreConfig, parse_store
from ssdbench.lab.store import S3Get, S3Store, StoreError

KEY, SECRET = "AKIDEXAMPLE-ssdbench", "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"


def s3_cfg(endpoint: str = "http://127.0.0.1:9000", region: str = "us-east-1") -> StoreConfig:
    return parse_store({"kind": "s3", "endpoint": endpoint, "bucket": "lab-results",
                        "prefix": "lab1", "region": region, "access_key": KEY,
                        "secret_key": SECRET}, Path("."))


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                 "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


def botocore_authorization(cfg: StoreConfig, path: str, headers: dict[str, str],
                           stamp: str) -> str:
    """The Authorization header botocore's S3 signer gives the same GET at ``stamp``."""
    import datetime

    import botocore.auth  # type: ignore[import-untyped]
    from botocore.awsrequest import AWSRequest  # type: ignore[import-untyped]
    from botocore.credentials import Credentials  # type: ignore[import-untyped]

    at = datetime.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ")
    scheme, _, rest = cfg.endpoint.partition("://")
    origin = f"{scheme}://{rest.split('/', 1)[0]}"  # the path is in ``path``
    request = AWSRequest(method="GET", url=origin + path, headers=dict(headers))
    signer = botocore.auth.S3SigV4Auth(Credentials(KEY, SECRET), "s3", cfg.region)
    real = botocore.auth.get_current_datetime
    botocore.auth.get_current_datetime = lambda *a, **k: at
    try:
        signer.add_auth(request)
    finally:
        botocore.auth.get_current_datetime = real
    assert request.headers["X-Amz-Date"] == stamp
    return str(request.headers["Authorization"])


@pytest.mark.parametrize(("endpoint", "region", "key", "limit"), [
    ("http://127.0.0.1:9000", "us-east-1", "lab1/bench-07/S4EV0001/20261125T062239Z/trim/run.json",
     None),
    ("http://127.0.0.1:9000", "eu-central-1", "lab1/_fleet/sent/bench-07/20261125.txt",
     64 << 20),
    # a path under the endpoint, the default port, a key with every kind of character
    ("http://s3.lab.test/store/v1", "us-east-1",
     "lab1/bench 07/Ser+ial~x/Ä € (1)/a%20b;c=d&e@f!$'*,/run.json", 1000),
    ("http://[::1]:8333", "us-west-2", "lab1/x/run.json", 0),
])
def test_the_signature_is_botocores_byte_for_byte(endpoint: str, region: str, key: str,
                                                  limit: int | None) -> None:
    cfg = s3_cfg(endpoint, region)
    direct = S3Get.of(cfg)
    assert direct is not None
    path = direct.base + quote(key, safe="/~")
    assert path.startswith(direct.base) and direct.base.endswith("/lab-results/")
    extra = {"range": f"bytes=0-{limit}"} if limit is not None else {}
    for now in (time.time(), 1_700_000_000.0, 1_700_000_000.0 + 86_400):  # a new day: new key
        heads = direct.headers(path, extra, now)
        stamp = heads["x-amz-date"]
        sent = {"Range": extra["range"]} if extra else {}
        sent["X-Amz-Content-SHA256"] = heads["x-amz-content-sha256"]
        assert heads["authorization"] == botocore_authorization(cfg, path, sent, stamp)
        assert heads["host"] == endpoint.split("://", 1)[1].split("/", 1)[0]


def test_no_secret_in_what_it_holds_but_the_signing_key() -> None:
    direct = S3Get.of(s3_cfg())
    assert direct is not None
    heads = direct.headers(direct.base + "k", {}, time.time())
    assert SECRET not in repr(vars(direct)) and SECRET not in repr(heads)
    assert f"Credential={KEY}/" in heads["authorization"]  # the key id, as boto3 sends it


@pytest.mark.parametrize("variable", ["http_proxy", "HTTP_PROXY", "all_proxy"])
def test_a_proxy_set_boto3_reads_as_before(monkeypatch: pytest.MonkeyPatch,
                                           variable: str) -> None:
    monkeypatch.setenv(variable, "http://127.0.0.1:3128")
    assert S3Get.of(s3_cfg()) is None
    assert S3Store(s3_cfg())._direct is None


def test_https_uses_the_stores_ca_file(tmp_path: Path) -> None:
    from tests.unit.lab.netservers import tls_server_context

    _ctx, ca_file = tls_server_context(tmp_path)
    cfg = parse_store({"kind": "s3", "endpoint": "https://127.0.0.1:9443", "bucket": "lab-x",
                       "access_key": KEY, "secret_key": SECRET, "ca_file": str(ca_file)},
                      Path("."))
    direct = S3Get.of(cfg)
    assert direct is not None
    assert [c["subject"] for c in direct.context().get_ca_certs()] == [
        ((("commonName", "ssdbench test CA"),),)]  # that CA alone
    assert direct.context().check_hostname
    bundle = S3Get.of(s3_cfg("https://127.0.0.1:9443"))  # boto3's CA bundle
    assert bundle is not None and len(bundle.context().get_ca_certs()) > 10


def test_making_the_store_imports_no_boto3() -> None:
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; from ssdbench.lab.config import parse_store;"
            "from ssdbench.lab.store import open_store; open_store(parse_store({'kind': 's3', "
            "'endpoint': 'https://127.0.0.1:9443', 'bucket': 'lab-x', 'access_key': 'k', "
            "'secret_key': 's3cr3t'}, Path('.')));"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)
    assert done.stdout.strip() == "[]"


def test_direct_gets_can_be_turned_off() -> None:
    assert S3Store(s3_cfg())._direct is not None
    assert S3Store(s3_cfg(), direct_gets=False)._direct is None


@pytest.mark.parametrize(("status", "body", "message", "refused"), [
    (404, b"<Error><Code>NoSuchKey</Code><Message>x</Message></Error>",
     "reading k: the store answered 404 NoSuchKey", False),
    (403, b"<Error><Code>SignatureDoesNotMatch</Code></Error>",
     "reading k: the store answered 403 SignatureDoesNotMatch (check the store's keys, "
     "bucket and permissions)", True),
    (404, b"<Error><Code>NoSuchBucket</Code></Error>",
     "reading k: the store answered 404 NoSuchBucket (check the store's keys, bucket and "
     "permissions)", True),
    # a code that is not one (markup, too long) is left out, never repeated
    (500, b"<Error><Code><b>[red]x</b></Code></Error>", "reading k: the store answered 500",
     False),
    (503, b"<Code>" + b"A" * 200 + b"</Code>", "reading k: the store answered 503", False),
    (401, b"", "reading k: the store answered 401 (check the store's keys, bucket and "
     "permissions)", True),
])
def test_an_answer_that_is_not_2xx_is_worded_as_boto3s(status: int, body: bytes,
                                                       message: str, refused: bool) -> None:
    direct = S3Get.of(s3_cfg())
    assert direct is not None
    err = direct._refusal("k", status, body)
    assert isinstance(err, StoreError)
    assert (str(err), err.refused) == (message, refused)
