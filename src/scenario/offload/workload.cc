#include "scenario/offload/workload.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/params.h"

namespace fabriclab::scenario::offload_internal {

std::vector<Spec> read_workload_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open the workload file");
  std::vector<Spec> out;
  std::string line;
  int no = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const std::string where = fmt::format("{}:{}", path, no);
    if (!header) {
      if (line != "name,collective,algorithm,ranks,bytes,issue")
        throw InputError(where + ": expected the header 'name,collective,algorithm,ranks,bytes,issue'");
      header = true;
      continue;
    }
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    if (f.size() != 6) throw InputError(fmt::format("{}: expected 6 columns, got {}", where, f.size()));
    Spec s;
    s.name = f[0];
    s.collective = f[1];
    s.algorithm = f[2];
    const auto ranks = params::parse_integer(f[3]);
    if (!ranks || *ranks < 2 || *ranks > 1'000'000)
      throw InputError(fmt::format("{}: column ranks: expected an integer >= 2, got '{}'", where, f[3]));
    s.ranks = static_cast<int>(*ranks);
    try {
      s.bytes = parse_bytes(f[4]).count();
      s.issue = parse_time(f[5]);
    } catch (const InputError& e) {
      throw InputError(where + ": " + e.what());
    }
    out.push_back(s);
  }
  if (out.empty()) throw InputError(path + ": no collectives");
  return out;
}

}  // namespace fabriclab::scenario::offload_internal
