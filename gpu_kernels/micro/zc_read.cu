// zc_read: zero-copy read bandwidth by access pattern (see zc_common.cuh).
#include "zc_common.cuh"

int main(int argc, char** argv) {
  zc::Defaults def{"coalesced", "0", "4", "1GiB", "1GiB"};
  return zc::run(argc, argv, "zc_read",
                 "SM reads of host memory by pattern: coalesced (aligned or offset), strided chunks, random blocks",
                 def);
}
