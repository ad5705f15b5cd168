// AlignedBytes: an owned, 64-byte aligned byte buffer allocated without throwing.
//
// Packet blocks put the packet at offset 8 (after the u64 size prefix), so a 64-byte aligned
// block keeps every ChipTensor in it at a 64-byte boundary (8 + 56 = 64). The buffer comes from
// malloc with the original pointer stored just below the aligned start: for the small blocks of
// the encode path this is several times cheaper than aligned operator new (memalign).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace simpler {

inline constexpr std::size_t kPacketAlignment = 64;

struct AlignedFree {
    void operator()(std::uint8_t* p) const noexcept {
        if (p == nullptr) return;
        void* raw = nullptr;
        std::memcpy(&raw, p - sizeof(void*), sizeof raw);
        std::free(raw);
    }
};

using AlignedBytes = std::unique_ptr<std::uint8_t[], AlignedFree>;

// nullptr when the allocation fails (or bytes == 0).
inline AlignedBytes allocate_aligned_bytes(std::size_t bytes) noexcept {
    if (bytes == 0 || bytes > SIZE_MAX - kPacketAlignment - sizeof(void*)) return AlignedBytes();
    void* raw = std::malloc(bytes + kPacketAlignment + sizeof(void*));
    if (raw == nullptr) return AlignedBytes();
    const std::uintptr_t start = reinterpret_cast<std::uintptr_t>(raw) + sizeof(void*);
    const std::uintptr_t aligned = (start + kPacketAlignment - 1) & ~static_cast<std::uintptr_t>(kPacketAlignment - 1);
    std::uint8_t* p = reinterpret_cast<std::uint8_t*>(aligned);
    std::memcpy(p - sizeof(void*), &raw, sizeof raw);
    return AlignedBytes(p);
}

}  // namespace simpler
