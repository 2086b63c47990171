"""The NIST SP 800-88 category of each erase method, mapped honestly.

SP 800-88 Rev. 1 (December 2014), Appendix A, Table A-8 "Flash Memory-Based Storage
Devices": for ATA SSDs, Purge is the ATA SANITIZE command (block erase, crypto scramble)
or ATA SECURITY ERASE UNIT in enhanced mode (with the guideline's caution that
implementations vary, hence our read-back verification); for NVMe SSDs, Purge is the
NVMe Format command with Secure Erase Settings 1 (user data erase) or 2 (cryptographic
erase), and the NVMe Sanitize command (block erase, crypto erase, overwrite; NVMe 1.3,
later than Rev. 1, named by Rev. 2's reference to IEEE 2883) purges the whole subsystem.
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
    "discard": Sanitization(
        NONE, "discard (TRIM / blkdiscard)", GUIDELINE,
        "a discard is not a sanitization: it only unmaps blocks and the data may remain "
        "readable in the flash; neither Clear nor Purge was achieved"),
}


def sanitization_for(method: str | None) -> Sanitization:
    """The category and technique of an erase method (the erase room's method names)."""
    if method is None:
        return Sanitization(NONE, "no erase was done", GUIDELINE,
                            "nothing was erased: neither Clear nor Purge was achieved")
    known = _METHODS.get(method)
    if known is None:
        return Sanitization(NONE, method, GUIDELINE,
                            f"{method!r} has no SP 800-88 mapping in ssdbench: not claimed")
    return known
