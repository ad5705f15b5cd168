// libFuzzer target: decode_tmr_invocation and consume_tmr_invocation over arbitrary packets.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    // Copy so the packet sits in its own allocation (ASan then catches any read past its end).
    std::vector<std::uint8_t> packet(data + 1, data + size);
    const simpler::ByteSpan span(packet.data(), packet.size());
    fuzz::check_packet(span, fuzz::choose_view(data[0], span));
    return 0;
}
