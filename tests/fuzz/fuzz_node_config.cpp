// SPDX-License-Identifier: LGPL-2.1-or-later
// libFuzzer target: the node config's parse (issue 11, section 3: the file
// read as an attacker would write it).  Any input is either refused with a
// NodeConfigError or gives a config whose CPU list prints back to a list
// that parses to the same set.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cpu_set.hpp"
#include "node_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  execaff::NodeConfig config;
  try {
    config = execaff::parse_node_config(json, "fuzz node config");
  } catch (const execaff::NodeConfigError&) {
    return 0;
  }
  if (config.housekeeping_cpus &&
      !(execaff::CpuSet::parse(config.housekeeping_cpus->format()) == *config.housekeeping_cpus)) {
    __builtin_trap();
  }
  return 0;
}
