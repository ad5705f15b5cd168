// Shared admission: effective counts from a signature, and the header checks against a trusted view.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "simpler/wire/prepared_view.hpp"
#include "simpler/wire/tmr_packet.hpp"
#include "wire_test_util.hpp"

using namespace simpler;

namespace {

constexpr std::uint8_t S = static_cast<std::uint8_t>(ArgDirection::Scalar);
constexpr std::uint8_t I = static_cast<std::uint8_t>(ArgDirection::In);
constexpr std::uint8_t O = static_cast<std::uint8_t>(ArgDirection::Out);
constexpr std::uint8_t IO = static_cast<std::uint8_t>(ArgDirection::InOut);

InvocationStatus derive(const std::vector<std::uint8_t>& sig, std::int32_t cached, InvocationCounts* out) {
    return derive_invocation_counts(sig.data(), sig.size(), cached, out);
}

// A header (and `payload` opaque bytes) that agrees with `v`.
std::vector<std::uint8_t> packet_for(const PreparedInvocationView& v, std::size_t payload) {
    std::vector<std::uint8_t> b(kInvocationHeaderBytes + payload, 0x5c);
    InvocationHeader h{};
    h.mode = static_cast<std::uint32_t>(ExecutionMode::KERNEL);
    h.callable_id = v.callable_id;
    h.generation = v.slot_generation;
    h.payload_bytes = payload;
    h.tensor_count = v.tensor_count;
    h.scalar_count = v.scalar_count;
    std::memcpy(b.data(), &h, sizeof h);
    return b;
}

}  // namespace

TEST_CASE("effective scalar counts follow the signature and the cached count") {
    InvocationCounts c{-7, -7};
    CHECK(derive({I, O, IO, S, S}, 0, &c) == InvocationStatus::Ok);
    CHECK(c.tensor_count == 3);
    CHECK(c.scalar_count == 2);
    CHECK(derive({I, O, IO, S, S}, 2, &c) == InvocationStatus::Ok);  // nonzero cached count agrees
    CHECK(derive({}, 0, &c) == InvocationStatus::Ok);
    CHECK(c.tensor_count == 0);
    CHECK(c.scalar_count == 0);
    CHECK(derive({S, S, S}, 0, &c) == InvocationStatus::Ok);
    CHECK(c.scalar_count == 3);

    c = InvocationCounts{-7, -7};
    CHECK(derive({I, S}, 2, &c) == InvocationStatus::InvalidSignature);  // cached count disagrees
    CHECK(c.tensor_count == -7);
    CHECK(derive({I, S}, -1, &c) == InvocationStatus::InvalidArgument);
    CHECK(c.tensor_count == -7);
}

TEST_CASE("invalid signatures and counts are rejected and leave the output untouched") {
    InvocationCounts c{-7, -7};
    CHECK(derive({I, S, O}, 0, &c) == InvocationStatus::InvalidSignature);  // tensor after scalar
    CHECK(derive({I, 4}, 0, &c) == InvocationStatus::InvalidSignature);     // unknown direction
    CHECK(derive({255}, 0, &c) == InvocationStatus::InvalidSignature);
    CHECK(derive(std::vector<std::uint8_t>(257, I), 0, &c) == InvocationStatus::InvalidCounts);
    CHECK(derive(std::vector<std::uint8_t>(129, S), 0, &c) == InvocationStatus::InvalidCounts);
    std::vector<std::uint8_t> over(200, I);
    over.insert(over.end(), 57, S);  // 257 arguments
    CHECK(derive(over, 0, &c) == InvocationStatus::InvalidCounts);
    CHECK(derive_invocation_counts(nullptr, 3, 0, &c) == InvocationStatus::InvalidArgument);
    CHECK(derive({I}, 0, nullptr) == InvocationStatus::InvalidArgument);
    CHECK(c.tensor_count == -7);
    CHECK(c.scalar_count == -7);
    // The largest legal signatures.
    CHECK(derive(std::vector<std::uint8_t>(256, I), 0, &c) == InvocationStatus::Ok);
    CHECK(c.tensor_count == 256);
    std::vector<std::uint8_t> mixed(128, IO);
    mixed.insert(mixed.end(), 128, S);
    CHECK(derive(mixed, 128, &c) == InvocationStatus::Ok);
    CHECK(c.scalar_count == 128);
}

TEST_CASE("trusted views: ids, counts and generations") {
    CHECK(is_valid_prepared_view(wt::view(0, 0, 0, 1)));
    CHECK(is_valid_prepared_view(wt::view(63, 128, 128, 5)));
    CHECK_FALSE(is_valid_prepared_view(wt::view(64, 0, 0)));
    CHECK_FALSE(is_valid_prepared_view(wt::view(-1, 0, 0)));
    CHECK_FALSE(is_valid_prepared_view(wt::view(0, 257, 0)));
    CHECK_FALSE(is_valid_prepared_view(wt::view(0, 0, 129)));
    CHECK_FALSE(is_valid_prepared_view(wt::view(0, 200, 100)));
    CHECK_FALSE(is_valid_prepared_view(wt::view(0, -1, 0)));
    CHECK_FALSE(is_valid_prepared_view(wt::view(0, 0, 0, 0)));  // generation 0 = not recorded

    const auto v = wt::view(3, 1, 1, 2);
    auto p = packet_for(v, 136);
    CHECK(validate_invocation_header(ByteSpan(p.data(), p.size()), wt::view(3, 1, 1, 0), nullptr) ==
          InvocationStatus::InvalidArgument);
}

TEST_CASE("header fields are checked against framing, limits and the trusted view") {
    const auto v = wt::view(3, 1, 1, 2);
    const std::size_t payload = tmr_invocation_size(1, 1) - kInvocationHeaderBytes;
    auto check = [&](void (*mutate)(std::vector<std::uint8_t>&), InvocationStatus expected) {
        auto p = packet_for(v, payload);
        mutate(p);
        InvocationHeader out{};
        out.callable_id = 77;
        CHECK(validate_invocation_header(ByteSpan(p.data(), p.size()), v, &out) == expected);
        CHECK(out.callable_id == (expected == InvocationStatus::Ok ? 3 : 77));
    };
    check([](auto& p) { wt::put<std::uint32_t>(p, 0, 0); }, InvocationStatus::InvalidHeader);    // PROGRAM
    check([](auto& p) { wt::put<std::uint32_t>(p, 0, 2); }, InvocationStatus::InvalidHeader);    // unknown mode
    check([](auto& p) { wt::put<std::int32_t>(p, 4, 64); }, InvocationStatus::InvalidHeader);    // id range
    check([](auto& p) { wt::put<std::int32_t>(p, 4, -1); }, InvocationStatus::InvalidHeader);
    check([](auto& p) { wt::put<std::int32_t>(p, 4, 4); }, InvocationStatus::StaleCallable);     // other callable
    check([](auto& p) { wt::put<std::uint64_t>(p, 8, 1); }, InvocationStatus::StaleCallable);    // old generation
    check([](auto& p) { wt::put<std::uint64_t>(p, 8, 0); }, InvocationStatus::StaleCallable);    // not recorded
    check([](auto& p) { wt::put<std::uint64_t>(p, 16, 153); }, InvocationStatus::InvalidSize);   // payload lies
    check([](auto& p) { wt::put<std::uint64_t>(p, 16, ~0ull); }, InvocationStatus::InvalidSize);
    check([](auto& p) { wt::put<std::int32_t>(p, 24, 2); }, InvocationStatus::InvalidCounts);    // disagrees with view
    check([](auto& p) { wt::put<std::int32_t>(p, 24, 257); }, InvocationStatus::InvalidCounts);  // over limit
    check([](auto& p) { wt::put<std::int32_t>(p, 24, -1); }, InvocationStatus::InvalidCounts);
    check([](auto& p) { wt::put<std::int32_t>(p, 28, 129); }, InvocationStatus::InvalidCounts);
    check([](auto& p) { wt::put<std::int32_t>(p, 28, 0); }, InvocationStatus::InvalidCounts);
    check([](auto& p) { wt::put<std::int32_t>(p, 32, 1); }, InvocationStatus::InvalidHeader);    // host copies
    check([](auto& p) { wt::put<std::uint32_t>(p, 36, 1); }, InvocationStatus::InvalidHeader);   // reserved
    check([](auto&) {}, InvocationStatus::Ok);
}

TEST_CASE("short spans and unaligned framing") {
    const auto v = wt::view(3, 1, 1, 2);
    auto p = packet_for(v, tmr_invocation_size(1, 1) - kInvocationHeaderBytes);
    for (std::size_t n = 0; n < kInvocationHeaderBytes; ++n)
        CHECK(validate_invocation_header(ByteSpan(p.data(), n), v, nullptr) == InvocationStatus::InvalidSize);
    CHECK(validate_invocation_header(ByteSpan(nullptr, 192), v, nullptr) == InvocationStatus::InvalidSize);
    // The same packet at every misalignment is read by bounded copies and accepted.
    std::vector<std::uint8_t> shifted(p.size() + 16);
    for (std::size_t off = 1; off < 16; ++off) {
        std::memcpy(shifted.data() + off, p.data(), p.size());
        InvocationHeader h{};
        CHECK(validate_invocation_header(ByteSpan(shifted.data() + off, p.size()), v, &h) == InvocationStatus::Ok);
        CHECK(h.callable_id == 3);
        CHECK(h.generation == 2);
    }
}

TEST_CASE("opaque non-TMR payloads are admitted with trusted counts") {
    // A payload of any length (HBG, for example) passes as long as the header agrees with it and
    // with the trusted view: the header check never reads the payload.
    const auto v = wt::view(7, 2, 3, 4);
    for (std::size_t payload : {0u, 1u, 13u, 4096u}) {
        auto p = packet_for(v, payload);
        for (std::size_t i = kInvocationHeaderBytes; i < p.size(); ++i) p[i] = static_cast<std::uint8_t>(i * 31);
        InvocationHeader h{};
        CHECK(validate_invocation_header(ByteSpan(p.data(), p.size()), v, &h) == InvocationStatus::Ok);
        CHECK(h.payload_bytes == payload);
    }
}

TEST_CASE("count limits come before the staleness checks (documented order)") {
    // 257 tensors is over the limit whatever the view says; with a stale generation (or another
    // callable's id) the packet still reports InvalidCounts, not StaleCallable. With a current
    // generation the view comparison would give InvalidCounts anyway and hide a missing limit check.
    const auto v = wt::view(3, 1, 1, 2);
    const std::size_t payload = tmr_invocation_size(1, 1) - kInvocationHeaderBytes;
    auto p = packet_for(v, payload);
    wt::put<std::int32_t>(p, 24, 257);
    wt::put<std::uint64_t>(p, 8, 1);  // stale generation
    CHECK(validate_invocation_header(ByteSpan(p.data(), p.size()), v, nullptr) == InvocationStatus::InvalidCounts);
    wt::put<std::int32_t>(p, 24, 1);
    wt::put<std::int32_t>(p, 28, 129);  // too many scalars, other callable
    wt::put<std::int32_t>(p, 4, 5);
    CHECK(validate_invocation_header(ByteSpan(p.data(), p.size()), v, nullptr) == InvocationStatus::InvalidCounts);
    wt::put<std::int32_t>(p, 28, 1);  // within the limits: now the staleness shows
    CHECK(validate_invocation_header(ByteSpan(p.data(), p.size()), v, nullptr) == InvocationStatus::StaleCallable);
}
