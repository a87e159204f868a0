// SPDX-License-Identifier: MIT
#include "ditask/runtime/hosts.hpp"

#include <fstream>
#include <sstream>

#include "ditask/error.hpp"

namespace ditask {

HostMap read_hosts_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw Error("cannot read the hosts file '" + path + "'", "check the path given to --hosts-file");
  }
  HostMap hosts;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string address;
    if (!(words >> address)) {
      continue;
    }
    std::string name;
    bool named = false;
    while (words >> name) {
      hosts.emplace(name, address);  // the first line naming a host wins, as in /etc/hosts
      named = true;
    }
    if (!named) {
      throw Error("hosts file '" + path + "', line " + std::to_string(number) + ": '" + address + "' names no host",
                  "each line is: address name [name...]");
    }
  }
  return hosts;
}

std::string mapped_host(const HostMap& hosts, const std::string& name) {
  auto it = hosts.find(name);
  return it == hosts.end() ? name : it->second;
}

}  // namespace ditask
