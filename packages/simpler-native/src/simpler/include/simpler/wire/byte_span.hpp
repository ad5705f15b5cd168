// ByteSpan: a readable pointer + length, the only way a packet reaches a decoder.
//
// Packets arrive from copies made by a transport and may be unaligned, so decoders never cast
// the pointer to a struct: they copy bounded ranges out with read_at().
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace simpler {

struct ByteSpan {
    const std::uint8_t* data = nullptr;
    std::size_t size = 0;

    ByteSpan() = default;
    ByteSpan(const void* p, std::size_t n) noexcept : data(static_cast<const std::uint8_t*>(p)), size(n) {}

    // Copy sizeof(T) bytes at `offset` into *out; false (and *out untouched) when out of range.
    template <class T>
    bool read_at(std::size_t offset, T* out) const noexcept {
        if (data == nullptr || offset > size || size - offset < sizeof(T)) return false;
        std::memcpy(out, data + offset, sizeof(T));
        return true;
    }
};

}  // namespace simpler
