// SPDX-License-Identifier: MIT
// Seeded noise for the timing model: the spread of PCIe transaction latencies and the
// interruptions that take a host core away. Every draw is a pure function of a seed, a stream and
// the draw's index (counter-based), so a block's noise depends on nothing but its own sequence of
// draws: the same seed and the same calls give the same times, and one block drawing more does not
// shift another block's draws.
#pragma once

#include <cmath>
#include <cstdint>

#include "ndksim/time.h"

namespace ndksim::hw {

// splitmix64's output function: a bijection that spreads every input bit over the output.
constexpr std::uint64_t MixBits(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Draw `index` of stream `stream` under `seed`.
constexpr std::uint64_t NoiseDraw(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  return MixBits(MixBits(seed ^ MixBits(stream + 0x9e3779b97f4a7c15ull)) + index * 0x9e3779b97f4a7c15ull);
}

// splitmix64 as a sequential generator: advances `state` and returns its next value (the fault
// rules' and the provider's seeded sequences).
constexpr std::uint64_t SplitMix64Next(std::uint64_t& state) { return MixBits(state += 0x9e3779b97f4a7c15ull); }

// A draw as a double in [0, 1), from its top 53 bits.
constexpr double UnitInterval(std::uint64_t draw) { return static_cast<double>(draw >> 11) * 0x1.0p-53; }

// The stream ids of the model's noise sources, so no two blocks of a node share a stream.
enum class NoiseSource : std::uint64_t { kPcieLink = 1, kHostCore = 2 };

constexpr std::uint64_t NoiseStreamId(NoiseSource source, std::uint64_t node, std::uint64_t instance = 0) {
  return (static_cast<std::uint64_t>(source) << 56) ^ (node << 24) ^ instance;
}

// One block's stream of draws (a block that owns its noise, on the engine's thread).
class NoiseStream {
 public:
  NoiseStream(std::uint64_t seed, std::uint64_t stream) : seed_(seed), stream_(stream) {}

  std::uint64_t Next() { return NoiseDraw(seed_, stream_, index_++); }

  // A spread around zero with standard deviation `sigma`: the sum of four uniform draws (its
  // shape is close to a normal distribution's, and bounded: never beyond +-2*sqrt(3) sigma, so a
  // latency never goes negative or runs away).
  Duration Jitter(Duration sigma) {
    if (sigma == Duration::zero()) return Duration::zero();
    const std::uint64_t d = Next();
    // Four 16-bit uniforms from one draw; their sum minus its mean, scaled to variance 1:
    // each is U(0,1) with variance 1/12, the sum has variance 1/3.
    double sum = 0;
    for (int i = 0; i < 4; ++i) sum += static_cast<double>((d >> (16 * i)) & 0xffff) / 65536.0;
    const double unit = (sum - 2.0 + 2.0 / 65536.0) * 1.7320508075688772;  // sqrt(3)
    return Picoseconds(std::llround(unit * static_cast<double>(sigma.count())));
  }

 private:
  std::uint64_t seed_;
  std::uint64_t stream_;
  std::uint64_t index_ = 0;
};

}  // namespace ndksim::hw
