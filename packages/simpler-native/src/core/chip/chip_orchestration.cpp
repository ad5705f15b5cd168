// The orchestration function tables: what an orchestration entry calls (submit,
// scope_begin/scope_end, alloc_tensor, report_error): kOrchApi on the AICPU orchestrator thread
// (TMR), kHostGraphApi on the submitting host thread (HBG, implemented in chip_host_graph.cpp).
#include <algorithm>
#include <cstring>
#include <exception>

#include "chip_internal.hpp"

namespace simpler::chip {

namespace {

std::int64_t api_submit(SimplerOrchContext* ctx, const OrchTaskSpec* spec) {
    return ctx->chip->orch_submit(*ctx->state, spec);
}
std::int32_t api_scope_begin(SimplerOrchContext* ctx) { return ctx->chip->orch_scope_begin(*ctx->state); }
std::int32_t api_scope_end(SimplerOrchContext* ctx) { return ctx->chip->orch_scope_end(*ctx->state); }
std::int32_t api_alloc(SimplerOrchContext* ctx, DataType dtype, std::uint32_t ndims, const std::uint32_t* shape,
                       ChipTensor* out) {
    return ctx->chip->orch_alloc(*ctx->state, dtype, ndims, shape, out);
}
void api_report_error(SimplerOrchContext* ctx, const char* message) {
    ctx->chip->orch_fail(*ctx->state, std::string("orchestration '") + ctx->state->program->name +
                                          "' reported: " + (message != nullptr ? message : "(null)"));
}

std::int64_t graph_submit(SimplerOrchContext* ctx, const OrchTaskSpec* spec) {
    return ctx->chip->graph_submit(*ctx->state, spec);
}
std::int32_t graph_scope_begin(SimplerOrchContext* ctx) {
    ++ctx->state->depth;  // the building thread owns the run until it is enqueued
    return 0;
}
std::int32_t graph_scope_end(SimplerOrchContext* ctx) { return ctx->chip->graph_scope_end(*ctx->state); }
std::int32_t graph_alloc(SimplerOrchContext* ctx, DataType dtype, std::uint32_t ndims, const std::uint32_t* shape,
                         ChipTensor* out) {
    return ctx->chip->graph_alloc(*ctx->state, dtype, ndims, shape, out);
}

}  // namespace

const SimplerOrchApi kOrchApi = {
    kOrchestrationAbiVersion, sizeof(SimplerOrchApi), api_submit, api_scope_begin, api_scope_end, api_alloc,
    api_report_error,
};

const SimplerOrchApi kHostGraphApi = {
    kOrchestrationAbiVersion, sizeof(SimplerOrchApi), graph_submit, graph_scope_begin, graph_scope_end, graph_alloc,
    api_report_error,
};

// ---------------------------------------------------------------------------------------------
// Argument vectors, recycled per thread

namespace {

// Above this many tensors or scalars a run's vectors are freed, not kept.
constexpr std::size_t kRecycledArguments = 64;

struct SpareArguments {
    std::vector<ChipTensor> tensors;
    std::vector<std::uint64_t> scalars;
};

SpareArguments& spare_arguments() noexcept {
    static thread_local SpareArguments spare;
    return spare;
}

}  // namespace

void Chip::argument_vectors(std::vector<ChipTensor>* tensors, std::vector<std::uint64_t>* scalars) noexcept {
    SpareArguments& spare = spare_arguments();
    *tensors = std::move(spare.tensors);
    *scalars = std::move(spare.scalars);
    tensors->clear();
    scalars->clear();
}

void Chip::recycle_arguments(std::vector<ChipTensor>&& tensors, std::vector<std::uint64_t>&& scalars) noexcept {
    SpareArguments& spare = spare_arguments();
    if (tensors.capacity() <= kRecycledArguments && tensors.capacity() > spare.tensors.capacity())
        spare.tensors = std::move(tensors);
    if (scalars.capacity() <= kRecycledArguments && scalars.capacity() > spare.scalars.capacity())
        spare.scalars = std::move(scalars);
}

// ---------------------------------------------------------------------------------------------
// The orchestration function table

std::int32_t Chip::orch_scope_begin(RunState& rs) {
    std::lock_guard<std::mutex> lk(mu_);
    ++rs.depth;
    return 0;
}

std::int32_t Chip::orch_scope_end(RunState& rs) {
    std::lock_guard<std::mutex> lk(mu_);
    if (rs.depth == 0) {
        fail_locked(rs, "orchestration '" + rs.program->name + "': scope_end without a matching scope_begin");
        return 1;
    }
    for (auto& ring : rings_)
        for (auto& b : ring->blocks)
            if (!b.closed && b.depth == rs.depth && b.run_id == rs.run->id()) {
                b.closed = true;
                for (int r = 0; r < kRingCount; ++r) b.release_after[r] = rings_[r]->next;
            }
    --rs.depth;
    retire_locked();
    return 0;
}

std::int32_t Chip::orch_alloc(RunState& rs, DataType dtype, std::uint32_t ndims, const std::uint32_t* shape,
                              ChipTensor* out) {
    const std::string what = "orchestration '" + rs.program->name + "': alloc_tensor";
    std::unique_lock<std::mutex> lk(mu_);
    if (rs.failed) return 1;
    std::uint64_t bytes = 0;
    const std::string bad = alloc_request_error(dtype, ndims, shape, out, &bytes);
    if (!bad.empty()) {
        fail_locked(rs, what + ": " + bad);
        return 1;
    }
    const std::uint64_t reserve = (bytes + 63) / 64 * 64;
    const int r = static_cast<int>(std::min<std::uint32_t>(rs.depth, kRingCount - 1));
    Ring& ring = *rings_[r];
    if (rs.config.workspace_budget_bytes != 0 && rs.workspace_used + reserve > rs.config.workspace_budget_bytes) {
        fail_locked(rs, what + ": " + std::to_string(reserve) + " bytes would exceed workspace_budget_bytes " +
                            std::to_string(rs.config.workspace_budget_bytes) + " (" +
                            std::to_string(rs.workspace_used) + " in use)");
        return 1;
    }
    if (reserve > ring.heap_cap) {
        fail_locked(rs, what + ": " + std::to_string(reserve) + " bytes can never fit ring " + std::to_string(r) +
                            "'s heap of " + std::to_string(ring.heap_cap) + " bytes");
        return 1;
    }
    if (!ring.heap) {
        ring.heap.reset(static_cast<std::uint8_t*>(std::aligned_alloc(64, (ring.heap_cap + 63) / 64 * 64)));
        if (!ring.heap) {
            fail_locked(rs, what + ": cannot allocate ring " + std::to_string(r) + "'s heap");
            return 1;
        }
    }
    // FIFO ring-buffer allocation: live blocks occupy [head, tail) or, wrapped, [head, cap) and
    // [0, tail). A block that does not fit before the end starts again at offset 0.
    std::uint64_t offset = 0;
    auto try_alloc = [&]() {
        if (ring.blocks.empty()) {
            ring.heap_head = ring.heap_tail = 0;
            offset = 0;
            return reserve <= ring.heap_cap;
        }
        if (ring.heap_tail > ring.heap_head) {  // not wrapped
            if (ring.heap_cap - ring.heap_tail >= reserve) {
                offset = ring.heap_tail;
                return true;
            }
            if (ring.heap_head >= reserve) {
                offset = 0;
                return true;
            }
            return false;
        }
        if (ring.heap_head - ring.heap_tail >= reserve) {  // wrapped
            offset = ring.heap_tail;
            return true;
        }
        return false;
    };
    const bool ok = orch_wait_locked(lk, [&] {
        if (try_alloc() || rs.failed) return true;
        // No progress possible: nothing in flight, or the oldest block's scope is still open.
        if (!ring.blocks.empty() && !ring.blocks.front().closed) return true;
        return in_flight_ == 0;
    });
    if (rs.failed) return 1;
    if (!ok || !try_alloc()) {
        std::uint64_t open_bytes = 0;
        for (const auto& b : ring.blocks)
            if (!b.closed) open_bytes += b.size;
        fail_locked(rs, what + ": deadlock: ring " + std::to_string(r) + "'s heap of " + std::to_string(ring.heap_cap) +
                            " bytes cannot fit " + std::to_string(reserve) + " bytes; " + std::to_string(open_bytes) +
                            " bytes are held by scopes that are still open");
        return 1;
    }
    HeapBlock b;
    b.offset = offset;
    b.size = reserve;
    b.depth = rs.depth;
    b.run_id = rs.run->id();
    if (ring.blocks.empty()) ring.heap_head = offset;
    ring.blocks.push_back(b);
    ring.heap_used += reserve;
    ring.heap_tail = offset + reserve;
    rs.workspace_used += reserve;

    describe_alloc(out, reinterpret_cast<std::uint64_t>(ring.heap.get()) + offset, bytes, dtype, ndims, shape);
    return 0;
}

std::string alloc_request_error(DataType dtype, std::uint32_t ndims, const std::uint32_t* shape, const ChipTensor* out,
                                std::uint64_t* bytes) {
    const auto code = static_cast<std::uint8_t>(dtype);
    if (!is_known_dtype(code)) return "unknown dtype code " + std::to_string(code);
    if (ndims < 1 || ndims > kMaxTensorDims || shape == nullptr || out == nullptr)
        return "expected 1.." + std::to_string(kMaxTensorDims) + " dims with a shape and an output, got ndims " +
               std::to_string(ndims);
    std::uint64_t elems = 1;
    for (std::uint32_t i = 0; i < ndims; ++i)
        if (__builtin_mul_overflow(elems, static_cast<std::uint64_t>(shape[i]), &elems)) return "shape overflows";
    std::uint64_t bits = 0;
    if (__builtin_mul_overflow(elems, static_cast<std::uint64_t>(dtype_bits(code)), &bits) || bits > (UINT64_MAX - 7 - 63 * 8))
        return "shape overflows";
    *bytes = std::max<std::uint64_t>((bits + 7) / 8, 1);
    return {};
}

void describe_alloc(ChipTensor* out, std::uint64_t addr, std::uint64_t bytes, DataType dtype, std::uint32_t ndims,
                    const std::uint32_t* shape) {
    std::memset(out, 0, sizeof(ChipTensor));
    out->buffer.addr = addr;
    out->buffer.size = bytes;
    out->ndims = ndims;
    out->dtype = static_cast<std::uint8_t>(dtype);
    out->address_space = static_cast<std::uint8_t>(AddressSpace::DEVICE);
    std::uint64_t stride = 1;
    for (std::uint32_t i = ndims; i-- > 0;) {
        out->shapes[i] = shape[i];
        out->strides[i] = static_cast<std::uint32_t>(stride);
        stride *= std::max<std::uint32_t>(shape[i], 1);
    }
    out->is_contiguous = 1;
}

const CoreKernel* Chip::check_task(const ChipProgram& program, const OrchTaskSpec* spec, std::uint32_t index,
                                   const std::vector<ChipTensor>& checked, std::string* error) const {
    // Messages are built only on failure: the success path allocates nothing here.
    auto task = [&] { return "orchestration '" + program.name + "': task " + std::to_string(index); };
    if (spec == nullptr) {
        *error = task() + ": submit got a null task";
        return nullptr;
    }
    const CoreKernel* k = program.kernel(spec->func_id);
    if (k == nullptr) {
        std::string ids;
        for (const auto& [id, kk] : program.kernels) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
        *error = task() + ": func_id " + std::to_string(spec->func_id) + " is not a child of this callable (children: " +
                 (ids.empty() ? "none" : ids) + ")";
        return nullptr;
    }
    auto label = [&] { return task() + " (kernel " + k->label() + ")"; };
    if (spec->tensor_count != k->tensor_count || spec->scalar_count != k->scalar_count) {
        *error = label() + ": expected " + std::to_string(k->tensor_count) + " tensors and " +
                 std::to_string(k->scalar_count) + " scalars, got " + std::to_string(spec->tensor_count) + " and " +
                 std::to_string(spec->scalar_count);
        return nullptr;
    }
    if ((spec->tensor_count && spec->tensors == nullptr) || (spec->scalar_count && spec->scalars == nullptr) ||
        (spec->dep_count && spec->deps == nullptr)) {
        *error = label() + ": null argument array";
        return nullptr;
    }
    for (std::uint32_t i = 0; i < spec->tensor_count; ++i) {
        const OrchTensorArg& a = spec->tensors[i];
        if (a.tensor == nullptr) {
            *error = label() + ": tensor " + std::to_string(i) + " is null";
            return nullptr;
        }
        if (a.direction != k->signature[i]) {
            *error = label() + ": tensor " + std::to_string(i) + " is tagged " + direction_name(a.direction) +
                     " but the kernel signature says " + direction_name(k->signature[i]);
            return nullptr;
        }
        // An argument of the run as submitted (read-only to the orchestration) passed
        // tensor_ok at submit; any other descriptor is checked here.
        const auto at = reinterpret_cast<std::uintptr_t>(a.tensor) - reinterpret_cast<std::uintptr_t>(checked.data());
        const bool argument = at < checked.size() * sizeof(ChipTensor) && at % sizeof(ChipTensor) == 0;
        if (!argument && !tensor_ok(*a.tensor)) {
            try {
                check_tensor(*a.tensor, label() + ": tensor " + std::to_string(i));
            } catch (const std::exception& e) {
                *error = e.what();
                return nullptr;
            }
        }
    }
    return k;
}

std::int64_t Chip::orch_submit(RunState& rs, const OrchTaskSpec* spec) {
    const std::uint32_t index = rs.submitted;
    std::string error;
    const CoreKernel* k = check_task(*rs.program, spec, index, rs.tensors, &error);
    if (k == nullptr) {
        orch_fail(rs, error);
        return -1;
    }
    auto label = [&] {
        return "orchestration '" + rs.program->name + "': task " + std::to_string(index) + " (kernel " + k->label() + ")";
    };

    std::unique_lock<std::mutex> lk(mu_);
    if (rs.failed) return -1;
    const int r = static_cast<int>(std::min<std::uint32_t>(rs.depth, kRingCount - 1));
    // Explicit dependencies must name earlier tasks of this run.
    for (std::uint32_t d = 0; d < spec->dep_count; ++d) {
        const std::int64_t id = spec->deps[d];
        const int dr = static_cast<int>(static_cast<std::uint64_t>(id) >> 48);
        const std::uint64_t dseq = static_cast<std::uint64_t>(id) & ((std::uint64_t{1} << 48) - 1);
        if (id < 0 || dr >= kRingCount || dseq < rings_[dr]->run_start || dseq >= rings_[dr]->next) {
            fail_locked(rs, label() + ": explicit dependency " + std::to_string(d) + " (" + std::to_string(id) +
                                ") is not a task id returned by an earlier submit of this run");
            return -1;
        }
    }

    // Dependencies from overlapping regions against tasks that are still in flight, plus the
    // explicit ones that have not finished.
    const bool admitted = admit_task_locked(lk, rs, r, label, [&](std::vector<Task*>& preds) {
        auto add_pred = [&](Task* p) {
            if (std::find(preds.begin(), preds.end(), p) == preds.end()) preds.push_back(p);
        };
        auto& map = tensor_map_;
        for (std::size_t e = 0; e < map.size();) {
            MapEntry& en = map[e];
            if (en.task->state == Task::State::Done || en.task->seq != en.seq ||
                en.task->state == Task::State::Free) {
                en = map.back();
                map.pop_back();
                continue;
            }
            ++e;
        }
        regions_.resize(spec->tensor_count);
        for (std::uint32_t i = 0; i < spec->tensor_count; ++i) {
            const ChipTensor& view = *spec->tensors[i].tensor;
            std::uint64_t lo = 0, hi = 0;
            regions_[i] = {0, 0};  // empty: touches nothing
            if (!tensor_region(view, &lo, &hi)) continue;
            regions_[i] = {lo, hi};
            const ArgDirection dir = spec->tensors[i].direction;
            const bool reads = dir != ArgDirection::Out;
            const bool writes = dir != ArgDirection::In;
            for (const MapEntry& en : map)
                if (en.lo < hi && lo < en.hi && (writes || (reads && en.write)) && tensors_may_overlap(*en.tensor, view))
                    add_pred(en.task);
        }
        for (std::uint32_t d = 0; d < spec->dep_count; ++d) {
            const auto id = static_cast<std::uint64_t>(spec->deps[d]);
            Ring& dring = *rings_[id >> 48];
            const std::uint64_t dseq = id & ((std::uint64_t{1} << 48) - 1);
            if (dseq < dring.head) continue;  // retired
            Task* p = &dring.slots[dseq & dring.mask];
            if (p->seq == dseq && p->state != Task::State::Done && p->state != Task::State::Free) add_pred(p);
        }
    });
    if (!admitted) return -1;

    Task& t = place_task_locked(rs, r, k, index, spec, preds_);
    for (std::uint32_t i = 0; i < spec->tensor_count; ++i) {
        // The copy's region is the spec tensor's (collected above; a nonempty one has hi > lo).
        const auto [lo, hi] = regions_[i];
        if (hi == lo) continue;
        if (spec->tensors[i].direction != ArgDirection::In) {
            // A write that covers every element of an older entry is ordered after it (WAR/WAW
            // above), so later accesses need only depend on this task: drop covered entries
            // (keeps fan-in small). Covered elements, not bytes: a strided write whose byte
            // range spans an older entry's may leave the older entry's elements untouched.
            auto& map = tensor_map_;
            for (std::size_t e = 0; e < map.size();) {
                if (map[e].task != &t && map[e].lo >= lo && map[e].hi <= hi && tensor_covers(t.tensors[i], *map[e].tensor)) {
                    map[e] = map.back();
                    map.pop_back();
                    continue;
                }
                ++e;
            }
        }
        tensor_map_.push_back(MapEntry{lo, hi, &t.tensors[i], &t, t.seq, spec->tensors[i].direction != ArgDirection::In});
    }
    const auto task_id = static_cast<std::int64_t>((static_cast<std::uint64_t>(r) << 48) | t.seq);
    if (rs.config.dep_graph) record_graph_node(rs, t, spec, index, task_id);
    dispatch_placed_locked(rs, t);
    return task_id;
}

Chip::Task& Chip::place_task_locked(RunState& rs, int r, const CoreKernel* k, std::uint32_t index,
                                    const OrchTaskSpec* spec, const std::vector<Task*>& preds) {
    Ring& ring = *rings_[r];
    const std::uint64_t seq = ring.next++;
    Task& t = ring.slots[seq & ring.mask];
    t.seq = seq;
    t.ring = r;
    t.index = index;
    t.kernel = k;
    t.run = &rs;
    t.tensors.resize(spec->tensor_count);
    for (std::uint32_t i = 0; i < spec->tensor_count; ++i) {
        t.tensors[i] = *spec->tensors[i].tensor;
        t.tensors[i].owner_task_id = seq;
    }
    t.args.resize(spec->tensor_count + spec->scalar_count);
    for (std::uint32_t i = 0; i < spec->tensor_count; ++i) t.args[i] = reinterpret_cast<std::int64_t>(&t.tensors[i]);
    for (std::uint32_t i = 0; i < spec->scalar_count; ++i)
        t.args[spec->tensor_count + i] = static_cast<std::int64_t>(spec->scalars[i]);
    t.successors.clear();
    t.edges = static_cast<std::uint32_t>(preds.size());
    t.fanin = static_cast<std::int32_t>(preds.size());
    ring.dep_used += t.edges;
    for (Task* p : preds) p->successors.push_back(&t);
    return t;
}

void Chip::dispatch_placed_locked(RunState& rs, Task& t) {
    ++rs.submitted;
    ++rs.outstanding;
    ++in_flight_;
    if (t.fanin == 0) {
        if (rs.lanes > 0) {
            t.state = Task::State::Pending;  // a scheduler thread dispatches it
            post_locked(&t, SchedEvent{});
        } else {
            push_ready_locked(&t);
        }
    } else {
        t.state = Task::State::Pending;
    }
}

void graph_dependencies(GraphHistory& history, const OrchTaskSpec* spec, std::uint32_t index,
                        std::vector<std::uint32_t>* deps) {
    for (std::uint32_t i = 0; i < spec->tensor_count; ++i) {
        const ChipTensor& view = *spec->tensors[i].tensor;
        std::uint64_t lo = 0, hi = 0;
        if (!tensor_region(view, &lo, &hi)) continue;
        auto depend_on = [&](const std::vector<GraphAccess>& accesses) {
            for (const GraphAccess& a : accesses)
                if (a.lo < hi && lo < a.hi && tensors_may_overlap(a.tensor, view)) deps->push_back(a.index);
        };
        depend_on(history.writes);
        if (spec->tensors[i].direction != ArgDirection::In) depend_on(history.reads);
    }
    for (std::uint32_t i = 0; i < spec->tensor_count; ++i) {
        const ChipTensor& view = *spec->tensors[i].tensor;
        std::uint64_t lo = 0, hi = 0;
        if (!tensor_region(view, &lo, &hi)) continue;
        const bool writes = spec->tensors[i].direction != ArgDirection::In;
        if (writes) {  // a covering write orders every later access after it: drop what it covers
            for (auto* accesses : {&history.reads, &history.writes}) {
                auto& h = *accesses;
                for (std::size_t e = 0; e < h.size();) {
                    if (h[e].lo >= lo && h[e].hi <= hi && tensor_covers(view, h[e].tensor)) {
                        h[e] = h.back();
                        h.pop_back();
                        continue;
                    }
                    ++e;
                }
            }
        }
        (writes ? history.writes : history.reads).push_back(GraphAccess{lo, hi, view, index});
    }
}

// The task's node in the run's dependency graph: every earlier task of the run it depends on
// (the same overlap and coverage rules as the scheduler's tensor map, but against the run's
// whole history, finished tasks included) plus its explicit dependencies.
void Chip::record_graph_node(RunState& rs, const Task& t, const OrchTaskSpec* spec, std::uint32_t index,
                             std::int64_t task_id) {
    std::vector<std::uint32_t> deps;
    graph_dependencies(rs.history, spec, index, &deps);
    for (std::uint32_t d = 0; d < spec->dep_count; ++d) {
        auto it = rs.index_of_id.find(spec->deps[d]);
        if (it != rs.index_of_id.end()) deps.push_back(it->second);
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    rs.nodes.push_back(TaskNode{index, spec->func_id, t.kernel->name, std::move(deps)});
    rs.index_of_id[task_id] = index;
}

}  // namespace simpler::chip
