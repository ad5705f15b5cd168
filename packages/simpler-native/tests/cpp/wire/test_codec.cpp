// The TMR codec: round trips, canonical images, tensor rules, sizes, bindings and corrupt packets.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "simpler/wire/codec.hpp"
#include "simpler/wire/consume.hpp"
#include "wire_test_util.hpp"

using namespace simpler;

namespace {

std::vector<std::uint8_t> encode(const PreparedInvocationView& v, const TmrBindingRef& b,
                                 const std::vector<ChipTensor>& t, const std::vector<std::uint64_t>& s,
                                 InvocationStatus expect = InvocationStatus::Ok) {
    std::vector<std::uint8_t> p(tmr_invocation_size(v.tensor_count, v.scalar_count));
    const InvocationStatus got = encode_tmr_invocation(v, b, t.data(), t.size(), s.data(), s.size(), p.data(), p.size());
    CHECK(got == expect);
    return p;
}

InvocationStatus decode(const std::vector<std::uint8_t>& p, const PreparedInvocationView& v, const TmrBindingRef& b,
                        TmrInvocationView* out = nullptr) {
    TmrInvocationView local;
    return decode_tmr_invocation(ByteSpan(p.data(), p.size()), v, b, out ? out : &local);
}

InvocationStatus encode_one(const ChipTensor& t) {
    std::vector<std::uint8_t> p(tmr_invocation_size(1, 0));
    return encode_tmr_invocation(wt::view(0, 1, 0), wt::binding(), &t, 1, nullptr, 0, p.data(), p.size());
}

}  // namespace

TEST_CASE("round trip of tensors and scalar bits") {
    const auto v = wt::view(5, 2, 3, 3);
    const auto b = wt::binding();
    std::vector<ChipTensor> t = {wt::tile32(0x10000),
                                 wt::tensor(0x20000, 1 << 20, DataType::BFLOAT16, {2, 3, 4, 5, 6}, {720, 240, 60, 12, 2}, 7)};
    float f = 1.5f;
    std::uint32_t fbits;
    std::memcpy(&fbits, &f, 4);
    std::vector<std::uint64_t> s = {fbits, static_cast<std::uint64_t>(-3LL), 0xffffffffffffffffull};
    auto p = encode(v, b, t, s);
    TmrInvocationView out;
    REQUIRE(decode(p, v, b, &out) == InvocationStatus::Ok);
    CHECK(out.header.callable_id == 5);
    CHECK(out.header.generation == 3);
    CHECK(out.binding.device_binding_addr == b.device_binding_addr);
    for (std::size_t i = 0; i < t.size(); ++i) {
        const ChipTensor d = out.tensor(i);
        CHECK(std::memcmp(&d, &t[i], sizeof d) == 0);
    }
    for (std::size_t i = 0; i < s.size(); ++i) CHECK(out.scalar(i) == s[i]);
    CHECK(out.tensor(99).ndims == 0);  // out-of-range reads are zero, never past the span
    CHECK(out.scalar(99) == 0);
    CHECK(out.packet.data == p.data());  // the view borrows the packet storage
}

TEST_CASE("canonical padding: non-identity fields are cleared on encode and rejected on decode") {
    ChipTensor dirty = wt::tile32();
    dirty.owner_task_id = 99;
    dirty.version = 3;
    dirty.manual_dep = 1;
    dirty.is_contiguous = 1;
    dirty.extent_elem_cache = 1024;
    dirty.shapes[3] = 77;  // beyond ndims
    dirty.strides[4] = 5;
    std::memset(dirty.padding, 0xab, sizeof dirty.padding);
    const auto v = wt::view(1, 1, 0);
    const auto clean = encode(v, wt::binding(), {wt::tile32()}, {});
    const auto from_dirty = encode(v, wt::binding(), {dirty}, {});
    CHECK(clean == from_dirty);  // identity excludes bookkeeping, unused dims and padding
    CHECK(decode(clean, v, wt::binding()) == InvocationStatus::Ok);

    // Any nonzero non-identity byte in a packet is rejected.
    const std::size_t base = kTmrTensorsOffset;
    for (std::size_t off : {16u, 20u, 32u, 41u, 42u, 56u, 60u, 64u, 68u, 88u, 92u, 100u, 127u}) {
        CAPTURE(off);
        auto p = clean;
        p[base + off] = 1;
        CHECK(decode(p, v, wt::binding()) == InvocationStatus::InvalidTensor);
    }
}

TEST_CASE("stale and wrong bindings are rejected") {
    const auto v = wt::view(1, 1, 1);
    const auto p = encode(v, wt::binding(0x1000, 9), {wt::tile32()}, {42});
    CHECK(decode(p, v, wt::binding(0x1000, 9)) == InvocationStatus::Ok);
    CHECK(decode(p, v, wt::binding(0x1000, 10)) == InvocationStatus::InvalidBinding);  // newer context
    CHECK(decode(p, v, wt::binding(0x1000, 8)) == InvocationStatus::InvalidBinding);
    CHECK(decode(p, v, wt::binding(0x2000, 9)) == InvocationStatus::InvalidBinding);
    CHECK(decode(p, v, wt::binding(0, 9)) == InvocationStatus::InvalidArgument);  // not a trusted binding
    CHECK(decode(p, v, wt::binding(0x1000, 0)) == InvocationStatus::InvalidArgument);
    CHECK(decode(p, wt::view(1, 1, 1, 2), wt::binding(0x1000, 9)) == InvocationStatus::StaleCallable);
}

TEST_CASE("short, long and corrupt packets") {
    const auto v = wt::view(2, 2, 2);
    const auto p = encode(v, wt::binding(), {wt::tile32(), wt::tile32(0x20000)}, {1, 2});
    for (std::size_t n = 0; n < p.size(); ++n) {
        auto cut = std::vector<std::uint8_t>(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(n));
        CHECK(decode(cut, v, wt::binding()) != InvocationStatus::Ok);
    }
    auto longer = p;
    longer.push_back(0);
    CHECK(decode(longer, v, wt::binding()) == InvocationStatus::InvalidSize);
    // Flipping any header or binding byte is rejected.
    for (std::size_t i = 0; i < kTmrTensorsOffset; ++i) {
        auto q = p;
        q[i] ^= 0x01;
        CAPTURE(i);
        CHECK(decode(q, v, wt::binding()) != InvocationStatus::Ok);
    }
}

TEST_CASE("a self-consistent header that violates the exact TMR size is rejected") {
    // The header's payload_bytes matches the span and its counts match the view, but the span is
    // not 56 + 128 T + 8 S: only the formula from the trusted counts catches it.
    const auto v = wt::view(1, 1, 1);
    auto p = encode(v, wt::binding(), {wt::tile32()}, {7});
    for (std::size_t extra : {8u, 1u, 128u}) {
        auto q = p;
        q.resize(p.size() + extra, 0);
        wt::put<std::uint64_t>(q, 16, q.size() - kInvocationHeaderBytes);
        InvocationHeader h{};
        CHECK(validate_invocation_header(ByteSpan(q.data(), q.size()), v, &h) == InvocationStatus::Ok);
        CHECK(decode(q, v, wt::binding()) == InvocationStatus::InvalidSize);
    }
    auto q = p;
    q.resize(p.size() - 8);
    wt::put<std::uint64_t>(q, 16, q.size() - kInvocationHeaderBytes);
    CHECK(decode(q, v, wt::binding()) == InvocationStatus::InvalidSize);
}

TEST_CASE("tensor arithmetic and Device-only rules") {
    CHECK(encode_one(wt::tile32()) == InvocationStatus::Ok);
    ChipTensor t = wt::tile32();
    t.address_space = static_cast<std::uint8_t>(AddressSpace::HOST);
    CHECK(encode_one(t) == InvocationStatus::InvalidTensor);
    t = wt::tile32();
    t.dtype = 15;
    CHECK(encode_one(t) == InvocationStatus::InvalidTensor);
    t.ndims = 0;
    CHECK(encode_one(wt::tensor(0x1000, 64, DataType::INT8, {}, {})) == InvocationStatus::InvalidTensor);
    t = wt::tile32();
    t.ndims = 6;
    CHECK(encode_one(t) == InvocationStatus::InvalidTensor);
    CHECK(encode_one(wt::tile32(0)) == InvocationStatus::InvalidTensor);                         // null address
    CHECK(encode_one(wt::tensor(0x1000, 4096, DataType::FLOAT32, {32, 32}, {0, 1})) == InvocationStatus::InvalidTensor);
    // Backing: exactly fitting is fine, one element more is not.
    CHECK(encode_one(wt::tensor(0x1000, 4096, DataType::FLOAT32, {1024}, {1})) == InvocationStatus::Ok);
    CHECK(encode_one(wt::tensor(0x1000, 4096, DataType::FLOAT32, {1024}, {1}, 1)) == InvocationStatus::InvalidTensor);
    CHECK(encode_one(wt::tensor(0x1000, 4095, DataType::FLOAT32, {1024}, {1})) == InvocationStatus::InvalidTensor);
    CHECK(encode_one(wt::tensor(0x1000, 4096, DataType::FLOAT32, {32, 32}, {64, 1})) == InvocationStatus::InvalidTensor);
    CHECK(encode_one(wt::tensor(0x1000, 8192, DataType::FLOAT32, {32, 32}, {64, 1})) == InvocationStatus::Ok);
    // Sub-byte elements: 8 FP4 values need 4 bytes.
    CHECK(encode_one(wt::tensor(0x1000, 4, DataType::FP4E2M1, {8}, {1})) == InvocationStatus::Ok);
    CHECK(encode_one(wt::tensor(0x1000, 4, DataType::FP4E2M1, {9}, {1})) == InvocationStatus::InvalidTensor);
    // Overflow anywhere is a rejection, not a wrap.
    const std::uint32_t M = 0xffffffffu;
    CHECK(encode_one(wt::tensor(0x1000, ~0ull, DataType::INT64, {M, M, M, M, M}, {M, M, M, M, M})) ==
          InvocationStatus::InvalidTensor);
    CHECK(encode_one(wt::tensor(0x1000, ~0ull, DataType::INT8, {2}, {1}, ~0ull)) == InvocationStatus::InvalidTensor);
    CHECK(encode_one(wt::tensor(0x1000, ~0ull, DataType::INT64, {2}, {1}, 1ull << 62)) == InvocationStatus::InvalidTensor);
    CHECK(encode_one(wt::tensor(~0ull - 8, 64, DataType::INT8, {16}, {1})) == InvocationStatus::InvalidTensor);  // address wraps
}

TEST_CASE("empty tensors access nothing and keep their fields") {
    // A zero dimension: no address, stride or backing requirement; the descriptor travels as given.
    const ChipTensor e = wt::tensor(0, 0, DataType::FLOAT32, {0, 32}, {32, 1});
    const ChipTensor e2 = wt::tensor(0x1234, 0, DataType::INT8, {4, 0, 3}, {0, 0, 0}, 99);
    CHECK(encode_one(e) == InvocationStatus::Ok);
    CHECK(encode_one(e2) == InvocationStatus::Ok);
    const auto v = wt::view(4, 2, 0);
    const auto p = encode(v, wt::binding(), {e, e2}, {});
    TmrInvocationView out;
    REQUIRE(decode(p, v, wt::binding(), &out) == InvocationStatus::Ok);
    const ChipTensor d = out.tensor(1);
    CHECK(std::memcmp(&d, &e2, sizeof d) == 0);
    // Rank, dtype and address space still apply.
    ChipTensor h = e;
    h.address_space = 0;
    CHECK(encode_one(h) == InvocationStatus::InvalidTensor);
}

TEST_CASE("minimum, maximum and scalar-only packets") {
    const auto b = wt::binding();
    {
        const auto v = wt::view(0, 0, 0);
        const auto p = encode(v, b, {}, {});
        CHECK(p.size() == 56);
        CHECK(decode(p, v, b) == InvocationStatus::Ok);
    }
    {
        const auto v = wt::view(63, 256, 0);
        std::vector<ChipTensor> t;
        for (std::uint64_t i = 0; i < 256; ++i) t.push_back(wt::tensor(0x100000 + i * 256, 256, DataType::FLOAT32, {64}, {1}));
        const auto p = encode(v, b, t, {});
        CHECK(p.size() == kMaxTmrPacketBytes);
        TmrInvocationView out;
        REQUIRE(decode(p, v, b, &out) == InvocationStatus::Ok);
        CHECK(out.tensor(255).buffer.addr == 0x100000 + 255 * 256);
    }
    {
        const auto v = wt::view(2, 0, 128);
        std::vector<std::uint64_t> s(128);
        for (std::size_t i = 0; i < s.size(); ++i) s[i] = i * 0x0101010101010101ull;
        const auto p = encode(v, b, {}, s);
        CHECK(p.size() == 56 + 1024);
        auto storage = std::make_unique<EntryArgsStorage>();
        REQUIRE(consume_tmr_invocation(ByteSpan(p.data(), p.size()), v, b, storage.get()) == InvocationStatus::Ok);
        CHECK(storage->scalar_count == 128);
        CHECK(static_cast<std::uint64_t>(storage->args[127]) == s[127]);
    }
    {
        const auto v = wt::view(2, 128, 128);
        std::vector<ChipTensor> t(128, wt::tile32());
        std::vector<std::uint64_t> s(128, 5);
        const auto p = encode(v, b, t, s);
        CHECK(decode(p, v, b) == InvocationStatus::Ok);
    }
}

TEST_CASE("encode rejects wrong counts, views and buffers without touching the caller") {
    std::vector<ChipTensor> t = {wt::tile32()};
    std::vector<std::uint64_t> s = {1};
    std::vector<std::uint8_t> p(tmr_invocation_size(1, 1));
    CHECK(encode_tmr_invocation(wt::view(1, 2, 1), wt::binding(), t.data(), 1, s.data(), 1, p.data(), p.size()) ==
          InvocationStatus::InvalidCounts);
    CHECK(encode_tmr_invocation(wt::view(1, 1, 1), wt::binding(), t.data(), 1, s.data(), 1, p.data(), p.size() - 1) ==
          InvocationStatus::InvalidSize);
    CHECK(encode_tmr_invocation(wt::view(64, 1, 1), wt::binding(), t.data(), 1, s.data(), 1, p.data(), p.size()) ==
          InvocationStatus::InvalidArgument);
    CHECK(encode_tmr_invocation(wt::view(1, 1, 1), wt::binding(0, 1), t.data(), 1, s.data(), 1, p.data(), p.size()) ==
          InvocationStatus::InvalidArgument);
    CHECK(encode_tmr_invocation(wt::view(1, 1, 1), wt::binding(), nullptr, 1, s.data(), 1, p.data(), p.size()) ==
          InvocationStatus::InvalidArgument);
}

TEST_CASE("consume leaves its output untouched on rejection") {
    const auto v = wt::view(1, 1, 1);
    auto p = encode(v, wt::binding(), {wt::tile32()}, {3});
    auto storage = std::make_unique<EntryArgsStorage>();
    REQUIRE(consume_tmr_invocation(ByteSpan(p.data(), p.size()), v, wt::binding(), storage.get()) == InvocationStatus::Ok);
    auto before = std::make_unique<std::uint8_t[]>(sizeof(EntryArgsStorage));
    std::memcpy(before.get(), static_cast<const void*>(storage.get()), sizeof(EntryArgsStorage));
    p[kTmrTensorsOffset + 43] = 0;  // Host address space in the second stage of checks
    CHECK(consume_tmr_invocation(ByteSpan(p.data(), p.size()), v, wt::binding(), storage.get()) ==
          InvocationStatus::InvalidTensor);
    CHECK(consume_tmr_invocation(ByteSpan(p.data(), 10), v, wt::binding(), storage.get()) == InvocationStatus::InvalidSize);
    CHECK(std::memcmp(before.get(), static_cast<const void*>(storage.get()), sizeof(EntryArgsStorage)) == 0);
}

TEST_CASE("validate_chip_tensor names the failing field for every rule encode applies") {
    struct Case {
        ChipTensor t;
        const char* needle;
    };
    ChipTensor host = wt::tile32();
    host.address_space = 0;
    ChipTensor dtype = wt::tile32();
    dtype.dtype = 99;
    ChipTensor rank = wt::tile32();
    rank.ndims = 6;
    const std::uint32_t M = 0xffffffffu;
    const Case cases[] = {
        {host, "address_space"},
        {dtype, "dtype"},
        {rank, "ndims"},
        {wt::tensor(0x1000, 4096, DataType::FLOAT32, {32, 32}, {0, 1}), "strides"},
        {wt::tile32(0), "buffer.addr"},
        {wt::tensor(0x1000, ~0ull, DataType::INT64, {M, M}, {M, M}), "overflow"},
        {wt::tensor(0x1000, 4095, DataType::FLOAT32, {1024}, {1}), "buffer.size"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.needle);
        CHECK(encode_one(c.t) == InvocationStatus::InvalidTensor);  // the message agrees with the verdict
        const char* p = chip_tensor_problem(c.t);
        REQUIRE(p != nullptr);
        CHECK(std::string(p).find(c.needle) != std::string::npos);
        try {
            validate_chip_tensor(c.t, "tensors[3]");
            FAIL("validate_chip_tensor accepted an invalid tensor");
        } catch (const InvocationError& e) {
            CHECK(e.status() == InvocationStatus::InvalidTensor);
            CHECK(std::string(e.what()).find("tensors[3]: ") != std::string::npos);
        }
    }
    CHECK(chip_tensor_problem(wt::tile32()) == nullptr);
    CHECK(chip_tensor_problem(wt::tensor(0, 0, DataType::INT8, {0}, {0})) == nullptr);  // empty
    validate_chip_tensor(wt::tile32(), "ok");
}

TEST_CASE("an extent that wraps in the running sum is an overflow, not three elements") {
    // (0xFFFFFFFF - 1) * 0xFFFFFFFF + (7 - 1) * 0x80000000 + 1 = 2^64 + 3: the sum wraps to 3
    // elements, which a 64-byte backing holds. Only the add-overflow check sees it; the existing
    // overflow vectors overflow a later step (offset, bits) and never depend on this one.
    const std::uint32_t M = 0xffffffffu;
    const ChipTensor wrap = wt::tensor(0x1000, 64, DataType::INT8, {M, 7}, {M, 0x80000000u});
    CHECK(encode_one(wrap) == InvocationStatus::InvalidTensor);
    CHECK(check_chip_tensor_semantics(wrap) == InvocationStatus::InvalidTensor);
    std::uint64_t extent = 77;
    CHECK_FALSE(chip_tensor_extent(wrap, &extent));
    CHECK(extent == 77);
    CHECK(chip_tensor_span_bytes(wrap) == 0);
    const char* problem = chip_tensor_problem(wrap);
    REQUIRE(problem != nullptr);
    CHECK(std::string(problem).find("overflow") != std::string::npos);
    // The decoder rejects the same descriptor in packet bytes (patched into a valid packet).
    const ChipTensor ok = wt::tensor(0x1000, 64, DataType::INT8, {8, 7}, {7, 1});
    const auto v = wt::view(0, 1, 0);
    auto p = encode(v, wt::binding(), {ok}, {});
    REQUIRE(decode(p, v, wt::binding()) == InvocationStatus::Ok);
    std::memcpy(p.data() + kTmrTensorsOffset, &wrap, sizeof wrap);
    CHECK(decode(p, v, wt::binding()) == InvocationStatus::InvalidTensor);
    // The largest products of u32 shape - 1 and stride fit in 64 bits (no multiply overflow to
    // detect for a nonempty tensor): this one spans 0xFFFFFFFD00000003 elements, refused by size.
    std::uint64_t big = 0;
    CHECK(chip_tensor_extent(wt::tensor(0x1000, ~0ull, DataType::INT8, {M}, {M}), &big));
    CHECK(big == 0xFFFFFFFD00000003ull);
}

TEST_CASE("semantics alone refuse a rank above five, and spans round sub-byte elements up") {
    ChipTensor t = wt::tile32();
    t.ndims = kMaxTensorDims + 1;
    CHECK(check_chip_tensor_semantics(t) == InvocationStatus::InvalidTensor);
    t.ndims = 0;
    CHECK(check_chip_tensor_semantics(t) == InvocationStatus::InvalidTensor);
    // 9 FP4 values are 36 bits: 5 bytes; 8 are exactly 4.
    CHECK(chip_tensor_span_bytes(wt::tensor(0x1000, 8, DataType::FP4E2M1, {9}, {1})) == 5);
    CHECK(chip_tensor_span_bytes(wt::tensor(0x1000, 8, DataType::FP4E2M1, {8}, {1})) == 4);
    CHECK(chip_tensor_span_bytes(wt::tensor(0x1000, 8, DataType::FP4E2M1, {3}, {1}, 2)) == 3);  // elements 2..4
}
