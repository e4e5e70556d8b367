// Progress of long work, on stderr: how far it is (points done of a total, or simulated
// time reached of the stop), the time elapsed, and an estimate of what remains. On a
// terminal, one line rewritten in place at most every 0.2 s and cleared at the end;
// otherwise (a log, CI) a plain line every `period` and one when the work ends. Off:
// nothing at all (--quiet).
//
//   Progress p({.what = "sweep", .total = 40, .unit = "points"});
//   for (...) { ...; p.update(++done); }
//   p.finish();
//
// Deterministic output files never depend on it; only stderr does.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace fabriclab {

class Progress {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    std::string what;  // "sweep", "run examples/incast.toml"
    double total = 0;  // in the unit of update()
    std::string unit;  // "points": "12/40 points"; "" with `show` set
    // How a position is shown ("simulated 1.2ms of 5ms"); default "DONE/TOTAL UNIT".
    std::function<std::string(double done)> show = {};
    bool upper_bound = false;  // the total is a limit the work may end before ("at most N left")
    bool enabled = true;
    bool terminal = false;       // a terminal: rewrite one line in place
    double period_seconds = 10;  // not a terminal: a line this often
    // Where lines go and what time it is (tests give their own).
    std::function<void(std::string_view)> write = {};
    std::function<Clock::time_point()> now = {};
  };

  explicit Progress(Options o);
  // Options for stderr: terminal or not as stderr is, off when `quiet`.
  static Options on_stderr(std::string what, double total, std::string unit, bool quiet);

  // The work has reached `done` (of the total); `note` is appended ("3 skipped").
  void update(double done, std::string_view note = {});
  // Before other output to the same terminal: clears the line (the next update redraws it).
  void clear();
  // The work ended: clears the terminal line, or writes the last line.
  void finish(std::string_view note = {});
  ~Progress();

  // "12/40 points, 31 s elapsed, about 72 s left" as update() would show it now.
  std::string line(double done, std::string_view note) const;

 private:
  Options o_;
  Clock::time_point start_, last_;
  double done_ = 0;
  bool shown_ = false, finished_ = false;
  double shown_done_ = -1;  // the position of the last line written
  std::size_t width_ = 0;   // of the terminal line last written
};

}  // namespace fabriclab
