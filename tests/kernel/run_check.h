// SPDX-License-Identifier: MIT
// What the kernel environment's tests ask of a run that may fail a check.
#pragma once

#include <string>

#include "ndksim/kernel/environment.h"

namespace ndksim::kernel::testing {

// Runs `env` until its threads end: the check of the VerifierError the run throws, or "none";
// the report goes to `*report`.
inline std::string CheckOfRun(Environment& env, std::string* report) {
  try {
    env.Run();
  } catch (const VerifierError& e) {
    *report = e.what();
    return e.Check();
  }
  return "none";
}

}  // namespace ndksim::kernel::testing
