"""hostlink.traces: memory traces, the coalescer and caches, graphs and the kernel emulator."""
