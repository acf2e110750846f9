kernel-3.traceg
