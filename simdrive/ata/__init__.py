"""An emulated SATA SSD with the ATA Security and Sanitize feature sets, driven by the real
``hdparm`` through the real kernel (LIO TCMU + tcm_loop in a QEMU guest). docs/ata-emulator.md."""
