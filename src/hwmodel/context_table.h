// SPDX-License-Identifier: MIT
// One of the NIC's context tables (QPs, CQs, SRQs): entries live in slots, named by identifiers
// that carry the slot's generation (IdLayout), so a stale identifier never reaches an entry that
// reuses its slot. Freed slots are handed out again least recently freed first.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "hwmodel/host_interface.h"

namespace ndksim::hw {

template <typename T>
class ContextTable {
 public:
  // Slot 0 is number `first`; at most `limit` entries live at once.
  ContextTable(std::uint32_t first, std::uint32_t limit) : layout_(IdLayout::For(first, limit)), limit_(limit) {}

  const IdLayout& Layout() const { return layout_; }

  // A new entry and its identifier, or nullptr when the table is full.
  T* Allocate(std::uint32_t* id) {
    std::uint32_t slot;
    if (!free_.empty()) {
      slot = free_.front();
      free_.pop_front();
    } else if (slots_.size() < limit_) {
      slot = static_cast<std::uint32_t>(slots_.size());
      slots_.emplace_back();
    } else {
      return nullptr;
    }
    Slot& s = slots_[slot];
    s.entry = std::make_unique<T>();
    *id = layout_.Make(slot, s.generation++);  // the first allocation of a slot is generation 0
    s.id = *id;
    ++live_;
    return s.entry.get();
  }

  // The live entry `id` names, or nullptr (never allocated, destroyed, or an older generation).
  T* Find(std::uint32_t id) const {
    const std::uint32_t slot = layout_.Slot(id);
    if (slot >= slots_.size()) return nullptr;
    const Slot& s = slots_[slot];
    return s.entry != nullptr && s.id == id ? s.entry.get() : nullptr;
  }

  // Destroys the entry `id` names; false if there is none.
  bool Free(std::uint32_t id) {
    if (Find(id) == nullptr) return false;
    const std::uint32_t slot = layout_.Slot(id);
    slots_[slot].entry.reset();
    free_.push_back(slot);
    --live_;
    return true;
  }

  std::size_t Live() const { return live_; }

  template <typename Fn>
  void ForEach(Fn&& fn) {
    for (Slot& s : slots_) {
      if (s.entry != nullptr) fn(*s.entry);
    }
  }

 private:
  struct Slot {
    std::unique_ptr<T> entry;
    std::uint32_t id = 0;
    std::uint32_t generation = 0;  // allocations of the slot so far
  };

  IdLayout layout_;
  std::uint32_t limit_;
  std::vector<Slot> slots_;
  std::deque<std::uint32_t> free_;
  std::size_t live_ = 0;
};

}  // namespace ndksim::hw
