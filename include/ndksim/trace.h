// Run-time tracing, switched on per hardware block and formatted with fmt. A trace line carries the
// simulated time, the node and the block, so two runs can be compared line by line.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "ndksim/time.h"

namespace ndksim {

#define NDKSIM_TRACE_BLOCKS(X) \
  X(Pcie)                      \
  X(Doorbell)                  \
  X(WqeFetch)                  \
  X(Translation)               \
  X(Requester)                 \
  X(Responder)                 \
  X(Completer)                 \
  X(CompletionEngine)          \
  X(Port)                      \
  X(Provider)

enum class TraceBlock : std::uint8_t {
#define NDKSIM_X(name) k##name,
  NDKSIM_TRACE_BLOCKS(NDKSIM_X)
#undef NDKSIM_X
};
inline constexpr std::array<std::string_view, 10> kTraceBlockNames = {
#define NDKSIM_X(name) #name,
    NDKSIM_TRACE_BLOCKS(NDKSIM_X)
#undef NDKSIM_X
};
static_assert(kTraceBlockNames.size() == static_cast<std::size_t>(TraceBlock::kProvider) + 1);

class Tracer {
 public:
  void Enable(TraceBlock b, bool on = true) {
    const std::uint32_t bit = 1u << static_cast<unsigned>(b);
    mask_ = on ? (mask_ | bit) : (mask_ & ~bit);
  }
  void EnableAll() { mask_ = ~0u; }
  void DisableAll() { mask_ = 0; }
  bool Enabled(TraceBlock b) const { return (mask_ >> static_cast<unsigned>(b)) & 1u; }

  // Lines go to the sink when one is set, otherwise they are kept in memory.
  void SetSink(std::function<void(std::string_view)> sink) { sink_ = std::move(sink); }
  const std::vector<std::string>& Lines() const { return lines_; }
  void Clear() { lines_.clear(); }

  template <typename... Args>
  void Log(TimePoint t, std::uint32_t node, TraceBlock b, fmt::format_string<Args...> f, Args&&... args) {
    std::string line = fmt::format("{:>14} n{} {:<16} ", t, node, kTraceBlockNames[static_cast<std::size_t>(b)]);
    fmt::format_to(std::back_inserter(line), f, std::forward<Args>(args)...);
    if (sink_) {
      sink_(line);
    } else {
      lines_.push_back(std::move(line));
    }
  }

 private:
  std::uint32_t mask_ = 0;
  std::function<void(std::string_view)> sink_;
  std::vector<std::string> lines_;
};

// Formats only when the block is enabled: tracing costs one test when off.
#define NDKSIM_TRACE(tracer, time, node, block, ...)                     \
  do {                                                                   \
    if ((tracer).Enabled(::ndksim::TraceBlock::k##block)) {                 \
      (tracer).Log((time), (node), ::ndksim::TraceBlock::k##block, __VA_ARGS__); \
    }                                                                    \
  } while (0)

}  // namespace ndksim
