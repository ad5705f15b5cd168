// chip::apply_host_request: a rank process applying a peer's host-path request to its own window.
// Its atomics must be the ones the rank's own kernels use on that memory (simpler::atomic_add,
// 32-bit notify atomics), which the concurrency cases check against a thread that adds directly,
// as a kernel of the rank does.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../../../src/core/chip/comm_host.hpp"
#include "simpler/comm_atomic.hpp"
#include "simpler/dtype.hpp"

using simpler::CommHostOp;
using simpler::CommHostRequest;
using simpler::CommHostRun;
using simpler::DataType;
using simpler::chip::apply_host_request;

namespace {

struct Window {
    alignas(64) unsigned char bytes[256] = {};
    template <class T>
    T* at(std::uint64_t offset) {
        return reinterpret_cast<T*>(bytes + offset);
    }
};

CommHostRequest request(CommHostOp op, const std::vector<CommHostRun>& runs, void* data, std::uint64_t nbytes,
                        DataType dtype = DataType::FLOAT32, std::int64_t value = 0) {
    return CommHostRequest{op, 0, 0, static_cast<std::uint32_t>(dtype), runs.size(), runs.data(), data, nbytes, value};
}

// Applies `r`; "" when applied, else the error.
std::string apply(Window& w, const CommHostRequest& r) {
    char error[256];
    std::memset(error, 'x', sizeof error);
    error[sizeof error - 1] = '\0';
    return apply_host_request(r, w.bytes, sizeof w.bytes, error, sizeof error) == 0 ? "" : std::string(error);
}

}  // namespace

TEST_CASE("reads and writes copy the runs' bytes in run order") {
    Window w;
    const std::vector<CommHostRun> runs{{8, 4}, {0, 4}, {32, 8}};
    unsigned char in[16];
    for (int i = 0; i < 16; ++i) in[i] = static_cast<unsigned char>(i + 1);
    REQUIRE(apply(w, request(CommHostOp::Write, runs, in, 16)) == "");
    CHECK(std::memcmp(w.bytes + 8, in, 4) == 0);
    CHECK(std::memcmp(w.bytes + 0, in + 4, 4) == 0);
    CHECK(std::memcmp(w.bytes + 32, in + 8, 8) == 0);
    unsigned char out[16] = {};
    REQUIRE(apply(w, request(CommHostOp::Read, runs, out, 16)) == "");
    CHECK(std::memcmp(out, in, 16) == 0);
}

TEST_CASE("atomic adds: 16-bit floats round once, integers wrap around") {
    Window w;
    *w.at<simpler::half>(0) = simpler::half(1.0f);
    simpler::half h = simpler::half(0.000244140625f);  // 2^-12: below half's step at 1.0
    REQUIRE(apply(w, request(CommHostOp::AtomicAdd, {{0, 2}}, &h, 2, DataType::FLOAT16)) == "");
    CHECK(static_cast<float>(*w.at<simpler::half>(0)) == 1.0f);  // rounded back to 1
    *w.at<std::int8_t>(16) = 120;
    std::int8_t i8 = 10;
    REQUIRE(apply(w, request(CommHostOp::AtomicAdd, {{16, 1}}, &i8, 1, DataType::INT8)) == "");
    CHECK(*w.at<std::int8_t>(16) == -126);
    *w.at<std::int32_t>(32) = INT32_MAX;
    std::int32_t i32[2] = {1, 5};
    REQUIRE(apply(w, request(CommHostOp::AtomicAdd, {{32, 8}}, i32, 8, DataType::INT32)) == "");
    CHECK(*w.at<std::int32_t>(32) == INT32_MIN);
    CHECK(*w.at<std::int32_t>(36) == 5);
    float f[2] = {1.5f, -2.0f};
    *w.at<float>(64) = 0.25f;
    REQUIRE(apply(w, request(CommHostOp::AtomicAdd, {{64, 8}}, f, 8, DataType::FLOAT32)) == "");
    CHECK(*w.at<float>(64) == 1.75f);
    CHECK(*w.at<float>(68) == -2.0f);
    simpler::bfloat16 b = simpler::bfloat16(2.0f);
    *w.at<simpler::bfloat16>(96) = simpler::bfloat16(1.0f);
    REQUIRE(apply(w, request(CommHostOp::AtomicAdd, {{96, 2}}, &b, 2, DataType::BFLOAT16)) == "");
    CHECK(static_cast<float>(*w.at<simpler::bfloat16>(96)) == 3.0f);
}

TEST_CASE("notifies set or add the INT32 cell, wrapping around") {
    Window w;
    REQUIRE(apply(w, request(CommHostOp::NotifySet, {{4, 4}}, nullptr, 0, DataType::INT32, INT32_MAX)) == "");
    CHECK(*w.at<std::int32_t>(4) == INT32_MAX);
    REQUIRE(apply(w, request(CommHostOp::NotifyAdd, {{4, 4}}, nullptr, 0, DataType::INT32, 2)) == "");
    CHECK(*w.at<std::int32_t>(4) == INT32_MIN + 1);
}

TEST_CASE("a bad request is refused with why, and the window is untouched") {
    float four[4] = {1, 2, 3, 4};
    struct Case {
        CommHostRequest r;
        const char* why;
    };
    const std::vector<CommHostRun> outside{{248, 16}}, past_end{{UINT64_MAX - 2, 4}}, split{{0, 4}, {200, 64}},
        unaligned{{2, 4}}, two_cells{{0, 4}, {8, 4}}, one{{0, 4}}, ok{{0, 16}};
    const Case cases[] = {
        {request(CommHostOp::Write, outside, four, 16), "bytes [248, +16) lie outside the window's 256 bytes"},
        {request(CommHostOp::Write, past_end, four, 4), "lie outside the window's 256 bytes"},
        {request(CommHostOp::Write, split, four, 68), "bytes [200, +64) lie outside"},
        {request(CommHostOp::AtomicAdd, unaligned, four, 4), "bytes [2, +4) are not whole 4-byte elements"},
        {request(CommHostOp::AtomicAdd, one, four, 4, DataType::BOOL), "atomic add of DataType code"},
        {request(CommHostOp::Write, ok, four, 12), "the runs hold 16 bytes, the request says 12"},
        {request(CommHostOp::Write, ok, nullptr, 16), "a request of 16 bytes has no data"},
        {request(CommHostOp::NotifyAdd, two_cells, nullptr, 0, DataType::INT32, 1), "one 4-byte INT32 cell, got 2"},
        {request(CommHostOp::NotifySet, one, nullptr, 0, DataType::INT32, INT64_C(1) << 40), "must be an INT32"},
        {request(static_cast<CommHostOp>(9), one, four, 4), "unknown host request op 9"},
    };
    for (const Case& c : cases) {
        Window w;
        std::memset(w.bytes, 0x5a, sizeof w.bytes);
        const std::string why = apply(w, c.r);
        INFO(why);
        CHECK(why.find(c.why) != std::string::npos);
        bool untouched = true;
        for (unsigned char b : w.bytes) untouched = untouched && b == 0x5a;
        CHECK(untouched);
    }
}

TEST_CASE("a peer's adds and the rank's own adds to the same cells lose none of each other") {
    Window w;
    constexpr int kAdds = 20000;
    std::atomic<bool> started{false}, done{false};
    std::int64_t own_adds = 0;
    // the rank's own kernel: direct atomic adds of 1 to the 8 INT32 cells and 1.0 to a float,
    // for as long as the peer's requests arrive (at most 2^22 rounds: the float stays exact)
    std::thread own([&] {
        started.store(true);
        while (!done.load(std::memory_order_relaxed) && own_adds < (INT64_C(1) << 22)) {
            for (int c = 0; c < 8; ++c) simpler::atomic_add(w.at<std::int32_t>(4 * c), std::int32_t{1});
            simpler::atomic_add(w.at<float>(64), 1.0f);
            ++own_adds;
        }
    });
    while (!started.load()) {
    }
    // a peer's requests through the host process: adds of 2 and 2.0, and notifies of 3 on cell 0
    std::int32_t twos[8] = {2, 2, 2, 2, 2, 2, 2, 2};
    float two = 2.0f;
    const std::vector<CommHostRun> cells{{0, 32}}, cell0{{0, 4}}, scalar{{64, 4}};
    bool applied = true;
    for (int k = 0; k < kAdds; ++k) {
        applied = applied && apply(w, request(CommHostOp::AtomicAdd, cells, twos, 32, DataType::INT32)).empty() &&
                  apply(w, request(CommHostOp::AtomicAdd, scalar, &two, 4, DataType::FLOAT32)).empty() &&
                  apply(w, request(CommHostOp::NotifyAdd, cell0, nullptr, 0, DataType::INT32, 3)).empty();
    }
    done.store(true);
    own.join();
    REQUIRE(applied);
    CHECK(own_adds > 0);
    CHECK(*w.at<std::int32_t>(0) == own_adds + 5 * kAdds);
    for (int c = 1; c < 8; ++c) CHECK(*w.at<std::int32_t>(4 * c) == own_adds + 2 * kAdds);
    CHECK(*w.at<float>(64) == static_cast<float>(own_adds + 2 * kAdds));
}
