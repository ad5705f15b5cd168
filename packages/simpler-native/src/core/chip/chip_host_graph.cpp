// The host_build_graph (HBG) runtime: the orchestration entry runs on the thread that submits
// (or launches) the run and builds the run's whole task graph through kHostGraphApi; the
// dependencies are decided there, by the tensor map's overlap rule over the whole graph
// (graph_dependencies) plus explicit ones. The run is then queued like any other; the AICPU
// orchestrator thread places the finished graph on the rings (publish_graph) and the scheduler
// and AICore threads run it exactly as they run TMR tasks. See docs/simpler-runtime.md, "The
// host_build_graph runtime".
#include <algorithm>
#include <cstring>
#include <exception>

#include "chip_internal.hpp"

namespace simpler::chip {

namespace {
std::unique_ptr<HostGraph>& spare_graph() noexcept {
    static thread_local std::unique_ptr<HostGraph> spare;
    return spare;
}
}  // namespace

std::unique_ptr<HostGraph> take_host_graph() {
    if (spare_graph()) return std::move(spare_graph());
    return std::make_unique<HostGraph>();
}

void recycle_host_graph(std::unique_ptr<HostGraph> graph) noexcept {
    HostGraph& g = *graph;
    g.blocks.clear();
    g.bytes = g.byte_cap = 0;
    g.tasks.clear();
    g.tensors.clear();
    g.directions.clear();
    g.scalars.clear();
    g.preds.clear();
    g.scratch.clear();
    g.history.reads.clear();
    g.history.writes.clear();
    const std::size_t held = g.tasks.capacity() * sizeof(HostTask) + g.tensors.capacity() * sizeof(ChipTensor) +
                             g.directions.capacity() * sizeof(ArgDirection) +
                             g.scalars.capacity() * sizeof(std::uint64_t) +
                             (g.preds.capacity() + g.scratch.capacity()) * sizeof(std::uint32_t) +
                             (g.history.reads.capacity() + g.history.writes.capacity()) * sizeof(GraphAccess);
    if (held <= kSpareGraphBytes && !spare_graph()) spare_graph() = std::move(graph);
}

// ---------------------------------------------------------------------------------------------
// Building the graph (the submitting thread owns the RunState until it is enqueued)

std::int64_t Chip::graph_submit(RunState& rs, const OrchTaskSpec* spec) {
    if (rs.failed) return -1;
    HostGraph& g = *rs.graph;
    const auto index = static_cast<std::uint32_t>(g.tasks.size());
    std::string error;
    const CoreKernel* k = check_task(*rs.program, spec, index, rs.tensors, &error);
    if (k == nullptr) {
        fail_locked(rs, error);
        return -1;
    }
    for (std::uint32_t d = 0; d < spec->dep_count; ++d) {
        const std::int64_t id = spec->deps[d];
        if (id < 0 || id >= static_cast<std::int64_t>(index)) {
            fail_locked(rs, "orchestration '" + rs.program->name + "': task " + std::to_string(index) + " (kernel " +
                                k->label() + "): explicit dependency " + std::to_string(d) + " (" + std::to_string(id) +
                                ") is not a task id returned by an earlier submit of this run");
            return -1;
        }
    }
    HostTask t;
    t.kernel = k;
    t.depth = rs.depth;
    t.tensor_begin = g.tensors.size();
    t.tensor_count = spec->tensor_count;
    for (std::uint32_t i = 0; i < spec->tensor_count; ++i) {
        g.tensors.push_back(*spec->tensors[i].tensor);
        g.directions.push_back(spec->tensors[i].direction);
    }
    t.scalar_begin = g.scalars.size();
    t.scalar_count = spec->scalar_count;
    g.scalars.insert(g.scalars.end(), spec->scalars, spec->scalars + spec->scalar_count);
    std::vector<std::uint32_t>& preds = g.scratch;
    preds.clear();
    graph_dependencies(g.history, spec, index, &preds);
    for (std::uint32_t d = 0; d < spec->dep_count; ++d) preds.push_back(static_cast<std::uint32_t>(spec->deps[d]));
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    t.pred_begin = g.preds.size();
    t.pred_count = static_cast<std::uint32_t>(preds.size());
    g.preds.insert(g.preds.end(), preds.begin(), preds.end());
    if (rs.config.dep_graph) rs.nodes.push_back(TaskNode{index, spec->func_id, k->name, preds});
    g.tasks.push_back(t);
    return static_cast<std::int64_t>(index);
}

std::int32_t Chip::graph_scope_end(RunState& rs) {
    if (rs.depth == 0) {
        fail_locked(rs, "orchestration '" + rs.program->name + "': scope_end without a matching scope_begin");
        return 1;
    }
    --rs.depth;  // the scope's intermediates stay: every one lives until the run ends
    return 0;
}

std::int32_t Chip::graph_alloc(RunState& rs, DataType dtype, std::uint32_t ndims, const std::uint32_t* shape,
                               ChipTensor* out) {
    if (rs.failed) return 1;
    const std::string what = "orchestration '" + rs.program->name + "': alloc_tensor";
    std::uint64_t bytes = 0;
    const std::string bad = alloc_request_error(dtype, ndims, shape, out, &bytes);
    if (!bad.empty()) {
        fail_locked(rs, what + ": " + bad);
        return 1;
    }
    HostGraph& g = *rs.graph;
    const std::uint64_t reserve = (bytes + 63) / 64 * 64;
    if (reserve > g.byte_cap - std::min(g.bytes, g.byte_cap)) {
        fail_locked(rs, what + ": " + std::to_string(reserve) + " bytes would exceed the host-built graph's " +
                            std::to_string(g.byte_cap) + " bytes for intermediate tensors (" + std::to_string(g.bytes) +
                            " in use): host_build_graph keeps every intermediate until the run ends, within " +
                            (rs.config.workspace_budget_bytes != 0 ? "workspace_budget_bytes"
                                                                   : "the sum of the four rings' heap sizes"));
        return 1;
    }
    std::unique_ptr<std::uint8_t, AlignedFree> block(static_cast<std::uint8_t*>(std::aligned_alloc(64, reserve)));
    if (!block) {
        fail_locked(rs, what + ": cannot allocate " + std::to_string(reserve) + " bytes");
        return 1;
    }
    describe_alloc(out, reinterpret_cast<std::uint64_t>(block.get()), bytes, dtype, ndims, shape);
    g.blocks.push_back(std::move(block));
    g.bytes += reserve;
    rs.workspace_used = g.bytes;
    return 0;
}

void Chip::build_on_host(Pending& p) {
    if (p.kernel_launch) {
        // The copied packet is decoded and validated here, where HBG's orchestration runs.
        p.kernel_launch = false;
        p.rejected = consume_kernel_launch(p);
        if (!p.rejected.empty()) return;
    }
    auto owned = std::make_unique<RunState>();
    RunState& rs = *owned;
    rs.program_ref = std::move(p.program);
    rs.program = rs.program_ref.get();
    rs.config = p.config;
    rs.tensors = std::move(p.tensors);
    rs.scalars = std::move(p.scalars);
    rs.graph = take_host_graph();
    if (rs.config.workspace_budget_bytes != 0) {
        rs.graph->byte_cap = rs.config.workspace_budget_bytes;
    } else {
        for (std::uint64_t h : rs.config.heap) rs.graph->byte_cap += h;
    }
    rs.t0 = now_ns();
    call_entry(rs, &kHostGraphApi);
    rs.depth = 0;  // scopes left open end with the orchestration
    p.built = std::move(owned);
}

void Chip::call_entry(RunState& rs, const SimplerOrchApi* api) {
    ChipStorageTaskArgs args{};
    args.abi_version = kOrchestrationAbiVersion;
    args.tensor_count = static_cast<std::uint32_t>(rs.tensors.size());
    args.scalar_count = static_cast<std::uint32_t>(rs.scalars.size());
    args.tensors = rs.tensors.data();
    args.scalars = rs.scalars.data();
    SimplerOrchContext ctx{this, &rs};
    const auto what = [&rs] { return "orchestration '" + rs.program->name + "'"; };  // for a message only
    rs.orch_start = now_ns();
    try {
        const std::int32_t status = rs.program->entry(api, &ctx, &args);
        if (status != 0) orch_fail(rs, what() + " returned status " + std::to_string(status));
    } catch (const std::exception& e) {
        orch_fail(rs, what() + " threw " + e.what());
    } catch (...) {
        orch_fail(rs, what() + " threw a non-standard exception");
    }
    rs.orch_end = now_ns();
}

// ---------------------------------------------------------------------------------------------
// Placing the graph (the AICPU orchestrator thread)

void Chip::publish_graph(RunState& rs) {
    const HostGraph& g = *rs.graph;
    std::unique_lock<std::mutex> lk(mu_);
    if (rs.failed) return;  // a graph whose build failed runs none of its tasks
    // A graph starts once earlier runs have finished: its dependencies were decided within the
    // graph, so nothing orders it after another run's tasks but this.
    orch_wait_locked(lk, [&] { return in_flight_ == 0 || stop_.load(); });
    std::vector<std::pair<Task*, std::uint64_t>> placed(g.tasks.size());  // task slot and its seq
    std::vector<OrchTensorArg> args;
    for (std::uint32_t index = 0; index < g.tasks.size(); ++index) {
        const HostTask& h = g.tasks[index];
        const int r = static_cast<int>(std::min<std::uint32_t>(h.depth, kRingCount - 1));
        auto label = [&] {
            return "orchestration '" + rs.program->name + "': task " + std::to_string(index) + " (kernel " +
                   h.kernel->label() + ")";
        };
        const bool admitted = admit_task_locked(lk, rs, r, label, [&](std::vector<Task*>& preds) {
            for (std::size_t i = h.pred_begin; i < h.pred_begin + h.pred_count; ++i) {
                const std::uint32_t p = g.preds[i];
                Task* t = placed[p].first;
                if (t->seq == placed[p].second && t->state != Task::State::Done && t->state != Task::State::Free)
                    preds.push_back(t);
            }
        });
        if (!admitted) return;
        args.resize(h.tensor_count);
        for (std::uint32_t i = 0; i < h.tensor_count; ++i)
            args[i] = OrchTensorArg{&g.tensors[h.tensor_begin + i], g.directions[h.tensor_begin + i]};
        const OrchTaskSpec spec{h.kernel->func_id, h.tensor_count, h.scalar_count, 0, args.data(),
                                g.scalars.data() + h.scalar_begin, nullptr};
        Task& t = place_task_locked(rs, r, h.kernel, index, &spec, preds_);
        placed[index] = {&t, t.seq};
        dispatch_placed_locked(rs, t);
    }
}

}  // namespace simpler::chip
