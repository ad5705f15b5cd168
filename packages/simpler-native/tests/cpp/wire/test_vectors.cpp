// Every vector of tests/data/tmr_vectors.json: accepted ones decode to the listed descriptors and
// re-encode to the same bytes; rejected ones leave decode and consume outputs untouched.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "simpler/wire/codec.hpp"
#include "simpler/wire/consume.hpp"
#include "tmr_vectors.hpp"
#include "wire_test_util.hpp"

using namespace simpler;

namespace {

PreparedInvocationView view_of(const TmrVector& v) {
    // Values outside int32 cannot be trusted views at all; clamp to an invalid id so the view is rejected.
    auto narrow = [](std::int64_t x) { return (x < INT32_MIN || x > INT32_MAX) ? -1 : static_cast<std::int32_t>(x); };
    return PreparedInvocationView{narrow(v.callable_id), narrow(v.tensor_count), narrow(v.scalar_count), v.slot_generation};
}

}  // namespace

TEST_CASE("the vector file is complete and every vector is run") {
    const auto& vs = tmr_vectors();
    CHECK(vs.size() >= 31);
    int ok = 0, reject = 0;
    for (const auto& v : vs) (v.expect_ok ? ok : reject)++;
    CHECK(ok >= 6);
    CHECK(reject >= 20);
}

TEST_CASE("every tmr vector decodes or is rejected as specified") {
    for (const TmrVector& v : tmr_vectors()) {
        CAPTURE(std::string(v.name));
        const std::vector<std::uint8_t> packet = wt::from_hex(v.hex);
        const PreparedInvocationView view = view_of(v);
        const TmrBindingRef binding{v.binding_addr, v.context_generation};

        TmrInvocationView out;
        out.header.callable_id = 4242;  // sentinel
        auto storage = std::make_unique<EntryArgsStorage>();
        storage->callable_id = 4343;
        const InvocationStatus s = decode_tmr_invocation(ByteSpan(packet.data(), packet.size()), view, binding, &out);
        const InvocationStatus c = consume_tmr_invocation(ByteSpan(packet.data(), packet.size()), view, binding, storage.get());
        CHECK(s == c);
        if (!v.expect_ok) {
            CHECK(s != InvocationStatus::Ok);
            CHECK(out.header.callable_id == 4242);
            CHECK(storage->callable_id == 4343);
            CHECK(storage->tensor_count == 0);
            continue;
        }
        REQUIRE(s == InvocationStatus::Ok);
        CHECK(out.tensor_count() == view.tensor_count);
        CHECK(out.scalar_count() == view.scalar_count);
        CHECK(storage->callable_id == view.callable_id);
        if (v.has_decoded) {
            REQUIRE(v.tensors.size() == static_cast<std::size_t>(out.tensor_count()));
            REQUIRE(v.scalars.size() == static_cast<std::size_t>(out.scalar_count()));
            for (std::size_t i = 0; i < v.tensors.size(); ++i) {
                const ChipTensor t = out.tensor(i);
                const VecTensor& e = v.tensors[i];
                CHECK(t.buffer.addr == e.addr);
                CHECK(t.buffer.size == e.size);
                CHECK(t.dtype == e.dtype);
                CHECK(t.start_offset == e.start_offset);
                REQUIRE(t.ndims == e.shapes.size());
                for (std::size_t d = 0; d < e.shapes.size(); ++d) {
                    CHECK(t.shapes[d] == e.shapes[d]);
                    CHECK(t.strides[d] == e.strides[d]);
                }
                CHECK(std::memcmp(&storage->tensors[i], &t, sizeof t) == 0);
                CHECK(storage->args[i] == static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(&storage->tensors[i])));
            }
            for (std::size_t i = 0; i < v.scalars.size(); ++i) {
                CHECK(out.scalar(i) == v.scalars[i]);
                CHECK(static_cast<std::uint64_t>(storage->args[v.tensors.size() + i]) == v.scalars[i]);
            }
        }
        // Re-encoding the decoded invocation reproduces the packet byte for byte.
        std::vector<ChipTensor> tensors(static_cast<std::size_t>(out.tensor_count()));
        for (std::size_t i = 0; i < tensors.size(); ++i) tensors[i] = out.tensor(i);
        std::vector<std::uint64_t> scalars(static_cast<std::size_t>(out.scalar_count()));
        for (std::size_t i = 0; i < scalars.size(); ++i) scalars[i] = out.scalar(i);
        std::vector<std::uint8_t> again(packet.size(), 0xee);
        REQUIRE(encode_tmr_invocation(view, binding, tensors.data(), tensors.size(), scalars.data(), scalars.size(),
                                      again.data(), again.size()) == InvocationStatus::Ok);
        CHECK(again == packet);
    }
}
