"""NVMe sanitize and Format NVM through nvme-cli, and the JSON they print.

nvme-cli 1.x and 2.x differ: key case, values as numbers or strings, and ``sanitize-log``
keyed by the device name in 2.x (``{"nvme0": {"sprog": ..., "sstat": {...}}}``) where
SSTAT is an object with the status as a string ``"(2) Sanitize in Progress."`` (some
2.x releases even use the status text as the key). Bits from libnvme ``nvme-types``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ssdbench.erase.model import (
    NVME_FORMAT_CRYPTO,
    NVME_SANITIZE_BLOCK,
    NVME_SANITIZE_CRYPTO,
    NVME_SANITIZE_OVERWRITE,
    EraseError,
    EraseOptions,
    EraseTarget,
    NvmeCaps,
)
from ssdbench.erase.ticker import Reporter, Ticker
from ssdbench.system import CommandError, Host

SANACT = {NVME_SANITIZE_BLOCK: 2, NVME_SANITIZE_OVERWRITE: 3, NVME_SANITIZE_CRYPTO: 4}
SSTAT_NEVER, SSTAT_OK, SSTAT_RUNNING, SSTAT_FAILED, SSTAT_OK_NO_DEALLOC = 0, 1, 2, 3, 4
NO_ESTIMATE = 0xFFFFFFFF
MIN_FORMAT_TIMEOUT_S = 600.0


class NvmeParseError(ValueError):
    pass


def _load(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise NvmeParseError(f"{what}: not JSON ({exc}): {text[:200]!r}") from exc


def _get(obj: dict[str, Any], *names: str) -> Any:
    """A key by any of its spellings, case-insensitively."""
    lower = {k.lower(): v for k, v in obj.items()}
    for name in names:
        if name.lower() in lower:
            return lower[name.lower()]
    return None


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        s = value.strip()
        try:
            return int(s, 16) if s.lower().startswith("0x") else int(s)
        except ValueError:
            pass
    raise NvmeParseError(f"{what}: expected a number, got {value!r}")


def _req(obj: dict[str, Any], what: str, *names: str) -> int:
    v = _get(obj, *names)
    if v is None:
        raise NvmeParseError(f"{what}: no {names[0]!r} field")
    return _int(v, f"{what}.{names[0]}")


@dataclass(frozen=True)
class IdCtrl:
    serial: str
    model: str
    caps: NvmeCaps


def parse_id_ctrl(text: str) -> IdCtrl:
    d = _load(text, "nvme id-ctrl")
    if not isinstance(d, dict):
        raise NvmeParseError("nvme id-ctrl: expected an object")
    caps = NvmeCaps(
        oacs=_req(d, "id-ctrl", "oacs"),
        fna=_req(d, "id-ctrl", "fna"),
        sanicap=_int(_get(d, "sanicap") or 0, "id-ctrl.sanicap"),
        oncs=_int(_get(d, "oncs") or 0, "id-ctrl.oncs"),
    )
    return IdCtrl(str(_get(d, "sn") or "").strip(), str(_get(d, "mn") or "").strip(), caps)


@dataclass(frozen=True)
class IdNs:
    nsze: int  # blocks
    flbas: int
    nlbaf: int  # number of formats - 1
    lbaf_index: int  # the current format
    data_sizes: tuple[int, ...]  # bytes per block, per format
    dlfeat: int

    @property
    def block_size(self) -> int:
        return self.data_sizes[self.lbaf_index]

    @property
    def size_bytes(self) -> int:
        return self.nsze * self.block_size


def current_lbaf(flbas: int, nlbaf: int) -> int:
    """FLBAS bits 3:0, plus bits 6:5 as the high bits when there are more than 16 formats."""
    index = flbas & 0xF
    if nlbaf + 1 > 16:
        index |= ((flbas >> 5) & 0x3) << 4
    return index


def parse_id_ns(text: str) -> IdNs:
    d = _load(text, "nvme id-ns")
    if not isinstance(d, dict):
        raise NvmeParseError("nvme id-ns: expected an object")
    flbas = _req(d, "id-ns", "flbas")
    nlbaf = _req(d, "id-ns", "nlbaf")
    lbafs = _get(d, "lbafs", "lbaf")
    if not isinstance(lbafs, list) or not lbafs:
        raise NvmeParseError("nvme id-ns: no 'lbafs' list")
    sizes = []
    for i, f in enumerate(lbafs):
        if not isinstance(f, dict):
            raise NvmeParseError(f"nvme id-ns: lbafs[{i}] is not an object")
        sizes.append(1 << _req(f, f"id-ns.lbafs[{i}]", "ds", "lbads"))
    index = current_lbaf(flbas, nlbaf)
    if index >= len(sizes):
        raise NvmeParseError(f"nvme id-ns: current format {index} is not in the lbafs list")
    return IdNs(
        nsze=_req(d, "id-ns", "nsze"),
        flbas=flbas,
        nlbaf=nlbaf,
        lbaf_index=index,
        data_sizes=tuple(sizes),
        dlfeat=_int(_get(d, "dlfeat") or 0, "id-ns.dlfeat"),
    )


@dataclass(frozen=True)
class SanitizeLog:
    sprog: int  # progress numerator of 65536
    status: int  # SSTAT bits 2:0
    scdw10: int | None
    estimates: dict[str, int]  # seconds; NO_ESTIMATE when not reported

    @property
    def fraction(self) -> float:
        return self.sprog / 65536.0 if self.status == SSTAT_RUNNING else 1.0


def _status_from_sstat(sstat: Any) -> int:
    if isinstance(sstat, int | str) and not (isinstance(sstat, str) and sstat.startswith("(")):
        return _int(sstat, "sanitize-log.sstat") & 0x7
    if isinstance(sstat, str):
        return int(sstat[1 : sstat.index(")")]) & 0x7
    if isinstance(sstat, dict):
        # "status": "(2) Sanitize in Progress." - or, in some 2.x releases, the status text
        # itself is the key. Find the value that starts with "(N)".
        for value in [_get(sstat, "status"), *sstat.values()]:
            if isinstance(value, str) and value.startswith("(") and ")" in value:
                return int(value[1 : value.index(")")]) & 0x7
        v = _get(sstat, "sos", "value")
        if v is not None:
            return _int(v, "sanitize-log.sstat") & 0x7
    raise NvmeParseError(f"sanitize-log: cannot read the status from sstat={sstat!r}")


def parse_sanitize_log(text: str) -> SanitizeLog:
    d = _load(text, "nvme sanitize-log")
    if not isinstance(d, dict):
        raise NvmeParseError("nvme sanitize-log: expected an object")
    body = d
    if _get(d, "sprog") is None:
        inner = [v for v in d.values() if isinstance(v, dict) and _get(v, "sprog") is not None]
        if len(inner) != 1:
            raise NvmeParseError("nvme sanitize-log: no 'sprog' (at top level or under a device)")
        body = inner[0]
    sstat = _get(body, "sstat", "status", "sanitize_status")
    scdw10 = _get(body, "cdw10_info", "scdw10")
    estimates = {}
    for key in ("time_over_write", "time_block_erase", "time_crypto_erase"):
        v = _get(body, key)
        if v is not None:
            estimates[key] = _int(v, f"sanitize-log.{key}")
    return SanitizeLog(
        sprog=_int(_get(body, "sprog"), "sanitize-log.sprog"),
        status=_status_from_sstat(sstat),
        scdw10=None if scdw10 is None else _int(scdw10, "sanitize-log.cdw10_info"),
        estimates=estimates,
    )


def read_id_ns(host: Host, target: EraseTarget) -> IdNs:
    res = host.runner.run(["nvme", "id-ns", target.path, "-o", "json"], timeout=30.0)
    return parse_id_ns(res.text)


def read_sanitize_log(host: Host, target: EraseTarget) -> SanitizeLog:
    res = host.runner.run(
        ["nvme", "sanitize-log", target.controller_path, "-o", "json"], timeout=30.0
    )
    return parse_sanitize_log(res.text)


def sanitize(
    host: Host, target: EraseTarget, method: str, options: EraseOptions, reporter: Reporter
) -> list[str]:
    """Start a sanitize and poll the log until it is done, failed, stalled or too slow.

    Never retried automatically: a sanitize that failed stays failed until one succeeds,
    and drives known to stall (Intel 660p at SPROG 655, nvme-cli #752, #1784, #3027) do
    not recover by retrying.
    """
    sanact = SANACT[method]
    steps: list[str] = []
    before = read_sanitize_log(host, target)
    if before.status == SSTAT_RUNNING:
        raise EraseError(
            f"{target.controller_path}: a sanitize is already running "
            f"({100 * before.sprog / 65536:.1f}%); wait for it to finish, then run again",
            method=method,
        )
    host.runner.run(
        ["nvme", "sanitize", target.controller_path, "-a", str(sanact)], timeout=120.0
    )
    steps.append(f"nvme sanitize -a {sanact} started")
    est_key = {2: "time_block_erase", 3: "time_over_write", 4: "time_crypto_erase"}[sanact]
    clock = options.clock
    start = clock.monotonic()
    limit = options.sanitize_timeout_s or max(
        6 * 3600.0, target.size_bytes / 30e6 + 3600.0
    )
    last_sprog = -1
    last_change = start
    while True:
        log = read_sanitize_log(host, target)
        now = clock.monotonic()
        if log.status in (SSTAT_OK, SSTAT_OK_NO_DEALLOC):
            if log.scdw10 is not None and (log.scdw10 & 0x7) != sanact:
                raise EraseError(
                    f"{target.controller_path}: sanitize log reports a completed sanitize "
                    f"with action {log.scdw10 & 0x7}, not {sanact}",
                    method=method,
                )
            how = "" if log.status == SSTAT_OK else " (without deallocation)"
            steps.append(f"sanitize log: completed successfully{how}")
            reporter.send("NVMe sanitize done", fraction=1.0)
            return steps
        if log.status == SSTAT_FAILED:
            raise EraseError(
                f"{target.controller_path}: the sanitize failed (SSTAT 3). The drive stays "
                "in the failed state until a sanitize succeeds; not retrying automatically.",
                method=method,
            )
        if log.status == SSTAT_NEVER:
            raise EraseError(
                f"{target.controller_path}: the sanitize log says no sanitize was ever run "
                "although the command succeeded",
                method=method,
            )
        # running
        if log.sprog != last_sprog:
            last_sprog, last_change = log.sprog, now
        elif now - last_change >= options.sanitize_stall_s:
            raise EraseError(
                f"{target.controller_path}: the sanitize made no progress for "
                f"{now - last_change:.0f} s (SPROG stuck at {log.sprog}/65536 = "
                f"{100 * log.sprog / 65536:.1f}%). Not retrying: some drives stall for days "
                "(Intel 660p, nvme-cli #3027); it keeps running in the drive and persists "
                "across power cycles. Check `nvme sanitize-log` later or ask the vendor.",
                method=method,
            )
        est = log.estimates.get(est_key, NO_ESTIMATE)
        elapsed = now - start
        eta = None
        if est not in (0, NO_ESTIMATE):
            eta = max(0.0, est - elapsed)
        reporter.send(
            f"NVMe sanitize (SPROG {log.sprog}/65536)", fraction=log.sprog / 65536.0, eta_s=eta
        )
        if elapsed > limit:
            raise EraseError(
                f"{target.controller_path}: the sanitize did not finish in {limit:.0f} s",
                method=method,
            )
        clock.sleep(options.poll_interval_s)


def format_timeout_s(size_bytes: int) -> float:
    """Long enough that the kernel never resets the controller mid-format (nvme-cli#2677):
    capacity at 30 MB/s + 30 min, at least 10 min."""
    return max(MIN_FORMAT_TIMEOUT_S, size_bytes / 30e6 + 1800.0)


def format_nvm(
    host: Host, target: EraseTarget, method: str, options: EraseOptions, reporter: Reporter
) -> list[str]:
    """Format NVM with SES=1 (user data) or 2 (crypto), ALWAYS with the current LBA format."""
    ses = 2 if method == NVME_FORMAT_CRYPTO else 1
    before = read_id_ns(host, target)
    steps = [f"id-ns: current LBA format {before.lbaf_index} ({before.block_size} B blocks)"]
    timeout_s = format_timeout_s(target.size_bytes)
    argv = [
        "nvme", "format", target.path, f"--ses={ses}", f"--lbaf={before.lbaf_index}",
        "--force", f"--timeout={int(timeout_s * 1000)}",
    ]
    with Ticker(reporter, f"NVMe Format NVM (SES={ses})", None):
        host.runner.run(argv, timeout=timeout_s + 300.0)
    steps.append(f"nvme format --ses={ses} --lbaf={before.lbaf_index} returned success")
    try:
        host.runner.run(["nvme", "ns-rescan", target.controller_path], timeout=60.0)
        steps.append("nvme ns-rescan")
    except CommandError as exc:
        steps.append(f"nvme ns-rescan failed ({exc.reason}); the kernel revalidates anyway")
    after = read_id_ns(host, target)
    if after.lbaf_index != before.lbaf_index or after.block_size != before.block_size:
        raise EraseError(
            f"{target.path}: the LBA format changed from {before.lbaf_index} "
            f"({before.block_size} B) to {after.lbaf_index} ({after.block_size} B)",
            method=method,
        )
    steps.append(
        f"id-ns after: LBA format {after.lbaf_index}, {after.nsze} blocks "
        f"= {after.size_bytes} bytes"
    )
    sysfs = host.fs.read_text(f"/sys/block/{target.name}/size")
    if sysfs is not None and sysfs.strip().isdigit():
        steps.append(f"sysfs size after: {int(sysfs.strip()) * 512} bytes")
    return steps
