// The AICPU-side consumer of a TMR packet: decode, validate, then materialise the invocation
// into caller-owned EntryArgsStorage that a kernel entry (void kernel_entry(int64_t* args)) reads.
//
// Consumers: the simulated AICPU in simpler's chip runtime and the device part of
// tools/cann-probe. The storage is the consumer's: it must stay alive until the last kernel
// that received args[] (and every ChipTensor* in it) has returned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simpler/wire/binding_ref.hpp"
#include "simpler/wire/byte_span.hpp"
#include "simpler/wire/chip_tensor.hpp"
#include "simpler/wire/codec.hpp"
#include "simpler/wire/prepared_view.hpp"
#include "simpler/wire/status.hpp"
#include "simpler/wire/tmr_packet.hpp"

namespace simpler {

struct EntryArgsStorage {
    ChipTensor tensors[kMaxTensors];   // 64-byte aligned descriptors the kernel points at
    std::uint64_t scalars[kMaxScalars];
    std::int64_t args[kMaxArguments];  // args[i] = address of tensors[i] (i < tensor_count), then scalar bits
    std::int32_t callable_id = -1;
    std::int32_t tensor_count = 0;
    std::int32_t scalar_count = 0;
    std::uint64_t generation = 0;

    EntryArgsStorage() noexcept { std::memset(args, 0, sizeof args); }
    // args[] points into this object, so it is neither copied nor moved.
    EntryArgsStorage(const EntryArgsStorage&) = delete;
    EntryArgsStorage& operator=(const EntryArgsStorage&) = delete;
};

// Decode `packet` against the trusted callable and binding, then fill *out. On any rejection
// *out is untouched (decode finishes every check before the first write).
inline InvocationStatus consume_tmr_invocation(ByteSpan packet, const PreparedInvocationView& trusted_callable,
                                               const TmrBindingRef& trusted_binding, EntryArgsStorage* out) noexcept {
    if (out == nullptr) return InvocationStatus::InvalidArgument;
    TmrInvocationView v;
    const InvocationStatus s = decode_tmr_invocation(packet, trusted_callable, trusted_binding, &v);
    if (s != InvocationStatus::Ok) return s;
    const std::int32_t t = v.tensor_count(), n = v.scalar_count();
    for (std::int32_t i = 0; i < t; ++i) {
        out->tensors[i] = v.tensor(static_cast<std::size_t>(i));
        out->args[i] = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(&out->tensors[i]));
    }
    for (std::int32_t i = 0; i < n; ++i) {
        out->scalars[i] = v.scalar(static_cast<std::size_t>(i));
        out->args[t + i] = static_cast<std::int64_t>(out->scalars[i]);
    }
    out->callable_id = v.header.callable_id;
    out->generation = v.header.generation;
    out->tensor_count = t;
    out->scalar_count = n;
    return InvocationStatus::Ok;
}

}  // namespace simpler
