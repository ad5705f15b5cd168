// Helpers shared by the wire tests: tensors, views, bindings and hex packets.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "simpler/wire/binding_ref.hpp"
#include "simpler/wire/chip_tensor.hpp"
#include "simpler/wire/prepared_view.hpp"

namespace wt {

inline simpler::ChipTensor tensor(std::uint64_t addr, std::uint64_t size, simpler::DataType dtype,
                                  std::initializer_list<std::uint32_t> shapes,
                                  std::initializer_list<std::uint32_t> strides, std::uint64_t start_offset = 0) {
    simpler::ChipTensor t;
    std::memset(&t, 0, sizeof t);
    t.buffer.addr = addr;
    t.buffer.size = size;
    t.start_offset = start_offset;
    t.dtype = static_cast<std::uint8_t>(dtype);
    t.address_space = static_cast<std::uint8_t>(simpler::AddressSpace::DEVICE);
    t.ndims = static_cast<std::uint32_t>(shapes.size());
    std::uint32_t i = 0;
    for (std::uint32_t s : shapes) t.shapes[i++] = s;
    i = 0;
    for (std::uint32_t s : strides) t.strides[i++] = s;
    return t;
}

// A 32x32 float32 tensor at `addr` (4096 bytes).
inline simpler::ChipTensor tile32(std::uint64_t addr = 0x10000) {
    return tensor(addr, 4096, simpler::DataType::FLOAT32, {32, 32}, {32, 1});
}

inline simpler::PreparedInvocationView view(std::int32_t id, std::int32_t t, std::int32_t s, std::uint64_t gen = 1) {
    return simpler::PreparedInvocationView{id, t, s, gen};
}

inline simpler::TmrBindingRef binding(std::uint64_t addr = 0x7f0000001000ull, std::uint64_t gen = 9) {
    return simpler::TmrBindingRef{addr, gen};
}

inline std::vector<std::uint8_t> from_hex(const std::string& hex) {
    std::vector<std::uint8_t> out(hex.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
    return out;
}

template <class T>
void put(std::vector<std::uint8_t>& b, std::size_t off, T v) {
    std::memcpy(b.data() + off, &v, sizeof v);
}

}  // namespace wt
