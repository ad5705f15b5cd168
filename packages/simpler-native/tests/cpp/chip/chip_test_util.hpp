// What the chip tests share: INT64 vector tensors over host arrays, a kernel's error channel
// that fails the next call on demand, and kernels and programs linked into the test (no loader).
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include "../../../src/core/chip/chip.hpp"

namespace chiptest {

using namespace simpler;
using namespace simpler::chip;

// The INT64 elements of ``t`` from its start offset.
inline std::int64_t* elems(const ChipTensor& t) {
    return reinterpret_cast<std::int64_t*>(t.buffer.addr) + t.start_offset;
}

// A 1-D INT64 device tensor over ``v``.
inline ChipTensor vec(std::vector<std::int64_t>& v) {
    ChipTensor t;
    std::memset(&t, 0, sizeof t);
    t.buffer.addr = reinterpret_cast<std::uint64_t>(v.data());
    t.buffer.size = v.size() * sizeof(std::int64_t);
    t.ndims = 1;
    t.dtype = static_cast<std::uint8_t>(DataType::INT64);
    t.address_space = static_cast<std::uint8_t>(AddressSpace::DEVICE);
    t.shapes[0] = static_cast<std::uint32_t>(v.size());
    t.strides[0] = 1;
    return t;
}

// Options of a chip with ``aic`` cube and ``aiv`` vector core threads (the rest default).
inline ChipOptions cores(int aic, int aiv) {
    ChipOptions o;
    o.aic_threads = aic;
    o.aiv_threads = aiv;
    return o;
}

inline const char* no_error() { return nullptr; }

// k_fail sets it; the kernel's take_error reports one failure and clears it.
inline thread_local bool g_fail_next = false;
inline const char* take_test_error() {
    if (!g_fail_next) return nullptr;
    g_fail_next = false;
    return "synthetic kernel failure";
}
inline void k_fail(std::int64_t*) { g_fail_next = true; }

inline std::shared_ptr<CoreKernel> kernel(const char* name, KernelEntryFn fn, std::vector<ArgDirection> sig,
                                          TakeErrorFn take = no_error, SetContextFn set_context = nullptr) {
    auto k = std::make_shared<CoreKernel>();
    k->name = name;
    k->entry = fn;
    k->take_error = take;
    k->set_context = set_context;
    k->signature = std::move(sig);
    signature_counts(k->signature, name, &k->tensor_count, &k->scalar_count);
    return k;
}

// A program entered at ``entry`` whose kernel ``i`` (func_id i) is ``kernels[i]``.
inline std::shared_ptr<ChipProgram> program_of(const char* name, OrchestrationEntryFn entry,
                                               std::vector<ArgDirection> sig,
                                               std::initializer_list<std::shared_ptr<CoreKernel>> kernels) {
    auto p = std::make_shared<ChipProgram>();
    p->name = name;
    p->entry = entry;
    p->signature = std::move(sig);
    signature_counts(p->signature, name, &p->tensor_count, &p->scalar_count);
    int id = 0;
    for (const auto& k : kernels) {
        k->func_id = id;
        p->kernels[id++] = k;
    }
    return p;
}

}  // namespace chiptest
