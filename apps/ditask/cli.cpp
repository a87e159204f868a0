// SPDX-License-Identifier: MIT
#include "cli.hpp"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>

#include "ditask/error.hpp"
#include "ditask/runtime/suggest.hpp"
#include "ditask/version.hpp"

namespace ditask::app {
namespace {

constexpr const char* kFooter = R"(Arguments after -- go to the module (ditask::args()).

Every option can also come from the environment as DITASK_LAUNCH_<NAME> (e.g.
DITASK_LAUNCH_PARALLEL_WORKERS=4) or from --config FILE. Precedence: command line >
DITASK_LAUNCH_* > --config > --platform-spec task > platform environment > defaults.

Exit codes: 0 when every worker succeeded; 2 usage or config error, 3 internal error, 4 the
launchers could not meet at --rendezvous (all before any worker starts); otherwise the first
failed worker's code, or 128+N for a worker killed by signal N (and when the launcher itself
was stopped by signal N: 130 for Ctrl-C); 124 when --timeout fired.

To check that a module loads and exports an entry, without starting anything:
  ditask --probe <library path> <entry>    (exit 0, or 2 with the reason))";

std::string lower_first(std::string text) {
  if (!text.empty()) {
    text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  }
  return text;
}

/// `text` without CLI11 2.1's "{false}" after a negated flag's names ("--no-tag-output{false}"):
/// the help line says what it does.
std::string without_flag_values(std::string text) {
  const std::string glued = "{false}";
  for (auto at = text.find(glued); at != std::string::npos; at = text.find(glued, at)) {
    text.erase(at, glued.size());
  }
  return text;
}

/// `text` with runs of blank lines cut to one: CLI11 2.1 puts two between option groups.
std::string single_blank_lines(std::string text) {
  for (auto at = text.find("\n\n\n"); at != std::string::npos; at = text.find("\n\n\n", at)) {
    text.erase(at, 1);
  }
  return text;
}

/// The placeholder --help shows after an option, e.g. "--timeout SECONDS".
std::string value_name(const launcher::OptionSpec& spec) {
  using K = launcher::OptionSpec::Kind;
  switch (spec.kind) {
    case K::integer:
      return "INT";
    case K::number:
      return "SECONDS";
    case K::bytes:
      return "BYTES";
    case K::list:
      return "LIST";
    case K::text:
    case K::flag:
      break;
  }
  return "TEXT";
}

/// A hint for an unknown flag: the closest known one.
std::string unknown_flag_hint(const std::vector<std::string>& given) {
  std::vector<std::string> known = {"--help", "--version"};
  for (const auto& spec : launcher::option_specs()) {
    known.push_back("--" + spec.name);
  }
  for (const auto& arg : given) {
    std::string flag = arg.substr(0, arg.find('='));
    if (auto guess = closest_match(flag, known)) {
      return "did you mean '" + *guess + "'?";
    }
  }
  return "see ditask --help";
}

/// CLI11's "--labels: At Most 1 required but received 2" for an option given twice, in our words.
Error repeated_option_error(const std::map<std::string, CLI::Option*>& added, const CLI::ArgumentMismatch& e) {
  for (const auto& [name, option] : added) {
    if (option->count() > 1) {
      const auto* spec = launcher::find_option_spec(name);
      const bool list = spec != nullptr && spec->kind == launcher::OptionSpec::Kind::list;
      return Error("--" + name + " was given " + std::to_string(option->count()) + " times",
                   list ? "give it once; a list takes commas: --" + name + " a,b,c" : "give it once");
    }
  }
  return Error(lower_first(e.what()), "see ditask --help");
}

/// CLI11's "Could not convert: --auto-recover = maybe" for a flag's value, worded as the same value
/// from DITASK_LAUNCH_* or --config is.
Error flag_value_error(const CLI::ConversionError& e) {
  const std::string text = e.what();
  const std::string lead = "Could not convert: ";
  const auto equals = text.find(" = ");
  if (text.rfind(lead, 0) == 0 && equals != std::string::npos) {
    return Error(text.substr(lead.size(), equals - lead.size()) + " expects true or false, got '" +
                     text.substr(equals + 3) + "'",
                 launcher::kFlagValueHint);
  }
  return Error(lower_first(text), "see ditask --help");
}

}  // namespace

CommandLine parse_command_line(int argc, char** argv) {
  CommandLine result;
  int launcher_argc = argc;  // arguments before `--` are ours, the rest the module's
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      result.module_args.assign(argv + i + 1, argv + argc);
      launcher_argc = i;
      break;
    }
  }

  CLI::App app("ditask " DITASK_VERSION ": start, supervise and connect N workers of a module.",
               "ditask");
  app.footer(kFooter);
  app.set_version_flag("-v,--version",
                       "ditask, version " DITASK_VERSION ".\nDeveloped by the ditask authors.");
  std::map<std::string, std::string> texts;
  std::map<std::string, bool> flags;
  std::map<std::string, CLI::Option*> added;
  for (const auto& spec : launcher::option_specs()) {
    std::string names = (spec.short_name.empty() ? "" : "-" + spec.short_name + ",") + "--" + spec.name;
    std::string help = spec.help;
    if (!spec.default_text.empty()) {
      help += " [default: " + spec.default_text + "]";
    }
    if (spec.kind == launcher::OptionSpec::Kind::flag) {
      if (spec.name == "tag-output") {
        names += ",!--no-tag-output";
      }
      added[spec.name] = app.add_flag(names, flags[spec.name], help);
    } else {
      added[spec.name] = app.add_option(names, texts[spec.name], help);
      added[spec.name]->type_name(spec.choices.empty() ? value_name(spec)
                                                       : "{" + join(spec.choices, ",") + "}");
    }
    if (!spec.group.empty()) {
      added[spec.name]->group(spec.group);
    }
  }
  try {
    app.parse(launcher_argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << single_blank_lines(without_flag_values(app.help()));
    result.exit_now = true;
    return result;
  } catch (const CLI::CallForVersion&) {
    std::cout << app.version() << "\n";
    result.exit_now = true;
    return result;
  } catch (const CLI::ExtrasError&) {
    // CLI11 2.1 lists extras last-first; quote them as typed.
    auto extras = app.remaining();
    std::vector<std::string> typed(argv + 1, argv + launcher_argc);
    std::stable_sort(extras.begin(), extras.end(), [&typed](const auto& a, const auto& b) {
      return std::find(typed.begin(), typed.end(), a) < std::find(typed.begin(), typed.end(), b);
    });
    throw Error(std::string(extras.size() == 1 ? "the following argument was not expected: "
                                               : "the following arguments were not expected: ") +
                    join(extras, " "),
                unknown_flag_hint(extras));
  } catch (const CLI::ArgumentMismatch& e) {
    throw repeated_option_error(added, e);
  } catch (const CLI::ConversionError& e) {
    throw flag_value_error(e);
  } catch (const CLI::ParseError& e) {
    throw Error(lower_first(e.what()), "see ditask --help");
  }
  for (const auto& [name, option] : added) {
    if (option->count() == 0) {
      continue;
    }
    auto flag = flags.find(name);
    result.values[name] = flag != flags.end() ? (flag->second ? "true" : "false") : texts[name];
  }
  return result;
}

}  // namespace ditask::app
