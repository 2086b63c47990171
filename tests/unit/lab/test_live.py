"""status.json's content from the Progress events the console sees."""

from __future__ import annotations

from ssdbench.lab.live import LiveStatus
from ssdbench.progress import Progress


def test_snapshot_has_each_drive_the_last_event_and_errors() -> None:
    live = LiveStatus("bench-07", "quick", {"nvme0n1": "S4EV0001"})
    live(Progress("nvme0n1", "trim", "torture", "running", message="started"))
    live(Progress("nvme0n1", "trim", "torture", "running", fraction=0.4567, iops=12345.67,
                  eta_s=61.4))
    live(Progress("sda", "trim", "erase", "failed", message="frozen"))
    snap = live.snapshot()
    nvme = snap["drives"][0]
    assert (nvme["drive"], nvme["serial"], nvme["stage"], nvme["percent"], nvme["iops"],
            nvme["eta_s"]) == ("nvme0n1", "S4EV0001", "torture", 45.7, 12345.7, 61)
    assert snap["last_event"] == "sda trim erase failed: frozen"
    assert snap["errors"] == ["sda trim erase: frozen"] and snap["state"] == "running"
    live(Progress("nvme0n1", "report", "report", "done"))
    assert live.snapshot()["last_event"] == "nvme0n1 report done"  # not "report report"
    live.finish("failed")
    assert live.snapshot()["state"] == "failed"


def test_snapshot_names_the_host_and_each_drives_controller() -> None:
    machine = {"machine": {"sys_vendor": "QEMU", "product_serial": "not readable"},
               "notes": {"product_serial": "not readable (root only)"}, "dmi": "read"}
    ctrl = {"bus": "pci", "pci_address": "0000:00:05.0", "pci_id": "1b36:0010",
            "driver": "nvme"}
    live = LiveStatus("bench-07", "quick", {"nvme0n1": "S4EV0001"}, host=machine,
                      controllers={"nvme0n1": ctrl})
    live(Progress("nvme0n1", "trim", "torture", "running", message="started"))
    live(Progress("sda", "trim", "torture", "running", message="started"))
    snap = live.snapshot()
    assert snap["host"] == machine
    assert snap["drives"][0]["controller"] == ctrl and "controller" not in snap["drives"][1]
    assert "host" not in LiveStatus("b", "p").snapshot()
