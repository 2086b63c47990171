"""The lab's signing key (plan parameter ``record_key``) at a bench's start.

Whoever holds the private key signs erase records an auditor accepts, so it never sits on
the results stick (which leaves the bench with the results) and is never written into a
result, an upload, a bundle or a log (docs/security.md "The lab's key"):

* ``record_key = "https://lab:PW@cfg.lab/keys/bench7.pem"``: fetched when the kiosk or
  ``ssdbench run`` starts, before any drive is touched, like a config from a URL (retried
  while the network is not there; the URL's user and password go to its own origin only),
  checked to be an Ed25519 private key, and held in memory only (record/sign.py
  ``keep_in_ram``): a power cut forgets it, the next boot fetches it again.
* ``record_key = "/media/key/lab-key.pem"``: a file on a medium that is not the results
  stick; one on the stick (or in the results folder) is refused before anything runs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ssdbench.kiosk.config import PLAIN_HTTP, ConfigError, default_route, fetch_url, shown_url
from ssdbench.lab.fetch import UrlError, looks_like_url, parse_url
from ssdbench.record.sign import (
    SigningError,
    fingerprint,
    keep_in_ram,
    private_key_from_pem,
    raw_public,
)

KEY = "params.record_key"
MAX_KEY_BYTES = 64 * 1024  # a PEM Ed25519 key is 119 bytes; a certificate chain at most


def _disk_of(path: Path) -> str | None:
    """The disk that holds ``path``'s filesystem ("sdb" for /dev/sdb2), or its device
    number when it is not a block device's (tmpfs); None when it is not there."""
    try:
        dev = os.stat(path).st_dev
    except OSError:
        return None
    number = f"{os.major(dev)}:{os.minor(dev)}"
    try:
        node = Path(f"/sys/dev/block/{number}").resolve(strict=True)
    except OSError:
        return number
    return node.parent.name if (node / "partition").exists() else node.name


def _on(path: Path, results: Path, whole_filesystem: bool) -> bool:
    """Is ``path`` inside ``results`` (or, with ``whole_filesystem``, on the same disk: the
    stick's mount point; another partition of the stick is the stick too)?"""
    try:
        if path.resolve().is_relative_to(results.resolve()):
            return True
    except (OSError, RuntimeError):
        return False
    if not whole_filesystem:
        return False
    disk = _disk_of(path)
    return disk is not None and disk == _disk_of(results)


def prepare_record_keys(refs: Iterable[str], *, source: str, results: Path | None,
                        say: Callable[[str], None], fetch: bool = True,
                        whole_filesystem: bool = False, key: str = KEY,
                        wait: Callable[[float], None] = time.sleep,
                        net_state: Callable[[], str] = default_route) -> None:
    """Check (and fetch) each ``record_key`` of the plans about to run; a ConfigError (named
    ``source`` ``params.record_key``) when one cannot be used: a file on the results stick
    (``results``: its mount point with ``whole_filesystem``, else the results folder), a
    URL whose answer is not an Ed25519 private key or will not change (a 4xx, TLS, a
    redirect to plain HTTP), a text that looks like a URL but cannot be one (``ftp://``,
    ``htps://``: never taken for a file name). With ``fetch`` False (a dry run) URLs are
    checked, not fetched."""
    for ref in dict.fromkeys(r for r in refs if r.strip()):
        if not looks_like_url(ref):
            if results is not None and _on(Path(ref), results, whole_filesystem):
                where = "on the results stick" if whole_filesystem else "in the results folder"
                raise ConfigError(source, key, f"{ref} is {where}: whoever holds the results "
                                  "could sign records with it. Fetch it from the lab's server "
                                  "(record_key = \"https://...\") or keep it on a medium of its "
                                  "own (docs/security.md)")
            continue
        try:
            url = parse_url(ref)
        except UrlError as exc:
            raise ConfigError(source, key, f"lab key {exc}") from None
        if not fetch:
            continue
        shown = shown_url(ref)
        data = fetch_url(ref, say, wait=wait, net_state=net_state, what="lab key",
                         limit=MAX_KEY_BYTES, config=source, key=key)
        try:
            private = private_key_from_pem(data, shown)
        except SigningError as exc:
            raise ConfigError(source, key, str(exc)) from None
        keep_in_ram(ref, private)
        plain = f" ({PLAIN_HTTP})" if url.plain else ""
        say(f"lab key {shown}: {fingerprint(raw_public(private.public_key()))}, held in memory "
            f"only{plain}")
