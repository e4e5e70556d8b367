// Fuzz target: the command line. The input, split at every NUL and newline, is the
// arguments after `fabriclab`; they are parsed by the CLI11 app main.cc builds (every
// subcommand's add_*_command, the version flag, the unknown-command check), and nothing is
// run: a command runs only after its parse, and running one is the other targets' work (or
// a simulation). CLI11's ParseError (exit 2, or 0 for --help and --version) and InputError
// are expected; a parse that succeeds must have chosen exactly one command.
//
// FABRICLAB_FUZZ_DICT=FILE: write a libFuzzer dictionary of every command and option name
// to FILE and exit.
#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "fuzz/fuzz_common.h"

namespace {

namespace cli = fabriclab::cli;

// The app of main.cc, with its commands.
struct App {
  CLI::App app{"fabriclab"};
  std::vector<cli::Command> commands;
  App() {
    app.set_version_flag("--version", std::string("fabriclab ") + FABRICLAB_VERSION);
    app.require_subcommand(1);
    commands = cli::add_commands(app);  // main.cc's list
  }
};

std::vector<std::string> arguments(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args{"fabriclab"};
  std::string arg;
  for (std::size_t i = 0; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\0' || c == '\n') {
      args.push_back(std::move(arg));
      arg.clear();
    } else {
      arg += c;
    }
  }
  if (size > 0) args.push_back(std::move(arg));
  return args;
}

void parse(const std::vector<std::string>& args) {
  App a;
  // main.cc: an unknown command is named (and exits 2) before CLI11 parses.
  if (args.size() > 1 && (args[1].empty() || args[1][0] != '-')) {
    bool found = false;
    for (const auto& c : a.commands) found = found || c.app->get_name() == args[1];
    if (!found) return;
  }
  std::vector<const char*> argv;
  for (const auto& s : args) argv.push_back(s.c_str());
  try {
    a.app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError&) {
    return;  // main.cc: app.exit(e), exit 2 (0 for --help, --version)
  }
  int parsed = 0;
  for (const auto& c : a.commands) parsed += c.app->parsed() ? 1 : 0;
  if (parsed != 1) fabriclab::fuzz::finding("the parse chose " + std::to_string(parsed) + " commands");
}

// Every word of the input language, for the dictionary.
std::set<std::string> dictionary() {
  App a;
  std::set<std::string> words;
  for (const auto& c : a.commands) {
    words.insert(c.app->get_name());
    for (const CLI::Option* o : c.app->get_options()) {
      for (const auto& n : o->get_lnames()) words.insert("--" + n);
      for (const auto& n : o->get_snames()) words.insert("-" + n);
    }
  }
  return words;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fabriclab::fuzz::side_job("FABRICLAB_FUZZ_DICT",
                            [](const std::string& path) { fabriclab::fuzz::write_dictionary(path, dictionary()); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fabriclab::fuzz::expect_input_errors([&] { parse(arguments(data, size)); });
  return 0;
}
