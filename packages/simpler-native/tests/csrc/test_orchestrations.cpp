// Hand-written orchestrations for the Worker tests (one binary, several entries).
// Kernels by func_id (see the children the tests register):
//   0 vadd(In, In, Out)  1 scale(In, Out, f32)  2 muladd(InOut, i64, i64)  3 copy_i64(In, Out)
//   4 matmul(In, In, Out)  5 inc(InOut)  6 empty(In)  7 stamp(Out, u64, i64)  8 fails(In)
//   9 throws(In)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <cstdint>
#include <stdexcept>

#include "simpler/runtime/orchestration.hpp"

using namespace simpler;

// c = a + b in tiles of `tile` elements.
SIMPLER_ORCHESTRATION(vadd_tiles, 3, 1)
(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    const ChipTensor &a = args->tensor(0), &b = args->tensor(1), &c = args->tensor(2);
    const std::uint32_t tile = args->scalar_as<std::uint32_t>(0);
    const std::uint32_t n = c.shapes[0];
    for (std::uint32_t off = 0; off < n; off += tile) {
        const std::uint32_t len = std::min(tile, n - off);
        ChipTensor ta = slice_1d(a, off, len), tb = slice_1d(b, off, len), tc = slice_1d(c, off, len);
        if (o.submit(0, {in(ta), in(tb), out(tc)}) < 0) return 1;
    }
    return 0;
}

// out = (a + b) * s through an intermediate in the ring heap, tiles inside a scope.
SIMPLER_ORCHESTRATION(vadd_scaled, 3, 2)
(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    const ChipTensor &a = args->tensor(0), &b = args->tensor(1), &res = args->tensor(2);
    const std::uint32_t tile = args->scalar_as<std::uint32_t>(0);
    const std::uint32_t n = a.shapes[0];
    ChipTensor tmp;
    const std::uint32_t shape[1] = {n};
    if (o.alloc_tensor(DataType::FLOAT32, 1, shape, &tmp) != 0) return 1;
    o.scope_begin();
    for (std::uint32_t off = 0; off < n; off += tile) {
        const std::uint32_t len = std::min(tile, n - off);
        ChipTensor ta = slice_1d(a, off, len), tb = slice_1d(b, off, len), tt = slice_1d(tmp, off, len);
        if (o.submit(0, {in(ta), in(tb), out(tt)}) < 0) return 1;
    }
    o.scope_end();
    if (o.submit(1, {in(tmp), out(res)}, {args->scalar(1)}) < 0) return 1;
    return 0;
}

// C = A @ B in (tile x tile) output blocks; each block reads a row panel of A and a column panel of B.
SIMPLER_ORCHESTRATION(matmul_tiles, 3, 1)
(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    const ChipTensor &A = args->tensor(0), &B = args->tensor(1), &C = args->tensor(2);
    const std::uint32_t tile = args->scalar_as<std::uint32_t>(0);
    const std::uint32_t M = C.shapes[0], N = C.shapes[1], K = A.shapes[1];
    for (std::uint32_t i = 0; i < M; i += tile)
        for (std::uint32_t j = 0; j < N; j += tile) {
            const std::uint32_t mi = std::min(tile, M - i), nj = std::min(tile, N - j);
            ChipTensor ta = slice_2d(A, i, mi, 0, K), tb = slice_2d(B, 0, K, j, nj), tc = slice_2d(C, i, mi, j, nj);
            if (o.submit(4, {in(ta), in(tb), out(tc)}) < 0) return 1;
        }
    return 0;
}

// A graph whose result depends on dependency order (x, out: int64[n]):
//   t0: tmp = x            (copy, RAW source for t1)
//   t1..: tmp = tmp*m + k  (muladd, InOut chain: RAW+WAW, applied in submission order)
//   tN: out = tmp          (copy, RAW on the chain)
//   tN+1: x = x*0 + 7      (muladd on x: WAR against t0)
SIMPLER_ORCHESTRATION(stages, 2, 1)
(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    const ChipTensor &x = args->tensor(0), &res = args->tensor(1);
    const std::int64_t rounds = args->scalar_as<std::int64_t>(0);
    ChipTensor tmp;
    const std::uint32_t shape[1] = {x.shapes[0]};
    if (o.alloc_tensor(DataType::INT64, 1, shape, &tmp) != 0) return 1;
    if (o.submit(3, {in(x), out(tmp)}) < 0) return 1;
    for (std::int64_t r = 0; r < rounds; ++r)
        if (o.submit(2, {inout(tmp)}, {scalar_bits<std::int64_t>(r % 2 == 0 ? 2 : 3), scalar_bits<std::int64_t>(r + 1)}) < 0)
            return 1;
    if (o.submit(3, {in(tmp), out(res)}) < 0) return 1;
    if (o.submit(2, {inout(x)}, {scalar_bits<std::int64_t>(0), scalar_bits<std::int64_t>(7)}) < 0) return 1;
    return 0;
}

// `count` inc tasks over the `counters` int64[slots] tensor, task i on element i % slots.
SIMPLER_ORCHESTRATION(many_incs, 1, 2)
(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    const ChipTensor& counters = args->tensor(0);
    const std::int64_t count = args->scalar_as<std::int64_t>(0);
    const std::int64_t depth = args->scalar_as<std::int64_t>(1);  // scope depth to submit at
    for (std::int64_t d = 0; d < depth; ++d) o.scope_begin();
    const std::uint32_t slots = counters.shapes[0];
    for (std::int64_t i = 0; i < count; ++i) {
        ChipTensor c = slice_1d(counters, static_cast<std::uint32_t>(i % slots), 1);
        if (o.submit(5, {inout(c)}) < 0) return 1;
    }
    for (std::int64_t d = 0; d < depth; ++d) o.scope_end();
    return 0;
}

// `count` empty tasks reading the same tensor (no dependencies between them).
SIMPLER_ORCHESTRATION(empties, 1, 1)
(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    const ChipTensor& x = args->tensor(0);
    const std::int64_t count = args->scalar_as<std::int64_t>(0);
    for (std::int64_t i = 0; i < count; ++i)
        if (o.submit(6, {in(x)}) < 0) return 1;
    return 0;
}

// Two stamps on disjoint slots; the second explicitly depends on the first (which is slow).
SIMPLER_ORCHESTRATION(explicit_dep, 1, 2)
(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    const ChipTensor& slots = args->tensor(0);
    const std::uint64_t counter = args->scalar(0);
    const std::int64_t use_dep = args->scalar_as<std::int64_t>(1);
    ChipTensor s0 = slice_1d(slots, 0, 1), s1 = slice_1d(slots, 1, 1);
    const std::int64_t first = o.submit(7, {out(s0)}, {counter, scalar_bits<std::int64_t>(2000)});
    if (first < 0) return 1;
    if (use_dep) {
        if (o.submit(7, {out(s1)}, {counter, scalar_bits<std::int64_t>(0)}, {first}) < 0) return 1;
    } else if (o.submit(7, {out(s1)}, {counter, scalar_bits<std::int64_t>(0)}) < 0) {
        return 1;
    }
    return 0;
}

// Failure cases, selected by scalar 0:
//   0 kernel reports an error   1 kernel throws   2 orchestration throws   3 unknown func_id
//   4 wrong tensor count        5 returns status 3 6 explicit dep on a bogus id
//   7 allocates more heap than the ring has inside an open scope (deadlock)
//   8 out-of-bounds view        9 direction mismatch
//   10 a task whose fan-in (6) exceeds the dependency pool (5): a slow writer, 5 readers, a writer
SIMPLER_ORCHESTRATION(failures, 1, 1)
(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    const ChipTensor& x = args->tensor(0);
    switch (args->scalar_as<std::int64_t>(0)) {
        case 0: return o.submit(8, {in(x)}) < 0;
        case 1: return o.submit(9, {in(x)}) < 0;
        case 2: throw std::runtime_error("orchestration exploded");
        case 3: return o.submit(42, {in(x)}) < 0;
        case 4: return o.submit(6, {in(x), in(x)}) < 0;
        case 5: return 3;
        case 6: return o.submit(6, {in(x)}, {}, {12345}) < 0;
        case 7: {
            o.scope_begin();
            ChipTensor a, b;
            const std::uint32_t shape[1] = {700};
            if (o.alloc_tensor(DataType::UINT8, 1, shape, &a) != 0) return 1;
            if (o.alloc_tensor(DataType::UINT8, 1, shape, &b) != 0) return 1;
            o.scope_end();
            return 0;
        }
        case 8: {
            ChipTensor v = x;
            v.shapes[0] = x.shapes[0] + 10;
            return o.submit(6, {in(v)}) < 0;
        }
        case 9: return o.submit(6, {out(x)}) < 0;
        case 10: {
            ChipTensor head = slice_1d(x, 0, 2);
            const std::uint64_t counter = x.buffer.addr + 56;  // bytes 56..64, outside `head`
            if (o.submit(7, {out(head)}, {counter, scalar_bits<std::int64_t>(100000)}) < 0) return 1;
            for (int i = 0; i < 5; ++i)
                if (o.submit(6, {in(head)}) < 0) return 1;
            return o.submit(2, {inout(head)}, {scalar_bits<std::int64_t>(1), scalar_bits<std::int64_t>(0)}) < 0;
        }
        default: return 99;
    }
}

// Interprets a list of operations on x (int64[n]) read from `ops` (int64[count, 5] rows of
// kind, a, b, len, k): kind 0 = muladd(x[a:a+len], m=2, k) (InOut), kind 1 = copy x[a:a+len] to
// x[b:b+len] (In, Out; the ranges do not overlap). Results must equal sequential execution.
SIMPLER_ORCHESTRATION(interpret, 2, 0)
(const SimplerOrchApi* api, SimplerOrchContext* ctx, const ChipStorageTaskArgs* args) {
    Orchestrator o(api, ctx);
    const ChipTensor &x = args->tensor(0), &ops = args->tensor(1);
    const auto* rows = reinterpret_cast<const std::int64_t*>(ops.buffer.addr) + ops.start_offset;
    for (std::uint32_t i = 0; i < ops.shapes[0]; ++i) {
        const std::int64_t* r = rows + static_cast<std::size_t>(i) * 5;
        const auto a = static_cast<std::uint32_t>(r[1]), b = static_cast<std::uint32_t>(r[2]);
        const auto len = static_cast<std::uint32_t>(r[3]);
        if (r[0] == 0) {
            ChipTensor v = slice_1d(x, a, len);
            if (o.submit(2, {inout(v)}, {scalar_bits<std::int64_t>(2), scalar_bits<std::int64_t>(r[4])}) < 0) return 1;
        } else {
            ChipTensor src = slice_1d(x, a, len), dst = slice_1d(x, b, len);
            if (o.submit(3, {in(src), out(dst)}) < 0) return 1;
        }
    }
    return 0;
}

// No tasks: returns once flag[0] (an int64 the host sets while the run is in flight) is
// nonzero, or fails with status 7 after `timeout_ms`. Lets a test hold an orchestration open.
SIMPLER_ORCHESTRATION(gated, 1, 1)
(const SimplerOrchApi*, SimplerOrchContext*, const ChipStorageTaskArgs* args) {
    const ChipTensor& flag = args->tensor(0);
    auto* word = reinterpret_cast<std::int64_t*>(flag.buffer.addr) + flag.start_offset;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(args->scalar_as<std::int64_t>(0));
    while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == 0) {
        if (std::chrono::steady_clock::now() > deadline) return 7;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return 0;
}
