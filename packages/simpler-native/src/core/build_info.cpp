#include "simpler/build_info.hpp"

namespace simpler {

BuildInfo build_info() noexcept {
#if defined(__SANITIZE_ADDRESS__)
    constexpr bool sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    constexpr bool sanitized = true;
#else
    constexpr bool sanitized = false;
#endif
#else
    constexpr bool sanitized = false;
#endif
    return BuildInfo{SIMPLER_VERSION, sanitized};
}

}  // namespace simpler
