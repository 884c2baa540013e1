// Translation and protection: the NIC's table of memory tokens. Every DMA the NIC does on behalf of
// a token goes through Check(), which applies the checks in a fixed order, one outcome per check.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "hwmodel/host_interface.h"
#include "hwmodel/nic.h"

namespace ndksim::hw {

enum class TranslationOutcome : std::uint8_t {
  kOk,
  kBadIndex,      // 1. no table entry at the token's index
  kKeyMismatch,   // 2. the key byte does not match the entry (stale token)
  kInvalid,       // 3. entry exists but is not valid (deregistered or invalidated)
  kPdMismatch,    // 4. entry belongs to another protection domain
  kAccessDenied,  // 5. the entry lacks a right the access needs
  kOutOfBounds,   // 6. [address, address + length) is not inside the registration
};
std::string_view Name(TranslationOutcome o);

struct TranslationResult {
  TranslationOutcome outcome = TranslationOutcome::kOk;
  std::byte* host = nullptr;  // host memory of the first byte when kOk
  bool Ok() const { return outcome == TranslationOutcome::kOk; }
};

class Translation {
 public:
  Translation(Nic& nic, std::uint64_t seed);

  CommandStatus Register(const MemoryRegistration& reg, MemoryKey* out);
  CommandStatus Deregister(MemoryKey key);

  // The protection check: `required` is a set of access:: bits (0 = local read only).
  TranslationResult Check(MemoryKey key, PdNumber pd, std::uint64_t address, std::uint64_t length,
                          std::uint32_t required) const;

  std::size_t ValidEntries() const { return valid_entries_; }

 private:
  struct Entry {
    bool valid = false;
    std::uint8_t key = 0;
    MemoryRegistration reg;
  };
  Nic& nic_;
  std::vector<Entry> entries_;           // index = token index; index 0 is never handed out
  std::vector<std::uint32_t> free_indices_;
  std::size_t valid_entries_ = 0;
};

}  // namespace ndksim::hw
