// The run of a Network: one loop of lock-step windows over parts, each with its own
// simulator, pool and ledger (an undivided run is one part, on the network's own), run
// by threads in one process or over several (an Exchange between MPI ranks); the frames
// crossing between parts at each window's end, the coordinator's steps between windows,
// the observers' readings (observers.cc) at their instants, and what the processes agree
// on at the end.
#include "fabric/run.h"

#include "fabric/network.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <tuple>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "core/error.h"
#include "core/spin_barrier.h"

namespace fabriclab::fabric {

void Run::set_partitions(std::uint32_t partitions, std::uint32_t threads) {
  if (net_.prepared_) throw std::logic_error("Network::set_partitions after the run was prepared");
  if (partitions < 1 || partitions > 64)
    throw InputError("partitions: expected 1..64, got " + std::to_string(partitions));
  if (threads < 1 || threads > partitions)
    throw InputError("threads: expected 1.." + std::to_string(partitions) + " (one per partition at most), got " +
                     std::to_string(threads));
  n_parts_ = partitions;
  n_threads_ = threads;
  exchange_ = nullptr;
}

void Run::set_partitioner(Partitioner p) {
  if (net_.prepared_) throw std::logic_error("Network::set_partitioner after the run was prepared");
  partitioner_ = p;
}

void Run::set_partitions(std::uint32_t partitions, std::uint32_t threads, Exchange& exchange) {
  const auto ranks = static_cast<std::uint32_t>(exchange.size());
  if (ranks < 2) return set_partitions(partitions, threads);
  if (partitions < ranks)
    throw InputError("partitions: " + std::to_string(partitions) + " parts cannot run on " + std::to_string(ranks) +
                     " processes (at least one part each)");
  set_partitions(partitions, 1);
  const std::uint32_t smallest = partitions / ranks;  // the blocks differ by one part at most
  if (threads < 1 || threads > smallest)
    throw InputError("threads: expected 1.." + std::to_string(smallest) + " per process (" +
                     std::to_string(partitions) + " parts on " + std::to_string(ranks) + " processes), got " +
                     std::to_string(threads));
  n_threads_ = threads;
  exchange_ = &exchange;
}

void Run::partition() {
  const std::string why = "a partitioned run (" + std::to_string(n_parts_) + " partitions) ";
  for (std::uint32_t id = 0; id < net_.flows_.size(); ++id)
    if (!net_.flows_[id].spec.after.empty())
      throw InputError(why + "cannot start a flow when another finishes: flow " + std::to_string(id) +
                       " waits for others (after)");
  if (!net_.boxes_.empty() || !net_.reseqs_.empty())
    throw InputError(why + "does not support reorder boxes or re-sequencers on links");
  for (Node* n : net_.nodes_)
    for (std::size_t i = 0; i < n->port_count(); ++i)
      if (n->port(i).tap())
        throw InputError(why + "cannot capture or observe frames at a port (" + n->name() + " port " +
                         std::to_string(i) + ")");
  if (net_.hosts_.size() < n_parts_)
    throw InputError(why + "needs a host per partition at least (" + std::to_string(net_.hosts_.size()) + " hosts)");

  if (partitioner_ == Partitioner::metis) partition_by_metis();
  else partition_by_levels();

  parts_.clear();
  for (std::uint32_t q = 0; q < n_parts_; ++q) {
    parts_.push_back(std::make_unique<Part>());
    parts_.back()->ctx.wire = net_.ctx_.wire;
    parts_.back()->ctx.seed = net_.ctx_.seed;
    parts_.back()->out.resize(n_parts_);
  }
  auto bind = [&](Node& node, auto& concrete) {
    FabricContext& c = parts_[part_of_[node.id()]]->ctx;
    concrete.bind(c);
    for (std::size_t i = 0; i < node.port_count(); ++i) {
      Port& port = node.port(i);
      port.bind(c);
      const std::uint32_t there = part_of_[port.peer()->owner().id()];
      if (there == part_of_[node.id()]) continue;
      if (port.delay() <= Time())
        throw InputError(why + "needs a delay on every link between partitions: " + node.name() + "-" +
                         port.peer()->owner().name() + " has none");
      window_ = std::min(window_, port.delay());
      port.set_cut(&parts_[part_of_[node.id()]]->out[there]);
    }
  };
  for (auto& h : net_.hosts_) bind(*h, *h);
  for (auto& sw : net_.switches_) bind(*sw, *sw);
  std::tie(first_part_, end_part_) = exchange_ ? parts_of_rank(exchange_->rank()) : std::pair{0u, n_parts_};
}

void Run::prepare_parts() {
  for (Node* n : net_.nodes_)
    for (std::size_t i = 0; i < n->port_count(); ++i) tail_ = std::max(tail_, n->port(i).delay());
  if (n_parts_ > 1) {
    partition();
  } else {
    parts_.push_back(std::make_unique<Part>(net_.ctx_));  // the network's own simulator, pool and ledger
    parts_.back()->out.resize(1);
    first_part_ = 0, end_part_ = 1;
  }
}

void Run::share_flows() {
  if (n_parts_ == 1) return;  // (the network's context counts them)
  for (auto& part : parts_) {
    part->ctx.stop_at_last_flow = false;  // no `after`: no flow events
    part->ctx.message_events = net_.message_events_;
  }
  for (const auto& f : net_.flows_)
    ++parts_[part_of_[net_.hosts_[net_.finishing_host(f.spec)]->id()]]->ctx.flows_left;  // where it finishes
}

std::uint64_t Run::events() const {
  if (n_parts_ == 1 || parts_.empty()) return net_.sim_.events();
  if (running_) return window_events_;  // for `progress`, on the thread that calls it
  if (agreed_) return total_events_;
  std::uint64_t e = 0;
  for (const auto& part : parts_) e += part->sim.events();
  return e;
}

std::uint64_t Run::fingerprint() const {
  if (agreed_) return total_fingerprint_;
  if (n_parts_ == 1) return net_.sim_.fingerprint();
  std::uint64_t h = 0;  // the parts' shares add up to the undivided run's
  for (const auto& part : parts_) h += part->sim.fingerprint();
  return h;
}

void Run::end_windows(RunTotals& t, bool& pending, Time& last_now) {
  if (parts_.empty()) return;
  // Frames still crossing between parts are on their links.
  for (std::uint32_t q = first_part_; q < end_part_; ++q)
    for (int w : {0, 1}) hand_over(q, w);
  t.peak_packets = 0;
  pending = net_.stopped_by_deadlock();  // (which ends the run at its check)
  for (std::uint32_t q = first_part_; q < end_part_; ++q) {
    const Part& part = *parts_[q];
    pending = pending || part.sim.pending() > 0;
    last_now = std::max(last_now, part.sim.now());
    t.peak_packets += part.ctx.packets.peak();
    if (part.own) net_.ledger_ += part.own->ledger;
  }
}

bool Run::work_done() const {
  bool done = true;
  for (std::uint32_t q = first_part_; q < end_part_; ++q)
    done = done && parts_[q]->ctx.work_released == parts_[q]->ctx.work_held;
  return done;
}

Time Run::end_at(Time undivided, bool pending, Time last_now) {
  end_ = parts_.empty() ? undivided : std::max(undivided, pending ? ran_until_ : last_now);
  return end_;
}

std::pair<std::uint32_t, std::uint32_t> Run::parts_of_rank(int rank) const {
  const auto r = static_cast<std::uint64_t>(rank), size = static_cast<std::uint64_t>(exchange_->size());
  return {static_cast<std::uint32_t>(r * n_parts_ / size), static_cast<std::uint32_t>((r + 1) * n_parts_ / size)};
}

void Run::exchange_window(int window) {
  const int ranks = exchange_->size(), me = exchange_->rank();
  // To each other process: what every part here published, then, part by part, the
  // frames it sent into that process's parts (by destination part, in sending order).
  mail_out_.clear(ranks);
  ByteWriter out(mail_out_.data);
  for (int r = 0; r < ranks; ++r) {
    if (r != me) {
      for (std::uint32_t q = first_part_; q < end_part_; ++q) out.put(parts_[q]->seen[window]);
      const auto [lo, hi] = parts_of_rank(r);
      for (std::uint32_t q = first_part_; q < end_part_; ++q)
        for (std::uint32_t to = lo; to < hi; ++to) {
          Outbox::Buffer& buf = parts_[q]->out[to].window[window];
          out.put(static_cast<std::uint64_t>(buf.frames.size()));
          for (const Crossing& c : buf.frames) {
            out.put(c.at);
            out.put(c.key);
            out.put(c.to->owner().id());
            out.put(c.to->index());
            out.put(c.packet);
          }
          out.put(static_cast<std::uint64_t>(buf.stacks.size()));
          for (const IntStack& st : buf.stacks) {  // the records taken, not the empty slots
            out.put(st.hops);
            out.put(st.pint);
            for (std::uint8_t i = 0; i < st.hops; ++i) out.put(st.hop[i]);
          }
          rank_stats_.frames_out += buf.frames.size();
          buf.clear();
        }
      if (net_.coordinator_ && !coordinator_failed_)
        net_.coordinator_->share(out);  // what the parts did that steps read
    }
    mail_out_.next_rank();
  }
  rank_stats_.bytes_out += mail_out_.data.size();
  ++rank_stats_.windows;
  const auto t0 = std::chrono::steady_clock::now();
  exchange_->all_to_all(mail_out_, mail_in_, "the end of a window");
  rank_stats_.exchange_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // Theirs, into their parts' places here: hand_over takes the frames from there.
  for (int r = 0; r < ranks; ++r) {
    if (r == me) continue;
    ByteReader in(mail_in_.of(r));
    const auto [lo, hi] = parts_of_rank(r);
    for (std::uint32_t q = lo; q < hi; ++q) parts_[q]->seen[window] = in.get<Seen>();
    for (std::uint32_t q = lo; q < hi; ++q)
      for (std::uint32_t to = first_part_; to < end_part_; ++to) {
        Outbox::Buffer& buf = parts_[q]->out[to].window[window];
        auto& frames = buf.frames;
        for (auto n = in.get<std::uint64_t>(); n > 0; --n) {
          const auto at = in.get<Time>();
          const auto key = in.get<std::uint64_t>();
          const auto node = in.get<std::uint32_t>();
          const auto port = in.get<std::uint16_t>();
          if (node >= net_.nodes_.size() || port >= net_.nodes_[node]->port_count())
            throw std::logic_error(
                fmt::format("a frame from process {} arrives at node {} port {}, not in the network", r, node, port));
          frames.push_back({at, &net_.nodes_[node]->port(port), key, in.get<Packet>()});
        }
        for (auto n = in.get<std::uint64_t>(); n > 0; --n) {
          IntStack& st = buf.stacks.emplace_back();
          st.hops = in.get<std::uint8_t>();
          if (st.hops > kIntHopSlots)
            throw std::logic_error(fmt::format("process {} sent an INT stack of {} hops", r, st.hops));
          st.pint = in.get<std::uint16_t>();
          for (std::uint8_t i = 0; i < st.hops; ++i) st.hop[i] = in.get<IntHop>();
        }
      }
    if (net_.coordinator_ && !coordinator_failed_) net_.coordinator_->take_shared(in);
    if (!in.done()) throw std::logic_error(fmt::format("process {} sent more than a window's frames", r));
  }
}

void Run::rethrow_any_failure() {
  std::exception_ptr mine;
  for (std::uint32_t q = first_part_; q < end_part_ && !mine; ++q) mine = parts_[q]->error;
  if (!exchange_) {
    if (mine) std::rethrow_exception(mine);
    return;
  }
  // Every process learns which failed, and why: the first failing one's message.
  std::vector<std::byte> bytes;
  ByteWriter w(bytes);
  int code = 0;
  std::string text;
  if (mine) {
    try {
      std::rethrow_exception(mine);
    } catch (const NegativeAnswer& e) {
      code = 1, text = e.what();
    } catch (const InputError& e) {
      code = 2, text = e.what();
    } catch (const RankFailure& e) {
      code = e.exit_code(), text = e.what();
    } catch (const std::exception& e) {
      code = 3, text = e.what();
    } catch (...) {
      code = 3, text = "an unknown exception";
    }
  }
  w.put(code);
  w.put_text(text);
  ByRank all;
  exchange_->all_gather(bytes, all, "the end of the run (any failure)");
  for (int r = 0; r < exchange_->size(); ++r) {
    ByteReader in(all.of(r));
    const int c = in.get<int>();
    const std::string t = in.get_text();
    if (c != 0) throw RankFailure(fmt::format("rank {}: {}", r, t), c);
  }
}

void Run::hand_over(std::uint32_t to, int window) {
  for (auto& from : parts_) {
    Outbox::Buffer& buf = from->out[to].window[window];
    for (const Crossing& c : buf.frames) c.to->accept_crossing(c.at, c.key, c.packet, buf.stacks);
    buf.clear();
  }
}

RunTotals Network::run(Time stop) { return run(stop, stop, {}); }

RunTotals Network::run(Time stop, Time slice, const std::function<void(Time)>& progress) {
  prepare();
  run_.run_windows(stop, slice, progress);
  return finish();
}

Time Run::coordinate(Time at, bool* idle_after) {
  for (std::uint32_t q = first_part_; q < end_part_; ++q) parts_[q]->sim.advance_to(at);
  const std::uint64_t released = net_.released_;
  std::exception_ptr failed;
  try {
    net_.coordinator_->step(at);
  } catch (...) {
    if (!exchange_) throw;
    failed = std::current_exception();  // thrown once every process has heard of it
  }
  if (net_.released_ != released) last_release_ = at;  // (release() is called from the step)
  bool now_idle = idle(), any_failed = failed != nullptr;
  if (exchange_) agree_after_step(now_idle, any_failed);
  if (failed) std::rethrow_exception(failed);
  if (!any_failed) {
    try {
      // (What it schedules, it schedules alike on every process: the agreed `idle` holds
      // but for it.)
      if (net_.coordinator_->after_step(at)) now_idle = false;
    } catch (...) {
      if (!exchange_) throw;
      failed = std::current_exception();
    }
    if (failed) {  // (every process's copy fails alike: their states agree)
      coordinator_failed_ = true;
      std::rethrow_exception(failed);
    }
  }
  if (idle_after) *idle_after = now_idle;
  // (Another process's step failed: it says so after this window, and the run ends.)
  return any_failed ? Time::max() : net_.coordinator_->next_step(now_idle);
}

void Run::agree_after_step(bool& idle, bool& failed) {
  // A copy whose step failed stopped half-way: it shares nothing, and once any has
  // failed no copy reads another's state again (their lists of collectives may differ);
  // every process knows it, and the run ends after the next window.
  std::vector<std::byte> mine;
  ByteWriter w(mine);
  w.put(idle);
  w.put(failed);
  if (!failed) net_.coordinator_->share(w);
  ByRank all;
  exchange_->all_gather(mine, all, "a step of the collectives");
  std::vector<ByteReader> in;
  for (int r = 0; r < exchange_->size(); ++r) {
    in.emplace_back(all.of(r));
    idle = in.back().get<bool>() && idle;
    failed = in.back().get<bool>() || failed;
  }
  coordinator_failed_ = coordinator_failed_ || failed;
  if (coordinator_failed_) return;
  for (int r = 0; r < exchange_->size(); ++r) {
    if (r == exchange_->rank()) continue;
    net_.coordinator_->take_shared(in[static_cast<std::size_t>(r)]);
    if (!in[static_cast<std::size_t>(r)].done())
      throw std::logic_error(fmt::format("rank {} shared more than its parts' state", r));
  }
}

void Network::coordinator_moved() {
  if (run_.split()) throw std::logic_error("Network: a partitioned run's coordinator cannot be given work by an event");
  coordinator_moved_ = true;
  sim_.stop();
}

bool Run::idle() const {
  // This process's parts' events, and the frames on their way into them (another
  // process's parts' outboxes hold those it sent here; this one's, those not yet sent).
  bool idle = true;
  for (std::uint32_t q = first_part_; q < end_part_ && idle; ++q) idle = parts_[q]->sim.pending() == 0;
  for (const auto& part : parts_)
    for (const Outbox& o : part->out) idle = idle && o.window[0].frames.empty() && o.window[1].frames.empty();
  return idle;
}

void Run::agree_on_totals(RunTotals& t, bool& pending, Time& last_now, bool& work_done) {
  // Every process's share of what the run's totals add up from.
  struct Share {
    Ledger ledger;
    std::uint64_t events, fingerprint, packet_hops, in_flight_packets, in_flight_bytes, peak, flows_finished;
    Time last_now;
    bool pending, work_done;
    RankStats stats;
  };
  const Share mine{net_.ledger_,
                   t.events,
                   fingerprint(),
                   t.packet_hops,
                   t.in_flight_data_packets,
                   t.in_flight_data_bytes,
                   t.peak_packets,
                   t.flows_finished,
                   last_now,
                   pending,
                   work_done,
                   rank_stats_};
  std::vector<std::byte> bytes;
  ByteWriter(bytes).put(mine);
  ByRank all;
  exchange_->all_gather(bytes, all, "the end of the run (totals)");
  net_.ledger_ = {};
  t = RunTotals{.end = t.end};
  std::uint64_t fp = 0;
  pending = false;
  work_done = true;
  all_rank_stats_.clear();
  for (int r = 0; r < exchange_->size(); ++r) {
    const Share s = ByteReader(all.of(r)).get<Share>();
    net_.ledger_ += s.ledger;
    t.events += s.events;
    fp += s.fingerprint;
    t.packet_hops += s.packet_hops;
    t.in_flight_data_packets += s.in_flight_packets;
    t.in_flight_data_bytes += s.in_flight_bytes;
    t.peak_packets += s.peak;
    t.flows_finished += s.flows_finished;
    last_now = std::max(last_now, s.last_now);
    pending = pending || s.pending;
    work_done = work_done && s.work_done;
    all_rank_stats_.push_back(s.stats);
  }
  total_events_ = t.events;
  total_fingerprint_ = fp;
  agreed_ = true;
}

void Run::gather_results() {
  // The snapshots taken (alike on every rank) and the end's reading.
  const auto readings = [this] {
    std::vector<Network::Snapshot*> r;
    for (Network::Snapshot& s : net_.snapshots_)
      if (s.taken) r.push_back(&s);
    if (!net_.snapshots_.empty()) r.push_back(&net_.end_snapshot_);
    return r;
  };
  port_base_.assign(net_.nodes_.size() + 1, 0);
  for (std::size_t n = 0; n < net_.nodes_.size(); ++n) port_base_[n + 1] = port_base_[n] + net_.nodes_[n]->port_count();
  // Every other process sends rank 0 what its nodes counted and its flows' outcome (the
  // sender's retransmissions, the receiver's delivery, the finish where it happened),
  // and what its parts kept of the coordinator's work.
  ByRank out, in;
  out.clear(exchange_->size());
  if (exchange_->rank() != 0) {  // (rank 0 sends itself nothing)
    ByteWriter w(out.data);
    for (std::uint32_t n = 0; n < net_.nodes_.size(); ++n) {
      if (!runs_here(n)) continue;
      w.put(n);
      for (std::size_t i = 0; i < net_.nodes_[n]->port_count(); ++i)
        w.put(Network::port_counters(*net_.nodes_[n], i, end_));
      if (n < net_.hosts_.size()) w.put(net_.hosts_[n]->counters());
      else
        for (std::size_t i = 0; i < net_.nodes_[n]->port_count(); ++i) w.put(net_.own_watchdog(n, i));
    }
    w.put(~std::uint32_t{0});
    for (std::uint32_t id = 0; id < net_.flows_.size(); ++id) {
      const FlowState& f = net_.flows_[id];
      if (runs_here(f.spec.src)) w.put(f.retransmitted);
      if (runs_here(f.spec.dst)) w.put(f.delivered);
      if (runs_here(net_.finishing_host(f.spec))) {
        w.put(f.qps_done);
        w.put(f.finish);
      }
    }
    for (const Network::Conn& k : net_.conns_)
      if (runs_here(k.src)) w.put(net_.hosts_[k.src]->connection_bytes_completed(k.send_qp));
    for (const Network::Snapshot* reading : readings()) {
      const Network::Snapshot& s = *reading;
      for (std::uint32_t n = 0; n < net_.nodes_.size(); ++n)
        if (runs_here(n))
          for (std::size_t i = 0; i < net_.nodes_[n]->port_count(); ++i) w.put(s.ports[port_base_[n] + i]);
      for (std::uint32_t id = 0; id < s.delivered.size(); ++id)  // (a feed's flows: those added by then)
        if (runs_here(net_.flows_[id].spec.dst)) w.put(s.delivered[id]);
    }
    if (net_.coordinator_) net_.coordinator_->share_results(w);
  }
  for (int r = 0; r < exchange_->size(); ++r) out.next_rank();  // all of it for rank 0
  exchange_->all_to_all(out, in, "the end of the run (outputs to rank 0)");
  if (exchange_->rank() != 0) return;
  for (std::uint32_t n = 0; n < net_.nodes_.size(); ++n)
    for (std::size_t i = 0; i < net_.nodes_[n]->port_count(); ++i) {
      gathered_ports_.push_back(Network::port_counters(*net_.nodes_[n], i, end_));
      gathered_watchdog_.push_back(n < net_.hosts_.size() ? WatchdogCounts{} : net_.own_watchdog(n, i));
    }
  for (const auto& h : net_.hosts_) gathered_hosts_.push_back(h->counters());
  for (int r = 1; r < exchange_->size(); ++r) {
    ByteReader rd(in.of(r));
    const auto [lo, hi] = parts_of_rank(r);
    // (Bindings captured by copy: clang before 16 cannot capture structured bindings.)
    const auto owner = [&, lo = lo, hi = hi](std::uint32_t node) {
      return lo <= part_of_[node] && part_of_[node] < hi;
    };
    for (auto n = rd.get<std::uint32_t>(); n != ~std::uint32_t{0}; n = rd.get<std::uint32_t>()) {
      if (n >= net_.nodes_.size() || !owner(n))
        throw std::logic_error(fmt::format("rank {} sent the counters of node {}", r, n));
      for (std::size_t i = 0; i < net_.nodes_[n]->port_count(); ++i)
        gathered_ports_[port_base_[n] + i] = rd.get<PortCounters>();
      if (n < net_.hosts_.size()) gathered_hosts_[n] = rd.get<HostCounters>();
      else
        for (std::size_t i = 0; i < net_.nodes_[n]->port_count(); ++i)
          gathered_watchdog_[port_base_[n] + i] = rd.get<WatchdogCounts>();
    }
    for (FlowState& f : net_.flows_) {
      if (owner(f.spec.src)) f.retransmitted = rd.get<std::uint64_t>();
      if (owner(f.spec.dst)) f.delivered = rd.get<std::uint64_t>();
      if (owner(net_.finishing_host(f.spec))) {
        f.qps_done = rd.get<std::uint32_t>();
        f.finish = rd.get<Time>();
      }
    }
    for (Network::Conn& k : net_.conns_)
      if (owner(k.src)) k.gathered = rd.get<std::uint64_t>();
    for (Network::Snapshot* reading : readings()) {
      Network::Snapshot& s = *reading;
      for (std::uint32_t n = 0; n < net_.nodes_.size(); ++n)
        if (owner(n))
          for (std::size_t i = 0; i < net_.nodes_[n]->port_count(); ++i)
            s.ports[port_base_[n] + i] = rd.get<PortCounters>();
      for (std::uint32_t id = 0; id < s.delivered.size(); ++id)
        if (owner(net_.flows_[id].spec.dst)) s.delivered[id] = rd.get<std::uint64_t>();
    }
    if (net_.coordinator_) net_.coordinator_->take_results(rd);
    if (!rd.done()) throw std::logic_error(fmt::format("rank {} sent more than its nodes' counters", r));
  }
}

void Run::run_windows(Time stop, Time slice, const std::function<void(Time)>& progress) {
  const std::uint32_t threads = n_threads_;
  SpinBarrier sync(threads, threads <= std::thread::hardware_concurrency());
  const bool look = net_.looks_for_deadlocks();
  // Split: windows of `grid` (whatever the checks); a window also ends at the
  // coordinator's next instant. No window is longer than the tail, so that the window
  // where the work is found done ends before the tail does. Undivided: windows of the
  // progress slice; the event that finishes the work stops the simulator, and the window
  // ends there.
  const Time grid = n_parts_ == 1 ? std::max(slice, Time::from_ps(1))
                                  : std::min(window_ != Time::max() ? window_
                                             : look                 ? net_.deadlock_interval_
                                                                    : Time::max(),
                                             std::max(tail_, Time::from_ps(1)));
  const bool has_work = net_.work() > 0;
  // The coordinator's next instant and, after its step, whether the network was idle:
  // written by thread 0 while the others wait, read by all after the meeting.
  Time due = net_.coordinator_ ? net_.coordinator_->next_step(n_parts_ == 1 && idle()) : Time::max();
  bool idle_after_step = false;
  std::uint64_t flows_added_by_step = 0;  // (a feed's: work the window's counts did not see)
  // Every thread runs the same loop on its parts (t, t + threads, ...): run the window,
  // sending into this window's outboxes; publish what the decision needs in this
  // window's slot; meet; over several processes, thread 0 exchanges the slots and the
  // frames with the other processes (exchange_window) and the threads meet again; when a
  // deadlock check, a snapshot, a progress report or the coordinator's
  // step is due (or the parts fell idle with the coordinator still to act), thread 0
  // makes it at the window's end and the threads meet again, so nothing runs meanwhile;
  // take the frames sent to its parts; and decide, as every thread does, from the
  // published slots, whether to go on. Outboxes and slots alternate by window, so a
  // thread may run the next window while a slower one still reads the last. An exception
  // (in a part, the check, the step or `progress`) is kept and ends the run after the
  // next window at the latest; every thread still meets the others until then, so none
  // waits for ever.
  auto loop = [&](std::uint32_t t) {
    Time from = net_.sim_.now();  // no event of the next window is earlier
    Time next_progress = from + slice;
    Time end = stop;    // the tail's end once the work is done
    bool tail = false;  // the work is done: the coordinator has nothing left to do
    // Each observer's readings past (made by thread 0), its next instant, and which are
    // due at this window's end.
    std::vector<std::size_t> done(observers_.size(), 0);
    std::vector<char> due_here(observers_.size(), 0);
    const auto next_at = [&](std::size_t i) { return observers_[i]->instant(done[i]); };
    const auto checks = [&](std::size_t i) { return observers_[i]->kind() == RunObserver::Kind::check; };
    for (int w = 0;; w ^= 1) {
      // `due` is read here only, before the meeting: thread 0 may change it after.
      const Time due_now = tail ? Time::max() : due;
      Time until = grid == Time::max() || end - from < grid ? end : from + grid - Time::from_ps(1);
      for (std::size_t i = 0; i < observers_.size(); ++i)  // each sees the events before its instant
        if ((!tail || !checks(i)) && next_at(i) <= until) until = next_at(i) - Time::from_ps(1);
      const bool stepping = due_now <= until;
      if (stepping) until = due_now;
      const Time boundary = until + Time::from_ps(1);  // every event before it has run
      for (std::uint32_t q = first_part_ + t; q < end_part_; q += threads) {
        Part& part = *parts_[q];
        for (Outbox& o : part.out) o.current = &o.window[w];
        if (!part.error) {
          try {
            part.sim.run(until);
          } catch (...) {
            part.error = std::current_exception();
          }
        }
        Seen& seen = part.seen[w];
        seen = {part.ctx.flows_left, part.sim.pending(),   part.sim.events(), 0,
                part.ctx.last_done,  part.error != nullptr};
        for (const Outbox& o : part.out) seen.sent += o.window[w].frames.size();
      }
      // Undivided, an event may stop the simulator before `until`: the one that finished
      // the work, or one that gave the coordinator work (coordinator_moved). The window
      // ends there with nothing due at its end, and the next one goes on from there.
      if (n_parts_ == 1 && !parts_[0]->error && parts_[0]->sim.stopped()) {
        Part& part = *parts_[0];
        if (net_.coordinator_moved_) {
          net_.coordinator_moved_ = false;
          due = net_.coordinator_->next_step(idle());
        }
        if (part.ctx.flows_left + (net_.held_ - net_.released_) == 0 && has_work && !tail) {
          tail = true;
          end = std::min(stop, std::max(part.ctx.last_done, last_release_) + tail_);
        }
        from = part.sim.now();
        continue;
      }
      sync.arrive_and_wait();
      if (exchange_) {  // the other processes' parts' `seen` and frames, into their places here
        if (t == 0) {
          try {
            exchange_window(w);
          } catch (const std::exception& e) {
            // The processes no longer agree on what they exchange: nothing can go on.
            exchange_->abort(std::string("the exchange at the end of a window failed: ") + e.what());
          }
        }
        sync.arrive_and_wait();
      }
      std::uint64_t left = 0, pending = 0, events = 0;
      Time last_done;
      bool failed = false;
      for (const auto& part : parts_) {
        const Seen& seen = part->seen[w];
        left += seen.flows_left;
        last_done = std::max(last_done, seen.last_done);
        pending += seen.pending + seen.sent;
        events += seen.events;
        failed = failed || seen.failed;
      }
      // No check at the end of the run, nor once the work is done. A reading not with a
      // step at `until`: its events (scheduled at `until`) run first, in the next window,
      // and the reading waits for that window's end.
      const bool working = !tail && until < end && (left + (net_.held_ - net_.released_) > 0 || !has_work);
      bool reading = false;
      for (std::size_t i = 0; i < observers_.size(); ++i) {
        due_here[i] = next_at(i) == boundary && (checks(i) ? working : !failed && !stepping);
        reading = reading || due_here[i];
      }
      const bool report = progress && until >= next_progress;
      const bool step = stepping && !failed;  // (from what every thread reads alike)
      const bool settle = !step && !failed && pending == 0 && due_now != Time::max();  // only the coordinator can act
      if (reading || report || step || settle) {
        if (t == 0) {
          // (Thread 0 runs the process's first part: a failure here is that part's.)
          const auto keep = [&] {
            if (!parts_[first_part_]->error) parts_[first_part_]->error = std::current_exception();
          };
          try {
            // Not a check after a failure (a part that threw may be half-way), nor a
            // reading once a check has ended the run at this instant.
            for (std::size_t i = 0; i < observers_.size(); ++i)
              if (due_here[i] && (checks(i) ? !failed : !net_.stopped_by_deadlock()))
                observers_[i]->read(done[i], boundary);
            if (report) {
              window_events_ = events;
              progress(until);
            }
          } catch (...) {
            keep();
          }
          // Whatever happened above: over several processes, every one makes the step's
          // exchanges (and one whose step failed says so in them).
          try {
            if (step) {
              flows_added_by_step = 0;
              const std::size_t flows = net_.flows_.size();
              due = coordinate(until, &idle_after_step);
              flows_added_by_step = net_.flows_.size() - flows;
            } else if (settle) due = net_.coordinator_->next_step(true);
          } catch (...) {
            keep();
            due = Time::max();
          }
        }
        for (std::size_t i = 0; i < observers_.size(); ++i) done[i] += due_here[i];
        if (report) next_progress = until + slice;
        sync.arrive_and_wait();
      }
      for (std::uint32_t q = first_part_ + t; q < end_part_; q += threads) {
        Part& part = *parts_[q];
        try {
          hand_over(q, w);
        } catch (...) {
          if (!part.error) part.error = std::current_exception();  // published after the next window
        }
      }
      // The step released whole-network work (parts' own work only changes in their
      // events) and may have scheduled events.
      if (step && !idle_after_step) pending = std::max<std::uint64_t>(pending, 1);
      if (step) left += flows_added_by_step;
      left += net_.held_ - net_.released_;
      if (left == 0 && has_work && !tail) {
        tail = true;
        end = std::min(stop, std::max(last_done, last_release_) + tail_);
      }
      if (failed || (pending == 0 && (tail || due == Time::max())) || until >= end || net_.stopped_by_deadlock()) {
        if (t == 0) ran_until_ = net_.stopped_by_deadlock() ? boundary : until;  // a deadlock ends the run at its check
        return;
      }
      // After a step, its events at `until` come first; an idle network waits for the
      // coordinator's next instant.
      if (step) {
        from = until;
      } else if (pending == 0) {  // (not past a reading: an idle network is read at its instant)
        Time wake = std::min(due, stop);
        for (std::size_t i = 0; i < observers_.size(); ++i)
          if (!checks(i)) wake = std::min(wake, next_at(i));
        from = std::max(boundary, wake);
      } else {
        from = boundary;
      }
    }
  };
  running_ = true;
  {
    // The workers start together once all exist: if one cannot be created, those that
    // were are told to return before they meet at a barrier that would never open.
    std::atomic<int> go{0};  // 0 wait, 1 run, 2 give up
    std::vector<std::jthread> workers;
    try {
      for (std::uint32_t t = 1; t < threads; ++t)
        workers.emplace_back([&, t] {
          go.wait(0);
          if (go.load() == 1) loop(t);
        });
    } catch (...) {
      go = 2;
      go.notify_all();
      running_ = false;
      throw;
    }
    go = 1;
    go.notify_all();
    loop(0);
  }
  running_ = false;
  rethrow_any_failure();
}

}  // namespace fabriclab::fabric
