"""The stages of a run (erase, [op-partition,] fill, torture, probe, trim, read-scan) and
the plans that order them. See docs/engine.md."""
