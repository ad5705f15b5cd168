// InvocationStatus: what every kernel-invocation validator returns (WIRE.md, "Status codes").
//
// Validators are noexcept and return a status; the one throwing form, InvocationError, is for
// entry points that surface a rejection to a caller (the Python binding maps it to
// simpler.kernel.InvocationError with the same .status).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace simpler {

enum class InvocationStatus : std::int32_t {
    Ok = 0,
    InvalidArgument = 1,
    InvalidHeader = 2,
    InvalidCounts = 3,
    InvalidSignature = 4,
    InvalidSize = 5,
    StaleCallable = 6,
    InvalidBinding = 7,
    InvalidTensor = 8,
    AllocationFailure = 9,
};

inline constexpr int kInvocationStatusCount = 10;

inline constexpr const char* kInvocationStatusNames[kInvocationStatusCount] = {
    "Ok",          "InvalidArgument", "InvalidHeader",  "InvalidCounts", "InvalidSignature",
    "InvalidSize", "StaleCallable",   "InvalidBinding", "InvalidTensor", "AllocationFailure",
};
static_assert(sizeof(kInvocationStatusNames) / sizeof(kInvocationStatusNames[0]) == kInvocationStatusCount,
              "kInvocationStatusNames must have one entry per InvocationStatus");
static_assert(static_cast<int>(InvocationStatus::AllocationFailure) + 1 == kInvocationStatusCount,
              "the last InvocationStatus must be kInvocationStatusCount - 1");

inline constexpr const char* status_name(InvocationStatus s) noexcept {
    const int i = static_cast<int>(s);
    return (i >= 0 && i < kInvocationStatusCount) ? kInvocationStatusNames[i] : "Unknown";
}

class InvocationError : public std::runtime_error {
  public:
    InvocationError(InvocationStatus status, const std::string& message)
        : std::runtime_error(std::string(status_name(status)) + ": " + message), status_(status) {}
    InvocationStatus status() const noexcept { return status_; }

  private:
    InvocationStatus status_;
};

}  // namespace simpler
