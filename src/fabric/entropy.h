// The Ultra Ethernet transport's entropy values (nic.transport = "uet"): every packet of a
// QP carries one of `n` entropies (a power of two) in the low bits of its UDP source port,
// so that ECMP in the switches spreads the QP's packets over up to n paths; the sender
// picks each packet's entropy and moves away from those that came back congested. The
// algorithms are those of uet-htsim (`htsim_uec`, uec_mp.cpp; UE 1.0 leaves the choice to
// the implementation):
//   oblivious  round-robin over the n values in rounds, each round the index XOR a random
//              mask (drawn anew at every wrap), feedback ignored;
//   bitmap     the same walk, skipping values with a penalty: the first penalised value
//              met loses one point of its penalty, the walk moves on, and gives up after
//              n steps (then the value it stands on). Penalties: an ECN-marked ACK +1,
//              a NACK of a trimmed packet +4, a timeout +max (15), at most max;
//   mixed      (uet-htsim's default) a clean ACK (no ECN mark) puts its entropy in a FIFO
//              of good values; a new packet takes the oldest good value, else bitmap's
//              choice; bitmap's penalties are kept as well.
// The random masks come from the QP's own stream (named by host and QP), so a run is the
// same for a seed on every machine.
#pragma once

#include <cstdint>
#include <vector>

#include "core/params.h"
#include "core/ring.h"
#include "core/random.h"

namespace fabriclab::fabric {

enum class EntropyAlgo : std::uint8_t { mixed, bitmap, oblivious };
inline constexpr params::EnumNames<EntropyAlgo, 3> kEntropyAlgoNames{
    {{EntropyAlgo::mixed, "mixed"}, {EntropyAlgo::bitmap, "bitmap"}, {EntropyAlgo::oblivious, "oblivious"}}};

inline constexpr std::uint32_t kMaxEntropies = 16384;  // the low 14 bits of a port in 49152..65535

class EntropyPicker {
 public:
  static constexpr std::uint8_t kPenaltyEcn = 1, kPenaltyTrim = 4, kMaxPenalty = 15;

  // `n`: a power of two, 1..kMaxEntropies; `good_hint`: room for that many good values
  // up front (mixed: a clean ACK per packet sent, so the most a QP has outstanding).
  EntropyPicker(EntropyAlgo algo, std::uint32_t n, RandomStream rng, std::uint32_t good_hint = 0);

  // The next packet's entropy, in [0, n).
  std::uint32_t next();
  // What came back for a packet sent on `ev`.
  void on_clean_ack(std::uint32_t ev);
  void on_ecn(std::uint32_t ev) { penalise(ev, kPenaltyEcn); }
  void on_trim(std::uint32_t ev) { penalise(ev, kPenaltyTrim); }
  void on_timeout(std::uint32_t ev) { penalise(ev, kMaxPenalty); }

  std::uint8_t penalty(std::uint32_t ev) const { return penalty_.empty() ? 0 : penalty_[ev & mask_]; }
  std::uint32_t good_queued() const { return static_cast<std::uint32_t>(good_.size()); }

 private:
  void penalise(std::uint32_t ev, std::uint8_t points);
  std::uint32_t walk_value() const { return (index_ ^ xor_) & mask_; }
  void step();  // the walk's next index; a new round's mask at every wrap

  EntropyAlgo algo_;
  std::uint32_t n_, mask_;
  RandomStream rng_;
  std::uint32_t index_ = 0, xor_ = 0;
  std::vector<std::uint8_t> penalty_;  // bitmap, mixed
  GrowingRing<std::uint16_t> good_;    // mixed: the good values, oldest first
};

}  // namespace fabriclab::fabric
