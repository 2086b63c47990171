"""A simulated SSD for known-answer runs of ssdbench (dev/test/demo tool, not shipped).

`simdrive.ftl` is the flash translation layer model (pure, stdlib only: it also runs inside
nbdkit's Python plugin on the system python3), `simdrive.presets` the drive personalities with
their expected answers, `simdrive.twin` the offline twin (same model, virtual clock),
`simdrive.truth` the ground-truth log reader, `simdrive.cli` the `scripts/simdrive` command.
See docs/simdrive.md.
"""
