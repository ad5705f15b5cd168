// Shared by the fuzz targets: how an input chooses its trusted metadata, and the oracle that an
// accepted packet re-encodes to exactly its own bytes.
//
// Input layout: byte 0 selects the trusted view. Even: the view is taken from the packet's own
// header fields when they form a live view (so the fuzzer reaches descriptor validation; a real
// consumer never does this). Odd: one of a few fixed views. The rest is the packet (or block).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "simpler/wire/codec.hpp"
#include "simpler/wire/consume.hpp"

namespace fuzz {

inline const simpler::TmrBindingRef kBinding{0x7F0000000000ull, 9};

inline simpler::PreparedInvocationView choose_view(std::uint8_t selector, simpler::ByteSpan packet) {
    static const simpler::PreparedInvocationView fixed[] = {
        {0, 0, 0, 1}, {1, 1, 1, 1}, {5, 2, 2, 3}, {63, 256, 0, 1}, {2, 0, 128, 1}, {4, 1, 0, 1}, {1, 128, 128, 2},
    };
    if ((selector & 1) == 0) {
        simpler::InvocationHeader h;
        if (packet.read_at(0, &h)) {
            const simpler::PreparedInvocationView v{h.callable_id, h.tensor_count, h.scalar_count, h.generation};
            if (simpler::is_valid_prepared_view(v)) return v;
        }
    }
    return fixed[(selector >> 1) % (sizeof fixed / sizeof fixed[0])];
}

// Decode, consume and (when accepted) re-encode; abort on any disagreement.
inline void check_packet(simpler::ByteSpan packet, const simpler::PreparedInvocationView& view) {
    using namespace simpler;
    TmrInvocationView out;
    out.header.callable_id = -99;
    const InvocationStatus s = decode_tmr_invocation(packet, view, kBinding, &out);
    static EntryArgsStorage* storage = new EntryArgsStorage();
    storage->callable_id = -98;
    const InvocationStatus c = consume_tmr_invocation(packet, view, kBinding, storage);
    if (s != c) std::abort();
    if (s != InvocationStatus::Ok) {
        if (out.header.callable_id != -99 || storage->callable_id != -98) std::abort();  // output touched
        return;
    }
    if (packet.size != tmr_invocation_size(view.tensor_count, view.scalar_count)) std::abort();
    std::vector<ChipTensor> tensors(static_cast<std::size_t>(out.tensor_count()));
    for (std::size_t i = 0; i < tensors.size(); ++i) tensors[i] = out.tensor(i);
    std::vector<std::uint64_t> scalars(static_cast<std::size_t>(out.scalar_count()));
    for (std::size_t i = 0; i < scalars.size(); ++i) scalars[i] = out.scalar(i);
    std::vector<std::uint8_t> again(packet.size);
    if (encode_tmr_invocation(view, kBinding, tensors.data(), tensors.size(), scalars.data(), scalars.size(),
                              again.data(), again.size()) != InvocationStatus::Ok)
        std::abort();
    if (std::memcmp(again.data(), packet.data, packet.size) != 0) std::abort();
    for (std::size_t i = 0; i < tensors.size(); ++i)
        if (std::memcmp(&storage->tensors[i], &tensors[i], sizeof(ChipTensor)) != 0) std::abort();
}

}  // namespace fuzz
