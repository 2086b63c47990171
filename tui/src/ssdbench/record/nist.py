"""The NIST SP 800-88 category of each erase method, mapped honestly.

SP 800-88 Rev. 1 (December 2014), Appendix A, Table A-8 "Flash Memory-Based Storage
Devices": for ATA SSDs, Purge is the ATA SANITIZE command (block erase, crypto scramble)
or ATA SECURITY ERASE UNIT in enhanced mode (with the guideline's caution that
implementations vary, hence our read-back verification); for NVMe SSDs, Purge is the
NVMe Format command with Secure Erase Settings 1 (user data erase) or 2 (cryptographic
erase), and the NVMe Sanitize command (block erase, crypto erase, overwrite; NVMe 1.3,
later than Rev. 1, named by Rev. 2's reference to IEEE 2883) purges the whole subsystem;
for SCSI SSDs (SAS), Purge is the SCSI SANITIZE command with the BLOCK ERASE,
CRYPTOGRAPHIC ERASE or OVERWRITE service action (Table A-8; for SCSI hard disks Table A-7
names SANITIZE OVERWRITE and CRYPTOGRAPHIC ERASE as Purge).
FORMAT UNIT (``scsi-format``, a SAS drive that lists no SANITIZE) is in neither table as a
Purge (Table A-7 and A-8 name SANITIZE, cryptographic erase and degaussing); what it does is
re-initialize every user-addressable block, the outcome of a Clear, so a verified FORMAT
UNIT is recorded as Clear and no more (docs/erase.md).
The normal-mode ATA security erase is recorded as Clear: it need not reach reallocated
blocks nor an HPA/DCO (Seagate, openSeaChest#45). A discard (TRIM / blkdiscard) is not a
sanitization at all: it only unmaps blocks; the data may stay readable in the flash.
"""

from __future__ import annotations

from dataclasses import dataclass

PURGE = "Purge"
CLEAR = "Clear"
NONE = "none"

GUIDELINE = "NIST SP 800-88 Rev. 1, Appendix A, Table A-8 (flash memory-based storage)"
SCSI_GUIDELINE = ("NIST SP 800-88 Rev. 1, Appendix A, Table A-8 (flash memory-based storage: "
                  "SCSI SSDs; Table A-7 for SCSI hard disks)")
# scsi-format: the Clear of section 2.4, from a command the tables do not list as Purge
FORMAT_UNIT_GUIDELINE = ("NIST SP 800-88 Rev. 1, section 2.4 (Clear) and Appendix A, "
                         "Tables A-7 and A-8 (SCSI drives: FORMAT UNIT is not among their "
                         "Purge commands)")


@dataclass(frozen=True)
class Sanitization:
    category: str  # Purge | Clear | none
    technique: str  # the technique in the guideline's words
    reference: str
    note: str = ""


_METHODS = {
    "ata-sanitize-block": Sanitization(
        PURGE, "Block Erase (ATA SANITIZE BLOCK ERASE EXT)", GUIDELINE),
    "ata-sanitize-crypto": Sanitization(
        PURGE, "Cryptographic Erase (ATA SANITIZE CRYPTO SCRAMBLE EXT)", GUIDELINE),
    "ata-security-erase-enhanced": Sanitization(
        PURGE, "ATA SECURITY ERASE UNIT, enhanced mode", GUIDELINE,
        "the guideline cautions that implementations vary: the read-back verification "
        "below is what shows this drive's erase took effect"),
    "ata-security-erase": Sanitization(
        CLEAR, "ATA SECURITY ERASE UNIT, normal mode", GUIDELINE,
        "normal mode need not reach reallocated sectors nor an HPA/DCO: recorded as "
        "Clear, not Purge"),
    "nvme-format-user-data": Sanitization(
        PURGE, "NVMe Format NVM, Secure Erase Settings = 1 (user data erase)", GUIDELINE),
    "nvme-format-crypto": Sanitization(
        PURGE, "NVMe Format NVM, Secure Erase Settings = 2 (cryptographic erase)", GUIDELINE),
    "nvme-sanitize-block": Sanitization(
        PURGE, "NVMe Sanitize, Block Erase", GUIDELINE),
    "nvme-sanitize-crypto": Sanitization(
        PURGE, "NVMe Sanitize, Crypto Erase", GUIDELINE),
    "nvme-sanitize-overwrite": Sanitization(
        PURGE, "NVMe Sanitize, Overwrite", GUIDELINE),
    "scsi-sanitize-block": Sanitization(
        PURGE, "SCSI SANITIZE, BLOCK ERASE service action", SCSI_GUIDELINE),
    "scsi-sanitize-crypto": Sanitization(
        PURGE, "SCSI SANITIZE, CRYPTOGRAPHIC ERASE service action", SCSI_GUIDELINE),
    "scsi-sanitize-overwrite": Sanitization(
        PURGE, "SCSI SANITIZE, OVERWRITE service action (one pass of zeros)", SCSI_GUIDELINE),
    # the method asked for; a record of a finished erase names the service action that ran
    "scsi-sanitize": Sanitization(
        PURGE, "SCSI SANITIZE (block erase, else cryptographic erase, else overwrite: the "
        "service action the drive lists)", SCSI_GUIDELINE),
    "scsi-format": Sanitization(
        CLEAR, "SCSI FORMAT UNIT (the current block size kept): every user-addressable block "
        "re-initialized by the drive", FORMAT_UNIT_GUIDELINE,
        "recorded as Clear, not Purge: the drive has no SANITIZE, and SP 800-88 names "
        "SANITIZE (block erase, cryptographic erase, overwrite) as the SCSI Purge, not "
        "FORMAT UNIT; a format reaches what the drive maps, and may leave spare, retired and "
        "remapped blocks as they were. The read-back verification below is what shows "
        "the blocks it sampled hold none of the markers written before"),
    "discard": Sanitization(
        NONE, "discard (TRIM / blkdiscard)", GUIDELINE,
        "a discard is not a sanitization: it only unmaps blocks and the data may remain "
        "readable in the flash; neither Clear nor Purge was achieved"),
}


# Clear by overwrite (erase/overwrite.py). SP 800-88 Rev. 1 section 2.4: Clear "applies
# logical techniques to sanitize data in all user-addressable storage locations for
# protection against simple non-invasive data recovery techniques; typically applied through
# the standard Read and Write commands"; Tables A-8 (SSD) and the hard-disk tables: "at
# least a single write pass with a fixed data value, such as all zeros. Multiple passes or
# more complex values may optionally be used."
OVERWRITE_TECHNIQUE = ("Overwrite: one pass over every user-addressable block with the "
                       "standard write command (Clear)")
OVERWRITE_FLASH_NOTE = (
    "on flash memory an overwrite is Clear at best, never Purge (NIST SP 800-88 Rev. 1, "
    "section 2.4 and Table A-8): it reaches only the blocks the host addresses - the "
    "spare area, retired (bad) blocks and any block the controller remapped are not "
    "reached and may still hold data; a drive whose firmware erase works should be Purged")
OVERWRITE_DISK_NOTE = (
    "on a hard disk an overwrite is Clear (NIST SP 800-88 Rev. 1, section 2.4): it reaches "
    "every user-addressable sector; reallocated (grown-defect) sectors and a hidden area "
    "(HPA/DCO) are not reached")
OVERWRITE_VIRTUAL_NOTE = (
    "a virtual disk: the overwrite reached every block the guest addresses (Clear); what "
    "the host's storage keeps underneath is outside this record")


def overwrite_sanitization(media_type: str = "") -> Sanitization:
    """Clear by overwrite, with NIST's words for the media (build.py ``_media_type``)."""
    media = media_type.lower()
    note = (OVERWRITE_DISK_NOTE if "magnetic" in media else
            OVERWRITE_VIRTUAL_NOTE if "virtual" in media else OVERWRITE_FLASH_NOTE)
    return Sanitization(CLEAR, OVERWRITE_TECHNIQUE,
                        "NIST SP 800-88 Rev. 1, section 2.4 and Appendix A", note)


def sanitization_for(method: str | None, media_type: str = "") -> Sanitization:
    """The category and technique of an erase method (the erase room's method names);
    ``media_type`` (the record's words) picks NIST's note for an overwrite."""
    if method == "overwrite":
        return overwrite_sanitization(media_type)
    if method is None:
        return Sanitization(NONE, "no erase was done", GUIDELINE,
                            "nothing was erased: neither Clear nor Purge was achieved")
    known = _METHODS.get(method)
    if known is None:
        return Sanitization(NONE, method, GUIDELINE,
                            f"{method!r} has no SP 800-88 mapping in ssdbench: not claimed")
    return known
