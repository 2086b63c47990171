"""The erase record you can hand to an auditor: identity, NIST SP 800-88 category,
verification, people, health, tools; signed with the lab's Ed25519 key; written as JSON,
a printable HTML certificate, a PDF, and a row in the session's CSV. See docs/erase.md
and docs/results-format.md "Erase record"."""

from __future__ import annotations

from ssdbench.record.build import FAIL, FORMAT, PASS, build_record
from ssdbench.record.nist import CLEAR, NONE, PURGE, Sanitization, sanitization_for
from ssdbench.record.sign import Verdict, dump_record, sign_record, verify_record_bytes
from ssdbench.record.write import seal, write_record_files

__all__ = [
    "CLEAR", "FAIL", "FORMAT", "NONE", "PASS", "PURGE", "Sanitization", "Verdict",
    "build_record", "dump_record", "sanitization_for", "seal", "sign_record",
    "verify_record_bytes", "write_record_files",
]
