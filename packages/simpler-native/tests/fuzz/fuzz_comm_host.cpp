// libFuzzer target: chip::apply_host_request, the rank process's side of a peer's host-path
// request (the fields arrive from another process). Oracle: a refused request leaves the window
// and the data untouched; an accepted one changes no byte outside its runs, and a write leaves
// the runs holding the data.
//
// Input layout: op (1 byte), dtype (1), value (8), run count (1, at most 8), the runs (16 bytes
// each: offset, nbytes), a data length (2); the rest is the data, repeated or cut to that length.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../../src/core/chip/comm_host.hpp"

namespace {

constexpr std::size_t kWindow = 512;

template <class T>
bool take(const std::uint8_t*& p, std::size_t& n, T* out) {
    if (n < sizeof(T)) return false;
    std::memcpy(out, p, sizeof(T));
    p += sizeof(T);
    n -= sizeof(T);
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* input, std::size_t size) {
    using namespace simpler;
    const std::uint8_t* p = input;
    std::size_t n = size;
    std::uint8_t op = 0, dtype = 0, count = 0;
    std::int64_t value = 0;
    std::uint16_t data_len = 0;
    if (!take(p, n, &op) || !take(p, n, &dtype) || !take(p, n, &value) || !take(p, n, &count)) return 0;
    count %= 9;
    std::vector<CommHostRun> runs(count);
    for (auto& r : runs)
        if (!take(p, n, &r.offset) || !take(p, n, &r.nbytes)) return 0;
    if (!take(p, n, &data_len)) return 0;
    std::vector<std::uint8_t> data(data_len);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = n ? p[i % n] : static_cast<std::uint8_t>(i);

    alignas(64) static std::uint8_t window[kWindow];
    for (std::size_t i = 0; i < kWindow; ++i) window[i] = static_cast<std::uint8_t>(i * 31 + 7);
    std::vector<std::uint8_t> before(window, window + kWindow), data_before = data;

    const CommHostRequest r{static_cast<CommHostOp>(op % 6), 0, 0, dtype, runs.size(), runs.data(),
                            data.empty() ? nullptr : data.data(), data.size(), value};
    char error[128];
    const int refused = chip::apply_host_request(r, window, kWindow, error, sizeof error);
    if (refused != 0) {
        if (std::memcmp(window, before.data(), kWindow) != 0 || data != data_before) std::abort();
        if (std::memchr(error, '\0', sizeof error) == nullptr) std::abort();
        return 0;
    }
    std::vector<bool> covered(kWindow, false);
    for (const auto& run : runs)
        for (std::uint64_t b = 0; b < run.nbytes; ++b) covered[run.offset + b] = true;
    for (std::size_t i = 0; i < kWindow; ++i)
        if (!covered[i] && window[i] != before[i]) std::abort();
    if (r.op == CommHostOp::Read && std::memcmp(window, before.data(), kWindow) != 0) std::abort();
    if (r.op == CommHostOp::Write) {
        // runs may overlap: the last one written wins, so check each run against a replay
        std::vector<std::uint8_t> expect = before;
        std::uint64_t at = 0;
        for (const auto& run : runs) {
            if (run.nbytes > 0) std::memcpy(expect.data() + run.offset, data.data() + at, run.nbytes);
            at += run.nbytes;
        }
        if (std::memcmp(window, expect.data(), kWindow) != 0) std::abort();
    }
    return 0;
}
