"""The bench name (#21 item 2, docs/lab.md "Bench names"): ``[store] bench``, else
``ssdbench.bench=``, else the DHCP host name, else the MAC, recorded by the image's DHCP
script in /run/ssdbench (overlay/usr/libexec/ssdbench/udhcpc.script, network)."""

from __future__ import annotations

from pathlib import Path

from ssdbench.lab.config import parse_store
from ssdbench.lab.uploader import bench_name

BASE = {"kind": "http", "endpoint": "http://127.0.0.1:9/dav"}


def test_the_order_config_cmdline_dhcp_mac(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "dhcp-hostname").write_text("rack3-bench07\n")
    (run / "mac").write_text("52:54:00:12:34:56\n")
    named = parse_store({**BASE, "bench": "from-config"}, tmp_path)
    plain = parse_store(BASE, tmp_path)
    assert bench_name(named, "from-cmdline", run_dir=run) == "from-config"
    assert bench_name(plain, "from-cmdline", run_dir=run) == "from-cmdline"
    assert bench_name(plain, None, run_dir=run) == "rack3-bench07"
    (run / "dhcp-hostname").unlink()
    assert bench_name(plain, None, run_dir=run) == "52-54-00-12-34-56"


def test_without_the_network_files_the_host_name(tmp_path: Path) -> None:
    plain = parse_store(BASE, tmp_path)
    assert bench_name(plain, None, "labhost", run_dir=tmp_path) == "labhost"
