// Host NUMA placement for the gpu_kernels programs, and a start gate for runs
// on several GPUs at once.
//
//   --host-node N       bind the program to NUMA node N before any host buffer
//                       is allocated: its CPUs (sched_setaffinity to the node's
//                       cpulist) and its memory (set_mempolicy MPOL_BIND), as
//                       `numactl --cpunodebind=N --membind=N` does; pinned
//                       buffers (cudaHostAlloc, cudaHostRegister) then take
//                       their pages from node N. `local`: the node of the GPU
//                       (its PCI device's numa_node in sysfs). Empty: no binding.
//   --start-gate DIR    after set-up, create DIR/ready.<device>.<pid> and wait
//                       (at most 600 s) until DIR/go exists, so that programs on
//                       several GPUs start their timed work together.
//
// With --host-node the program prints one JSON line of type "host_binding"
// (node asked, node bound, its CPUs, the GPU's node) and, per host buffer, one
// of type "host_buffer": the node its first page is on (get_mempolicy
// MPOL_F_NODE | MPOL_F_ADDR; -1 where the kernel does not say).
// Sysfs is read under $HOSTLINK_SYSFS (default /sys), so tests can point it at
// a folder. References: Linux set_mempolicy(2), get_mempolicy(2),
// sched_setaffinity(2); Documentation/ABI/stable/sysfs-devices-node (cpulist).
#pragma once

#include <dirent.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "args.hpp"
#include "check.cuh"
#include "json.hpp"

namespace hl {

constexpr int kMpolBind = 2;      // linux/mempolicy.h MPOL_BIND
constexpr int kMpolFNode = 1;     // MPOL_F_NODE
constexpr int kMpolFAddr = 2;     // MPOL_F_ADDR
constexpr int kMaxNodes = 1024;   // nodemask bits passed to the kernel
constexpr int kGateTimeoutS = 600;

inline std::string sysfs_root() {
  const char* env = std::getenv("HOSTLINK_SYSFS");
  return env && *env ? std::string(env) : std::string("/sys");
}

// The first line of a file, or "" where it cannot be read.
inline std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line)) return "";
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}; a malformed list exits with status 2 naming `what`.
inline std::vector<int> parse_cpulist(const std::string& text, const std::string& what) {
  std::vector<int> cpus;
  size_t i = 0;
  auto number = [&](void) -> long {
    size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == start || i - start > 6) fail(kExitUsage, "usage", "%s: '%s' is not a CPU list", what.c_str(), text.c_str());
    return std::strtol(text.substr(start, i - start).c_str(), nullptr, 10);
  };
  if (text.empty()) fail(kExitUsage, "usage", "%s: the CPU list is empty", what.c_str());
  while (i < text.size()) {
    long a = number(), b = a;
    if (i < text.size() && text[i] == '-') {
      ++i;
      b = number();
    }
    if (b < a) fail(kExitUsage, "usage", "%s: '%s' is not a CPU list", what.c_str(), text.c_str());
    for (long c = a; c <= b; ++c) cpus.push_back(static_cast<int>(c));
    if (i < text.size()) {
      if (text[i] != ',') fail(kExitUsage, "usage", "%s: '%s' is not a CPU list", what.c_str(), text.c_str());
      ++i;
      if (i == text.size()) fail(kExitUsage, "usage", "%s: '%s' is not a CPU list", what.c_str(), text.c_str());
    }
  }
  return cpus;
}

// The NUMA node sysfs gives a PCI device ("0000:17:00.0"), or -1.
inline int pci_numa_node(const std::string& bus_id) {
  std::string v = read_line(sysfs_root() + "/bus/pci/devices/" + bus_id + "/numa_node");
  if (v.empty()) return -1;
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  return *end ? -1 : static_cast<int>(n);
}

// The NUMA nodes sysfs lists (devices/system/node/node<N>).
inline std::vector<int> host_nodes() {
  std::vector<int> nodes;
  DIR* d = opendir((sysfs_root() + "/devices/system/node").c_str());
  if (!d) return nodes;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 4 && name.compare(0, 4, "node") == 0 &&
        name.find_first_not_of("0123456789", 4) == std::string::npos)
      nodes.push_back(std::atoi(name.c_str() + 4));
  }
  closedir(d);
  return nodes;
}

// The node --host-node asks for: -1 for none; `local` is the GPU's (on a host of one
// node, that node even where sysfs gives the GPU none, as in a virtual machine; exit 2
// where several nodes leave it unknown); a number must name a node under sysfs.
inline int resolve_host_node(const std::string& value, const std::string& gpu_bus_id) {
  if (value.empty()) return -1;
  int node;
  if (value == "local") {
    node = pci_numa_node(gpu_bus_id);
    std::vector<int> nodes = host_nodes();
    if (node < 0 && nodes.size() == 1) node = nodes[0];
    if (node < 0)
      fail(kExitUsage, "usage", "--host-node local: sysfs gives no NUMA node for the GPU at %s", gpu_bus_id.c_str());
  } else {
    node = static_cast<int>(Args::parse_int("host-node", value));
    if (node < 0 || node >= kMaxNodes) fail(kExitUsage, "usage", "--host-node: %d is not a NUMA node", node);
  }
  std::string dir = sysfs_root() + "/devices/system/node/node" + std::to_string(node);
  struct stat st{};
  if (stat(dir.c_str(), &st) != 0)
    fail(kExitUsage, "usage", "--host-node %s: the host has no NUMA node %d (%s)", value.c_str(), node, dir.c_str());
  return node;
}

// The CPUs of a node (its sysfs cpulist).
inline std::vector<int> node_cpus(int node) {
  std::string path = sysfs_root() + "/devices/system/node/node" + std::to_string(node) + "/cpulist";
  return parse_cpulist(read_line(path), path);
}

// Bind this process's CPUs and memory to `node` (exit 1 where the kernel refuses).
inline void bind_to_node(int node, const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus)
    if (c < CPU_SETSIZE) CPU_SET(c, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    fail(kExitCudaError, "host", "sched_setaffinity to the CPUs of node %d: %s", node, std::strerror(errno));
  unsigned long mask[kMaxNodes / (8 * sizeof(unsigned long))] = {};
  mask[node / (8 * sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long)));
  if (syscall(SYS_set_mempolicy, kMpolBind, mask, static_cast<unsigned long>(kMaxNodes + 1)) != 0)
    fail(kExitCudaError, "host", "set_mempolicy(MPOL_BIND, node %d): %s", node, std::strerror(errno));
}

// The node the page at `p` is on, or -1 where the kernel does not say.
inline int page_node(const void* p) {
  if (!p) return -1;
  int node = -1;
  long r = syscall(SYS_get_mempolicy, &node, nullptr, 0ul, const_cast<void*>(p),
                   static_cast<unsigned long>(kMpolFNode | kMpolFAddr));
  return r == 0 ? node : -1;
}

inline void declare_host_flags(Args& args) {
  args.flag("host-node", "", "NUMA node for host buffers and host threads (numactl --membind/--cpunodebind); "
                             "'local': the GPU's node; empty: no binding");
  args.flag("start-gate", "", "folder: write ready.<device>.<pid> after set-up and wait for its 'go' file");
}

// The flags' form, checked before any GPU is touched: --host-node is empty,
// `local` or a node number; --start-gate an existing folder.
inline void check_host_flags(const Args& args) {
  const std::string& v = args.str("host-node");
  if (!v.empty() && v != "local") {
    int64_t n = Args::parse_int("host-node", v);
    if (n < 0 || n >= kMaxNodes) fail(kExitUsage, "usage", "--host-node: %lld is not a NUMA node", (long long)n);
  }
  const std::string& gate = args.str("start-gate");
  struct stat st{};
  if (!gate.empty() && (stat(gate.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)))
    fail(kExitUsage, "usage", "--start-gate: %s is not a folder", gate.c_str());
}

struct HostBinding {
  std::string asked;
  int node = -1;
  std::vector<int> cpus;
};

// The PCI bus id in sysfs form ("0000:17:00.0") of a CUDA device's domain, bus, device.
inline std::string sysfs_bus_id(int domain, int bus, int device) {
  char b[32];
  std::snprintf(b, sizeof b, "%04x:%02x:%02x.0", domain, bus, device);
  return b;
}

// Resolve and apply --host-node; print the "host_binding" line.
inline HostBinding bind_host(const Args& args, const std::string& gpu_bus_id, bool apply = true) {
  HostBinding h;
  h.asked = args.str("host-node");
  h.node = resolve_host_node(h.asked, gpu_bus_id);
  if (h.node >= 0) {
    h.cpus = node_cpus(h.node);
    if (apply) bind_to_node(h.node, h.cpus);
  }
  if (h.asked.empty()) return h;  // no binding asked: the output stays as before
  std::string cpus;
  for (int c : h.cpus) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
  Json j;
  j.str("type", "host_binding").str("asked", h.asked).integer("node", h.node).str("cpus", cpus)
      .str("gpu_bus_id", gpu_bus_id).integer("gpu_node", pci_numa_node(gpu_bus_id));
  j.print();
  return h;
}

// One "host_buffer" line: where a host buffer's first page lies.
inline void print_buffer_node(const char* what, const void* host_ptr, int asked_node) {
  if (asked_node < 0 || !host_ptr) return;
  Json j;
  j.str("type", "host_buffer").str("buffer", what).integer("asked_node", asked_node)
      .integer("page_node", page_node(host_ptr));
  j.print();
}

// --start-gate: announce readiness and wait for the go file.
inline void start_gate(const Args& args, int device) {
  const std::string& dir = args.str("start-gate");
  if (dir.empty()) return;
  std::string ready = dir + "/ready." + std::to_string(device) + "." + std::to_string(getpid());
  {
    std::ofstream f(ready);
    if (!f) fail(kExitUsage, "usage", "--start-gate: cannot write %s", ready.c_str());
  }
  std::fflush(stdout);
  std::string go = dir + "/go";
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(kGateTimeoutS);
  struct stat st{};
  while (stat(go.c_str(), &st) != 0) {
    if (std::chrono::steady_clock::now() > until)
      fail(kExitRefused, "gate", "--start-gate: no %s after %d s", go.c_str(), kGateTimeoutS);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace hl
