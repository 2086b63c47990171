from __future__ import annotations

from ssdbench.report.html import drive_label, target_text


def test_drive_label_prefers_model_then_kernel_name() -> None:
    assert drive_label({"model": "Samsung SSD 870 EVO 1TB", "name": "sda"}, "dir") == (
        "Samsung SSD 870 EVO 1TB"
    )
    assert drive_label({"model": "", "name": "loop0", "transport": "loop"}, "dir") == (
        "loop0 (loop device)"
    )
    # a loop device is named by the image behind it (two loops: two different labels)
    assert drive_label({"name": "loop1", "transport": "loop", "loop_backing_file":
                        "/srv/sims/consumer/fuse/nbd"}, "dir") == (
        "loop1 (loop device: …/consumer/fuse/nbd)")
    # a whole absolute path keeps its leading slash (#45 I: "dev/shm/shots-a.img")
    assert drive_label({"name": "loop1", "transport": "loop", "loop_backing_file":
                        "/dev/shm/shots-a.img"}, "dir") == (
        "loop1 (loop device: /dev/shm/shots-a.img)")
    assert drive_label({}, "20261121T151046Z_x_y") == "20261121T151046Z_x_y"


def test_target_text_is_readable() -> None:
    text = target_text({"path": "/dev/nvme0n1p1", "kind": "block",
                        "span_bytes": 805306368, "op_percent": 25})
    assert text == "/dev/nvme0n1p1, span 0.75 GiB (805,306,368 bytes), 25% extra over-provisioning"
    assert target_text(None) == ""
