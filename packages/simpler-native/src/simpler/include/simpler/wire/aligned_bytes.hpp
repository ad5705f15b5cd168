// AlignedBytes: an owned, 64-byte aligned byte buffer allocated without throwing.
//
// Packet blocks put the packet at offset 8 (after the u64 size prefix), so a 64-byte aligned
// block keeps every ChipTensor in it at a 64-byte boundary (8 + 56 = 64).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace simpler {

inline constexpr std::size_t kPacketAlignment = 64;

struct AlignedFree {
    void operator()(std::uint8_t* p) const noexcept { ::operator delete[](p, std::align_val_t{kPacketAlignment}); }
};

using AlignedBytes = std::unique_ptr<std::uint8_t[], AlignedFree>;

// nullptr when the allocation fails (or bytes == 0).
inline AlignedBytes allocate_aligned_bytes(std::size_t bytes) noexcept {
    if (bytes == 0) return AlignedBytes();
    void* p = ::operator new[](bytes, std::align_val_t{kPacketAlignment}, std::nothrow);
    return AlignedBytes(static_cast<std::uint8_t*>(p));
}

}  // namespace simpler
