// TmrBindingRef: the 16 bytes after the header of a TMR packet (WIRE.md, "TMR binding reference").
//
// device_binding_addr is opaque to the codec: the execution-resource owner publishes it and
// keeps it alive. context_generation is that owner's version of the binding. A decoder accepts
// a packet only if both equal the trusted binding it is given; equality proves freshness, not
// that the resource is alive (lifetime is the owners' job).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace simpler {

struct TmrBindingRef {
    std::uint64_t device_binding_addr;
    std::uint64_t context_generation;
};

inline constexpr std::size_t kTmrBindingRefBytes = 16;

static_assert(sizeof(TmrBindingRef) == kTmrBindingRefBytes, "wire ABI changed: TmrBindingRef size");
static_assert(offsetof(TmrBindingRef, device_binding_addr) == 0, "wire ABI changed: TmrBindingRef.device_binding_addr");
static_assert(offsetof(TmrBindingRef, context_generation) == 8, "wire ABI changed: TmrBindingRef.context_generation");
static_assert(std::is_trivially_copyable_v<TmrBindingRef>, "wire ABI changed: TmrBindingRef must be plain data");

// A trusted binding names a published resource (nonzero address) of a live context (generation >= 1).
inline constexpr bool is_valid_trusted_binding(const TmrBindingRef& b) noexcept {
    return b.device_binding_addr != 0 && b.context_generation != 0;
}

inline constexpr bool same_binding(const TmrBindingRef& a, const TmrBindingRef& b) noexcept {
    return a.device_binding_addr == b.device_binding_addr && a.context_generation == b.context_generation;
}

}  // namespace simpler
