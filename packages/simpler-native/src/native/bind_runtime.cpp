// simpler._native top level: the simulated chip (ChipRuntime), loaded callables, runs, and
// host blocks for Buffer.allocate. The public names live in simpler/worker.py & co.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <cstdlib>
#include <limits>
#include <optional>
#include <cstring>
#include <stdexcept>

#include "../core/chip/callable.hpp"
#include "../core/chip/chip.hpp"
#include "bindings.hpp"
#include "simpler/wire/kernel_entry_admission.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace simpler::bindings {

namespace {

using chip::Chip;
using chip::ChipProgram;
using chip::CoreKernel;
using chip::CoreType;
using chip::Run;
using chip::RunConfig;

// (addr, size, dtype, shape, strides, start_offset)
using TensorTuple = std::tuple<std::uint64_t, std::uint64_t, int, std::vector<std::uint32_t>, std::vector<std::uint32_t>,
                               std::uint64_t>;

ChipTensor make_tensor(const TensorTuple& t, std::size_t index) {
    const auto& [addr, size, dtype, shape, strides, start] = t;
    const std::string what = "tensor " + std::to_string(index);
    if (dtype < 0 || !is_known_dtype(static_cast<std::uint8_t>(dtype)))
        throw std::invalid_argument(what + ": unknown dtype code " + std::to_string(dtype));
    if (shape.empty() || shape.size() > kMaxTensorDims)
        throw std::invalid_argument(what + ": expected 1.." + std::to_string(kMaxTensorDims) + " dims, got " +
                                    std::to_string(shape.size()));
    if (strides.size() != shape.size())
        throw std::invalid_argument(what + ": expected " + std::to_string(shape.size()) + " strides, got " +
                                    std::to_string(strides.size()));
    ChipTensor c;
    std::memset(&c, 0, sizeof c);
    c.buffer.addr = addr;
    c.buffer.size = size;
    c.start_offset = start;
    c.ndims = static_cast<std::uint32_t>(shape.size());
    c.dtype = static_cast<std::uint8_t>(dtype);
    c.address_space = static_cast<std::uint8_t>(AddressSpace::DEVICE);
    for (std::size_t i = 0; i < shape.size(); ++i) {
        c.shapes[i] = shape[i];
        c.strides[i] = strides[i];
    }
    return c;
}

std::vector<ArgDirection> to_signature(const std::vector<int>& codes) {
    std::vector<ArgDirection> sig;
    sig.reserve(codes.size());
    for (std::size_t i = 0; i < codes.size(); ++i) {
        if (codes[i] < 0 || codes[i] >= kArgDirectionCount)
            throw std::invalid_argument("signature[" + std::to_string(i) + "]: unknown ArgDirection code " +
                                        std::to_string(codes[i]));
        sig.push_back(static_cast<ArgDirection>(codes[i]));
    }
    return sig;
}

template <class T, std::size_t N>
std::array<T, N> ring_values(const std::vector<std::uint64_t>& v, const char* name) {
    if (v.size() != N)
        throw std::invalid_argument(std::string(name) + ": expected " + std::to_string(N) + " ring values, got " +
                                    std::to_string(v.size()));
    std::array<T, N> out{};
    for (std::size_t i = 0; i < N; ++i) {
        if (v[i] > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
            throw std::invalid_argument(std::string(name) + "[" + std::to_string(i) + "]: value " + std::to_string(v[i]) +
                                        " is too large");
        out[i] = static_cast<T>(v[i]);
    }
    return out;
}

RunConfig make_config(const std::vector<std::uint64_t>& task_window, const std::vector<std::uint64_t>& heap,
                      const std::vector<std::uint64_t>& dep_pool, std::uint64_t workspace_budget, bool swimlane,
                      bool dep_graph, const std::string& output_prefix, std::uint32_t aicpu_thread_num,
                      bool orchestrate_on_caller) {
    RunConfig cfg;
    cfg.aicpu_threads = aicpu_thread_num;
    cfg.orchestrate_on_caller = orchestrate_on_caller;
    cfg.task_window = ring_values<std::uint32_t, chip::kRingCount>(task_window, "task_window");
    cfg.heap = ring_values<std::uint64_t, chip::kRingCount>(heap, "heap");
    cfg.dep_pool = ring_values<std::uint32_t, chip::kRingCount>(dep_pool, "dep_pool");
    cfg.workspace_budget_bytes = workspace_budget;
    cfg.swimlane = swimlane;
    cfg.dep_graph = dep_graph;
    cfg.output_prefix = output_prefix;
    chip::validate_run_config(cfg);
    return cfg;
}

template <class T, std::size_t N>
std::vector<std::uint64_t> ring_list(const std::array<T, N>& a) {
    return std::vector<std::uint64_t>(a.begin(), a.end());
}

std::vector<ChipTensor> make_tensors(const std::vector<TensorTuple>& tensors) {
    std::vector<ChipTensor> ts;
    ts.reserve(tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) ts.push_back(make_tensor(tensors[i], i));
    return ts;
}

// Aligned host memory owned by a Python object (Buffer.allocate).
class HostBlock {
public:
    explicit HostBlock(std::uint64_t nbytes) : nbytes_(nbytes) {
        if (nbytes == 0) throw std::invalid_argument("Buffer.allocate(nbytes): expected nbytes > 0, got 0");
        ptr_ = std::aligned_alloc(64, (nbytes + 63) / 64 * 64);
        if (ptr_ == nullptr) throw std::bad_alloc();
        std::memset(ptr_, 0, nbytes);
    }
    ~HostBlock() { std::free(ptr_); }
    HostBlock(const HostBlock&) = delete;
    HostBlock& operator=(const HostBlock&) = delete;
    std::uint64_t ptr() const noexcept { return reinterpret_cast<std::uint64_t>(ptr_); }
    std::uint64_t nbytes() const noexcept { return nbytes_; }

private:
    void* ptr_ = nullptr;
    std::uint64_t nbytes_;
};

}  // namespace

void bind_runtime(nb::module_& m) {
    m.attr("ORCHESTRATION_ABI_VERSION") = kOrchestrationAbiVersion;
    // A forked child abandons the parent's chips (their threads do not exist there); it keeps
    // them alive forever, so nanobind's exit-time leak report would only be noise.
    m.def("_quiet_leak_warnings", [] { nb::set_leak_warnings(false); });
    m.attr("KERNEL_ABI_VERSION") = kKernelAbiVersion;
    // The chip's limits (core/chip/chip.hpp); simpler's Python checks against these.
    m.attr("RING_COUNT") = chip::kRingCount;
    m.attr("MAX_AICPU_THREADS") = chip::kMaxAicpuThreads;
    m.attr("MAX_CORE_THREADS") = chip::kMaxCoreThreads;

    nb::class_<HostBlock>(m, "HostBlock")
        .def(nb::init<std::uint64_t>(), "nbytes"_a)
        .def_prop_ro("ptr", &HostBlock::ptr)
        .def_prop_ro("nbytes", &HostBlock::nbytes);

    nb::class_<CoreKernel>(m, "CoreKernel")
        .def_prop_ro("name", [](const CoreKernel& k) { return k.name; })
        .def_prop_ro("core_type", [](const CoreKernel& k) { return static_cast<int>(k.core); })
        .def_prop_ro("tensor_count", [](const CoreKernel& k) { return k.tensor_count; })
        .def_prop_ro("scalar_count", [](const CoreKernel& k) { return k.scalar_count; });

    nb::class_<ChipProgram>(m, "ChipProgram")
        .def_prop_ro("name", [](const ChipProgram& p) { return p.name; })
        .def_prop_ro("tensor_count", [](const ChipProgram& p) { return p.tensor_count; })
        .def_prop_ro("scalar_count", [](const ChipProgram& p) { return p.scalar_count; })
        .def_prop_ro("func_ids", [](const ChipProgram& p) {
            std::vector<int> ids;
            for (const auto& kv : p.kernels) ids.push_back(kv.first);
            return ids;
        });

    m.def(
        "load_core_kernel",
        [](nb::bytes binary, const std::string& name, const std::string& entry, int core_type, const std::vector<int>& sig) {
            if (core_type != 0 && core_type != 1)
                throw std::invalid_argument("core_type: expected AIV (0) or AIC (1), got " + std::to_string(core_type));
            return std::const_pointer_cast<CoreKernel>(chip::load_core_kernel(
                binary.c_str(), binary.size(), name, entry, static_cast<CoreType>(core_type), to_signature(sig)));
        },
        "binary"_a, "name"_a, "entry"_a, "core_type"_a, "signature"_a);

    m.def(
        "load_chip_program",
        [](nb::bytes binary, const std::string& func_name, const std::vector<int>& sig,
           const std::vector<std::pair<int, std::shared_ptr<CoreKernel>>>& children) {
            std::vector<std::pair<std::int32_t, std::shared_ptr<const CoreKernel>>> kids(children.begin(), children.end());
            return std::const_pointer_cast<ChipProgram>(
                chip::load_chip_program(binary.c_str(), binary.size(), func_name, to_signature(sig), kids));
        },
        "binary"_a, "func_name"_a, "signature"_a, "children"_a);

    // Kernel-entry admission of a callable before it is prepared for kernel mode (nothing is
    // loaded or registered yet). The callable's parts are laid out as one virtual blob: the
    // orchestration binary at 0, each child's binary after it, 64-byte aligned.
    m.def(
        "admit_kernel_entry",
        [](const std::string& name, const std::vector<int>& signature, std::uint64_t binary_bytes,
           const std::vector<std::tuple<int, std::string, std::vector<int>, std::uint64_t>>& children) {
            auto codes = [](const std::vector<int>& sig) {
                std::vector<std::uint8_t> out;
                for (int c : sig) out.push_back(static_cast<std::uint8_t>(c < 0 || c > 255 ? 255 : c));
                return out;
            };
            const std::vector<std::uint8_t> top = codes(signature);
            std::vector<std::vector<std::uint8_t>> child_codes;
            std::vector<KernelChildEntry> entries;
            std::uint64_t offset = (binary_bytes + 63) / 64 * 64;
            for (const auto& c : children) child_codes.push_back(codes(std::get<2>(c)));
            for (std::size_t i = 0; i < children.size(); ++i) {
                const auto& [func_id, child_name, sig, bytes] = children[i];
                entries.push_back(KernelChildEntry{func_id, child_name.data(), child_name.size(), child_codes[i].data(),
                                                   child_codes[i].size(), BlobRegion{offset, bytes, 64}});
                offset += (bytes + 63) / 64 * 64;
            }
            KernelEntryDescription d{name.data(), name.size(), top.data(), top.size(), 0, offset,
                                     BlobRegion{0, binary_bytes, 64}, entries.data(), entries.size()};
            InvocationCounts counts{};
            const InvocationStatus st = admit_kernel_entry(d, &counts);
            if (st != InvocationStatus::Ok)
                throw std::invalid_argument("register(callable): '" + name + "' rejected by kernel-entry admission: " +
                                            status_name(st));
            return std::make_pair(counts.tensor_count, counts.scalar_count);
        },
        "name"_a, "signature"_a, "binary_bytes"_a, "children"_a);

    nb::class_<Run>(m, "NativeRun")
        .def_prop_ro("id", &Run::id)
        .def_prop_ro("done", &Run::done)
        .def("wait", &Run::wait, "timeout"_a, nb::call_guard<nb::gil_scoped_release>())
        .def_prop_ro("error", [](const Run& r) { return r.done() ? r.error() : std::string(); })
        .def_prop_ro("tasks_submitted", &Run::tasks_submitted)
        .def_prop_ro("tasks_executed", &Run::tasks_executed)
        .def_prop_ro("diagnostics_files", [](const Run& r) { return r.done() ? r.diagnostics_files() : std::vector<std::string>{}; });

    // One run's settings (chip::RunConfig; simpler.CallConfig after CallConfig.validate), with
    // named fields. The Worker builds one per CallConfig and passes it whole to submit and
    // kernel_launch. Construction checks every field (ValueError naming it); the fields are
    // read-only, so a RunSettings is valid for as long as it lives.
    const RunConfig defaults;
    nb::class_<RunConfig>(m, "RunSettings")
        .def(
            "__init__",
            [](RunConfig* self, const std::vector<std::uint64_t>& task_window, const std::vector<std::uint64_t>& heap,
               const std::vector<std::uint64_t>& dep_pool, std::uint64_t workspace_budget_bytes, bool swimlane,
               bool dep_graph, const std::string& output_prefix, std::uint32_t aicpu_thread_num,
               bool orchestrate_on_caller) {
                new (self) RunConfig(make_config(task_window, heap, dep_pool, workspace_budget_bytes, swimlane,
                                                 dep_graph, output_prefix, aicpu_thread_num, orchestrate_on_caller));
            },
            nb::kw_only(), "task_window"_a = ring_list(defaults.task_window), "heap"_a = ring_list(defaults.heap),
            "dep_pool"_a = ring_list(defaults.dep_pool), "workspace_budget_bytes"_a = defaults.workspace_budget_bytes,
            "swimlane"_a = defaults.swimlane, "dep_graph"_a = defaults.dep_graph,
            "output_prefix"_a = defaults.output_prefix, "aicpu_thread_num"_a = defaults.aicpu_threads,
            "orchestrate_on_caller"_a = defaults.orchestrate_on_caller)
        .def_prop_ro("task_window", [](const RunConfig& c) { return ring_list(c.task_window); })
        .def_prop_ro("heap", [](const RunConfig& c) { return ring_list(c.heap); })
        .def_prop_ro("dep_pool", [](const RunConfig& c) { return ring_list(c.dep_pool); })
        .def_ro("workspace_budget_bytes", &RunConfig::workspace_budget_bytes)
        .def_ro("swimlane", &RunConfig::swimlane)
        .def_ro("dep_graph", &RunConfig::dep_graph)
        .def_ro("output_prefix", &RunConfig::output_prefix)
        .def_ro("aicpu_thread_num", &RunConfig::aicpu_threads)
        .def_ro("orchestrate_on_caller", &RunConfig::orchestrate_on_caller)
        .def_prop_ro("writes_diagnostics", [](const RunConfig& c) { return c.swimlane || c.dep_graph; })
        .def("__repr__", [](const RunConfig& c) {
            auto rings = [](const auto& a) {
                std::string s = "[";
                for (std::size_t i = 0; i < a.size(); ++i) s += (i ? ", " : "") + std::to_string(a[i]);
                return s + "]";
            };
            return "RunSettings(task_window=" + rings(c.task_window) + ", heap=" + rings(c.heap) +
                   ", dep_pool=" + rings(c.dep_pool) + ", workspace_budget_bytes=" +
                   std::to_string(c.workspace_budget_bytes) + ", swimlane=" + (c.swimlane ? "True" : "False") +
                   ", dep_graph=" + (c.dep_graph ? "True" : "False") + ", output_prefix='" + c.output_prefix +
                   "', aicpu_thread_num=" + std::to_string(c.aicpu_threads) +
                   ", orchestrate_on_caller=" + (c.orchestrate_on_caller ? "True" : "False") + ")";
        });

    nb::class_<Chip>(m, "ChipRuntime")
        .def(
            "__init__",
            [](Chip* self, int aic_threads, int aiv_threads, std::int64_t spin_ns, const std::string& runtime,
               const std::string& arch) {
                chip::ChipOptions o;
                if (runtime == chip::kRuntimeNames[1]) {
                    o.runtime = chip::Runtime::HostBuildGraph;
                } else if (runtime != chip::kRuntimeNames[0]) {
                    throw std::invalid_argument(std::string("runtime: expected '") + chip::kRuntimeNames[0] + "' or '" +
                                                chip::kRuntimeNames[1] + "', got '" + runtime + "'");
                }
                o.aic_threads = aic_threads;
                o.aiv_threads = aiv_threads;
                o.spin_ns = spin_ns;
                // The on-chip buffer sizes of the simulated chip (pypto/ir/platforms.py).
                if (arch == "a5") {
                    o.core_buffer_bytes = chip::kA5CoreBufferBytes;
                } else if (arch != "a2a3") {
                    throw std::invalid_argument("arch: expected 'a2a3' or 'a5', got '" + arch + "'");
                }
                new (self) Chip(o);
            },
            "aic_threads"_a = 1, "aiv_threads"_a = 1, "spin_ns"_a = 50000,
            "runtime"_a = chip::kRuntimeNames[0], "arch"_a = "a2a3")
        .def(
            "submit",
            [](Chip& c, std::shared_ptr<ChipProgram> program, const std::vector<TensorTuple>& tensors,
               const std::vector<std::uint64_t>& scalars, const RunConfig& settings) {
                std::vector<ChipTensor> ts = make_tensors(tensors);
                // HBG runs the orchestration here, on the caller's thread, and so may TMR
                // (orchestrate_on_caller): without the GIL.
                std::optional<nb::gil_scoped_release> release;
                if (c.options().runtime == chip::Runtime::HostBuildGraph || settings.orchestrate_on_caller)
                    release.emplace();
                return c.submit(std::move(program), std::move(ts), scalars, settings);
            },
            "program"_a, "tensors"_a, "scalars"_a, "settings"_a)
        .def("enable_kernel_mode", &Chip::enable_kernel_mode, "context_generation"_a)
        .def_prop_ro("kernel_mode", &Chip::kernel_mode)
        .def(
            "kernel_register",
            [](Chip& c, std::shared_ptr<ChipProgram> program) { return c.kernel_register(std::move(program)); },
            "program"_a)
        .def("kernel_unregister", &Chip::kernel_unregister, "slot"_a)
        .def("kernel_generation", &Chip::kernel_generation, "slot"_a)
        .def("kernel_template_bytes", &Chip::kernel_template_bytes, "slot"_a)
        .def(
            "kernel_launch",
            [](Chip& c, int slot, const std::vector<TensorTuple>& tensors, const std::vector<std::uint64_t>& scalars,
               const RunConfig& settings) {
                std::vector<ChipTensor> ts = make_tensors(tensors);
                // HBG consumes the packet and orchestrates here, and so may TMR on an idle chip
                // (orchestrate_on_caller): without the GIL.
                std::optional<nb::gil_scoped_release> release;
                if (c.options().runtime == chip::Runtime::HostBuildGraph || settings.orchestrate_on_caller)
                    release.emplace();
                return c.kernel_launch(slot, ts, scalars, settings);
            },
            "slot"_a, "tensors"_a, "scalars"_a, "settings"_a)
        .def(
            "kernel_enqueue_block",
            [](Chip& c, nb::bytes block) {
                return c.kernel_enqueue_block(block.c_str(), block.size(), RunConfig{});
            },
            "block"_a)
        .def("close", &Chip::close, nb::call_guard<nb::gil_scoped_release>())
        .def("wait_idle", &Chip::wait_idle, "timeout"_a, nb::call_guard<nb::gil_scoped_release>())
        .def_prop_ro("closed", &Chip::closed)
        .def_prop_ro("runtime", [](const Chip& c) { return std::string(chip::kRuntimeNames[static_cast<int>(c.options().runtime)]); })
        .def_prop_ro("scheduler_threads", &Chip::scheduler_threads)
        .def("malloc", [](Chip& c, std::uint64_t n) { return c.memory().allocate(n); }, "nbytes"_a)
        .def("free", [](Chip& c, std::uint64_t addr) { c.memory().release(addr); }, "addr"_a)
        .def(
            "copy_to",
            [](Chip& c, std::uint64_t dst, std::uint64_t src, std::uint64_t n) {
                c.memory().copy_to_device(dst, reinterpret_cast<const void*>(src), n);
            },
            "dst"_a, "src"_a, "nbytes"_a)
        .def(
            "copy_from",
            [](Chip& c, std::uint64_t dst, std::uint64_t src, std::uint64_t n) {
                c.memory().copy_from_device(reinterpret_cast<void*>(dst), src, n);
            },
            "dst"_a, "src"_a, "nbytes"_a)
        .def_prop_ro("live_allocations", [](Chip& c) { return c.memory().live_allocations(); })
        .def_prop_ro("live_bytes", [](Chip& c) { return c.memory().live_bytes(); });
}

}  // namespace simpler::bindings
