"""hostlink.validation: the harness that measures on real GPUs, calibrates and reports."""
