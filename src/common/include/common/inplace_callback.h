// SPDX-License-Identifier: MIT
// InplaceCallback: a move-only callable with inline storage, so that scheduling an event, a timer
// or a DPC never allocates.
#pragma once

#include <cstddef>
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
    using Fn = std::decay_t<F>;
    static_assert(sizeof(Fn) <= Capacity, "event capture too large for inline storage");
    static_assert(alignof(Fn) <= alignof(std::max_align_t));
    new (storage_) Fn(std::forward<F>(f));
    ops_ = &kOps<Fn>;
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
    if (ops_ != nullptr) ops_->destroy(storage_);
    ops_ = nullptr;
  }

 private:
  struct Ops {
    void (*invoke)(void*);
    void (*destroy)(void*);
    void (*move)(void* dst, void* src);
  };
  template <typename Fn>
  static constexpr Ops kOps{
      [](void* p) { (*static_cast<Fn*>(p))(); },
      [](void* p) { static_cast<Fn*>(p)->~Fn(); },
      [](void* dst, void* src) { new (dst) Fn(std::move(*static_cast<Fn*>(src))); }};

  void MoveFrom(InplaceCallback& other) {
    if (other.ops_ == nullptr) return;
    other.ops_->move(storage_, other.storage_);
    ops_ = other.ops_;
    other.Reset();
  }

  alignas(std::max_align_t) std::byte storage_[Capacity];
  const Ops* ops_ = nullptr;
};

}  // namespace ndksim
