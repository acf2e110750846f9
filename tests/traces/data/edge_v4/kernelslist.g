MemcpyHtoD,0x0000000010000000,4096
kernel-1.traceg
MemcpyHtoD,0x0000000010001000,256
kernel-2.traceg
