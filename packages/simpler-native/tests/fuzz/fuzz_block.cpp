// libFuzzer target: the device-side path from a transport block (u64 packet_bytes + packet).
#include <cstddef>
#include <cstdint>

#include "fuzz_common.hpp"
#include "simpler/wire/transport.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    std::vector<std::uint8_t> block(data + 1, data + size);
    simpler::ByteSpan packet;
    if (simpler::tmr_block_packet(block.data(), block.size(), &packet) != simpler::InvocationStatus::Ok) return 0;
    if (packet.data != block.data() + 8 || packet.size > block.size() - 8) std::abort();
    fuzz::check_packet(packet, fuzz::choose_view(data[0], packet));
    return 0;
}
