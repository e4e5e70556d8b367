#include "exec/runner.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <deque>
#include <new>
#include <stdexcept>
#include <thread>

#include "core/error.h"
#include "exec/reference.h"

namespace fabriclab::exec {

using offload::Op;
using offload::OpId;
using offload::OpKind;
using offload::Rank;
using Clock = std::chrono::steady_clock;

namespace {

// ---- Control channel: [type u32][length u32][payload] on a stream socket pair. ----

enum class Msg : std::uint32_t {
  hello = 1,
  peers,
  wire,
  prepare,
  ready,
  start,
  done,
  stall,
  heartbeat,
  fatal,
  quit,
  info
};

struct Message {
  Msg type{};
  std::vector<std::byte> body;
};

bool write_all(int fd, const void* data, std::size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

bool read_all(int fd, void* data, std::size_t n) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t k = ::read(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

bool send_msg(int fd, Msg type, std::span<const std::byte> body = {}) {
  const std::uint32_t head[2] = {static_cast<std::uint32_t>(type), static_cast<std::uint32_t>(body.size())};
  return write_all(fd, head, sizeof head) && write_all(fd, body.data(), body.size());
}

bool send_text(int fd, Msg type, const std::string& text) {
  return send_msg(fd, type, std::as_bytes(std::span(text.data(), text.size())));
}

std::optional<Message> recv_msg(int fd) {
  std::uint32_t head[2];
  if (!read_all(fd, head, sizeof head)) return std::nullopt;
  Message m{static_cast<Msg>(head[0]), std::vector<std::byte>(head[1])};
  if (!read_all(fd, m.body.data(), m.body.size())) return std::nullopt;
  return m;
}

std::string text_of(const Message& m) {
  return std::string(reinterpret_cast<const char*>(m.body.data()), m.body.size());
}

template <typename T>
void append(std::vector<std::byte>& out, const T& v) {
  const auto* b = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), b, b + sizeof v);
}
template <typename T>
T take(const std::vector<std::byte>& in, std::size_t& at) {
  T v{};
  if (at + sizeof v > in.size()) throw std::runtime_error("control message too short");
  std::memcpy(&v, in.data() + at, sizeof v);
  at += sizeof v;
  return v;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// ---- One rank's process. ----

class RankProcess {
 public:
  RankProcess(int fd, Rank r, const offload::Schedule& s, const RankProgram* prog, const RunOptions& o)
      : fd_(fd), r_(r), s_(s), prog_(prog), o_(o) {}

  // Returns the process exit code.
  int main() {
    try {
      nic_ = o_.nic(o_.provider, offload::parse_datatype(s_.datatype));
      if (o_.path == Path::triggered) {
        nic_->setup(s_.layout.window_bytes, static_cast<int>(prog_->counters.size()), prog_->key_counter);
        base_.assign(prog_->counters.size(), 0);
      } else {
        const int unbound[] = {-1};
        nic_->setup(s_.layout.window_bytes, 0, unbound);
        build_software();
      }
      if (!send_msg(fd_, Msg::hello, nic_->address())) return 3;
      auto peers = recv_msg(fd_);
      if (!peers || peers->type != Msg::peers) return 3;
      std::vector<std::vector<std::byte>> addrs;
      std::size_t at = 0;
      const auto n = take<std::uint64_t>(peers->body, at);
      for (std::uint64_t i = 0; i < n; ++i) {
        const auto len = take<std::uint64_t>(peers->body, at);
        addrs.emplace_back(peers->body.begin() + static_cast<std::ptrdiff_t>(at),
                           peers->body.begin() + static_cast<std::ptrdiff_t>(at + len));
        at += len;
      }
      nic_->connect(addrs, r_);
      if (!send_msg(fd_, Msg::ready)) return 3;
      auto wire = recv_msg(fd_);
      if (!wire || wire->type != Msg::wire) return 3;
      nic_->wire_up();
      if (!send_msg(fd_, Msg::ready)) return 3;
      for (;;) {
        auto m = recv_msg(fd_);
        if (!m || m->type == Msg::quit) break;
        std::size_t pos = 0;
        const auto it = take<std::int64_t>(m->body, pos);
        if (m->type == Msg::prepare) {
          prepare(it);
          if (!send_msg(fd_, Msg::ready)) break;
        } else if (m->type == Msg::start) {
          if (!run_iteration(it)) return 1;  // stalled: the launcher ends the run
        }
      }
      nic_.reset();
      return 0;
    } catch (const InputError& e) {
      send_text(fd_, Msg::fatal, fmt::format("2{}", e.what()));
      return 2;
    } catch (const std::bad_alloc&) {
      send_text(fd_, Msg::fatal, fmt::format("2rank {}: out of memory", r_));
      return 2;
    } catch (const std::exception& e) {
      send_text(fd_, Msg::fatal, fmt::format("3rank {}: {}", r_, e.what()));
      return 3;
    }
  }

 private:
  void prepare(std::int64_t it) {
    nic_->clear_fired();
    prepare_window(s_, r_, it, nic_->window());
    if (o_.path == Path::software) {
      nic_->expect_notifications(arrivals_);
      return;
    }
    // Base offsets: what the previous iterations added (checked exactly at each DONE).
    for (std::size_t c = 0; c < base_.size(); ++c) {
      if (base_[c] + prog_->per_iteration[c] > INT32_MAX) {  // the sockets provider's limit
        nic_->set_counter(static_cast<int>(c), 0);
        base_[c] = 0;
      }
    }
    for (const TriggeredOp& op : prog_->ops)
      if (op.trigger >= 0) nic_->queue(shifted(op));
  }

  TriggeredOp shifted(TriggeredOp op) const {
    op.threshold += base_[static_cast<std::size_t>(op.trigger)];
    return op;
  }

  bool run_iteration(std::int64_t it) {
    const auto t0 = Clock::now();
    std::string stalled;
    if (o_.path == Path::triggered) {
      for (const TriggeredOp& op : prog_->ops) {
        if (op.trigger >= 0) continue;
        // Untriggered: deferred work whose threshold is already met fires at once.
        TriggeredOp now = op;
        now.trigger = op.is_counter_add ? op.target : op.completion >= 0 ? op.completion : 0;
        if (prog_->counters.empty()) throw std::runtime_error(fmt::format("rank {} has operations but no counter", r_));
        now.threshold = 0;
        nic_->queue(now);
      }
      stalled = wait_triggered();
    } else {
      stalled = run_software();
    }
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    if (!stalled.empty()) {
      send_text(fd_, Msg::stall, stalled);
      // Wait to be told to stop (or killed).
      while (auto m = recv_msg(fd_))
        if (m->type == Msg::quit) break;
      return false;
    }
    std::string error;
    if (o_.path == Path::triggered) error = check_counters();
    if (error.empty()) {
      if (auto bad = check_output(s_, r_, it, nic_->window())) error = *bad;
    }
    std::vector<std::byte> body;
    append(body, it);
    append(body, us);
    body.insert(body.end(), reinterpret_cast<const std::byte*>(error.data()),
                reinterpret_cast<const std::byte*>(error.data() + error.size()));
    send_msg(fd_, Msg::done, body);
    return true;
  }

  // "counter 3 (schedule counter 7)", or "counter 9 (a pacing flow counter)": the NIC's
  // counter, and the rank's counter as the schedule names it.
  std::string counter_label(std::size_t c) const {
    const offload::CounterId sc = prog_->counters[c];
    return sc == offload::kNoCounter ? fmt::format("counter {} (a pacing flow counter)", c)
                                     : fmt::format("counter {} (schedule counter {})", c, s_.counter_name(sc));
  }

  // Every counter must have moved by exactly one iteration's worth: more means an
  // operation fired twice or a stray arrival counted.
  std::string check_counters() {
    std::string out;
    for (std::size_t c = 0; c < base_.size(); ++c) {
      const auto want = base_[c] + prog_->per_iteration[c];
      const auto got = static_cast<std::int64_t>(nic_->read_counter(static_cast<int>(c)));
      if (got != want && out.empty())
        out = fmt::format("rank {}: {} ended at {}, expected {}", r_, counter_label(c), got, want);
      base_[c] = want;
    }
    return out;
  }

  // Polls the host_waits; returns a stall report, or "" when all are met.
  std::string wait_triggered() {
    std::vector<std::uint64_t> last(base_.size());
    auto changed = [&] {
      bool any = false;
      for (std::size_t c = 0; c < last.size(); ++c) {
        const std::uint64_t v = nic_->read_counter(static_cast<int>(c));
        any |= v != last[c];
        last[c] = v;
      }
      return any;
    };
    changed();
    auto progress = Clock::now(), beat = Clock::now(), nudged = Clock::now();
    for (;;) {
      bool met = true;
      for (const HostWait& w : prog_->waits)
        met &= static_cast<std::int64_t>(nic_->read_counter(w.counter)) >=
               w.value + base_[static_cast<std::size_t>(w.counter)];
      if (met) return {};
      if (changed()) {
        progress = Clock::now();
      } else if (seconds_since(progress) > 0.002 && seconds_since(nudged) > 0.002) {
        // 2 ms without a change: let deferred triggers that found the transmit queue
        // full retry (docs/exec.md), once per 2 ms of silence.
        nic_->progress();
        nudged = Clock::now();
      }
      if (seconds_since(progress) > o_.timeout_seconds) return stall_report();
      heartbeat(beat);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  void heartbeat(Clock::time_point& beat) {
    if (seconds_since(beat) < 1) return;
    send_msg(fd_, Msg::heartbeat);
    beat = Clock::now();
  }

  std::string stall_report() {
    std::string out = fmt::format("rank {} made no progress for {} s:", r_, o_.timeout_seconds);
    for (std::size_t c = 0; c < base_.size(); ++c)
      if (const auto e = nic_->read_counter_errors(static_cast<int>(c)); e > 0)
        out += fmt::format("\n    {} counted {} failed operations", counter_label(c), e);
    for (const HostWait& w : prog_->waits) {
      const auto v = static_cast<std::int64_t>(nic_->read_counter(w.counter));
      const auto need = w.value + base_[static_cast<std::size_t>(w.counter)];
      if (v < need)
        out += fmt::format("\n    {} on {}: at {}, needs {}",
                           s_.op(w.op).kind == OpKind::host_wait
                               ? fmt::format("host_wait (op {})", w.op)
                               : fmt::format("the wait for op {}'s paced burst", w.op),
                           counter_label(static_cast<std::size_t>(w.counter)), v, need);
    }
    int shown = 0, pending = 0;
    for (std::size_t i = 0; i < prog_->ops.size(); ++i) {
      const TriggeredOp& op = prog_->ops[i];
      if (op.trigger < 0) continue;
      const auto v = static_cast<std::int64_t>(nic_->read_counter(op.trigger));
      const auto need = op.threshold + base_[static_cast<std::size_t>(op.trigger)];
      if (v >= need) continue;
      ++pending;
      if (shown < 6) {
        ++shown;
        const Op& so = s_.op(prog_->op_ids[i]);
        const std::string what =
            op.is_counter_add && so.kind != OpKind::cntr_add
                ? fmt::format("op {}'s pacing: the counter add of its completions", prog_->op_ids[i])
                : fmt::format("op {} ({}{})", prog_->op_ids[i], offload::to_string(so.kind),
                              so.kind == OpKind::cntr_add ? "" : fmt::format(" to rank {}", so.peer));
        out += fmt::format("\n    {} waits for {}: at {}, needs {}", what,
                           counter_label(static_cast<std::size_t>(op.trigger)), v, need);
      }
    }
    if (pending > shown) out += fmt::format("\n    ... and {} more operations not fired", pending - shown);
    // Every counter short of where this iteration ends: a send-completion counter short
    // with no operation pending means sends went out (or are queued in the provider) and
    // were never acknowledged; a full one with arrivals missing elsewhere, that they were
    // acknowledged but never counted at the target.
    int short_counters = 0;
    for (std::size_t c = 0; c < base_.size(); ++c) {
      const auto v = static_cast<std::int64_t>(nic_->read_counter(static_cast<int>(c)));
      const auto end = base_[c] + prog_->per_iteration[c];
      if (v >= end) continue;
      if (++short_counters <= 8)
        out += fmt::format("\n    {}: at {}, this iteration ends at {}", counter_label(c), v, end);
    }
    if (short_counters > 8) out += fmt::format("\n    ... and {} more counters short", short_counters - 8);
    return out;
  }

  // ---- Software path ----

  void build_software() {
    const std::size_t n = s_.size();
    children_.assign(n, {});
    missing0_.assign(n, 0);
    arrival_of_.assign(n, -1);
    for (std::size_t i = 0; i < n; ++i) {
      const auto id = static_cast<OpId>(i);
      const Op& o = s_.op(id);
      if (o.kind == OpKind::arrival) {
        arrival_of_[static_cast<std::size_t>(s_.deps(id)[0])] = id;
        if (o.rank == r_) ++arrivals_;
        continue;
      }
      if (o.rank != r_) continue;
      mine_.push_back(id);
      for (OpId d : s_.deps(id)) children_[static_cast<std::size_t>(d)].push_back(id);
      missing0_[i] = static_cast<std::int64_t>(s_.deps(id).size());
      if (offload::is_data_op(o.kind)) ++posted_;
      if (o.kind == OpKind::host_wait) ++waits_;
    }
  }

  std::string run_software() {
    std::vector<std::int64_t> missing = missing0_;
    std::vector<OpId> ready;
    for (OpId id : mine_)
      if (missing[static_cast<std::size_t>(id)] == 0) ready.push_back(id);
    std::int64_t waits_left = waits_, arrivals_left = arrivals_, sends_left = posted_;
    auto finish = [&](OpId id) {
      for (OpId c : children_[static_cast<std::size_t>(id)])
        if (--missing[static_cast<std::size_t>(c)] == 0) ready.push_back(c);
    };
    // At most max_in_flight transfers to one peer at a time (0: no limit), the rest
    // held in order (plan.h paces the triggered path per burst; here the host can do it
    // per peer).
    const auto window = static_cast<std::size_t>(nic_->info().max_in_flight);
    std::vector<std::size_t> in_flight(static_cast<std::size_t>(s_.ranks()), 0);
    std::vector<std::deque<OpId>> held(static_cast<std::size_t>(s_.ranks()));
    auto post = [&](OpId id) {
      const Op& o = s_.op(id);
      ++in_flight[static_cast<std::size_t>(o.peer)];
      nic_->post({.op = o.kind == OpKind::put ? DataOp::put : DataOp::atomic,
                  .peer = o.peer,
                  .key = 0,
                  .src = o.src_offset,
                  .dst = o.dst_offset,
                  .bytes = o.bytes},
                 static_cast<std::uint64_t>(id));
    };
    auto progress = Clock::now(), beat = Clock::now();
    while (waits_left > 0 || arrivals_left > 0 || sends_left > 0) {
      while (!ready.empty()) {
        const OpId id = ready.back();
        ready.pop_back();
        const Op& o = s_.op(id);
        if (o.kind == OpKind::host_wait) {
          --waits_left;
          continue;
        }
        if (o.kind == OpKind::cntr_add) {  // a relay of an assigned schedule: bookkeeping
          finish(id);
          continue;
        }
        const auto peer = static_cast<std::size_t>(o.peer);
        if (window > 0 && in_flight[peer] >= window) held[peer].push_back(id);
        else post(id);
      }
      NicEvent e;
      if (nic_->poll(e)) {
        progress = Clock::now();
        const auto id = static_cast<OpId>(e.tag);
        if (e.kind == NicEvent::completed) {
          --sends_left;
          const auto peer = static_cast<std::size_t>(s_.op(id).peer);
          --in_flight[peer];
          if (!held[peer].empty()) {
            post(held[peer].front());
            held[peer].pop_front();
          }
          const OpId a = arrival_of_[static_cast<std::size_t>(id)];
          if (a >= 0) nic_->notify(s_.op(a).rank, static_cast<std::uint64_t>(a));
        } else {
          --arrivals_left;
        }
        finish(id);
        continue;
      }
      if (seconds_since(progress) > o_.timeout_seconds) {
        std::size_t held_back = 0;
        for (const auto& h : held) held_back += h.size();
        return fmt::format("rank {} made no progress for {} s on the software path: {} "
                           "transfers not completed ({} of them held back, not yet posted), {} "
                           "arrivals not notified, {} host_waits not reached",
                           r_, o_.timeout_seconds, sends_left, held_back, arrivals_left, waits_left);
      }
      heartbeat(beat);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    return {};
  }

  int fd_;
  Rank r_;
  const offload::Schedule& s_;
  const RankProgram* prog_;
  const RunOptions& o_;
  std::unique_ptr<Nic> nic_;
  std::vector<std::int64_t> base_;
  // Software path.
  std::vector<std::vector<OpId>> children_;
  std::vector<std::int64_t> missing0_;
  std::vector<OpId> arrival_of_, mine_;
  std::int64_t arrivals_ = 0, posted_ = 0, waits_ = 0;
};

// ---- The launcher side. ----

struct Child {
  pid_t pid = -1;
  int fd = -1;
};

// Kills and reaps every child still running when it goes out of scope.
class Children {
 public:
  ~Children() { stop(true); }
  std::vector<Child>& all() { return c_; }

  // Sends QUIT, waits up to 5 s, then kills; reaps everything. Returns, per child, a
  // description of an abnormal exit ("" when it exited 0).
  std::vector<std::string> stop(bool kill_now) {
    std::vector<std::string> how(c_.size());
    for (auto& c : c_)
      if (c.fd >= 0 && !kill_now) send_msg(c.fd, Msg::quit);
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < c_.size(); ++i) {
      Child& c = c_[i];
      if (c.pid < 0) continue;
      if (kill_now) ::kill(c.pid, SIGKILL);
      int status = 0;
      for (;;) {
        const pid_t w = ::waitpid(c.pid, &status, WNOHANG);
        if (w == c.pid || (w < 0 && errno != EINTR)) break;
        if (seconds_since(t0) > 5) ::kill(c.pid, SIGKILL);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      if (!kill_now) {
        if (WIFSIGNALED(status)) how[i] = fmt::format("killed by signal {}", WTERMSIG(status));
        else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
          how[i] = fmt::format("exited with status {}", WEXITSTATUS(status));
      }
      c.pid = -1;
      if (c.fd >= 0) ::close(c.fd);
      c.fd = -1;
    }
    return how;
  }

 private:
  std::vector<Child> c_;
};

// Starts `n` children running body(rank, fd) and exiting with its result.
template <typename Body>
void spawn(Children& kids, int n, Body body) {
  const pid_t launcher = ::getpid();
  for (int r = 0; r < n; ++r) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      throw std::runtime_error(fmt::format("socketpair: {}", std::strerror(errno)));
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(sv[0]);
      ::close(sv[1]);
      throw InputError(fmt::format("cannot start process for rank {}: {} (too many ranks for "
                                   "this machine?)",
                                   r, std::strerror(errno)));
    }
    if (pid == 0) {
      // A rank dies with its launcher, whatever ends it (an interrupt exits at once,
      // without stopping the children; a kill or a crash cannot stop them), as sweep
      // workers do (scenario/batch/workers.cc).
      if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != launcher) ::_exit(128 + SIGKILL);
      ::close(sv[0]);
      for (const Child& c : kids.all()) ::close(c.fd);
      const int code = body(r, sv[1]);
      ::_exit(code);
    }
    ::close(sv[1]);
    kids.all().push_back({pid, sv[0]});
  }
}

// Waits for one message of `want` from each rank in `pending`, skipping heartbeats.
// A rank silent for `silence` seconds, or whose channel closes, is reported.
struct Collected {
  std::vector<std::optional<Message>> got;
  std::vector<std::string> problems;
};

Collected collect(Children& kids, double silence) {
  auto& c = kids.all();
  Collected out;
  out.got.resize(c.size());
  std::vector<Clock::time_point> heard(c.size(), Clock::now());
  std::size_t left = c.size();
  std::vector<bool> open(c.size(), true);
  while (left > 0) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> who;
    for (std::size_t i = 0; i < c.size(); ++i)
      if (open[i] && !out.got[i]) {
        fds.push_back({c[i].fd, POLLIN, 0});
        who.push_back(i);
      }
    const int k = ::poll(fds.data(), fds.size(), 100);
    if (k < 0 && errno != EINTR) throw std::runtime_error("poll failed");
    for (std::size_t j = 0; k > 0 && j < fds.size(); ++j) {
      if (fds[j].revents == 0) continue;
      const std::size_t i = who[j];
      auto m = recv_msg(c[i].fd);
      if (!m) {
        out.problems.push_back(fmt::format("rank {}: process ended unexpectedly", i));
        open[i] = false;
        --left;
        continue;
      }
      heard[i] = Clock::now();
      if (m->type == Msg::heartbeat) continue;
      out.got[i] = std::move(m);
      --left;
    }
    for (std::size_t i = 0; i < c.size(); ++i)
      if (open[i] && !out.got[i] && seconds_since(heard[i]) > silence) {
        out.problems.push_back(fmt::format("rank {}: no word for {:.0f} s (the process is stuck)", i, silence));
        open[i] = false;
        --left;
      }
  }
  return out;
}

// A FATAL message: "<code><text>". Input errors (code 2) are rethrown as InputError.
[[noreturn]] void rethrow_fatal(const Message& m) {
  const std::string t = text_of(m);
  if (!t.empty() && t[0] == '2') throw InputError(t.substr(1));
  throw std::runtime_error(t.empty() ? "rank failed" : t.substr(1));
}

}  // namespace

NicInfo probe_nic(const RunOptions& o, offload::Datatype dt) {
  Children kids;
  spawn(kids, 1, [&](int, int fd) {
    try {
      auto nic = o.nic(o.provider, dt);
      const NicInfo& i = nic->info();
      std::vector<std::byte> body;
      append(body, i.counters);
      append(body, i.max_atomic_bytes);
      append(body, static_cast<std::int64_t>(i.max_in_flight));
      const std::string names = i.provider + '\n' + i.fabric;
      body.insert(body.end(), reinterpret_cast<const std::byte*>(names.data()),
                  reinterpret_cast<const std::byte*>(names.data() + names.size()));
      send_msg(fd, Msg::info, body);
      return 0;
    } catch (const InputError& e) {
      send_text(fd, Msg::fatal, fmt::format("2{}", e.what()));
    } catch (const std::exception& e) {
      send_text(fd, Msg::fatal, fmt::format("3{}", e.what()));
    }
    return 2;
  });
  Collected c = collect(kids, 30);
  if (!c.got[0]) throw std::runtime_error("provider probe: " + c.problems.at(0));
  if (c.got[0]->type == Msg::fatal) rethrow_fatal(*c.got[0]);
  NicInfo info;
  std::size_t at = 0;
  info.counters = take<std::int64_t>(c.got[0]->body, at);
  info.max_atomic_bytes = take<std::int64_t>(c.got[0]->body, at);
  info.max_in_flight = static_cast<int>(take<std::int64_t>(c.got[0]->body, at));
  const std::string names(reinterpret_cast<const char*>(c.got[0]->body.data() + at), c.got[0]->body.size() - at);
  info.provider = names.substr(0, names.find('\n'));
  info.fabric = names.substr(names.find('\n') + 1);
  kids.stop(false);
  return info;
}

RunResult run(const offload::Schedule& s, const std::vector<RankProgram>& programs, const RunOptions& o) {
  if (s.layout.empty()) throw InputError("the schedule has no data layout: it cannot be executed");
  const Rank p = s.ranks();
  RunResult res;
  res.ranks.resize(static_cast<std::size_t>(p));
  for (Rank r = 0; r < p; ++r) {
    auto& st = res.ranks[static_cast<std::size_t>(r)];
    if (o.path == Path::triggered) {
      st.counters = static_cast<int>(programs[static_cast<std::size_t>(r)].counters.size());
      st.ops = static_cast<std::int64_t>(programs[static_cast<std::size_t>(r)].ops.size());
    } else {
      for (OpId id = 0; id < static_cast<OpId>(s.size()); ++id)
        st.ops += s.op(id).rank == r && offload::is_data_op(s.op(id).kind);
    }
  }
  Children kids;
  spawn(kids, p, [&](int r, int fd) {
    RankProcess proc(fd, r, s, o.path == Path::triggered ? &programs.at(static_cast<std::size_t>(r)) : nullptr, o);
    return proc.main();
  });
  const double silence = o.timeout_seconds + 5;
  auto fail_all = [&](const Collected& c) {
    for (const auto& m : c.got)
      if (m && m->type == Msg::fatal) rethrow_fatal(*m);
    for (const auto& m : c.got)
      if (m && m->type == Msg::stall) res.failures.push_back(text_of(*m));
    for (const auto& pr : c.problems) res.failures.push_back(pr);
  };
  auto all_are = [&](const Collected& c, Msg t) {
    if (!c.problems.empty()) return false;
    for (const auto& m : c.got)
      if (!m || m->type != t) return false;
    return true;
  };
  // Addresses.
  Collected hello = collect(kids, silence);
  if (!all_are(hello, Msg::hello)) {
    fail_all(hello);
    return res;
  }
  std::vector<std::byte> peers;
  append(peers, static_cast<std::uint64_t>(p));
  for (const auto& m : hello.got) {
    append(peers, static_cast<std::uint64_t>(m->body.size()));
    peers.insert(peers.end(), m->body.begin(), m->body.end());
  }
  for (auto& c : kids.all()) send_msg(c.fd, Msg::peers, peers);
  // Every rank ready to be reached, then every pair connected.
  for (int step = 0; step < 2; ++step) {
    // Wiring up may take the backend a while (it gives up after 60 s itself).
    Collected ready = collect(kids, std::max(silence, 75.0));
    if (!all_are(ready, Msg::ready)) {
      fail_all(ready);
      return res;
    }
    if (step == 0)
      for (auto& c : kids.all()) send_msg(c.fd, Msg::wire);
  }
  for (std::int64_t it = 0; it < o.iterations; ++it) {
    std::vector<std::byte> body;
    append(body, it);
    for (auto& c : kids.all()) send_msg(c.fd, Msg::prepare, body);
    Collected ready = collect(kids, silence);
    if (!all_are(ready, Msg::ready)) {
      fail_all(ready);
      return res;
    }
    for (auto& c : kids.all()) send_msg(c.fd, Msg::start, body);
    Collected done = collect(kids, silence);
    if (!all_are(done, Msg::done)) {
      // Ranks that finished are fine; the others stalled, died or went silent.
      fail_all(done);
      return res;
    }
    bool iteration_ok = true;
    for (std::size_t r = 0; r < done.got.size(); ++r) {
      const auto& m = *done.got[r];
      std::size_t at = 0;
      take<std::int64_t>(m.body, at);
      res.ranks[r].wall_us.push_back(take<double>(m.body, at));
      const std::string error(reinterpret_cast<const char*>(m.body.data() + at), m.body.size() - at);
      if (!error.empty()) {
        iteration_ok = false;
        if (res.failures.size() < 20) res.failures.push_back(fmt::format("iteration {}: {}", it, error));
      }
    }
    if (iteration_ok) ++res.iterations_verified;
  }
  const auto how = kids.stop(false);
  for (std::size_t r = 0; r < how.size(); ++r)
    if (!how[r].empty()) res.failures.push_back(fmt::format("rank {}: {}", r, how[r]));
  return res;
}

}  // namespace fabriclab::exec
