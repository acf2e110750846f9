// zc_warps: zero-copy read bandwidth against the number of warps in flight.
//
// The coalesced pattern of zc_read, with a grid of exactly `warps` warps
// (spread over the SMs: see zc::warps_per_block); each warp reads at most
// max_per_warp_B, so small grids finish quickly. Little's law on these
// points (bandwidth x latency / request size) gives the outstanding requests
// the GPU and the link sustain.
#include "zc_common.cuh"

int main(int argc, char** argv) {
  zc::Defaults def{"coalesced",
                   "1,2,4,8,16,32,66,132,264,528,1056,2112,4224,8448",
                   "1,4", "512MiB", "1MiB"};
  return zc::run(argc, argv, "zc_warps", "zero-copy bandwidth against warps in flight", def);
}
