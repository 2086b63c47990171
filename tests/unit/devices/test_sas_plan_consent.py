"""PROPOSED (needs the plan/engine.py patch): a drive of 520-byte blocks only for the erase
plan with scsi_reformat_512."""

from __future__ import annotations

import pytest

from ssdbench.plan.engine import Refused, check_consent
from ssdbench.plan.plans import build_plan
from tests.unit.devices.test_sas_discovery import only_drive, sas_machine


def test_a_520_byte_drive_only_for_the_erase_plan_with_scsi_reformat_512() -> None:
    drive = only_drive(sas_machine())
    ok = build_plan("erase", sets=["scsi_reformat_512=true"])
    check_consent(drive, ok, "SASEMU0044")
    for plan in (build_plan("erase"), build_plan("quick", sets=["scsi_reformat_512=true"])):
        with pytest.raises(Refused, match=r"520-byte sectors.*scsi_reformat_512"):
            check_consent(drive, plan, "SASEMU0044")
    check_consent(only_drive(sas_machine(block=512)), build_plan("quick"), "SASEMU0044")
