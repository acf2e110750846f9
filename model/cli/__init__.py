"""The `hostlink` command line: one module per command, `main.py` dispatches."""
