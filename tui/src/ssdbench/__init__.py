"""ssdbench: a bootable appliance that tests SSDs the way hardware reviewers do."""

__version__ = "0.1.0"
