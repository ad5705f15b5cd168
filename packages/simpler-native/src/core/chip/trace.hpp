// Diagnostics of one run: the swimlane (Chrome trace-event JSON, one track per AICPU/AICore
// thread, one slice per task; opens in Perfetto and chrome://tracing) and the dependency graph
// (JSON: one node per task with the indices of every earlier task of the run it depends on).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace simpler::chip {

inline constexpr std::int64_t kOrchestrationSlice = -1;  // TraceSlice::task of the orchestration
inline constexpr std::int64_t kSchedulerSlice = -2;      // of a scheduler thread's activity

struct TraceSlice {
    // 0 = AICPU orchestrator, then AIC threads, then AIV threads, then AICPU scheduler threads
    int thread;
    std::int64_t start_ns;  // relative to the run's start
    std::int64_t end_ns;
    std::int64_t task;      // task index in the run, or kOrchestrationSlice / kSchedulerSlice
    std::int32_t func_id;
    std::string name;
};

struct TaskNode {
    std::uint32_t index;
    std::int32_t func_id;
    std::string kernel;
    std::vector<std::uint32_t> deps;
};

// Which run a diagnostics file belongs to: the program (its orchestration name), the how-manyth
// call of that program on this chip it was (from 1), and the chip's run number.
struct TraceName {
    std::string program;
    std::uint64_t call;
    std::uint64_t run_id;
    // "<program>_call<k>" with characters outside [A-Za-z0-9_.-] replaced by '_'.
    std::string stem() const;
};

// Both write to a temp file and rename it into place (<stem>.swimlane.json, <stem>.deps.json);
// they create `output_prefix` as a directory if needed and return the final path. Throw
// std::runtime_error on I/O failure.
std::string write_swimlane(const std::string& output_prefix, const TraceName& name,
                           const std::vector<std::string>& thread_names, const std::vector<TraceSlice>& slices);
std::string write_dep_graph(const std::string& output_prefix, const TraceName& name, const std::vector<TaskNode>& nodes);

}  // namespace simpler::chip
