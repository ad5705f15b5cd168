// What this build of simpler is: its version and whether sanitizers were compiled in.
// Consumed by the Python binding (simpler.build_info()) and by tests that must know
// whether they run under ASan/UBSan.
#pragma once

namespace simpler {

struct BuildInfo {
    const char* version;
    bool sanitized;
};

BuildInfo build_info() noexcept;

}  // namespace simpler
