// SPDX-License-Identifier: MIT
// Runs a harness over checked-in inputs (its seed corpus and the inputs fuzzing once broke it), so
// the regular test suite replays them with any compiler, without libFuzzer.
// Usage: <replay binary> DIR_OR_FILE...
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::size_t RunFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::printf("replay %s (%zu bytes)\n", path.filename().c_str(), bytes.size());
  std::fflush(stdout);
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());  // the same order every run
      for (const auto& f : files) inputs += RunFile(f);
    } else if (std::filesystem::is_regular_file(arg)) {
      inputs += RunFile(arg);
    }
  }
  // A harness aborts on a broken invariant, so reaching here means every input passed.
  std::printf("%zu passed, 0 failed\n", inputs);
  return inputs > 0 ? 0 : 1;
}
