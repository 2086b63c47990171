"""Runs INSIDE the QEMU guest (see qemu_helper.py): the quick fake-capacity check
(grade/capacity.py) on a device-mapper fake built over the emulated NVMe drive.

    python guest_capacity.py DEVICE OUT.json

Writes the CapacityResult as JSON, and the kernel's size of DEVICE."""

from __future__ import annotations

import json
import sys

from ssdbench.grade.capacity import DirectIO, check_capacity

device, out = sys.argv[1], sys.argv[2]
io = DirectIO(device, 4096)
try:
    claimed = io.size()
    result = check_capacity(io, claimed, 4096)
finally:
    io.close()
with open(out, "w", encoding="utf-8") as fh:
    json.dump({**result.to_json(), "summary": result.summary}, fh, indent=1)
print(result.summary)
