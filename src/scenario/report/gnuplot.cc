#include "scenario/report/gnuplot.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "scenario/report/files.h"

namespace fabriclab::scenario {

void draw_plot(const std::filesystem::path& dir, const std::string& stem, const std::string& body) {
  const std::string script = stem + ".gp";
  write_file(dir / script, fmt::format("set terminal pngcairo size 960,540 noenhanced font \"sans,11\"\n"
                                       "set output \"{}.png\"\n{}\n",
                                       stem, body));
  std::fflush(stdout);
  std::fflush(stderr);
  // gnuplot's messages go to STEM.gp.log: its warnings (an empty data file, say) are not
  // the run's to print; its errors are quoted when it fails. (Named before the fork: the
  // child allocates nothing.)
  const std::string log = script + ".log";
  const pid_t pid = fork();
  if (pid < 0) throw InputError("cannot start gnuplot (fork failed)");
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(126);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) dup2(fd, 2);
    execlp("gnuplot", "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0)
    if (errno != EINTR) throw InputError(fmt::format("gnuplot on {}: cannot wait for it", (dir / script).string()));
  const int code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128;
  if (code == 127)
    throw InputError("gnuplot not found: it draws the plots (scripts/install-deps.sh installs gnuplot-nox); the "
                     "data and " +
                     (dir / script).string() + " are written");
  std::string said;
  if (std::error_code ec; std::filesystem::exists(dir / log, ec)) {
    said = read_text(dir / log);
    std::filesystem::remove(dir / log, ec);
  }
  if (code != 0)
    throw InputError(fmt::format("gnuplot failed on {} (exit {}){}", (dir / script).string(), code,
                                 said.empty() ? "" : ":\n" + said));
}

}  // namespace fabriclab::scenario
