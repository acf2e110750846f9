// Command-line flags for the gpu_kernels programs.
//
// Flags are `--name value` or `--name=value`, named like the config keys
// (`--id-bytes 8`, `--memory-mode zerocopy`). List flags take comma-separated
// values (`--size-B 4096,1MiB`); sizes accept B, KiB, MiB, GiB, KB, MB, GB
// suffixes. Every flag is declared with a default and a help line; an unknown
// flag, a missing value or a bad number exits with status 2 and one message.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "check.cuh"

namespace hl {

struct FlagSpec {
  std::string name;
  std::string default_value;
  std::string help;
};

class Args {
 public:
  Args(std::string program, std::string summary) : program_(std::move(program)), summary_(std::move(summary)) {}

  void flag(const std::string& name, const std::string& def, const std::string& help) {
    specs_.push_back({name, def, help});
    values_[name] = def;
  }

  void parse(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        usage();
        std::exit(0);
      }
      if (a.rfind("--", 0) != 0) fail(kExitUsage, "usage", "%s: unexpected argument '%s'", program_.c_str(), a.c_str());
      std::string name = a.substr(2), value;
      size_t eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      } else {
        if (i + 1 >= argc) fail(kExitUsage, "usage", "%s: flag --%s needs a value", program_.c_str(), name.c_str());
        value = argv[++i];
      }
      if (!values_.count(name)) fail(kExitUsage, "usage", "%s: unknown flag --%s (see --help)", program_.c_str(), name.c_str());
      values_[name] = value;
    }
  }

  void usage() const {
    std::printf("%s: %s\n\nflags:\n", program_.c_str(), summary_.c_str());
    for (const auto& s : specs_)
      std::printf("  --%-18s %s (default: %s)\n", s.name.c_str(), s.help.c_str(),
                  s.default_value.empty() ? "none" : s.default_value.c_str());
  }

  const std::string& str(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end()) fail(kExitUsage, "usage", "internal: flag --%s not declared", name.c_str());
    return it->second;
  }

  bool has(const std::string& name) const { return !str(name).empty(); }

  std::vector<std::string> list(const std::string& name) const {
    std::vector<std::string> out;
    const std::string& v = str(name);
    size_t start = 0;
    while (start <= v.size() && !v.empty()) {
      size_t comma = v.find(',', start);
      std::string item = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (item.empty()) fail(kExitUsage, "usage", "flag --%s: empty item in '%s'", name.c_str(), v.c_str());
      out.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return out;
  }

  int64_t integer(const std::string& name) const { return parse_int(name, str(name)); }
  uint64_t size(const std::string& name) const { return parse_size(name, str(name)); }
  double real(const std::string& name) const {
    const std::string& v = str(name);
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (v.empty() || *end) fail(kExitUsage, "usage", "flag --%s: '%s' is not a number", name.c_str(), v.c_str());
    return d;
  }

  std::vector<int64_t> integers(const std::string& name) const {
    std::vector<int64_t> out;
    for (const auto& s : list(name)) out.push_back(parse_int(name, s));
    return out;
  }
  std::vector<uint64_t> sizes(const std::string& name) const {
    std::vector<uint64_t> out;
    for (const auto& s : list(name)) out.push_back(parse_size(name, s));
    return out;
  }

  // Each item must be one of `allowed`.
  std::vector<std::string> choices(const std::string& name, const std::vector<std::string>& allowed) const {
    std::vector<std::string> out = list(name);
    for (const auto& s : out) check_choice(name, s, allowed);
    return out;
  }
  std::string choice(const std::string& name, const std::vector<std::string>& allowed) const {
    const std::string& s = str(name);
    check_choice(name, s, allowed);
    return s;
  }

  static int64_t parse_int(const std::string& name, const std::string& v) {
    char* end = nullptr;
    long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end) fail(kExitUsage, "usage", "flag --%s: '%s' is not an integer", name.c_str(), v.c_str());
    return x;
  }

  static uint64_t parse_size(const std::string& name, const std::string& v) {
    char* end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    if (v.empty() || end == v.c_str() || x < 0)
      fail(kExitUsage, "usage", "flag --%s: '%s' is not a size", name.c_str(), v.c_str());
    std::string unit(end);
    static const std::map<std::string, double> kUnits = {
        {"", 1.0},        {"B", 1.0},         {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
        {"KB", 1e3},      {"MB", 1e6},        {"GB", 1e9}};
    auto it = kUnits.find(unit);
    if (it == kUnits.end()) fail(kExitUsage, "usage", "flag --%s: unknown size unit in '%s'", name.c_str(), v.c_str());
    double bytes = x * it->second;
    if (bytes != static_cast<double>(static_cast<uint64_t>(bytes)))
      fail(kExitUsage, "usage", "flag --%s: '%s' is not a whole number of bytes", name.c_str(), v.c_str());
    return static_cast<uint64_t>(bytes);
  }

 private:
  static void check_choice(const std::string& name, const std::string& s, const std::vector<std::string>& allowed) {
    for (const auto& a : allowed)
      if (a == s) return;
    std::string all;
    for (const auto& a : allowed) all += (all.empty() ? "" : ", ") + a;
    fail(kExitUsage, "usage", "flag --%s: '%s' is not one of: %s", name.c_str(), s.c_str(), all.c_str());
  }

  std::string program_, summary_;
  std::vector<FlagSpec> specs_;
  std::map<std::string, std::string> values_;
};

}  // namespace hl
