// The transport adapter (revalidation, copy-on-enqueue, block framing) and the packet pool.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "simpler/wire/consume.hpp"
#include "simpler/wire/encoding_cache.hpp"
#include "simpler/wire/packet_pool.hpp"
#include "simpler/wire/transport.hpp"
#include "wire_test_util.hpp"

using namespace simpler;

namespace {

class RecordingRunner final : public AicpuPayloadRunner {
  public:
    int launch_aicpu_payload(const void* block, std::size_t bytes) noexcept override {
        ++calls;
        last.assign(static_cast<const std::uint8_t*>(block), static_cast<const std::uint8_t*>(block) + bytes);
        return 0;
    }
    int calls = 0;
    std::vector<std::uint8_t> last;
};

TmrCandidate make_candidate(const PreparedInvocationView& v, const TmrBindingRef& b) {
    TmrEncodingCache cache;
    std::vector<ChipTensor> t(static_cast<std::size_t>(v.tensor_count), wt::tile32());
    std::vector<std::uint64_t> s(static_cast<std::size_t>(v.scalar_count), 9);
    TmrCandidate c;
    REQUIRE(cache.encode(v, b, t.data(), t.size(), s.data(), s.size(), &c) == InvocationStatus::Ok);
    return c;
}

}  // namespace

TEST_CASE("enqueue hands the prefixed block to the runner") {
    const auto v = wt::view(3, 1, 1);
    const auto b = wt::binding();
    TmrCandidate c = make_candidate(v, b);
    RecordingRunner runner;
    const EnqueueOutcome r = enqueue_tmr_invocation_aicpu(runner, c, v, b);
    CHECK(r.ok());
    REQUIRE(runner.calls == 1);
    REQUIRE(runner.last.size() == 8 + tmr_invocation_size(1, 1));
    std::uint64_t prefix = 0;
    std::memcpy(&prefix, runner.last.data(), 8);
    CHECK(prefix == tmr_invocation_size(1, 1));
    CHECK(std::memcmp(runner.last.data() + 8, c.packet().data, c.packet_bytes()) == 0);
}

TEST_CASE("enqueue revalidates the candidate against the trusted metadata") {
    const auto v = wt::view(3, 1, 1, 4);
    const auto b = wt::binding();
    TmrCandidate c = make_candidate(v, b);
    RecordingRunner runner;
    CHECK(enqueue_tmr_invocation_aicpu(runner, c, wt::view(3, 1, 1, 5), b).status == InvocationStatus::StaleCallable);
    CHECK(enqueue_tmr_invocation_aicpu(runner, c, wt::view(4, 1, 1, 4), b).status == InvocationStatus::StaleCallable);
    CHECK(enqueue_tmr_invocation_aicpu(runner, c, wt::view(3, 2, 1, 4), b).status == InvocationStatus::InvalidSize);
    CHECK(enqueue_tmr_invocation_aicpu(runner, c, v, wt::binding(0x7f0000001000ull, 10)).status ==
          InvocationStatus::InvalidBinding);
    CHECK(enqueue_tmr_invocation_aicpu(runner, c, wt::view(64, 1, 1), b).status == InvocationStatus::InvalidArgument);
    TmrCandidate empty;
    CHECK(enqueue_tmr_invocation_aicpu(runner, empty, v, b).status == InvocationStatus::InvalidSize);
    // A candidate whose owned bytes were corrupted after encoding is caught before the runner.
    TmrCandidate corrupt = make_candidate(v, b);
    const_cast<std::uint8_t*>(corrupt.block())[8 + 36] = 1;  // reserved
    CHECK(enqueue_tmr_invocation_aicpu(runner, corrupt, v, b).status == InvocationStatus::InvalidHeader);
    TmrCandidate prefix_lie = make_candidate(v, b);
    const_cast<std::uint8_t*>(prefix_lie.block())[0] ^= 1;
    CHECK(enqueue_tmr_invocation_aicpu(runner, prefix_lie, v, b).status == InvocationStatus::InvalidSize);
    TmrCandidate binding_lie = make_candidate(v, b);
    const_cast<std::uint8_t*>(binding_lie.block())[8 + 48] ^= 1;
    CHECK(enqueue_tmr_invocation_aicpu(runner, binding_lie, v, b).status == InvocationStatus::InvalidBinding);
    CHECK(runner.calls == 0);
}

TEST_CASE("copy-on-enqueue: the caller may overwrite and free its block at once") {
    PacketBufferPool pool;
    PacketQueue queue;
    CopyingAicpuRunner runner(pool, queue);
    const auto v = wt::view(6, 1, 1);
    const auto b = wt::binding();
    std::vector<std::uint64_t> expected;
    for (std::uint64_t i = 0; i < 8; ++i) {
        TmrEncodingCache cache;
        ChipTensor t = wt::tile32(0x10000 + i * 0x1000);
        const std::uint64_t s = 100 + i;
        auto c = std::make_unique<TmrCandidate>();
        REQUIRE(cache.encode(v, b, &t, 1, &s, 1, c.get()) == InvocationStatus::Ok);
        REQUIRE(enqueue_tmr_invocation_aicpu(runner, *c, v, b).ok());
        std::memset(const_cast<std::uint8_t*>(c->block()), 0xa5, c->block_bytes());
        c.reset();  // the host packet is freed
        expected.push_back(s);
    }
    auto storage = std::make_unique<EntryArgsStorage>();
    for (std::uint64_t i = 0; i < 8; ++i) {
        auto blk = queue.try_pop();
        REQUIRE(blk.has_value());
        ByteSpan packet;
        REQUIRE(tmr_block_packet(blk->data(), blk->size(), &packet) == InvocationStatus::Ok);
        REQUIRE(consume_tmr_invocation(packet, v, b, storage.get()) == InvocationStatus::Ok);
        CHECK(storage->scalars[0] == expected[i]);
        CHECK(storage->tensors[0].buffer.addr == 0x10000 + i * 0x1000);
    }
}

TEST_CASE("block framing on the device side") {
    std::vector<std::uint8_t> block(8 + 56, 0);
    ByteSpan out(reinterpret_cast<const void*>(0x1), 1);
    wt::put<std::uint64_t>(block, 0, 56);
    CHECK(tmr_block_packet(block.data(), block.size(), &out) == InvocationStatus::Ok);
    CHECK(out.size == 56);
    CHECK(out.data == block.data() + 8);
    const ByteSpan before = out;
    wt::put<std::uint64_t>(block, 0, 57);
    CHECK(tmr_block_packet(block.data(), block.size(), &out) == InvocationStatus::InvalidSize);
    wt::put<std::uint64_t>(block, 0, ~0ull);
    CHECK(tmr_block_packet(block.data(), block.size(), &out) == InvocationStatus::InvalidSize);
    CHECK(tmr_block_packet(block.data(), 7, &out) == InvocationStatus::InvalidSize);
    CHECK(tmr_block_packet(nullptr, 64, &out) == InvocationStatus::InvalidSize);
    CHECK(out.data == before.data);
    CHECK(out.size == before.size);
}

TEST_CASE("the pool releases each buffer exactly once and clearing the queue releases everything held") {
    PacketBufferPool pool(4);
    {
        PacketQueue queue;
        for (int i = 0; i < 10; ++i) {
            PooledBuffer b = pool.acquire(64 + static_cast<std::size_t>(i));
            REQUIRE(b);
            std::memset(b.data(), i, b.size());
            queue.push(std::move(b));
        }
        CHECK(pool.outstanding() == 10);
        auto one = queue.try_pop();
        REQUIRE(one.has_value());
        PooledBuffer moved = std::move(*one);  // a moved-from handle releases nothing
        one.reset();
        CHECK(pool.outstanding() == 10);
        moved.reset();
        moved.reset();  // a second reset is a no-op
        CHECK(pool.released() == 1);
        CHECK(queue.clear() == 9);
        CHECK(pool.outstanding() == 0);
        CHECK(pool.released() == 10);
        CHECK(queue.clear() == 0);
        CHECK(pool.released() == 10);
        CHECK(pool.free_buffers() == 4);  // bounded free list
        // Reuse: a buffer comes back from the free list.
        PooledBuffer again = pool.acquire(32);
        CHECK(pool.free_buffers() == 3);
        queue.push(std::move(again));
        CHECK(pool.outstanding() == 1);
    }  // the queue's destructor releases what it still holds
    CHECK(pool.outstanding() == 0);
    CHECK(pool.acquired() == pool.released());
}
