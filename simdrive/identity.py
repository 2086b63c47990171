"""Drive identities for the rigs (issue #42): the strings a simulated or emulated drive
reports as its model, serial and firmware. ``HOSTILE`` is what a counterfeit drive or a
USB bridge may report: markup for Rich (``[b]``), HTML (``<script>``, ``</style>``) and
LaTeX (``$\\frac{a}{b}$``), a line break and a right-to-left override (U+202E) in the
serial, a serial that starts a spreadsheet formula and that two drives share. Every page,
CSV, record, certificate and screen ssdbench makes is rendered against it in the tests
(docs/security.md lists them).

Each string fits the transport it is meant for, counted in bytes (UTF-8): an ATA IDENTIFY
model has 40, serial 20, firmware 8; an NVMe serial 20 (QEMU 7.2's NVMe model and firmware
are fixed). ``shared_serial`` has neither a comma nor a line break, so a
``scripts/run-qemu.sh --nvme/--sata`` SPEC (comma-separated, one line) can carry it.
"""

from __future__ import annotations

from dataclasses import dataclass

# bytes of each field: ATA IDENTIFY words 27-46, 10-19, 23-26; NVMe Identify sn (20), mn (40)
MODEL_BYTES = 40
SERIAL_BYTES = 20
FIRMWARE_BYTES = 8


@dataclass(frozen=True)
class Identity:
    model: str
    serial: str
    firmware: str
    shared_serial: str = ""  # a second serial, for drives that report one serial together

    def problems(self) -> list[str]:
        """Why the strings do not fit their fields ([] when they do)."""
        out = []
        for name, value, limit in (("model", self.model, MODEL_BYTES),
                                   ("serial", self.serial, SERIAL_BYTES),
                                   ("firmware", self.firmware, FIRMWARE_BYTES),
                                   ("shared_serial", self.shared_serial, SERIAL_BYTES)):
            size = len(value.encode("utf-8"))
            if size > limit:
                out.append(f"{name} {value!r} is {size} bytes, the field holds {limit}")
        if "," in self.shared_serial or "\n" in self.shared_serial:
            out.append("shared_serial must hold no comma and no line break (a run-qemu.sh SPEC)")
        return out


ORDINARY = Identity(model="SSDBENCH ATA EMU", serial="ATAEMU0001", firmware="EMU1.0")
HOSTILE = Identity(
    model="[b]<script>$\\frac{a}{b}$</style>",  # 32 bytes
    serial="[i]$x$\n\u202e</style>",  # 18 bytes: markup, a line break, U+202E (3 bytes)
    firmware="<b>$1$",  # 6 bytes
    shared_serial="=SHARED+1[b]<i>",  # a formula start and markup; two drives report it
)
IDENTITIES = {"ordinary": ORDINARY, "hostile": HOSTILE}


def named(name: str) -> Identity:
    """The identity called ``name`` (``ordinary`` or ``hostile``)."""
    try:
        return IDENTITIES[name]
    except KeyError:
        raise ValueError(f"unknown identity {name!r}: one of {', '.join(IDENTITIES)}") from None
