// SPDX-License-Identifier: MIT
// InplaceCallback: a move-only callable with inline storage, so that scheduling an event, a timer
// or a DPC never allocates.
#pragma once

#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace ndksim {

template <std::size_t Capacity>
class InplaceCallback {
 public:
  InplaceCallback() = default;
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, InplaceCallback>>>
  InplaceCallback(F&& f) {  // NOLINT(google-explicit-constructor): lambdas convert implicitly
    Construct(std::forward<F>(f));
  }
  // Replaces what this holds with `f`, built in place (no intermediate callback to move).
  template <typename F>
  void Emplace(F&& f) {
    if constexpr (std::is_same_v<std::decay_t<F>, InplaceCallback>) {
      *this = std::forward<F>(f);
    } else {
      Reset();
      Construct(std::forward<F>(f));
    }
  }
  InplaceCallback(InplaceCallback&& other) noexcept { MoveFrom(other); }
  InplaceCallback& operator=(InplaceCallback&& other) noexcept {
    if (this != &other) {
      Reset();
      MoveFrom(other);
    }
    return *this;
  }
  InplaceCallback(const InplaceCallback&) = delete;
  InplaceCallback& operator=(const InplaceCallback&) = delete;
  ~InplaceCallback() { Reset(); }

  explicit operator bool() const { return ops_ != nullptr; }
  void operator()() { ops_->invoke(storage_); }
  void Reset() {
    if (ops_ != nullptr && !ops_->trivial) ops_->destroy(storage_);
    ops_ = nullptr;
  }

 private:
  struct Ops {
    void (*invoke)(void*);
    void (*destroy)(void*);
    void (*move)(void* dst, void* src);
    // Trivially copyable and destructible (most captures: pointers and numbers): moved by copying
    // the storage, destroyed by forgetting it, without the indirect calls.
    bool trivial;
  };
  template <typename Fn>
  static constexpr Ops kOps{
      [](void* p) { (*static_cast<Fn*>(p))(); },
      [](void* p) { static_cast<Fn*>(p)->~Fn(); },
      [](void* dst, void* src) { new (dst) Fn(std::move(*static_cast<Fn*>(src))); },
      std::is_trivially_copyable_v<Fn> && std::is_trivially_destructible_v<Fn>};

  template <typename F>
  void Construct(F&& f) {
    using Fn = std::decay_t<F>;
    static_assert(sizeof(Fn) <= Capacity, "event capture too large for inline storage");
    static_assert(alignof(Fn) <= alignof(std::max_align_t));
    new (storage_) Fn(std::forward<F>(f));
    ops_ = &kOps<Fn>;
  }

  void MoveFrom(InplaceCallback& other) {
    if (other.ops_ == nullptr) return;
    if (other.ops_->trivial) {
      std::memcpy(storage_, other.storage_, Capacity);
    } else {
      other.ops_->move(storage_, other.storage_);
    }
    ops_ = other.ops_;
    other.Reset();
  }

  alignas(std::max_align_t) std::byte storage_[Capacity];
  const Ops* ops_ = nullptr;
};

}  // namespace ndksim
