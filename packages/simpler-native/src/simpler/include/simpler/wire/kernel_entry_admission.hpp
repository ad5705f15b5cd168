// Kernel-entry admission: the checks a callable passes before it is prepared for kernel mode,
// run before any hashing, registration or state change. Program registration does not use it.
//
// The callable is described by its parts rather than by one fixed blob type, so that each
// runtime can keep its own storage: the orchestration (or single kernel) name, its signature,
// the region of its binary inside the callable blob, and its children (func_id, name,
// signature, binary region). Checks: canonical names (a C identifier of 1..kMaxCallableNameBytes
// bytes), the signature rules of derive_invocation_counts, the child count and unique func_ids,
// and for every variable-length part an in-bounds, overflow-checked, aligned region of the blob.
#pragma once

#include <cstddef>
#include <cstdint>

#include "simpler/wire/prepared_view.hpp"
#include "simpler/wire/status.hpp"

namespace simpler {

inline constexpr std::size_t kMaxCallableNameBytes = 127;
inline constexpr std::int32_t kMaxKernelChildren = 64;  // func_ids 0..63

// A variable-length part of a callable blob: `size` bytes at `offset`, aligned to `alignment`.
struct BlobRegion {
    std::uint64_t offset;
    std::uint64_t size;
    std::uint64_t alignment;  // a power of two
};

struct KernelChildEntry {
    std::int32_t func_id;
    const char* name;
    std::size_t name_bytes;
    const std::uint8_t* signature;  // ArgDirection codes
    std::size_t signature_length;
    BlobRegion binary;
};

struct KernelEntryDescription {
    const char* name;
    std::size_t name_bytes;
    const std::uint8_t* signature;  // ArgDirection codes
    std::size_t signature_length;
    std::int32_t cached_scalar_count;  // 0 = use the signature's
    std::uint64_t blob_bytes;          // size of the whole callable blob
    BlobRegion binary;
    const KernelChildEntry* children;
    std::size_t child_count;
};

// A C identifier of 1..kMaxCallableNameBytes bytes (no NUL, no path or symbol decoration).
inline bool is_canonical_callable_name(const char* name, std::size_t bytes) noexcept {
    if (name == nullptr || bytes == 0 || bytes > kMaxCallableNameBytes) return false;
    for (std::size_t i = 0; i < bytes; ++i) {
        const char c = name[i];
        const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        const bool digit = c >= '0' && c <= '9';
        if (!(alpha || (digit && i > 0))) return false;
    }
    return true;
}

// A nonempty, aligned region inside a blob of `blob_bytes`, without overflow.
inline bool is_valid_blob_region(const BlobRegion& r, std::uint64_t blob_bytes) noexcept {
    if (r.alignment == 0 || (r.alignment & (r.alignment - 1)) != 0) return false;
    if (r.offset % r.alignment != 0 || r.size == 0) return false;
    std::uint64_t end = 0;
    if (__builtin_add_overflow(r.offset, r.size, &end)) return false;
    return end <= blob_bytes;
}

// Admit a kernel-mode callable. On Ok, *counts holds its effective counts; otherwise *counts is
// untouched. Names and signatures: InvalidSignature; counts and children: InvalidCounts;
// regions: InvalidSize; null pointers: InvalidArgument.
inline InvocationStatus admit_kernel_entry(const KernelEntryDescription& d, InvocationCounts* counts) noexcept {
    if (counts == nullptr || (d.children == nullptr && d.child_count != 0)) return InvocationStatus::InvalidArgument;
    if (!is_canonical_callable_name(d.name, d.name_bytes)) return InvocationStatus::InvalidSignature;
    InvocationCounts top{};
    InvocationStatus s = derive_invocation_counts(d.signature, d.signature_length, d.cached_scalar_count, &top);
    if (s != InvocationStatus::Ok) return s;
    if (!is_valid_blob_region(d.binary, d.blob_bytes)) return InvocationStatus::InvalidSize;
    if (d.child_count > static_cast<std::size_t>(kMaxKernelChildren)) return InvocationStatus::InvalidCounts;
    std::uint64_t seen = 0;  // func_ids are < 64, one bit each
    static_assert(kMaxKernelChildren <= 64, "func_id bitmap is one u64");
    for (std::size_t i = 0; i < d.child_count; ++i) {
        const KernelChildEntry& c = d.children[i];
        if (c.func_id < 0 || c.func_id >= kMaxKernelChildren) return InvocationStatus::InvalidCounts;
        const std::uint64_t bit = std::uint64_t{1} << c.func_id;
        if (seen & bit) return InvocationStatus::InvalidCounts;
        seen |= bit;
        if (!is_canonical_callable_name(c.name, c.name_bytes)) return InvocationStatus::InvalidSignature;
        InvocationCounts child{};
        s = derive_invocation_counts(c.signature, c.signature_length, 0, &child);
        if (s != InvocationStatus::Ok) return s;
        if (!is_valid_blob_region(c.binary, d.blob_bytes)) return InvocationStatus::InvalidSize;
    }
    *counts = top;
    return InvocationStatus::Ok;
}

}  // namespace simpler
