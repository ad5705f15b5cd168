// Row types of the generated tmr_vectors.hpp (see gen_vectors.py).
#pragma once

#include <cstdint>
#include <vector>

struct VecTensor {
    std::uint64_t addr;
    std::uint64_t size;
    int dtype;
    std::vector<std::uint32_t> shapes;
    std::vector<std::uint32_t> strides;
    std::uint64_t start_offset;
};

struct TmrVector {
    const char* name;
    const char* hex;
    std::int64_t callable_id;
    std::int64_t tensor_count;
    std::int64_t scalar_count;
    std::uint64_t slot_generation;
    std::uint64_t binding_addr;
    std::uint64_t context_generation;
    bool expect_ok;
    bool has_decoded;
    std::vector<VecTensor> tensors;
    std::vector<std::uint64_t> scalars;
};
