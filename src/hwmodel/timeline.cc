// SPDX-License-Identifier: MIT
#include "timeline.h"

#include <algorithm>

namespace ndksim::hw {

TimePoint Timeline::Book(TimePoint now, TimePoint ready, Duration length) {
  booked_ += length;
  while (head_ < busy_.size() && busy_[head_].end <= now) ++head_;
  if (head_ == busy_.size()) {
    // Nothing booked is still ahead: the transfer goes when it is ready.
    busy_.clear();
    head_ = 0;
    if (length != Duration::zero()) busy_.push_back(Busy{ready, ready + length});
    return ready + length;
  }
  if (head_ >= 32 && head_ * 2 >= busy_.size()) {
    busy_.erase(busy_.begin(), busy_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  // The common case, without a search: the work is ready once the last stretch booked has begun,
  // so no gap before that stretch can take it; it goes when it is ready or when the stretch ends.
  Busy& last = busy_.back();
  if (ready >= last.start) {
    const TimePoint start = std::max(ready, last.end);
    const TimePoint end = start + length;
    if (length == Duration::zero()) return end;
    if (start == last.end) {
      last.end = end;
    } else {
      busy_.push_back(Busy{start, end});
    }
    return end;
  }
  // The first transfer still going on at `ready`; the earlier ones are no obstacle.
  const auto first = std::upper_bound(busy_.begin() + static_cast<std::ptrdiff_t>(head_), busy_.end(), ready,
                                      [](TimePoint t, const Busy& b) { return t < b.end; });
  auto at = static_cast<std::size_t>(first - busy_.begin());
  TimePoint start = ready;
  for (; at < busy_.size(); ++at) {
    if (busy_[at].start >= start + length) break;  // fits in the gap before this one
    start = busy_[at].end;
  }
  const TimePoint end = start + length;
  if (length == Duration::zero()) return end;
  // Insert, merging with a neighbour that it touches, so back-to-back traffic stays one entry.
  if (at > head_ && busy_[at - 1].end == start) {
    busy_[at - 1].end = end;
    if (at < busy_.size() && busy_[at].start == end) {
      busy_[at - 1].end = busy_[at].end;
      busy_.erase(busy_.begin() + static_cast<std::ptrdiff_t>(at));
    }
  } else if (at < busy_.size() && busy_[at].start == end) {
    busy_[at].start = start;
  } else {
    busy_.insert(busy_.begin() + static_cast<std::ptrdiff_t>(at), Busy{start, end});
  }
  return end;
}

}  // namespace ndksim::hw
