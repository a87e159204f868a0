// SPDX-License-Identifier: MIT
// ditask::ModuleArgs: a module's key=value arguments and what it refuses.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <ditask/ditask.hpp>

using Catch::Matchers::Equals;

namespace {

ditask::Error refusal(const std::vector<std::string>& args, std::set<std::string> known) {
  try {
    ditask::ModuleArgs given(args, std::move(known));
  } catch (const ditask::Error& e) {
    return e;
  }
  FAIL("no error for the arguments");
  return ditask::Error("");
}

}  // namespace

TEST_CASE("module args: values, fallbacks, and any key when none are listed", "[unit][module_args]") {
  const ditask::ModuleArgs given({"seed=3", "lr=0.01", "name=a=b", "empty="}, {"seed", "lr", "name", "empty", "other"});
  CHECK(given.integer("seed", 0) == 3);
  CHECK(given.number("lr", 1.0) == Approx(0.01));
  CHECK(given.text("name", "") == "a=b");  // the first '=' splits
  CHECK(given.text("empty", "x").empty());
  CHECK(given.has("seed"));
  CHECK_FALSE(given.has("other"));
  CHECK(given.integer("other", -7) == -7);
  CHECK(given.number("other", 2.5) == 2.5);
  CHECK(given.text("other", "fallback") == "fallback");
  const ditask::ModuleArgs any({"whatever=1"}, {});
  CHECK(any.integer("whatever", 0) == 1);
  const ditask::ModuleArgs last({"seed=1", "seed=2"}, {"seed"});
  CHECK(last.integer("seed", 0) == 2);  // the last one given wins, as on a command line
}

TEST_CASE("module args: what it refuses, with the reason and a hint", "[unit][module_args]") {
  auto e = refusal({"seed"}, {"seed"});
  CHECK_THAT(std::string(e.what()), Equals("module argument 'seed' is not key=value"));
  CHECK_THAT(e.hint(), Equals("module arguments go after -- as key=value, e.g. -- seed=3 lr=0.01"));
  e = refusal({"=3"}, {});
  CHECK_THAT(std::string(e.what()), Equals("module argument '=3' is not key=value"));
  e = refusal({"sede=3"}, {"seed", "lr"});
  CHECK_THAT(std::string(e.what()), Equals("unknown module argument 'sede' (known: lr, seed)"));
  CHECK_THAT(e.hint(), Equals("did you mean 'seed'?"));
  e = refusal({"speed=3"}, {"gamma", "lr"});
  CHECK_THAT(e.hint(), Equals("module arguments go after -- as key=value, e.g. -- seed=3 lr=0.01"));

  const ditask::ModuleArgs bad({"seed=3x", "lr=fast", "big=99999999999999999999", "none="}, {"seed", "lr", "big", "none"});
  auto what = [](auto get) -> std::string {
    try {
      get();
    } catch (const ditask::Error& error) {
      return error.what();
    }
    return "no error";
  };
  CHECK(what([&] { (void)bad.integer("seed", 0); }) == "module argument seed='3x' is not an integer");
  CHECK(what([&] { (void)bad.number("lr", 0); }) == "module argument lr='fast' is not a number");
  CHECK(what([&] { (void)bad.integer("big", 0); }) == "module argument big='99999999999999999999' is not an integer");
  CHECK(what([&] { (void)bad.integer("none", 0); }) == "module argument none='' is not an integer");
  CHECK(what([&] { (void)bad.number("none", 0); }) == "module argument none='' is not a number");
}

TEST_CASE("module args: integers() gives the defaults where no argument is given", "[unit][module_args]") {
  // Outside a worker args() is empty: every default stands.
  const auto got = ditask::ModuleArgs::integers({{"rounds", 20000}, {"size", 64}});
  CHECK(got == std::map<std::string, std::int64_t>{{"rounds", 20000}, {"size", 64}});
}
