"""NVMe sanitize and Format NVM through nvme-cli.

The JSON nvme-cli prints (1.x and 2.x: key case, numbers or strings, ``sanitize-log`` keyed
by the device name, SSTAT as an object) is parsed by the devices room's parsers
(``ssdbench.devices.nvme``), the one parser per nvme-cli output.
"""

from __future__ import annotations

from ssdbench.devices.model import NvmeNamespace, ParseError
from ssdbench.devices.nvme import SanitizeLog, parse_id_ns_json, parse_sanitize_log_json
from ssdbench.erase.model import (
    NVME_FORMAT_CRYPTO,
    NVME_SANITIZE_BLOCK,
    NVME_SANITIZE_CRYPTO,
    NVME_SANITIZE_OVERWRITE,
    EraseError,
    EraseOptions,
    EraseTarget,
    StallWatch,
    sanitize_limit_s,
)
from ssdbench.erase.ticker import Reporter, Ticker
from ssdbench.system import CommandError, Host

SANACT = {NVME_SANITIZE_BLOCK: 2, NVME_SANITIZE_OVERWRITE: 3, NVME_SANITIZE_CRYPTO: 4}
SSTAT_NEVER, SSTAT_OK, SSTAT_RUNNING, SSTAT_FAILED, SSTAT_OK_NO_DEALLOC = 0, 1, 2, 3, 4
MIN_FORMAT_TIMEOUT_S = 600.0


def read_id_ns(host: Host, target: EraseTarget) -> NvmeNamespace:
    res = host.runner.run(["nvme", "id-ns", target.path, "-o", "json"], timeout=30.0)
    try:
        return parse_id_ns_json(res.text, nsid=target.nsid, name=target.name)
    except ParseError as exc:
        raise EraseError(f"{target.path}: {exc}") from exc


def read_sanitize_log(host: Host, target: EraseTarget) -> SanitizeLog:
    res = host.runner.run(
        ["nvme", "sanitize-log", target.controller_path, "-o", "json"], timeout=30.0
    )
    try:
        return parse_sanitize_log_json(res.text)
    except ParseError as exc:
        raise EraseError(f"{target.controller_path}: {exc}") from exc


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
    clock = options.clock
    start = clock.monotonic()
    limit = sanitize_limit_s(options, target.size_bytes)
    watch = StallWatch(options.sanitize_stall_s, start, last=-1)
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
        stuck = watch.stalled_for(log.sprog, now)
        if stuck is not None:
            raise EraseError(
                f"{target.controller_path}: the sanitize made no progress for "
                f"{stuck:.0f} s (SPROG stuck at {log.sprog}/65536 = "
                f"{100 * log.sprog / 65536:.1f}%). Not retrying: some drives stall for days "
                "(Intel 660p, nvme-cli #3027); it keeps running in the drive and persists "
                "across power cycles. Check `nvme sanitize-log` later or ask the vendor.",
                method=method,
            )
        est = log.estimate_s(sanact)
        elapsed = now - start
        eta = None
        if est:
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
    steps = [f"id-ns: current LBA format {before.lba_format_index} ({before.block_size} B blocks)"]
    timeout_s = format_timeout_s(target.size_bytes)
    argv = [
        "nvme", "format", target.path, f"--ses={ses}", f"--lbaf={before.lba_format_index}",
        "--force", f"--timeout={int(timeout_s * 1000)}",
    ]
    with Ticker(reporter, f"NVMe Format NVM (SES={ses})", None):
        host.runner.run(argv, timeout=timeout_s + 300.0)
    steps.append(f"nvme format --ses={ses} --lbaf={before.lba_format_index} returned success")
    try:
        host.runner.run(["nvme", "ns-rescan", target.controller_path], timeout=60.0)
        steps.append("nvme ns-rescan")
    except CommandError as exc:
        steps.append(f"nvme ns-rescan failed ({exc.reason}); the kernel revalidates anyway")
    after = read_id_ns(host, target)
    if after.lba_format_index != before.lba_format_index or after.block_size != before.block_size:
        raise EraseError(
            f"{target.path}: the LBA format changed from {before.lba_format_index} "
            f"({before.block_size} B) to {after.lba_format_index} ({after.block_size} B)",
            method=method,
        )
    steps.append(
        f"id-ns after: LBA format {after.lba_format_index}, {after.nsze} blocks "
        f"= {after.size_bytes} bytes"
    )
    sysfs = host.fs.read_text(f"/sys/block/{target.name}/size")
    if sysfs is not None and sysfs.strip().isdigit():
        steps.append(f"sysfs size after: {int(sysfs.strip()) * 512} bytes")
    return steps
