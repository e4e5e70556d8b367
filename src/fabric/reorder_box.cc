#include "fabric/reorder_box.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "core/error.h"

namespace fabriclab::fabric {

namespace {

std::vector<std::string> split(const std::string& s, const char* seps) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (std::string(seps).find(c) != std::string::npos) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::uint32_t number(const std::string& s, const std::string& rule, const char* what) {
  std::uint32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    throw InputError("impairment rule '" + rule + "': " + what + " '" + s + "' is not a non-negative integer");
  return v;
}

}  // namespace

std::vector<ImpairmentRule> parse_impairment_rules(const std::string& text) {
  std::vector<ImpairmentRule> rules;
  for (const std::string& rule : split(text, ";,")) {
    const auto words = split(rule, " \t");
    if (words.empty()) continue;
    ImpairmentRule r;
    const std::string& a = words[0];
    std::size_t want = 2;
    if (a == "drop") r.action = ImpairmentRule::Action::drop;
    else if (a == "dup") r.action = ImpairmentRule::Action::duplicate;
    else if (a == "corrupt") r.action = ImpairmentRule::Action::corrupt;
    else if (a == "hold") r.action = ImpairmentRule::Action::hold, want = 3;
    else if (a == "delay") r.action = ImpairmentRule::Action::delay, want = 3;
    else
      throw InputError("impairment rule '" + rule + "': unknown action '" + a +
                       "' (expected drop, hold, delay, dup or corrupt)");
    if (words.size() != want)
      throw InputError("impairment rule '" + rule + "': expected '" + a + " FLOW/PSN[/OCCURRENCE]" +
                       (a == "hold"    ? " PACKETS'"
                        : a == "delay" ? " TIME'"
                                       : "'"));
    const auto id = split(words[1], "/");
    if (id.size() < 2 || id.size() > 3)
      throw InputError("impairment rule '" + rule + "': expected FLOW/PSN or FLOW/PSN/OCCURRENCE, got '" + words[1] +
                       "'");
    r.flow = number(id[0], rule, "flow");
    r.psn = number(id[1], rule, "PSN");
    if (id.size() == 3) r.occurrence = number(id[2], rule, "occurrence");
    if (r.occurrence == 0) throw InputError("impairment rule '" + rule + "': occurrences count from 1");
    if (r.action == ImpairmentRule::Action::hold) {
      r.packets = number(words[2], rule, "packets");
      if (r.packets == 0) throw InputError("impairment rule '" + rule + "': hold at least 1 packet");
    }
    if (r.action == ImpairmentRule::Action::delay) {
      try {
        r.delay = parse_time(words[2]);
      } catch (const InputError& e) {
        throw InputError("impairment rule '" + rule + "': " + e.what());
      }
    }
    for (const std::string& w : words) r.text += (r.text.empty() ? "" : " ") + w;
    rules.push_back(r);
  }
  return rules;
}

std::vector<std::string> ReorderBox::unmatched_rules() const {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < cfg_.rules.size(); ++i) {
    const ImpairmentRule& r = cfg_.rules[i];
    if (rule_seen_[i] >= r.occurrence) continue;
    out.push_back(r.occurrence == 1
                      ? fmt::format("'{}': flow {} sent no PSN {} through the box", r.text, r.flow, r.psn)
                      : fmt::format("'{}': flow {} sent PSN {} through the box {} time{}, not {}", r.text, r.flow,
                                    r.psn, rule_seen_[i], rule_seen_[i] == 1 ? "" : "s", r.occurrence));
  }
  return out;
}

ReorderBox::ReorderBox(FabricContext& ctx, Port& sender, ImpairmentConfig cfg, std::uint64_t seed)
    : ctx_(ctx),
      sender_(sender),
      cfg_(std::move(cfg)),
      rng_(seed, "reorder-box/" + sender.owner().name() + ":" + std::to_string(sender.index())),
      rule_seen_(cfg_.rules.size(), 0) {
  for (double p : {cfg_.drop, cfg_.corrupt, cfg_.duplicate, cfg_.reorder})
    if (!(p >= 0 && p <= 1)) throw InputError("impairment probabilities must be within 0..1");
  if (cfg_.reorder > 0 && cfg_.reorder_packets == 0 && cfg_.reorder_delay <= Time())
    throw InputError("impairment: a reorder needs reorder_packets >= 1 or a positive reorder_delay");
  holding_.reserve(64);
}

void ReorderBox::on_arrival(Packet* p) {
  if (!is_data(p->opcode)) {
    pass(p);
    return;
  }
  // Every rule naming this packet counts this transmission; the first whose occurrence
  // it is acts.
  const ImpairmentRule* act = nullptr;
  for (std::size_t i = 0; i < cfg_.rules.size(); ++i) {
    const ImpairmentRule& r = cfg_.rules[i];
    if (p->flow != r.flow || p->psn != r.psn) continue;
    if (++rule_seen_[i] == r.occurrence && !act) act = &r;
  }
  if (act) {
    const ImpairmentRule& r = *act;
    switch (r.action) {
      case ImpairmentRule::Action::drop:
        ++dropped_;
        sender_.lose(p);
        return;
      case ImpairmentRule::Action::corrupt:
        ++corrupted_;
        p->corrupted = true;
        pass(p);
        return;
      case ImpairmentRule::Action::duplicate: duplicate(p); return;
      case ImpairmentRule::Action::hold: hold(p, r.packets, Time()); return;
      case ImpairmentRule::Action::delay: hold(p, 0, r.delay); return;
    }
  }
  // Probabilities: one draw each, in a fixed order, only when set (so that enabling one
  // does not shift another's sequence more than it must).
  if (cfg_.drop > 0 && rng_.uniform() < cfg_.drop) {
    ++dropped_;
    sender_.lose(p);
    return;
  }
  if (cfg_.corrupt > 0 && rng_.uniform() < cfg_.corrupt) {
    ++corrupted_;
    p->corrupted = true;
    pass(p);
    return;
  }
  if (cfg_.duplicate > 0 && rng_.uniform() < cfg_.duplicate) {
    duplicate(p);
    return;
  }
  if (cfg_.reorder > 0 && rng_.uniform() < cfg_.reorder) {
    if (cfg_.reorder_delay > Time()) hold(p, 0, cfg_.reorder_delay);
    else hold(p, cfg_.reorder_packets, Time());
    return;
  }
  pass(p);
}

void ReorderBox::duplicate(Packet* p) {
  Packet* copy = copy_packet(ctx_, *p);
  ++duplicated_;
  ++ctx_.ledger.data_packets_duplicated;
  ctx_.ledger.data_bytes_duplicated += p->payload;
  pass(p);
  pass(copy);
}

void ReorderBox::hold(Packet* p, std::uint32_t packets, Time delay) {
  ++held_total_;
  const Time limit = ctx_.sim.now() + (packets > 0 ? cfg_.max_hold : std::min(delay, cfg_.max_hold));
  holding_.push_back({p, packets, packets > 0, limit});
  arm_timer();
}

void ReorderBox::pass(Packet* p) {
  const bool data = is_data(p->opcode);
  sender_.deliver_now(p);
  // One more data packet went by: those held for a count that is now reached leave next,
  // in the order they were held. (Control frames and released packets do not count.)
  if (!data) return;
  bool due = false;
  for (auto& h : holding_)
    if (h.remaining > 0 && --h.remaining == 0) due = true;
  if (!due) return;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < holding_.size(); ++i) {
    Held& h = holding_[i];
    if (h.by_count && h.remaining == 0) sender_.deliver_now(h.packet);
    else holding_[kept++] = h;
  }
  holding_.resize(kept);
}

void ReorderBox::release_due() {
  const Time now = ctx_.sim.now();
  std::size_t kept = 0;
  for (std::size_t i = 0; i < holding_.size(); ++i) {
    Held& h = holding_[i];
    if (h.release_at <= now) sender_.deliver_now(h.packet);
    else holding_[kept++] = h;
  }
  holding_.resize(kept);
}

void ReorderBox::arm_timer() {
  Time earliest = Time::max();
  for (const auto& h : holding_) earliest = std::min(earliest, h.release_at);
  if (earliest == Time::max()) return;
  if (earliest < timer_at_ || timer_at_ <= ctx_.sim.now()) {
    timer_at_ = earliest;
    ctx_.sim.schedule_at(earliest, *this, 0);
  }
}

void ReorderBox::on_event(std::uint64_t /*tag*/) {
  if (ctx_.sim.now() == timer_at_) timer_at_ = Time::max();
  release_due();
  arm_timer();
}

void ReorderBox::drain() {
  for (auto& h : holding_) release_packet(ctx_, h.packet);
  holding_.clear();
}

}  // namespace fabriclab::fabric
