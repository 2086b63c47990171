"""The flash translation layer model of the simulated SSD (stdlib only, no I/O).

Page-mapped (4 KiB map unit), blocks of `b` pages, physical pages = user pages x (1 + spare),
greedy victims (the full block with the fewest valid pages, O(1) through buckets kept per
valid count), a host write frontier and a separate GC frontier. Time is one virtual server:
a request that arrives at `arrival` costs `units * c_w` device-seconds and completes at
`done = max(arrival, previous done) + cost`; the caller (nbdkit plugin or offline twin)
sleeps until `done`, so the drive's IOPS are exactly 1/cost whatever the host overhead.
Costs are counted in page-program units: a host page program is 1 (times the request's
jitter), a GC page move `move_cost`, a block erase `erase_cost`, a page read `read_cost`.

SLC cache (optional): after a sanitize the first `slc_fraction` of the user pages cost
1/`slc_speedup` each (event "slc_full" when it is used up). Thermal model (optional): a
first-order temperature driven by the work rate; above `throttle_c` every cost is
`throttle_factor` times higher until the drive cools below `recover_c` (events "throttle",
"unthrottle").

GC: foreground ("credit": once the free pool is within two blocks of `low`, one victim each
time the host has used up the pages the previous victim freed, its time charged to the write
that triggered it, i.e. tens of ms, as NVMeVirt's write credits; "burst": when the host
frontier needs a block and the pool is at `low`, a drawn number N of victims at once, a
host-priority drive's stall of seconds; both: victims until the pool is above `low` when
the host needs a block), and background during idle gaps of at least `idle_min` s, up to
`idle_reserve` (fraction of user capacity) free, then wholly invalid blocks, within the
idle time.

Per-second ground truth is binned by CLOCK_REALTIME epoch seconds (`bins`, `final_bins`);
events (trim, zero, sanitize, idle GC) go to `events`.
"""

from __future__ import annotations

import collections
import math
import random
from array import array
from dataclasses import asdict, dataclass, field
from typing import Any

PAGE = 4096
MAX_SIZE = 16 << 30  # the maps are Python arrays: about 20 bytes of RAM per 4 KiB page

FREE, OPEN, FULL = 0, 1, 2

# Per-second bin fields (floats; counts are rounded when written).
F_HOST_WRITES, F_HOST_PAGES, F_HOST_READS, F_READ_PAGES = 0, 1, 2, 3
F_NAND_PAGES, F_GC_MOVES, F_ERASES, F_BUSY, F_STALL, F_FREE, F_TRIMS = 4, 5, 6, 7, 8, 9, 10
N_FIELDS = 11
SUB = 100  # host write completions are also counted per 10 ms (fields N_FIELDS..+SUB)
R10 = N_FIELDS + SUB  # ... and the server's replies to them, per 10 ms (fields R10..+SUB)
D10 = R10 + SUB  # host reads of one 4 KiB page completed per 10 ms (fields D10..+SUB)
S10 = D10 + SUB  # ... of which solo: no other request overlapped them (fields S10..+SUB)


@dataclass(frozen=True)
class Personality:
    """A drive personality: geometry, GC policy, TRIM behaviour, cost jitter."""

    name: str
    description: str
    spare: float  # physical pages = user pages x (1 + spare)
    pages_per_block: int
    gc: str = "credit"  # "credit" (paced, per victim) or "burst" (host priority, N victims at once)
    victim: str = "greedy"  # "greedy" (fewest valid pages) or "fifo" (oldest full block)
    low: int = 4  # foreground GC when the free pool is at or below this many blocks
    burst_median: float = 0.0  # burst: victims per burst ~ lognormal(median, sigma), capped
    burst_sigma: float = 0.0
    burst_cap: int = 0
    jitter: float = 0.0  # lognormal sigma of a 4 KiB write's cost (mean 1; / sqrt(pages))
    idle_reserve: float = 0.0  # idle GC refills the free pool up to this fraction of user pages
    idle_min: float = 0.5  # a gap shorter than this (s) is not idle
    idle_speedup: float = 1.0  # background GC runs this many times faster than foreground
    trim_eff: float = 1.0  # probability that a trimmed mapped page is really invalidated
    rzat: bool = True  # reads after TRIM return zeros (else the old data: DRAT)
    move_cost: float = 1.0
    erase_cost: float = 4.0
    read_cost: float = 0.125
    # SLC cache: after a sanitize the first slc_fraction of the user pages are programmed
    # slc_speedup times faster (a client drive's pseudo-SLC write cache); 0 = none
    slc_fraction: float = 0.0
    slc_speedup: float = 1.0
    # thermal model (0 = none): the temperature relaxes with time constant thermal_tau_s
    # toward ambient_c + (full_load_c - ambient_c) x the work rate (1 busy, 0 idle); above
    # throttle_c every cost is throttle_factor times higher (the work rate falls with it)
    # until the drive cools below recover_c
    throttle_c: float = 0.0
    recover_c: float = 0.0
    ambient_c: float = 35.0
    full_load_c: float = 85.0
    thermal_tau_s: float = 60.0
    throttle_factor: float = 3.0

    def __post_init__(self) -> None:
        if self.gc not in ("credit", "burst"):
            raise ValueError(f"gc must be 'credit' or 'burst', not {self.gc!r}")
        if self.victim not in ("greedy", "fifo"):
            raise ValueError(f"victim must be 'greedy' or 'fifo', not {self.victim!r}")
        if self.low < 1:
            raise ValueError("low must be >= 1 (one free block is kept for GC)")
        if not 0.0 <= self.trim_eff <= 1.0:
            raise ValueError("trim_eff must be within 0..1")
        if self.pages_per_block < 2 or self.spare <= 0:
            raise ValueError("pages_per_block must be >= 2 and spare > 0")
        if not 0.0 <= self.slc_fraction < 1.0 or self.slc_speedup < 1.0:
            raise ValueError("slc_fraction must be within 0..1 and slc_speedup >= 1")
        if self.throttle_c:
            if not self.ambient_c < self.recover_c < self.throttle_c < self.full_load_c:
                raise ValueError("thermal model needs ambient_c < recover_c < throttle_c "
                                 "< full_load_c")
            if self.thermal_tau_s <= 0 or self.throttle_factor <= 1.0:
                raise ValueError("thermal_tau_s must be > 0 and throttle_factor > 1")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def min_spare_blocks(p: Personality) -> int:
    """Spare blocks a drive needs so that the GC reserve (`low` + the open blocks) is at
    most a quarter of its spare: smaller drives degenerate into stalls."""
    return 4 * (p.low + 2)


def min_size(p: Personality) -> int:
    """The smallest size (bytes, whole MiB) with `min_spare_blocks` spare blocks."""
    user_blocks = math.ceil(min_spare_blocks(p) / p.spare)
    while math.ceil(user_blocks * (1 + p.spare)) - user_blocks < min_spare_blocks(p):
        user_blocks += 1
    size = user_blocks * p.pages_per_block * PAGE
    return -(-size // (1 << 20)) * (1 << 20)


@dataclass
class Totals:
    """Counters since the last sanitize (the twin and the tests read them)."""

    host_writes: int = 0
    host_pages: int = 0
    nand_pages: int = 0
    gc_moves: int = 0
    erases: int = 0
    trimmed_pages: int = 0
    host_reads: int = 0
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def wa(self) -> float:
        return self.nand_pages / self.host_pages if self.host_pages else 0.0


class FTL:
    """The model. Not thread-safe: the plugin holds one lock around every call."""

    def __init__(
        self, personality: Personality, size_bytes: int, fob_iops: float, seed: int = 1
    ) -> None:
        if size_bytes <= 0:
            raise ValueError("size must be positive")
        if size_bytes > MAX_SIZE:
            raise ValueError(f"size {size_bytes} is above the model's {MAX_SIZE} bytes (16 GiB)")
        if fob_iops <= 0:
            raise ValueError("fob_iops must be positive")
        self.p = personality
        self.size = size_bytes
        self.fob_iops = float(fob_iops)
        self.c_w = 1.0 / self.fob_iops
        self.b = personality.pages_per_block
        self.user_pages = -(-size_bytes // PAGE)
        self.nblocks = math.ceil(self.user_pages * (1.0 + personality.spare) / self.b)
        self.phys_pages = self.nblocks * self.b
        spare_blocks = self.nblocks - math.ceil(self.user_pages / self.b)
        need = min_spare_blocks(personality)
        if spare_blocks < need:
            raise ValueError(
                f"{size_bytes} bytes is too small for preset {personality.name}: "
                f"{spare_blocks} spare blocks, needs at least {need} "
                f"(at least {min_size(personality)} bytes)"
            )
        self.idle_reserve_blocks = max(
            personality.low + 1, math.ceil(personality.idle_reserve * self.user_pages / self.b)
        )
        self.rng = random.Random(seed)
        self.busy_until = 0.0
        self.solo_candidate: float | None = None  # done of the last one-page read that waited
        # for nothing, solo unless a request arrives before it is done
        self.temp_c = personality.ambient_c  # the thermal model's temperature
        self.temp_at = 0.0  # ... at this time (0: not started)
        self.throttled = False
        self.bins: dict[int, list[float]] = {}
        self.events: list[dict[str, Any]] = []
        self.reset()

    # ---- state --------------------------------------------------------------------------

    def reset(self) -> None:
        """Sanitize: every block erased and free, no mapping (the clocks go on)."""
        b, n = self.b, self.nblocks
        self.l2p = array("l", [-1]) * self.user_pages
        self.p2l = array("l", [-1]) * self.phys_pages
        self.valid = array("l", [0]) * n
        self.state = array("b", [FREE]) * n
        self.bnext = array("l", [-1]) * n
        self.bprev = array("l", [-1]) * n
        self.bhead = array("l", [-1]) * (b + 1)
        self.free: collections.deque[int] = collections.deque(range(n))
        self.fifo: collections.deque[int] = collections.deque()  # full blocks, oldest first
        self.host_blk, self.host_wp = -1, b
        self.gc_blk, self.gc_wp = -1, b
        self.totals = Totals()
        self._units = 0.0  # GC work done by the current call (page-program units)
        self.credits = 0.0  # credit GC: host pages allowed before the next victim
        self.slc_left = math.floor(self.p.slc_fraction * self.user_pages)

    def mapped_pages(self) -> int:
        return sum(1 for x in self.l2p if x >= 0)

    @property
    def free_blocks(self) -> int:
        return len(self.free)

    # buckets of FULL blocks by valid count
    def _bucket_add(self, blk: int) -> None:
        v = self.valid[blk]
        head = self.bhead[v]
        self.bnext[blk], self.bprev[blk] = head, -1
        if head >= 0:
            self.bprev[head] = blk
        self.bhead[v] = blk

    def _bucket_del(self, blk: int) -> None:
        nxt, prv = self.bnext[blk], self.bprev[blk]
        if prv >= 0:
            self.bnext[prv] = nxt
        else:
            self.bhead[self.valid[blk]] = nxt
        if nxt >= 0:
            self.bprev[nxt] = prv

    def _invalidate(self, ppn: int) -> None:
        blk = ppn // self.b
        self.p2l[ppn] = -1
        if self.state[blk] == FULL:
            self._bucket_del(blk)
            self.valid[blk] -= 1
            self._bucket_add(blk)
        else:
            self.valid[blk] -= 1

    def _victim(self) -> int:
        """Greedy: the full block with the fewest valid pages, or -1 if none has an invalid
        page. FIFO: the oldest full block (-1 if no full block has an invalid page)."""
        if self.p.victim == "fifo":
            if self.bhead[self.b] >= 0 and all(
                    self.bhead[v] < 0 for v in range(self.b)):
                return -1
            return self.fifo[0] if self.fifo else -1
        for v in range(self.b):
            blk = self.bhead[v]
            if blk >= 0:
                return blk
        return -1

    def _take_free(self) -> int:
        blk = self.free.popleft()
        self.state[blk] = OPEN
        return blk

    def _close(self, blk: int) -> None:
        self.state[blk] = FULL
        self._bucket_add(blk)
        if self.p.victim == "fifo":
            self.fifo.append(blk)

    def _gc_one(self) -> bool:
        """Reclaim one victim: move its valid pages to the GC frontier, erase it."""
        blk = self._victim()
        if blk < 0:
            return False
        self._bucket_del(blk)
        if self.p.victim == "fifo":
            self.fifo.popleft()
        b, p2l, l2p = self.b, self.p2l, self.l2p
        moved = 0
        base = blk * b
        for ppn in range(base, base + b):
            lpn = p2l[ppn]
            if lpn < 0:
                continue
            if self.gc_wp >= b:
                if self.gc_blk >= 0:
                    self._close(self.gc_blk)
                self.gc_blk, self.gc_wp = self._take_free(), 0
            new = self.gc_blk * b + self.gc_wp
            self.gc_wp += 1
            p2l[new] = lpn
            l2p[lpn] = new
            self.valid[self.gc_blk] += 1
            p2l[ppn] = -1
            moved += 1
        self.valid[blk] = 0
        self.state[blk] = FREE
        self.free.append(blk)
        t = self.totals
        t.gc_moves += moved
        t.nand_pages += moved
        t.erases += 1
        self._units += moved * self.p.move_cost + self.p.erase_cost
        self.credits += b - moved
        return True

    def _foreground_gc(self) -> None:
        p = self.p
        if len(self.free) > p.low:
            return
        if p.gc == "burst":
            n = 1
            if p.burst_median > 0:
                n = round(self.rng.lognormvariate(math.log(p.burst_median), p.burst_sigma))
                n = max(1, min(p.burst_cap or n, n))
            for _ in range(n):
                if not self._gc_one():
                    break
        while len(self.free) <= p.low:
            if not self._gc_one():
                raise RuntimeError("simdrive: no reclaimable block (model invariant broken)")

    def _program_host(self, lpn: int) -> None:
        old = self.l2p[lpn]
        if old >= 0:
            self._invalidate(old)
        if self.p.gc == "credit":
            # NVMeVirt-like write credits: near the floor, one victim whenever the pages
            # freed by the last one are used up, so GC is spread over the host writes
            if self.credits <= 0 and len(self.free) <= self.p.low + 2:
                self._gc_one()
            self.credits = max(0.0, self.credits - 1.0)
        if self.host_wp >= self.b:
            if self.host_blk >= 0:
                self._close(self.host_blk)
                self.host_blk = -1
            self._foreground_gc()
            self.host_blk, self.host_wp = self._take_free(), 0
        new = self.host_blk * self.b + self.host_wp
        self.host_wp += 1
        self.p2l[new] = lpn
        self.l2p[lpn] = new
        self.valid[self.host_blk] += 1
        self.totals.nand_pages += 1

    def _idle_gc(self, budget_units: float) -> tuple[int, float]:
        """Background GC within an idle budget: victims until the free pool reaches the idle
        reserve, then blocks without a valid page (erase only). Returns (victims, units)."""
        victims, used = 0, 0.0
        p = self.p
        while True:
            blk = self._victim()
            if blk < 0:
                break
            if len(self.free) >= self.idle_reserve_blocks and self.valid[blk] > 0:
                break  # above the reserve only wholly invalid blocks are erased (cheap)
            cost = self.valid[blk] * p.move_cost + p.erase_cost
            if used + cost > budget_units:
                break
            self._units = 0.0
            self._gc_one()
            used += self._units
            victims += 1
        self._units = 0.0
        return victims, used

    # ---- time and ground truth -------------------------------------------------------------

    def _bin(self, sec: int) -> list[float]:
        row = self.bins.get(sec)
        if row is None:
            row = [0.0] * (N_FIELDS + 4 * SUB)
            row[F_FREE] = -1.0
            self.bins[sec] = row
        return row

    def _spread(self, start: float, end: float, fld: int, amount_per_s: float) -> None:
        """Add amount_per_s x (overlap of [start, end) with each second) to `fld`."""
        t = start
        while t < end:
            sec = math.floor(t)
            nxt = min(end, sec + 1.0)
            self._bin(sec)[fld] += (nxt - t) * amount_per_s
            t = nxt

    def idle(self, arrival: float) -> None:
        """Background GC in the idle gap before `arrival` (run lazily by the next request)."""
        self._idle(arrival)

    def _idle(self, arrival: float) -> None:
        gap = arrival - self.busy_until
        if gap < self.p.idle_min or self.busy_until <= 0.0:
            return
        nand0, moves0, erases0 = self.totals.nand_pages, self.totals.gc_moves, self.totals.erases
        speed = self.p.idle_speedup
        victims, used = self._idle_gc(gap * speed / self.c_w)
        if victims:
            start = self.busy_until
            end = start + used * self.c_w / speed
            self.busy_until = end
            row = self._bin(math.floor(arrival))
            row[F_NAND_PAGES] += self.totals.nand_pages - nand0
            row[F_GC_MOVES] += self.totals.gc_moves - moves0
            row[F_ERASES] += self.totals.erases - erases0
            self._spread(start, end, F_BUSY, 1000.0)
            self.events.append(
                {"event": "idle_gc", "time": start, "end": end, "victims": victims,
                 "moves": self.totals.gc_moves - moves0, "free_blocks": len(self.free)}
            )

    def _relax(self, until: float, rate: float) -> None:
        """Advance the temperature to `until` at work rate `rate` (0 idle .. 1 full)."""
        p = self.p
        if self.temp_at <= 0.0:
            self.temp_at = until
            return
        dt = until - self.temp_at
        if dt > 0:
            target = p.ambient_c + (p.full_load_c - p.ambient_c) * rate
            self.temp_c = target + (self.temp_c - target) * math.exp(-dt / p.thermal_tau_s)
            self.temp_at = until

    def _thermal(self, start: float) -> float:
        """The cost factor of a request starting at `start` (1, or throttle_factor while the
        drive is throttled), the temperature cooled over the idle gap before it, and the
        throttle's start and end as events."""
        p = self.p
        if not p.throttle_c:
            return 1.0
        self._relax(start, 0.0)
        if not self.throttled and self.temp_c >= p.throttle_c:
            self.throttled = True
            self.events.append({"event": "throttle", "time": start,
                                "temperature_c": round(self.temp_c, 2)})
        elif self.throttled and self.temp_c <= p.recover_c:
            self.throttled = False
            self.events.append({"event": "unthrottle", "time": start,
                                "temperature_c": round(self.temp_c, 2)})
        return p.throttle_factor if self.throttled else 1.0

    def _arrived(self, arrival: float) -> None:
        """A request arrived: the last one-page read was solo if it was done by then."""
        if self.solo_candidate is not None:
            if arrival >= self.solo_candidate:
                self._count_10ms(S10, self.solo_candidate)
            self.solo_candidate = None

    def _serve(self, arrival: float, units: float, stall_units: float) -> float:
        self._arrived(arrival)
        start = max(arrival, self.busy_until)
        factor = self._thermal(start)
        units *= factor
        stall_units *= factor
        done = start + units * self.c_w
        if self.p.throttle_c and done > start:
            self._relax(done, 1.0 / factor)
        if stall_units > 0:
            self._spread(start, start + stall_units * self.c_w, F_STALL, 1000.0)
        self._spread(start, done, F_BUSY, 1000.0)
        self.busy_until = done
        return done

    def _pages(self, offset: int, length: int) -> range:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise ValueError(f"request {offset}+{length} beyond the drive's {self.size} bytes")
        if length == 0:
            return range(0)
        return range(offset // PAGE, (offset + length - 1) // PAGE + 1)

    def write(self, arrival: float, offset: int, length: int) -> float:
        """A host write (partial pages are read-modify-written whole). Returns `done`."""
        pages = self._pages(offset, length)
        self._idle(arrival)
        nand0, moves0, erases0 = self.totals.nand_pages, self.totals.gc_moves, self.totals.erases
        self._units = 0.0
        for lpn in pages:
            self._program_host(lpn)
        gc_units = self._units
        self._units = 0.0
        jitter = 1.0
        if self.p.jitter > 0 and pages:
            s = self.p.jitter / math.sqrt(len(pages))  # pages of one request vary independently
            jitter = self.rng.lognormvariate(-s * s / 2.0, s)
        host_units = len(pages) * jitter
        if self.slc_left > 0 and pages:
            fast = min(self.slc_left, len(pages))
            self.slc_left -= fast
            host_units -= fast * jitter * (1.0 - 1.0 / self.p.slc_speedup)
            if self.slc_left == 0:
                self.events.append({"event": "slc_full", "time": max(arrival, self.busy_until),
                                    "pages": self.totals.host_pages + fast})
        start = max(arrival, self.busy_until)
        done = self._serve(arrival, host_units + gc_units, gc_units)
        t = self.totals
        t.host_writes += 1
        t.host_pages += len(pages)
        # GC work is spread over the stall, the host pages land in the completion second
        gc_end = start + gc_units * self.c_w
        if gc_units > 0:
            span = max(gc_end - start, 1e-9)
            self._spread(start, gc_end, F_GC_MOVES, (t.gc_moves - moves0) / span)
            self._spread(start, gc_end, F_ERASES, (t.erases - erases0) / span)
            self._spread(start, gc_end, F_NAND_PAGES, (t.gc_moves - moves0) / span)
        row = self._count_10ms(N_FIELDS, done)
        row[F_HOST_WRITES] += 1
        row[F_HOST_PAGES] += len(pages)
        row[F_NAND_PAGES] += t.nand_pages - nand0 - (t.gc_moves - moves0)
        row[F_FREE] = len(self.free)
        return done

    def _count_10ms(self, first: int, when: float) -> list[float]:
        """Count one in the 10-ms field (from `first`) of epoch time `when`; its row."""
        sec = math.floor(when)
        row = self._bin(sec)
        row[first + min(SUB - 1, int((when - sec) * SUB))] += 1
        return row

    def replied(self, when: float) -> None:
        """The server sent a host write's reply at `when` (epoch s): the model's `done`
        plus however late the host let the server's thread run (docs/simdrive.md)."""
        self._count_10ms(R10, when)

    def read(self, arrival: float, offset: int, length: int) -> float:
        pages = self._pages(offset, length)
        self._arrived(arrival)
        waited = arrival < self.busy_until
        self._idle(arrival)
        done = self._serve(arrival, len(pages) * self.p.read_cost, 0.0)
        self.totals.host_reads += 1
        # one-page reads apart, per 10 ms: a 4 KiB read job's I/Os, not a tool's buffered
        # probe of the device beside it (readahead: many pages a read); and of them the
        # solo ones (a QD1 job's, when nothing else reads the drive at the time)
        row = self._count_10ms(D10, done) if len(pages) == 1 else self._bin(math.floor(done))
        if len(pages) == 1 and not waited:
            self.solo_candidate = done
        row[F_HOST_READS] += 1
        row[F_READ_PAGES] += len(pages)
        return done

    def flush(self, arrival: float) -> float:
        return max(arrival, self.busy_until)

    def _full_pages(self, offset: int, length: int) -> range:
        self._pages(offset, length)
        first = -(-offset // PAGE)
        end = (offset + length) // PAGE
        if offset + length == self.size:
            end = self.user_pages  # a partial last page counts as covered at the drive's end
        return range(first, max(first, end))

    def trim(self, arrival: float, offset: int, length: int) -> tuple[float, int, int]:
        """TRIM: invalidate fully covered mapped pages with probability trim_eff.

        Returns (done, mapped pages in range, pages invalidated)."""
        self._idle(arrival)
        eff = self.p.trim_eff
        mapped = gone = 0
        l2p, rnd = self.l2p, self.rng.random
        for lpn in self._full_pages(offset, length):
            ppn = l2p[lpn]
            if ppn < 0:
                continue
            mapped += 1
            if eff >= 1.0 or rnd() < eff:
                self._invalidate(ppn)
                l2p[lpn] = -1
                gone += 1
        self.totals.trimmed_pages += gone
        done = self._serve(arrival, 0.0, 0.0)
        self._bin(math.floor(done))[F_TRIMS] += 1
        return done, mapped, gone

    def deallocate(self, offset: int, length: int) -> int:
        """Unmap fully covered pages, always effective (part of a whole-device zero)."""
        gone = 0
        l2p = self.l2p
        for lpn in self._full_pages(offset, length):
            ppn = l2p[lpn]
            if ppn >= 0:
                self._invalidate(ppn)
                l2p[lpn] = -1
                gone += 1
        return gone

    def sanitize(self, arrival: float) -> float:
        """Whole-device zero / format: reset the FTL. Completes at the current busy end."""
        self.reset()
        return self._serve(arrival, 0.0, 0.0)

    # ---- per-second records ------------------------------------------------------------------

    def final_bins(self, now: float, everything: bool = False) -> list[tuple[int, list[float]]]:
        """Pop the bins no request can change any more (second + 1 <= now), sorted."""
        if self.solo_candidate is not None and (everything or self.solo_candidate <= now):
            # nothing arrived before it was done (arrivals come in order, under the lock)
            self._arrived(max(now, self.solo_candidate))
        limit = math.inf if everything else math.floor(now)
        done = sorted(s for s in self.bins if s < limit)
        return [(s, self.bins.pop(s)) for s in done]

    def geometry(self) -> dict[str, Any]:
        return {
            "page_bytes": PAGE,
            "user_pages": self.user_pages,
            "pages_per_block": self.b,
            "blocks": self.nblocks,
            "physical_pages": self.phys_pages,
            "alpha": self.phys_pages / self.user_pages,
            "idle_reserve_blocks": self.idle_reserve_blocks,
            "fob_iops": self.fob_iops,
        }


def record(sec: int, row: list[float], last_free: int) -> dict[str, Any]:
    """One ground-truth line for second `sec` (free_blocks carried from `last_free`)."""
    free = int(row[F_FREE]) if row[F_FREE] >= 0 else last_free
    busy = min(1000.0, row[F_BUSY])
    host = round(row[F_HOST_WRITES])
    return {
        "t": sec,
        "host_writes": host,
        "host_pages": round(row[F_HOST_PAGES]),
        "host_reads": round(row[F_HOST_READS]),
        "read_pages": round(row[F_READ_PAGES]),
        "nand_pages": round(row[F_NAND_PAGES]),
        "gc_moves": round(row[F_GC_MOVES]),
        "erases": round(row[F_ERASES]),
        "trims": round(row[F_TRIMS]),
        "free_blocks": free,
        "busy_ms": round(busy, 1),
        "stall_ms": round(min(1000.0, row[F_STALL]), 1),
        "zero_second": host == 0 and busy >= 999.0,
        "w10ms": [int(x) for x in row[N_FIELDS:R10]] if host else [],
        "r10ms": [int(x) for x in row[R10:D10]] if any(row[R10:D10]) else [],
        "rd10ms": [int(x) for x in row[D10:S10]] if any(row[D10:S10]) else [],
        "solo10ms": [int(x) for x in row[S10:]] if any(row[S10:]) else [],
    }
