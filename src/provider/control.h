// SPDX-License-Identifier: MIT
// Control calls, serialised with the engine. NDK lets a consumer make control calls (create,
// register, connect, close, resize, flush, arm, ...) from any thread at any time; in threaded mode
// each runs on the engine's thread through the host's control mailbox (hw::Host::Serialize), so
// the provider's control plane, its interrupt and DPC handlers and every consumer callback run one
// at a time, on one thread. Posting, polling and the token getters stay on the caller's thread:
// they are the lock-free paths.
//
// A dispatch table names a control slot as Control<Owner, NdkType, Fn>::Call; the first argument
// (the object, or the header for a close slot) finds the driver.
#pragma once

#include <type_traits>

#include "driver.h"
#include "hwmodel/host.h"
#include "objects.h"

namespace ndksim::provider {

template <typename Owner, typename Ndk, auto Fn>
struct Control;

template <typename Owner, typename Ndk, typename R, typename First, typename... Rest, R (*Fn)(First, Rest...)>
struct Control<Owner, Ndk, Fn> {
  static R Call(First object, Rest... rest) {
    // A null object is the consumer's error: the function answers it on the caller's thread.
    if (object == nullptr) return Fn(object, rest...);
    Driver* driver;
    if constexpr (std::is_same_v<First, NDK_OBJECT_HEADER*>) {
      driver = &OwnerOfHeader<Owner, Ndk>(object).GetDriver();
    } else {
      driver = &OwnerOf<Owner>(object).GetDriver();
    }
    return driver->Host().Serialize([&]() -> R { return Fn(object, rest...); });
  }
};

}  // namespace ndksim::provider
