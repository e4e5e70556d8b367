#include "scenario/results.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace fabriclab::scenario {

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  out.close();  // a failed flush (disk full) shows only here
  if (!out) throw InputError(fmt::format("{}: cannot write", p.string()));
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read", p.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ns_text(Time t) { return fmt::format("{}.{:03}", t.ps() / 1000, t.ps() % 1000); }

namespace {
std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (;;) {
    const auto comma = line.find(',', pos);
    out.push_back(line.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (comma == std::string::npos) return out;
    pos = comma + 1;
  }
}
}  // namespace

CsvTable read_csv(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read", p.string()));
  CsvTable t;
  t.path_ = p.string();
  std::string line;
  if (!std::getline(in, line)) throw InputError(fmt::format("{}: empty (expected a header row)", t.path_));
  t.header_ = split(line);
  for (std::size_t n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    auto cells = split(line);
    if (cells.size() != t.header_.size())
      throw InputError(fmt::format("{}:{}: {} cells, the header has {}", t.path_, n, cells.size(), t.header_.size()));
    t.cells_.push_back(std::move(cells));
  }
  return t;
}

std::size_t CsvTable::column(const std::string& name) const {
  for (std::size_t i = 0; i < header_.size(); ++i)
    if (header_[i] == name) return i;
  throw InputError(fmt::format("{}: no column '{}'", path_, name));
}

double CsvTable::number(std::size_t row, const std::string& col, double empty_as) const {
  const std::string& s = text(row, col);
  if (s.empty()) {
    if (std::isnan(empty_as)) throw InputError(fmt::format("{}:{}: column {} is empty", path_, row + 2, col));
    return empty_as;
  }
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size())
    throw InputError(fmt::format("{}:{}: column {}: '{}' is not a number", path_, row + 2, col, s));
  return v;
}

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read", p.string()));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not JSON: {}", p.string(), e.what()));
  }
}

std::string markdown_table(const std::vector<std::string>& header,
                           const std::vector<std::vector<std::string>>& rows) {
  std::string md = "|";
  for (const auto& h : header) md += " " + h + " |";
  md += "\n|";
  for (std::size_t i = 0; i < header.size(); ++i) md += "---|";
  md += "\n";
  for (const auto& r : rows) {
    md += "|";
    for (const auto& c : r) md += " " + c + " |";
    md += "\n";
  }
  return md;
}

void draw_plot(const std::filesystem::path& dir, const std::string& stem, const std::string& body) {
  const std::string script = stem + ".gp";
  write_file(dir / script, fmt::format("set terminal pngcairo size 960,540 noenhanced font \"sans,11\"\n"
                                       "set output \"{}.png\"\n{}\n",
                                       stem, body));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) throw InputError("cannot start gnuplot (fork failed)");
  if (pid == 0) {
    if (chdir(dir.c_str()) != 0) _exit(126);
    execlp("gnuplot", "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0)
    if (errno != EINTR) throw InputError(fmt::format("gnuplot on {}: cannot wait for it", (dir / script).string()));
  const int code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128;
  if (code == 127)
    throw InputError("gnuplot not found: it draws the plots (scripts/install-deps.sh installs gnuplot-nox); the "
                     "data and " + (dir / script).string() + " are written");
  if (code != 0) throw InputError(fmt::format("gnuplot failed on {} (exit {})", (dir / script).string(), code));
}

}  // namespace fabriclab::scenario
