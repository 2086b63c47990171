"""report.html names the machine a run was made in and the drive's controller (#45), from
run.json ``host``: the firmware's strings escaped like every drive string."""

from __future__ import annotations

import json
from pathlib import Path

from ssdbench.report import render_drive
from tests.unit.report.synthetic import DriveSpec, write_drive_folder

HOST = {"machine": {"sys_vendor": "<script>x</script>", "product_name": "Q35\u202e",
                    "product_serial": "not readable", "bios_version": "1.16.3"},
        "notes": {"product_serial": "not readable (root only)"}, "dmi": "read",
        "controller": {"bus": "usb", "pci_address": "0000:00:07.0", "pci_id": "1b36:000d",
                       "driver": "xhci_hcd", "usb_id": "46f4:0001"}}


def test_report_has_the_host_of_each_run(tmp_path: Path) -> None:
    root = tmp_path / "ssdbench"
    write_drive_folder(root, DriveSpec(model="Calm NVMe", serial="N2"), duration=120,
                       runs=("consistency-default",))
    drive_dir = next(root.iterdir())
    run_json = next(drive_dir.glob("*/run.json"))
    meta = json.loads(run_json.read_text())
    run_json.write_text(json.dumps({**meta, "host": HOST}))
    render_drive(drive_dir, svg=False)
    page = (drive_dir / "report.html").read_text()
    assert "<h3>Host</h3>" in page
    assert "&lt;script&gt;x&lt;/script&gt; Q35?" in page and "<script>x" not in page
    assert "USB bridge 46f4:0001 on PCI 0000:00:07.0 1b36:000d, driver xhci_hcd" in page
    assert "serial not readable" in page
