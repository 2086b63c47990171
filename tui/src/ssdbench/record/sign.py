"""Tamper evidence: an Ed25519 signature over the record, made with the lab's key.

The signature covers the record's canonical JSON (sorted keys, no whitespace, UTF-8)
without its ``signature`` member. The file itself is written in one exact form
(:func:`dump_record`), so :func:`verify_record_bytes` also refuses a file whose bytes
differ from that form: any changed byte either breaks the JSON, changes a signed value or
changes the form. The key is an Ed25519 private key in PEM (``openssl genpkey -algorithm
ed25519 -out lab-key.pem``); its public key travels in the record and its fingerprint
(SHA-256 of the 32 raw public-key bytes) is printed on the certificate, so an auditor
compares it with the lab's published one.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import json
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ALGORITHM = "Ed25519"


class SigningError(Exception):
    """The lab key cannot be used; the message says why."""


MAX_KEY_BYTES = 64 * 1024  # a PEM Ed25519 key is 119 bytes; a trusted-keys file, lines


class NotRegularFile(OSError):
    """A path that is a FIFO, a device, a socket or a folder: never read (a FIFO blocks
    ``open()`` until a writer comes, a device never ends)."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(errno.EINVAL, "not a regular file (a FIFO, device, socket or "
                                       "folder): not read", str(path))


def read_regular(path: Path | str, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of ``path`` (more than ``limit``: the caller refuses it),
    only when it is a regular file: opened without blocking (a FIFO opens at once) and
    checked with fstat before a byte is read. OSError (:class:`NotRegularFile`) otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(path)
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _read_key_file(path: Path | str) -> bytes:
    data = read_regular(path, MAX_KEY_BYTES)
    if len(data) > MAX_KEY_BYTES:
        raise OSError(errno.EFBIG, f"larger than {MAX_KEY_BYTES // 1024} KiB: not a key",
                      str(path))
    return data


def canonical_bytes(record: dict[str, Any]) -> bytes:
    body = {k: v for k, v in record.items() if k != "signature"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def dump_record(record: dict[str, Any]) -> bytes:
    """The one form a record file is written in."""
    return (json.dumps(record, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()


def fingerprint(raw_public_key: bytes) -> str:
    digest = hashlib.sha256(raw_public_key).hexdigest()
    return "SHA256:" + ":".join(digest[i:i + 4] for i in range(0, len(digest), 4))


def raw_public(public_key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    raw: bytes = public_key.public_bytes(serialization.Encoding.Raw,
                                         serialization.PublicFormat.Raw)
    return raw


# keys fetched from the lab's server at the start (kiosk/labkey.py), by the URL the plan
# parameter record_key names: held in this process's memory only, never written anywhere
_in_ram: dict[str, Any] = {}
_ram_lock = threading.Lock()


def is_key_url(ref: str) -> bool:
    """Whether ``ref`` is meant as a URL (any case, white space around it): never a file."""
    from ssdbench.lab.fetch import looks_like_url

    return looks_like_url(ref)


def keep_in_ram(url: str, key: Any) -> None:
    """``key`` (from :func:`private_key_from_pem`) is what ``record_key = url`` means in
    this process; also by the URL as run.json and the journal keep it (no user, password
    or query): a plan resumed from the journal signs with the key fetched at this start."""
    from ssdbench.untrusted import without_url_secrets

    with _ram_lock:
        _in_ram[url] = key
        _in_ram[without_url_secrets(url)] = key


def forget_keys() -> None:
    with _ram_lock:
        _in_ram.clear()


def private_key_from_pem(data: bytes, name: str) -> Any:
    """An Ed25519 private key from PEM bytes; SigningError naming ``name`` (the file, or
    the URL without its user and password) when they are not one."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise SigningError(f"lab key {name}: not an unencrypted PEM private key ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningError(f"lab key {name}: not an Ed25519 key (make one with `openssl "
                           "genpkey -algorithm ed25519 -out lab-key.pem`)")
    return key


def load_private_key(path: Path | str) -> Any:
    """The key ``record_key`` names: a PEM file, or a URL whose key was fetched into
    memory at the start (:func:`keep_in_ram`)."""
    if isinstance(path, str) and is_key_url(path):
        from ssdbench.lab.fetch import UrlError, parse_url

        try:
            parse_url(path)
        except UrlError as exc:  # names the URL without its user and password
            raise SigningError(f"lab key {exc}") from None
        with _ram_lock:
            key = _in_ram.get(path)
        if key is None:
            raise SigningError("lab key from a URL: it was not fetched at the start (the kiosk "
                               "and `ssdbench run` fetch it before any drive is touched)")
        return key
    try:
        data = _read_key_file(path)
    except OSError as exc:
        raise SigningError(f"lab key {path}: cannot read: {exc.strerror or exc}") from None
    return private_key_from_pem(data, str(path))


def sign_record(record: dict[str, Any], key: Any) -> dict[str, Any]:
    """``record`` with a ``signature`` member made with ``key`` (an Ed25519 private key)."""
    raw = raw_public(key.public_key())
    value = key.sign(canonical_bytes(record))
    return {**record, "signature": {
        "algorithm": ALGORITHM,
        "public_key": base64.b64encode(raw).decode(),
        "fingerprint": fingerprint(raw),
        "value": base64.b64encode(value).decode(),
    }}


def unsigned(record: dict[str, Any], reason: str) -> dict[str, Any]:
    return {**record, "signature": {"algorithm": None, "unsigned": True, "reason": reason}}


@dataclass(frozen=True)
class Verdict:
    ok: bool  # intact and signed (who signed it: ``fingerprint``, trusted or not)
    message: str
    fingerprint: str | None = None
    summary: str = ""  # what the record says: result, drive, times
    unsigned: bool = False  # intact or not, nothing signed it (no lab key was configured)


SIGNATURE_KEYS = {"algorithm", "public_key", "fingerprint", "value"}


def record_summary(record: dict[str, Any]) -> str:
    """One line of what a record says, for the auditor who checks it (every field as
    untrusted text: the record may be forged)."""
    from ssdbench.untrusted import shown

    def get(*path: str) -> str:
        value: Any = record
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return shown(value if value not in (None, "") else "?", 80)

    return (f"result {get('result', 'status')} ({get('result', 'reason')}); drive "
            f"{get('drive', 'model')}, serial {get('drive', 'serial')}; "
            f"{get('sanitization', 'technique')}; {get('started')} .. {get('finished')}")


def verify_record_bytes(data: bytes, *, expected_fingerprint: str | None = None) -> Verdict:
    """Check a record file's bytes: its form, its signature, and (when given) the signer."""
    try:
        record = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError, a 5000-digit number
        return Verdict(False, f"not a readable record: {exc}")
    except RecursionError:
        return Verdict(False, "not a readable record: nested too deeply")
    if not isinstance(record, dict) or record.get("format") != "ssdbench-erase-record":
        return Verdict(False, "not an ssdbench erase record (no format "
                              "'ssdbench-erase-record')")
    sig = record.get("signature")
    if not isinstance(sig, dict):
        return Verdict(False, "the record has no signature member")
    if sig.get("unsigned"):
        return Verdict(False, f"the record is UNSIGNED ({sig.get('reason', 'no reason')}): "
                              "nothing shows it was not changed", unsigned=True)
    extra = set(sig) - SIGNATURE_KEYS
    if extra or sig.get("algorithm") != ALGORITHM:
        return Verdict(False, "the signature member is not what ssdbench writes ("
                              + (f"extra keys {sorted(extra)}" if extra else
                                 f"algorithm {sig.get('algorithm')!r}, not {ALGORITHM}")
                              + ")")
    try:
        written = dump_record(record)
    except (UnicodeEncodeError, ValueError, RecursionError) as exc:  # a lone surrogate
        return Verdict(False, f"not a record ssdbench could have written ({type(exc).__name__})")
    if written != data:
        return Verdict(False, "the file is not byte for byte as ssdbench wrote it: it was "
                              "edited (spacing, order or content)")
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        raw = base64.b64decode(str(sig.get("public_key", "")), validate=True)
        value = base64.b64decode(str(sig.get("value", "")), validate=True)
        public = Ed25519PublicKey.from_public_bytes(raw)
    except ValueError as exc:
        return Verdict(False, f"the signature member is damaged ({exc})")
    fp = fingerprint(raw)
    if sig.get("fingerprint") != fp:
        return Verdict(False, "the printed key fingerprint does not match the record's key", fp)
    try:
        public.verify(value, canonical_bytes(record))
    except InvalidSignature:
        return Verdict(False, "the signature does not match the content: the record was "
                              "changed after it was signed", fp)
    summary = record_summary(record)
    if expected_fingerprint is not None and expected_fingerprint.strip() != fp:
        return Verdict(False, f"signed by key {fp}, not by the expected "
                              f"{expected_fingerprint.strip()}", fp, summary)
    return Verdict(True, f"signature valid ({ALGORITHM}, key {fp})", fp, summary)


def public_key_fingerprint(path: Path) -> str:
    """The fingerprint of a PEM public (or private) key file, for ``--key`` (a FIFO or a
    device is refused: :func:`read_regular`)."""
    from cryptography.hazmat.primitives import serialization

    data = _read_key_file(path)
    try:
        pub: Any = serialization.load_pem_public_key(data)
    except ValueError:
        pub = private_key_from_pem(data, str(path)).public_key()
    return fingerprint(raw_public(pub))


def trusted_fingerprints(path: Path) -> set[str]:
    """The fingerprints of a trusted-keys file: one per line, as ``verify-record`` and the
    certificate print them (``SHA256:xxxx:...``), or a PEM public key's file path; blank
    lines and ``#`` comments skipped. A line that is neither, or names a FIFO or a device,
    is a SigningError; the file itself not a regular file, an OSError."""
    data = _read_key_file(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SigningError(f"{path}: not UTF-8 text ({exc.reason})") from None
    out: set[str] = set()
    for n, line in enumerate(text.splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if text.startswith("SHA256:") and len(text.replace(":", "")) == 6 + 64:
            out.add(text)
            continue
        key = (Path(path).parent / text)
        try:
            out.add(public_key_fingerprint(key))
        except NotRegularFile as exc:
            raise SigningError(f"{path} line {n}: {key}: {exc.strerror}") from None
        except OSError as exc:
            raise SigningError(f"{path} line {n}: neither a key fingerprint (SHA256:...) "
                               f"nor a readable PEM key file ({key}: "
                               f"{exc.strerror or exc})") from None
        except (ValueError, SigningError) as exc:
            raise SigningError(f"{path} line {n}: neither a key fingerprint (SHA256:...) "
                               f"nor a readable PEM key file ({exc})") from None
    return out
