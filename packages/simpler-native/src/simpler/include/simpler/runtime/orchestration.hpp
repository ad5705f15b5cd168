// The orchestration side of the kernel ABI (KERNEL_ABI.md): what a compiled orchestration
// binary includes so that the simulated chip's AICPU orchestrator thread can run it.
//
// Consumers: generated orchestrations (pypto-ir codegen), hand-written test orchestrations,
// and the chip runtime (src/core/chip), which implements the function table below. The
// orchestration reaches the runtime ONLY through the table it is given: no global symbols, no
// interposition. A binary is loaded RTLD_LOCAL; its two entries are resolved once at register.
//
// Entries a binary exports (names: `<func_name>` is ChipCallable.build's func_name):
//   extern "C" int32_t <func_name>(const SimplerOrchApi* api, SimplerOrchContext* ctx,
//                                  const simpler::ChipStorageTaskArgs* args);
//       Runs once per Worker.submit on the AICPU orchestrator thread (TMR), or on the thread
//       that calls submit/launch, building the whole graph first (host_build_graph; see
//       docs/simpler-runtime.md). Returns 0 on success; a
//       nonzero status fails the run naming the orchestration. A C++ exception that escapes is
//       caught by the runtime and fails the run the same way.
//   extern "C" void <func_name>_needs(simpler::OrchestrationNeeds* out);
//       Static needs: the orchestration ABI version it was built against and the argument
//       counts it expects; checked at register (version) and at every submit (counts).
// SIMPLER_ORCHESTRATION(func_name, tensors, scalars) declares both with the right linkage.
//
// Task semantics (the TMR runtime):
//   - submit(func_id, args, scalars, deps) queues one kernel invocation. func_id selects the
//     child CoreCallable registered with ChipCallable.build(children=[(func_id, core)]).
//     Tensor arguments come first, then scalars, in the kernel's signature order.
//   - Dependencies are derived from overlapping byte regions of tensor arguments against
//     earlier tasks of the same run: In after Out (read-after-write), Out after In
//     (write-after-read) and Out after Out (write-after-write); InOut counts as both. Explicit
//     `deps` (task ids returned by earlier submits) are added on top.
//   - scope_begin/scope_end nest; a task goes to the ring of its scope depth (depth 0..3,
//     deeper scopes share ring 3). Each ring has a task window, a heap for intermediate
//     tensors and a dependency pool; a full ring makes submit wait (back-pressure) until
//     earlier tasks retire. A wait that can never be satisfied fails the run.
//   - alloc_tensor gives an intermediate tensor from the current ring's heap; it lives until
//     the scope that allocated it ends and every task submitted before that end has finished.
//   - On any failure submit returns a negative id and the run is already marked failed with
//     the task and kernel named; the orchestration should return nonzero at once.
//
// Complete example (vector add over tiles, then a scaled copy that depends on it):
//
//   #include "simpler/runtime/orchestration.hpp"
//
//   // kernels: func_id 0 = add(In a, In b, Out c), func_id 1 = scale(In x, Out y, Scalar f32)
//   SIMPLER_ORCHESTRATION(vadd_orch, /*tensors=*/3, /*scalars=*/1)
//   (const SimplerOrchApi* api, SimplerOrchContext* ctx, const simpler::ChipStorageTaskArgs* args) {
//       simpler::Orchestrator orch(api, ctx);
//       const simpler::ChipTensor& a = args->tensor(0);
//       const simpler::ChipTensor& b = args->tensor(1);
//       const simpler::ChipTensor& out = args->tensor(2);
//       const uint32_t tile = args->scalar_as<uint32_t>(0);        // scalar 0: tile length
//       const uint32_t n = a.shapes[0];
//       simpler::ChipTensor tmp;                                    // intermediate, ring heap
//       const uint32_t shape[1] = {n};
//       if (orch.alloc_tensor(simpler::DataType::FLOAT32, 1, shape, &tmp) != 0) return 1;
//       orch.scope_begin();
//       for (uint32_t off = 0; off < n; off += tile) {
//           const uint32_t len = std::min(tile, n - off);
//           simpler::ChipTensor ta = simpler::slice_1d(a, off, len);
//           simpler::ChipTensor tb = simpler::slice_1d(b, off, len);
//           simpler::ChipTensor tt = simpler::slice_1d(tmp, off, len);
//           if (orch.submit(0, {simpler::in(ta), simpler::in(tb), simpler::out(tt)}) < 0) return 1;
//       }
//       orch.scope_end();
//       // Reads all of tmp: depends on every add task through region overlap.
//       const float scale = 2.0f;
//       if (orch.submit(1, {simpler::in(tmp), simpler::out(out)}, {simpler::scalar_bits(scale)}) < 0)
//           return 1;
//       return 0;
//   }
//
// The runtime validates every task: func_id registered, tensor/scalar counts equal to the
// kernel's signature, each tensor's directions matching the signature, and each descriptor
// inside its backing buffer. A rejected task fails the run with its task index and kernel.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <type_traits>

#include "simpler/wire/chip_tensor.hpp"
#include "simpler/wire/data_type.hpp"
#include "simpler/wire/prepared_view.hpp"  // ArgDirection

namespace simpler {

// Version of the function table and of ChipStorageTaskArgs. Bump on any layout change.
inline constexpr std::uint32_t kOrchestrationAbiVersion = 1;

// The materialised arguments of one run: descriptors of the caller's tensors (device
// addresses) and the raw 64-bit bits of its scalars, in the orchestration's signature order.
// Owned by the runtime for the duration of the entry call.
struct ChipStorageTaskArgs {
    std::uint32_t abi_version;
    std::uint32_t tensor_count;
    std::uint32_t scalar_count;
    std::uint32_t reserved;
    const ChipTensor* tensors;
    const std::uint64_t* scalars;

    const ChipTensor& tensor(std::uint32_t i) const noexcept { return tensors[i]; }
    std::uint64_t scalar(std::uint32_t i) const noexcept { return scalars[i]; }
    // Reinterpret scalar i as T (float from the low 32 bits, integers truncated to T).
    template <typename T>
    T scalar_as(std::uint32_t i) const noexcept {
        static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8, "scalar_as: T must fit in 64 bits");
        T value;
        std::memcpy(&value, &scalars[i], sizeof(T));
        return value;
    }
};

// What <func_name>_needs reports.
struct OrchestrationNeeds {
    std::uint32_t abi_version;   // kOrchestrationAbiVersion the binary was compiled against
    std::uint32_t tensor_count;  // expected ChipStorageTaskArgs::tensor_count
    std::uint32_t scalar_count;  // expected ChipStorageTaskArgs::scalar_count
    std::uint32_t reserved;
};

// One tensor argument of a submitted task: the descriptor is copied at submit.
struct OrchTensorArg {
    const ChipTensor* tensor;
    ArgDirection direction;  // In, Out or InOut (Scalar is rejected)
};

// One task to submit. Arrays are read during the submit call only.
struct OrchTaskSpec {
    std::int32_t func_id;
    std::uint32_t tensor_count;
    std::uint32_t scalar_count;
    std::uint32_t dep_count;
    const OrchTensorArg* tensors;
    const std::uint64_t* scalars;
    const std::int64_t* deps;  // task ids returned by earlier submits of this run
};

}  // namespace simpler

extern "C" {

// Opaque runtime context of one run; only the runtime looks inside.
struct SimplerOrchContext;

// The versioned function table. Calls are valid only on the orchestrator thread during the
// entry call. Every int32_t status is 0 on success, nonzero on failure (the run is failed).
struct SimplerOrchApi {
    std::uint32_t abi_version;  // == simpler::kOrchestrationAbiVersion
    std::uint32_t table_bytes;  // sizeof(SimplerOrchApi) of the runtime
    // Queue a task; returns its task id (>= 0) or a negative value on failure.
    std::int64_t (*submit)(SimplerOrchContext* ctx, const simpler::OrchTaskSpec* spec);
    std::int32_t (*scope_begin)(SimplerOrchContext* ctx);
    std::int32_t (*scope_end)(SimplerOrchContext* ctx);
    // Allocate a contiguous intermediate tensor (row-major strides) in the current ring heap.
    std::int32_t (*alloc_tensor)(SimplerOrchContext* ctx, simpler::DataType dtype, std::uint32_t ndims,
                                 const std::uint32_t* shape, simpler::ChipTensor* out);
    // Fail the run with a message (the orchestration then returns nonzero).
    void (*report_error)(SimplerOrchContext* ctx, const char* message);
};

}  // extern "C"

namespace simpler {

using OrchestrationEntryFn = std::int32_t (*)(const SimplerOrchApi*, SimplerOrchContext*, const ChipStorageTaskArgs*);
using OrchestrationNeedsFn = void (*)(OrchestrationNeeds*);

inline OrchTensorArg in(const ChipTensor& t) noexcept { return {&t, ArgDirection::In}; }
inline OrchTensorArg out(const ChipTensor& t) noexcept { return {&t, ArgDirection::Out}; }
inline OrchTensorArg inout(const ChipTensor& t) noexcept { return {&t, ArgDirection::InOut}; }

// Raw 64-bit bits of a scalar argument (WIRE.md: f32 in the low 32 bits, integers sign- or
// zero-extended as their type says).
template <typename T>
std::uint64_t scalar_bits(T value) noexcept {
    static_assert(std::is_arithmetic_v<T> && sizeof(T) <= 8, "scalar_bits: arithmetic types only");
    if constexpr (std::is_floating_point_v<T>) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, &value, sizeof(T));
        return bits;
    } else if constexpr (std::is_signed_v<T>) {
        return static_cast<std::uint64_t>(static_cast<std::int64_t>(value));
    } else {
        return static_cast<std::uint64_t>(value);
    }
}

// View of elements [offset, offset + len) of dimension 0 of `t` (other dimensions kept).
inline ChipTensor slice_1d(const ChipTensor& t, std::uint32_t offset, std::uint32_t len) noexcept {
    ChipTensor v = t;
    v.start_offset = t.start_offset + static_cast<std::uint64_t>(offset) * t.strides[0];
    v.shapes[0] = len;
    return v;
}

// View of rows [row, row + rows) and columns [col, col + cols) of a 2-D tensor.
inline ChipTensor slice_2d(const ChipTensor& t, std::uint32_t row, std::uint32_t rows, std::uint32_t col,
                           std::uint32_t cols) noexcept {
    ChipTensor v = t;
    v.start_offset = t.start_offset + static_cast<std::uint64_t>(row) * t.strides[0] +
                     static_cast<std::uint64_t>(col) * t.strides[1];
    v.shapes[0] = rows;
    v.shapes[1] = cols;
    return v;
}

// Thin C++ face of the function table for orchestration code.
class Orchestrator {
public:
    Orchestrator(const SimplerOrchApi* api, SimplerOrchContext* ctx) noexcept : api_(api), ctx_(ctx) {}

    std::int64_t submit(std::int32_t func_id, std::initializer_list<OrchTensorArg> tensors,
                        std::initializer_list<std::uint64_t> scalars = {},
                        std::initializer_list<std::int64_t> deps = {}) noexcept {
        return submit(func_id, tensors.begin(), static_cast<std::uint32_t>(tensors.size()), scalars.begin(),
                      static_cast<std::uint32_t>(scalars.size()), deps.begin(),
                      static_cast<std::uint32_t>(deps.size()));
    }
    std::int64_t submit(std::int32_t func_id, const OrchTensorArg* tensors, std::uint32_t tensor_count,
                        const std::uint64_t* scalars, std::uint32_t scalar_count, const std::int64_t* deps,
                        std::uint32_t dep_count) noexcept {
        const OrchTaskSpec spec{func_id, tensor_count, scalar_count, dep_count, tensors, scalars, deps};
        return api_->submit(ctx_, &spec);
    }
    std::int32_t scope_begin() noexcept { return api_->scope_begin(ctx_); }
    std::int32_t scope_end() noexcept { return api_->scope_end(ctx_); }
    std::int32_t alloc_tensor(DataType dtype, std::uint32_t ndims, const std::uint32_t* shape,
                              ChipTensor* out) noexcept {
        return api_->alloc_tensor(ctx_, dtype, ndims, shape, out);
    }
    void report_error(const char* message) noexcept { api_->report_error(ctx_, message); }

private:
    const SimplerOrchApi* api_;
    SimplerOrchContext* ctx_;
};

}  // namespace simpler

// Declares the two exported entries of an orchestration and opens the definition of the
// first; follow it with the parameter list and body (see the example at the top).
#define SIMPLER_ORCHESTRATION(name, n_tensors, n_scalars)                                            \
    extern "C" __attribute__((visibility("default"))) void name##_needs(::simpler::OrchestrationNeeds* out) { \
        out->abi_version = ::simpler::kOrchestrationAbiVersion;                                      \
        out->tensor_count = (n_tensors);                                                             \
        out->scalar_count = (n_scalars);                                                             \
        out->reserved = 0;                                                                           \
    }                                                                                                \
    extern "C" __attribute__((visibility("default"))) std::int32_t name
