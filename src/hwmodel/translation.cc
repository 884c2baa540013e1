// Memory token table and the protection check, in the order of the numbered checks.
#include "hwmodel/translation.h"

#include <algorithm>

namespace ndksim::hw {

std::string_view Name(TranslationOutcome o) {
  switch (o) {
    case TranslationOutcome::kOk: return "ok";
    case TranslationOutcome::kBadIndex: return "bad-index";
    case TranslationOutcome::kKeyMismatch: return "key-mismatch";
    case TranslationOutcome::kInvalid: return "invalid";
    case TranslationOutcome::kPdMismatch: return "pd-mismatch";
    case TranslationOutcome::kAccessDenied: return "access-denied";
    case TranslationOutcome::kOutOfBounds: return "out-of-bounds";
  }
  return "?";
}

Translation::Translation(Nic& nic, std::uint64_t seed) : nic_(nic) {
  entries_.resize(1);  // index 0 reserved: a zero token never matches
  // Key bytes start from a seeded value so tokens differ between seeds but not between runs.
  entries_[0].key = static_cast<std::uint8_t>(seed * 0x9e3779b97f4a7c15ull >> 56);
}

CommandStatus Translation::Register(const MemoryRegistration& reg, MemoryKey* out) {
  if (reg.length == 0 || reg.host_memory == nullptr) return CommandStatus::kInvalidArgument;
  if (reg.virtual_address + reg.length < reg.virtual_address) return CommandStatus::kInvalidArgument;
  std::uint32_t index;
  if (!free_indices_.empty()) {
    // Lowest free index first: deterministic and compact.
    auto it = std::min_element(free_indices_.begin(), free_indices_.end());
    index = *it;
    free_indices_.erase(it);
  } else {
    if (entries_.size() > nic_.Profile().max_mrs) return CommandStatus::kNoResources;
    index = static_cast<std::uint32_t>(entries_.size());
    Entry e;
    e.key = static_cast<std::uint8_t>(entries_[0].key + index * 37u);
    entries_.push_back(e);
  }
  Entry& e = entries_[index];
  e.key = static_cast<std::uint8_t>(e.key + 1);  // a new key byte on every registration
  e.valid = true;
  e.reg = reg;
  ++valid_entries_;
  *out = MemoryKey::Make(index, e.key);
  return CommandStatus::kOk;
}

CommandStatus Translation::Deregister(MemoryKey key) {
  const std::uint32_t index = key.Index();
  if (index == 0 || index >= entries_.size()) return CommandStatus::kNotFound;
  Entry& e = entries_[index];
  if (!e.valid || e.key != key.KeyByte()) return CommandStatus::kNotFound;
  e.valid = false;
  --valid_entries_;
  free_indices_.push_back(index);
  return CommandStatus::kOk;
}

TranslationResult Translation::Check(MemoryKey key, PdNumber pd, std::uint64_t address,
                                     std::uint64_t length, std::uint32_t required) const {
  const std::uint32_t index = key.Index();
  if (index == 0 || index >= entries_.size()) return {TranslationOutcome::kBadIndex};
  const Entry& e = entries_[index];
  if (e.key != key.KeyByte()) return {TranslationOutcome::kKeyMismatch};
  if (!e.valid) return {TranslationOutcome::kInvalid};
  if (e.reg.pd != pd) return {TranslationOutcome::kPdMismatch};
  if ((e.reg.access & required) != required) return {TranslationOutcome::kAccessDenied};
  // Overflow-safe range check: address >= base and length <= (base + len) - address.
  const std::uint64_t base = e.reg.virtual_address;
  if (address < base) return {TranslationOutcome::kOutOfBounds};
  const std::uint64_t offset = address - base;
  if (offset > e.reg.length || length > e.reg.length - offset) return {TranslationOutcome::kOutOfBounds};
  return {TranslationOutcome::kOk, e.reg.host_memory + offset};
}

}  // namespace ndksim::hw
