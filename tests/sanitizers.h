// SPDX-License-Identifier: MIT
// Which sanitizer this test binary was built with (GCC defines __SANITIZE_*__, Clang answers
// __has_feature), for the few tests whose subject a sanitizer changes: thread timings under TSan,
// glibc's heap accounting under either allocator.
#pragma once

namespace ndksim::testing_build {

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NDKSIM_TEST_TSAN 1
#endif
#if __has_feature(address_sanitizer)
#define NDKSIM_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define NDKSIM_TEST_TSAN 1
#endif
#if defined(__SANITIZE_ADDRESS__)
#define NDKSIM_TEST_ASAN 1
#endif

#ifdef NDKSIM_TEST_TSAN
inline constexpr bool kUnderTsan = true;
#else
inline constexpr bool kUnderTsan = false;
#endif
#ifdef NDKSIM_TEST_ASAN
inline constexpr bool kUnderAsan = true;
#else
inline constexpr bool kUnderAsan = false;
#endif

}  // namespace ndksim::testing_build
