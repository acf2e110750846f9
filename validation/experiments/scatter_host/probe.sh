#!/bin/bash
# Zero-copy reads of one 32 B sector per lane and load, at full occupancy:
# lanes on random words of a region (scatter), and lanes walking their own
# 128 B or 4 KiB chunk in turn (strided). Both send one 32 B request per lane
# and load (4 and 8 B per lane); scatter's land on random host DRAM rows and
# pages, as the naive BFS's lanes walking the long lists of a dense graph do.
# Whether such requests run slower than the strided ones, which the model
# predicts alike, and from what region on. With ld.cv (--cache cv) every load
# goes to host memory: a region smaller than the L2 then still sends its
# requests, so the rate against the region shows the reach of any
# translation cache on the way. Coalesced 128 B reads for the link's own
# rate. Zero-copy buffers of at most 512 MiB. Run from the repository root
# on the lent GPU with OUT set.
source "$(dirname "$0")/../tools/probe_common.sh"
probe_start scatter_host bin/zc_read
rm -f "$W"/{plain.jsonl,plain.err}
run() { gpu_kernels/bin/zc_read --memory-mode zerocopy --total-B 64MiB --unroll 4 --reps 5 "$@" \
          >> "$W/plain.jsonl" 2>> "$W/plain.err"; }
run --pattern scatter --region-B 64KiB,1MiB,4MiB,16MiB,64MiB,256MiB,512MiB --bytes-per-lane 4,8 \
    --cache default,cv
run --pattern strided --chunk-B 128,4096 --bytes-per-lane 4,8 --cache default,cv
run --pattern coalesced --bytes-per-lane 4
# the lease's own link, as other runs measured other leases: coalesced 128 B reads and
# strided 32 B requests (ld.cv, 4 KiB chunks) over 512 MiB
run --pattern coalesced --bytes-per-lane 4 --total-B 512MiB
run --pattern strided --chunk-B 4096 --bytes-per-lane 4 --cache cv --total-B 512MiB
echo "lines $(grep -c measurement "$W/plain.jsonl")"; tail -3 "$W/plain.err"
# the SASS the GPU ran: the loads a warp keeps in flight (hostlink validate sass)
cuobjdump -sass gpu_kernels/bin/zc_read | gzip > "$W/zc_read.sass.gz" || echo "no cuobjdump"
probe_pack scatter_host
