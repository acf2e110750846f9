MemcpyHtoD,0x0000000010000000,256
kernel-1.traceg
