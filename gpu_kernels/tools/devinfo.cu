// devinfo: one JSON line describing the GPU (device.cuh), for the harness's
// environment record.
#include "../common/args.hpp"
#include "../common/device.cuh"

int main(int argc, char** argv) {
  hl::Args args("devinfo", "print the GPU's properties as one JSON line");
  args.flag("device", "0", "CUDA device ordinal");
  args.parse(argc, argv);
  hl::print_device(hl::query_device(static_cast<int>(args.integer("device"))));
  hl::print_done("devinfo");
  return 0;
}
