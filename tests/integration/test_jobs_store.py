"""The job file in an S3 store (s3proxy on 127.0.0.1, the store's own keys): read under
the store's prefix, a missing one or wrong keys a clear JobsError naming no secret."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ssdbench.lab.jobs import JobsError, fetch_jobs, parse_jobs
from ssdbench.lab.store import open_store
from ssdbench.plan.plans import PRESETS
from tests.integration.test_store import S3Proxy, free_port, make_bucket, s3_config

JOBS = b'[[job]]\nid = "J-1"\nserial = "S1"\nplan = "erase"\n'


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Proxy]:
    server = S3Proxy(tmp_path_factory.mktemp("s3proxy"), free_port())
    server.start()
    yield server
    server.stop()


def test_the_job_file_is_read_from_the_s3_store_under_its_prefix(s3: S3Proxy) -> None:
    make_bucket(s3, "jobs")
    cfg = s3_config(s3, "jobs")
    open_store(cfg).put("lab1/jobs.toml", JOBS)
    where, raw = fetch_jobs(store=cfg, key="jobs.toml")
    assert raw == JOBS and "lab1/jobs.toml" in where
    jobs = parse_jobs(raw, where, plans=PRESETS, field_names=("asset_tag",))
    assert jobs.find("S1", "any", "").id == "J-1"  # type: ignore[union-attr]
    with pytest.raises(JobsError, match=r"NoSuchKey|404"):
        fetch_jobs(store=cfg, key="other.toml")
    wrong = s3_config(s3, "jobs", secret="wrong-Secret-Value-99")
    with pytest.raises(JobsError) as caught:
        fetch_jobs(store=wrong, key="jobs.toml")
    assert "wrong-Secret-Value-99" not in str(caught.value)
    assert "check the store's keys" in str(caught.value)
