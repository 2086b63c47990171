"""The lab's password is never written anywhere (#42 item 4), whichever way the URL is
written: for each form, the code paths that write files run for real (the key fetched at
the start from a server on 127.0.0.1, run.json, state.json, the erase record and its
certificate, signed or UNSIGNED, the console, a support bundle naming the config URL on the
kernel command line), and every file written is searched for the password."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ssdbench.devices.bundle import RecordingFS, RecordingRunner, write_bundle
from ssdbench.kiosk.config import ConfigError, load_config
from ssdbench.kiosk.labkey import prepare_record_keys
from ssdbench.plan.journal import Journal
from ssdbench.plan.plans import PlanError, build_plan
from ssdbench.record.sign import forget_keys
from ssdbench.record.write import seal, write_record_files
from ssdbench.results.layout import RunRecord
from tests.unit.kiosk.test_config_url import Server
from tests.unit.lab.netservers import tls_server_context
from tests.unit.record.test_record import record as a_record

# each password holds "Zq7~": a piece of it anywhere is a leak ("~" is in no base64 or hex
# alphabet: a signature or a key in a record cannot hold it by chance, as "Zq7" could)
FORMS = {
    "space": "https://lab:Zq7~ pa ss@{host}/keys/b.pem",
    "at": "https://lab:Zq7~@pa@{host}/keys/b.pem",
    "capitals": "HTTPS://lab:Zq7~-caps@{host}/keys/b.pem",
    "leading-space": " https://lab:Zq7~-lead@{host}/keys/b.pem",
    "escaped": "https://lab:Zq7~%25esc%20aped%40x@{host}/keys/b.pem",
    "plain-http-capitals": "HTTP://lab:Zq7~-plain@{plain}/keys/b.pem",
    "fails-slash": "https://lab:Zq7~/slash@{host}/keys/b.pem",
    "fails-scheme": "htps://lab:Zq7~-typo@{host}/keys/b.pem",
    "fails-port": "https://lab:Zq7~-port@127.0.0.1:99999/keys/b.pem",
}


class Host:
    """The bench's files as a recording sees them: a kernel command line naming the
    config URL."""

    def __init__(self, cmdline: str) -> None:
        self.cmdline = cmdline

    def read_text(self, path: str) -> str | None:
        return self.cmdline if path == "/proc/cmdline" else None


@pytest.fixture
def servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Server, Server]]:
    (tmp_path / "tls").mkdir()
    ctx, ca_file = tls_server_context(tmp_path / "tls")
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    key = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption())
    tls, plain = Server(tls=ctx), Server()
    for s in (tls, plain):
        s.files["/keys/b.pem"] = (200, key)
        s.files["/k.toml"] = (200, b'plan = "diagnose"\n')
    yield tls, plain
    tls.stop()
    plain.stop()
    forget_keys()


def _stop(_s: float) -> None:
    raise RuntimeError("retried")


@pytest.mark.parametrize("form", sorted(FORMS))
def test_the_password_is_in_no_file_written(servers: tuple[Server, Server], tmp_path: Path,
                                            form: str) -> None:
    tls, plain = servers
    url = FORMS[form].format(host=f"127.0.0.1:{tls.port}", plain=f"127.0.0.1:{plain.port}")
    out = tmp_path / "results"
    run_dir = out / "20261128T120000Z_Model_SERIAL" / "erase"
    run_dir.mkdir(parents=True)
    console: list[str] = []
    # the start: the key fetched (or the start stopped with a clear error)
    try:
        prepare_record_keys([url], source="ssdbench.toml", results=out, say=console.append,
                            wait=_stop, net_state=lambda: "up")
        fetched = True
    except ConfigError as exc:
        console.append(str(exc))
        fetched = False
    assert fetched == (not form.startswith("fails")), console
    # a config from the same kind of URL
    config_url = url.replace("/keys/b.pem", "/k.toml")
    try:
        console.append(load_config(config_url, say=console.append, wait=_stop).source)
    except ConfigError as exc:
        console.append(str(exc))
    # run.json and state.json (the plan with its parameters), as the engine writes them
    try:
        plan = build_plan("erase", sets=[f"record_key={url}"])
    except PlanError as exc:
        console.append(str(exc))
        plan = build_plan("erase")
        plan = dataclasses.replace(plan, params=dataclasses.replace(plan.params,
                                                                    record_key=url))
    RunRecord.create(run_dir, run="erase", kind="erase", drive={}, target={},
                     params=plan.params.as_record(), tools={})
    Journal(out / "state.json").start_drive("SERIAL", drive="loop0", model="M", serial="S",
                                            drive_dir=run_dir.parent.name, plan=plan.to_json())
    # the record and its certificate: signed with the key fetched, or UNSIGNED and why
    record = seal(a_record(), url)
    assert ("unsigned" in record["signature"]) == (not fetched), record["signature"]
    write_record_files(run_dir, record, pdf=False)
    forget_keys()  # the TUI: a URL is not fetched there, the record says UNSIGNED and why
    tui = run_dir.parent / "tui"
    tui.mkdir()
    write_record_files(tui, seal(a_record(), url), pdf=False)
    (out / "log.txt").write_text("\n".join(console) + "\n")
    # a support bundle of a bench whose kernel command line names the config URL
    cmdline = f"quiet ssdbench.config={config_url.strip()} ssdbench.bench=b7\n"
    fs = RecordingFS(Host(cmdline))  # type: ignore[arg-type]
    fs.read_text("/proc/cmdline")
    write_bundle(tmp_path / "bundle", RecordingRunner(None), fs)  # type: ignore[arg-type]

    password = url.partition(":Zq7~")[2]
    password = "Zq7~" + password.rpartition("@")[0] if "@" in password else "Zq7~"
    needles = {b"Zq7~", password.encode(), quote(password).encode()}
    written = [p for folder in (out, tmp_path / "bundle") for p in sorted(folder.rglob("*"))
               if p.is_file()]
    leaks = [f"{p.relative_to(tmp_path)}: {n!r}" for p in written
             for n in needles if n in p.read_bytes()]
    assert leaks == [], leaks
    assert (run_dir / "erase-record.json").is_file() and (tui / "erase-certificate.html").is_file()
    assert any("REMOVED" in p.read_text() for p in out.rglob("*.json")), "no URL was kept"
