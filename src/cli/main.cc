// fabriclab: the command-line entry point. Subcommands live in cmd_*.cc.
#include <CLI/CLI.hpp>
#include <signal.h>
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <new>
#include <vector>

#include "cli/commands.h"
#include "core/error.h"
#include "scenario/batch/ranks.h"

namespace {

// libfabric's PSM provider, loaded by `exec` with the libfabric backend, installs signal
// handlers that turn SIGINT, SIGTERM and even a crash into exit 1 -- the code of "unsafe"
// and "a drop on a lossless priority". fabriclab's own: an interruption says so and exits
// 128 + its number (130, 143); a crash dies of its signal, as it would without any
// handler. Worker
// processes inherit them; they also die with their parent (scenario/batch/workers.h).
extern "C" void on_interrupt(int sig) {
  static const char kInt[] = "\nfabriclab: interrupted (SIGINT)\n";
  static const char kTerm[] = "\nfabriclab: terminated (SIGTERM)\n";
  if (sig == SIGINT) (void)!write(STDERR_FILENO, kInt, sizeof kInt - 1);
  else (void)!write(STDERR_FILENO, kTerm, sizeof kTerm - 1);
  _exit(128 + sig);
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
}

}  // namespace

int main(int argc, char** argv) {
  // MPI when an MPI launcher started this process (mpirun, srun), else nothing at all.
  const fabriclab::scenario::MpiSession mpi(argc, argv);
  const int rank = fabriclab::scenario::mpi_rank(), ranks = fabriclab::scenario::mpi_size();
  install_signal_handlers();
  CLI::App app{"fabriclab: plan, verify and run triggered-operation collectives on scarce NIC "
               "counters; simulate RoCEv2 fabrics packet by packet"};
  app.set_version_flag("--version", std::string("fabriclab ") + FABRICLAB_VERSION);
  app.require_subcommand(1);
  const std::vector<fabriclab::cli::Command> commands = fabriclab::cli::add_commands(app);
  app.footer(fabriclab::cli::kExitCodes);
  // An unknown command is named (CLI11 would only say that one is required).
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const auto& c : commands) {
      found = found || c.app->get_name() == argv[1];
      known += (known.empty() ? "" : ", ") + c.app->get_name();
    }
    if (!found) {
      if (rank == 0)
        std::cerr << "fabriclab: error: unknown command '" << argv[1] << "' (expected one of: " << known << ")\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (rank > 0) return e.get_exit_code() == 0 ? 0 : 2;  // rank 0 says it
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    for (const auto& c : commands) {
      if (!c.app->parsed()) continue;
      const std::string name = c.app->get_name();
      if (ranks > 1 && name != "run" && name != "sweep" && name != "experiment" && name != "offload" && name != "tune")
        throw fabriclab::InputError("fabriclab " + name +
                                    " runs on one process; of the commands, `run` splits over MPI ranks and "
                                    "`sweep`, `experiment`, `offload` grids and `tune` spread over them (started "
                                    "here with " +
                                    std::to_string(ranks) + "): run it without mpirun");
      return c.run();
    }
  } catch (const fabriclab::RankFailure& e) {
    // A run split over the ranks failed in one of them: every rank knows, rank 0 says it
    // and exits with the code (the others exit 0 so that the launcher lets it finish).
    if (rank > 0) return 0;
    std::cerr << "fabriclab: " << (e.exit_code() == 3 ? "internal error: " : "error: ") << e.what() << '\n';
    return e.exit_code();
  } catch (const fabriclab::NegativeAnswer& e) {
    // The answer is "no" (exit 1, as for a verdict); under MPI every rank meets it.
    if (rank == 0) std::cerr << "fabriclab: error: " << e.what() << '\n';
    return 1;
  } catch (const fabriclab::InputError& e) {
    // Under MPI every rank meets the same bad input: rank 0 says it.
    if (rank == 0) std::cerr << "fabriclab: error: " << e.what() << '\n';
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "fabriclab: error: out of memory: the problem is too large for this machine\n";
    return 2;
  } catch (const std::exception& e) {
    // Anything else is a bug in fabriclab, not bad input.
    std::cerr << "fabriclab: internal error: " << e.what() << '\n';
    return 3;
  }
  return 0;
}
