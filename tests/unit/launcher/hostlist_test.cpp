// SPDX-License-Identifier: MIT
// Slurm host lists and tasks-per-node lists: the vectors of launchers.md §2.3 (where DI-engine's
// parser goes wrong), more of our own, malformed input, and task placement.
#include "hostlist.hpp"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "ditask/error.hpp"
#include "error_of.hpp"

using ditask::launcher::Distribution;
using ditask::launcher::expand_hostlist;
using ditask::launcher::parse_tasks_per_node;
using ditask::launcher::place_tasks;
using ditask::test::error_of;
using Strings = std::vector<std::string>;
using Counts = std::vector<std::int64_t>;

TEST_CASE("hostlist: the reference vectors DI-engine's parser gets wrong", "[launcher][hostlist]") {
  CHECK(expand_hostlist("node[01-03]") == Strings{"node01", "node02", "node03"});
  CHECK(expand_hostlist("gpu[1-2],cpu[3-4]") == Strings{"gpu1", "gpu2", "cpu3", "cpu4"});
  CHECK(expand_hostlist("a,b") == Strings{"a", "b"});
  CHECK(expand_hostlist("rack[1-2]-n[1-2]") == Strings{"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"});
  CHECK(expand_hostlist("node[1-2]-ib") == Strings{"node1-ib", "node2-ib"});
  CHECK(expand_hostlist("n[001,010-011]") == Strings{"n001", "n010", "n011"});
}

TEST_CASE("hostlist: zero padding follows the low bound, lists, suffixes, duplicates and blanks", "[launcher][hostlist]") {
  CHECK(expand_hostlist("n[8-10]") == Strings{"n8", "n9", "n10"});
  CHECK(expand_hostlist("n[08-10]") == Strings{"n08", "n09", "n10"});
  CHECK(expand_hostlist("n[098-102]") == Strings{"n098", "n099", "n100", "n101", "n102"});
  CHECK(expand_hostlist("SH-IDC1-10-5-38-[190,215]") == Strings{"SH-IDC1-10-5-38-190", "SH-IDC1-10-5-38-215"});
  CHECK(expand_hostlist("gpu[1-2],cpu[3-4],login5") == Strings{"gpu1", "gpu2", "cpu3", "cpu4", "login5"});
  CHECK(expand_hostlist("a,a,b") == Strings{"a", "a", "b"});  // a host list, not a host set
  CHECK(expand_hostlist(" x1  x2,\tx3 ") == Strings{"x1", "x2", "x3"});
  CHECK(expand_hostlist("tux0-5") == Strings{"tux0-5"});  // unbracketed: one literal host
  CHECK(expand_hostlist("r[1-2]n[3,5]x") == Strings{"r1n3x", "r1n5x", "r2n3x", "r2n5x"});
  CHECK(expand_hostlist("vm") == Strings{"vm"});
  CHECK(expand_hostlist("c[7]") == Strings{"c7"});
  CHECK(expand_hostlist("h[0-65535]").size() == 65536);
}

TEST_CASE("hostlist: malformed lists are errors quoting the text and the part", "[launcher][hostlist]") {
  const auto what = [](const char* text) { return std::string(error_of([&] { expand_hostlist(text); }).what()); };
  CHECK(what("node[1-3") == "malformed Slurm host list 'node[1-3': '[' without ']' in 'node[1-3'");
  CHECK(what("node1-3]") == "malformed Slurm host list 'node1-3]': a ']' without '[' in 'node1-3]'");
  CHECK(what("n[3-1]") == "malformed Slurm host list 'n[3-1]': the range '3-1' ends before it starts");
  CHECK(what("n[a-b]") == "malformed Slurm host list 'n[a-b]': 'a' is not a number");
  CHECK(what("n[1,,2]") == "malformed Slurm host list 'n[1,,2]': an empty range in '[1,,2]'");
  CHECK(what("n[]") == "malformed Slurm host list 'n[]': an empty range in '[]'");
  CHECK(what("n[0-70000]") == "malformed Slurm host list 'n[0-70000]': more than 65536 hosts");
  CHECK(what("a[0-999]b[0-999]") == "malformed Slurm host list 'a[0-999]b[0-999]': more than 65536 hosts");
  CHECK(what("n[[1]]") == "malformed Slurm host list 'n[[1]]': nested '['");
  CHECK(what("") == "malformed Slurm host list '': no host");
  CHECK_THAT(what("n{1..3}"), Catch::Contains("host list function"));
  CHECK_THAT(error_of([] { expand_hostlist("n[x]"); }).hint(), Catch::Contains("--platform-spec"));
}

TEST_CASE("tasks per node: counts, repeats, and malformed lists", "[launcher][hostlist]") {
  CHECK(parse_tasks_per_node("4") == Counts{4});
  CHECK(parse_tasks_per_node("2(x3),1") == Counts{2, 2, 2, 1});
  CHECK(parse_tasks_per_node("1(x2)") == Counts{1, 1});
  CHECK(parse_tasks_per_node("3,1(x2),2") == Counts{3, 1, 1, 2});
  const auto what = [](const char* text) { return std::string(error_of([&] { parse_tasks_per_node(text); }).what()); };
  CHECK(what("2(x3") == "malformed Slurm tasks-per-node list '2(x3': '2(x3' is not COUNT(xREPEAT)");
  CHECK(what("2(3)") == "malformed Slurm tasks-per-node list '2(3)': '2(3)' is not COUNT(xREPEAT)");
  CHECK(what("x") == "malformed Slurm tasks-per-node list 'x': 'x' is not a positive number");
  CHECK(what("0") == "malformed Slurm tasks-per-node list '0': '0' is not a positive number");
  CHECK(what("2,,1") == "malformed Slurm tasks-per-node list '2,,1': '' is not a positive number");
}

TEST_CASE("placement: block fills each node in turn, cyclic deals one per node", "[launcher][hostlist]") {
  const auto block = place_tasks({2, 2, 2, 1}, Distribution::block);
  REQUIRE(block.size() == 7);
  CHECK(block[3].host == 1);
  CHECK(block[3].local_id == 1);
  CHECK(block[6].host == 3);
  CHECK(block[6].local_id == 0);
  const auto cyclic = place_tasks({2, 2, 1}, Distribution::cyclic);
  REQUIRE(cyclic.size() == 5);
  // procids 0,1,2 on hosts 0,1,2; then 3,4 on hosts 0,1 (host 2 is full).
  CHECK(cyclic[2].host == 2);
  CHECK(cyclic[3].host == 0);
  CHECK(cyclic[3].local_id == 1);
  CHECK(cyclic[4].host == 1);
  CHECK(cyclic[4].local_id == 1);
}
