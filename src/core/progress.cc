#include "core/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace fabriclab {

namespace {

std::string seconds_text(double s) {
  if (s < 60) return fmt::format("{:.0f} s", s);
  if (s < 3600) return fmt::format("{:.0f} min {:02.0f} s", std::floor(s / 60), std::fmod(s, 60));
  return fmt::format("{:.0f} h {:02.0f} min", std::floor(s / 3600), std::floor(std::fmod(s, 3600) / 60));
}

}  // namespace

Progress::Progress(Options o) : o_(std::move(o)) {
  if (!o_.write) o_.write = [](std::string_view s) { std::fwrite(s.data(), 1, s.size(), stderr); };
  if (!o_.now) o_.now = [] { return Clock::now(); };
  start_ = last_ = o_.now();
}

Progress::Options Progress::on_stderr(std::string what, double total, std::string unit, bool quiet) {
  return {
      .what = std::move(what), .total = total, .unit = std::move(unit), .enabled = !quiet, .terminal = isatty(2) == 1};
}

std::string Progress::line(double done, std::string_view note) const {
  const double elapsed = std::chrono::duration<double>(o_.now() - start_).count();
  std::string s = fmt::format("{}: {}, {} elapsed", o_.what,
                              o_.show ? o_.show(done) : fmt::format("{:.0f}/{:.0f} {}", done, o_.total, o_.unit),
                              seconds_text(elapsed));
  if (done > 0 && done < o_.total)
    s += fmt::format(", {} {} left", o_.upper_bound ? "at most" : "about",
                     seconds_text(elapsed * (o_.total - done) / done));
  if (!note.empty()) s += fmt::format(" ({})", note);
  return s;
}

void Progress::update(double done, std::string_view note) {
  done_ = done;
  if (!o_.enabled || finished_) return;
  const auto t = o_.now();
  const double since = std::chrono::duration<double>(t - last_).count();
  if (since < (o_.terminal ? 0.2 : o_.period_seconds)) return;
  last_ = t;
  const std::string s = line(done, note);
  if (o_.terminal) {
    o_.write(fmt::format("\r{:<{}}", s, std::max(width_, s.size())));
    width_ = s.size();
  } else {
    o_.write(s + "\n");
  }
  shown_ = true;
  shown_done_ = done;
}

void Progress::clear() {
  if (o_.enabled && o_.terminal && width_ > 0) o_.write(fmt::format("\r{:{}}\r", "", width_));
  width_ = 0;
}

void Progress::finish(std::string_view note) {
  if (finished_) return;
  finished_ = true;
  if (!o_.enabled) return;
  if (o_.terminal) {
    clear();
  } else if (shown_ && (done_ != shown_done_ || !note.empty())) {
    o_.write(line(done_, note) + "\n");  // a log says where it ended, if it said anything
  }
}

Progress::~Progress() { finish(); }

}  // namespace fabriclab
