"""Runs INSIDE the QEMU guest (test_sas_emu_qemu.py): read a whole drive back and print, as
JSON, how many times a marker is still on it, its size and its three commonest bytes.

    python guest_sas_readback.py DEVICE MARKER
"""

from __future__ import annotations

import collections
import json
import os
import sys


def main() -> int:
    device, marker = sys.argv[1], sys.argv[2].encode()
    counts: collections.Counter[int] = collections.Counter()
    found = size = 0
    tail = b""
    with open(device, "rb", buffering=0) as f:
        # the page cache may still hold what was written before the drive erased itself
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        while chunk := f.read(1 << 20):
            found += (tail + chunk).count(marker)
            tail = chunk[-(len(marker) - 1):]
            counts.update(chunk)
            size += len(chunk)
    print(json.dumps({"markers": found, "bytes": size, "common": counts.most_common(3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
