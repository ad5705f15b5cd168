// simpler._native.kernel: the wire layer (src/simpler/include/simpler/wire) for Python.
//
// Only conversion lives here: every check is the C++ core's. A rejected invocation raises
// simpler.kernel.InvocationError carrying the core's InvocationStatus as .status; malformed
// Python arguments raise ValueError/TypeError naming the argument.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "simpler/wire/codec.hpp"
#include "simpler/wire/consume.hpp"
#include "simpler/wire/encoding_cache.hpp"
#include "simpler/wire/packet_pool.hpp"
#include "simpler/wire/prepared_view.hpp"
#include "simpler/wire/submission.hpp"
#include "simpler/wire/transport.hpp"

namespace nb = nanobind;

namespace simpler::bindings {
namespace {

PyObject* g_invocation_error = nullptr;

[[noreturn]] void raise_status(InvocationStatus s, const std::string& what) { throw InvocationError(s, what); }

void check(InvocationStatus s, const std::string& what) {
    if (s != InvocationStatus::Ok) raise_status(s, what);
}

std::string repr_of(nb::handle h) { return nb::cast<std::string>(nb::repr(h)); }

// An int in [lo, hi] (as a Python int) converted to T, or ValueError/TypeError naming `name`.
template <class T>
T int_arg(nb::handle h, const char* name, const char* range) {
    if (!PyLong_Check(h.ptr()) || PyBool_Check(h.ptr()))
        throw nb::type_error((std::string(name) + ": expected an integer " + range + ", got " + repr_of(h)).c_str());
    int overflow = 0;
    if constexpr (std::is_signed_v<T>) {
        const long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
        if (overflow == 0 && v >= static_cast<long long>(std::numeric_limits<T>::min()) &&
            v <= static_cast<long long>(std::numeric_limits<T>::max()))
            return static_cast<T>(v);
    } else {
        const unsigned long long v = PyLong_AsUnsignedLongLong(h.ptr());
        if (!(v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) && v <= std::numeric_limits<T>::max())
            return static_cast<T>(v);
        PyErr_Clear();
    }
    throw nb::value_error((std::string(name) + ": expected an integer " + range + ", got " + repr_of(h)).c_str());
}

std::uint64_t u64_arg(nb::handle h, const char* name) { return int_arg<std::uint64_t>(h, name, "in [0, 2**64)"); }

// Raw bits of a scalar: an int in [-2**63, 2**64); negative values are two's complement.
std::uint64_t scalar_bits(nb::handle h, std::size_t index) {
    const std::string name = "scalars[" + std::to_string(index) + "]";
    if (!PyLong_Check(h.ptr()) || PyBool_Check(h.ptr()))
        throw nb::type_error((name + ": expected an int holding the scalar's raw bits (pack floats with struct), got " +
                              repr_of(h))
                                 .c_str());
    const unsigned long long u = PyLong_AsUnsignedLongLong(h.ptr());
    if (!(u == static_cast<unsigned long long>(-1) && PyErr_Occurred())) return u;
    PyErr_Clear();
    int overflow = 0;
    const long long s = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (overflow == 0 && !PyErr_Occurred()) return static_cast<std::uint64_t>(s);
    PyErr_Clear();
    throw nb::value_error((name + ": expected an integer in [-2**63, 2**64), got " + repr_of(h)).c_str());
}

std::vector<std::uint32_t> dims_arg(nb::handle seq, const char* name) {
    if (!PySequence_Check(seq.ptr()) || PyUnicode_Check(seq.ptr()) || PyBytes_Check(seq.ptr()))
        throw nb::type_error((std::string(name) + ": expected a sequence of ints, got " + repr_of(seq)).c_str());
    const Py_ssize_t n = PySequence_Size(seq.ptr());
    if (n < 0 || static_cast<std::size_t>(n) > kMaxTensorDims)
        throw nb::value_error((std::string(name) + ": expected at most " + std::to_string(kMaxTensorDims) +
                               " dimensions, got " + std::to_string(n))
                                  .c_str());
    std::vector<std::uint32_t> out;
    for (Py_ssize_t i = 0; i < n; ++i) {
        const std::string item = std::string(name) + "[" + std::to_string(i) + "]";
        nb::object v = nb::steal(PySequence_GetItem(seq.ptr(), i));
        if (!v.is_valid()) throw nb::python_error();
        out.push_back(int_arg<std::uint32_t>(v, item.c_str(), "in [0, 2**32)"));
    }
    return out;
}

// Readable bytes of a bytes-like object; the buffer is held for the object's lifetime.
class BufferView {
  public:
    BufferView(nb::handle obj, const char* name) {
        if (PyObject_GetBuffer(obj.ptr(), &view_, PyBUF_SIMPLE) != 0) {
            PyErr_Clear();
            throw nb::type_error((std::string(name) + ": expected a bytes-like object, got " + repr_of(obj)).c_str());
        }
    }
    ~BufferView() { PyBuffer_Release(&view_); }
    BufferView(const BufferView&) = delete;
    BufferView& operator=(const BufferView&) = delete;
    ByteSpan span() const { return ByteSpan(view_.buf, static_cast<std::size_t>(view_.len)); }

  private:
    Py_buffer view_{};
};

nb::object dtype_object(std::uint8_t code) {
    if (is_known_dtype(code)) return nb::cast(static_cast<DataType>(code));
    return nb::int_(code);
}

ChipTensor make_tensor(nb::handle addr, nb::handle size, nb::handle dtype, nb::handle shapes, nb::handle strides,
                       nb::handle start_offset, nb::handle address_space) {
    ChipTensor t;
    std::memset(&t, 0, sizeof t);
    t.buffer.addr = u64_arg(addr, "ChipTensor(addr)");
    t.buffer.size = u64_arg(size, "ChipTensor(size)");
    t.start_offset = u64_arg(start_offset, "ChipTensor(start_offset)");
    if (nb::isinstance<DataType>(dtype))
        t.dtype = static_cast<std::uint8_t>(nb::cast<DataType>(dtype));
    else
        t.dtype = int_arg<std::uint8_t>(dtype, "ChipTensor(dtype)", "code in [0, 256) or a DataType");
    if (nb::isinstance<AddressSpace>(address_space))
        t.address_space = static_cast<std::uint8_t>(nb::cast<AddressSpace>(address_space));
    else
        t.address_space = int_arg<std::uint8_t>(address_space, "ChipTensor(address_space)", "in [0, 256) or an AddressSpace");
    const auto sh = dims_arg(shapes, "ChipTensor(shapes)");
    const auto st = dims_arg(strides, "ChipTensor(strides)");
    if (sh.size() != st.size())
        throw nb::value_error(("ChipTensor(strides): expected one stride per dimension (" + std::to_string(sh.size()) +
                               "), got " + std::to_string(st.size()))
                                  .c_str());
    t.ndims = static_cast<std::uint32_t>(sh.size());
    for (std::size_t i = 0; i < sh.size(); ++i) {
        t.shapes[i] = sh[i];
        t.strides[i] = st[i];
    }
    return t;
}

std::vector<ChipTensor> tensors_arg(nb::handle seq) {
    if (!PySequence_Check(seq.ptr()))
        throw nb::type_error(("tensors: expected a sequence of ChipTensor, got " + repr_of(seq)).c_str());
    const Py_ssize_t n = PySequence_Size(seq.ptr());
    if (n > kMaxTensors)
        raise_status(InvocationStatus::InvalidCounts,
                     "tensors: expected at most " + std::to_string(kMaxTensors) + ", got " + std::to_string(n));
    std::vector<ChipTensor> out(static_cast<std::size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
        nb::object v = nb::steal(PySequence_GetItem(seq.ptr(), i));
        if (!v.is_valid()) throw nb::python_error();
        if (!nb::isinstance<ChipTensor>(v))
            throw nb::type_error(("tensors[" + std::to_string(i) + "]: expected a ChipTensor, got " + repr_of(v)).c_str());
        out[static_cast<std::size_t>(i)] = nb::cast<const ChipTensor&>(v);
    }
    return out;
}

std::vector<std::uint64_t> scalars_arg(nb::handle seq) {
    if (!PySequence_Check(seq.ptr()))
        throw nb::type_error(("scalars: expected a sequence of ints, got " + repr_of(seq)).c_str());
    const Py_ssize_t n = PySequence_Size(seq.ptr());
    if (n > kMaxScalars)
        raise_status(InvocationStatus::InvalidCounts,
                     "scalars: expected at most " + std::to_string(kMaxScalars) + ", got " + std::to_string(n));
    std::vector<std::uint64_t> out(static_cast<std::size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
        nb::object v = nb::steal(PySequence_GetItem(seq.ptr(), i));
        if (!v.is_valid()) throw nb::python_error();
        out[static_cast<std::size_t>(i)] = scalar_bits(v, static_cast<std::size_t>(i));
    }
    return out;
}

nb::tuple decoded_tuple(const TmrInvocationView& v) {
    nb::list tensors, scalars;
    for (std::int32_t i = 0; i < v.tensor_count(); ++i) tensors.append(nb::cast(v.tensor(static_cast<std::size_t>(i))));
    for (std::int32_t i = 0; i < v.scalar_count(); ++i) scalars.append(nb::int_(v.scalar(static_cast<std::size_t>(i))));
    return nb::make_tuple(tensors, scalars);
}

// The Python face of CopyingAicpuRunner: owns its pool and queue.
struct AicpuPayloadQueue {
    PacketBufferPool pool;
    PacketQueue queue;
    CopyingAicpuRunner runner{pool, queue};
};

template <class F>
double time_ns(std::size_t iterations, F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < iterations; ++i) f(i);
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(iterations);
}

// Native timings for benchmarks/bench_wire.py: cache-hit encode, decode and memcpy of the same
// packet bytes, each the mean over `iterations` after a warm-up, all in this one process.
nb::dict bench_wire(std::int32_t tensor_count, std::int32_t scalar_count, std::size_t iterations) {
    const PreparedInvocationView view{1, tensor_count, scalar_count, 1};
    const TmrBindingRef binding{0x7f0000001000ull, 9};
    if (!is_valid_prepared_view(view) || iterations == 0) throw nb::value_error("_bench_wire: counts out of range");
    std::vector<ChipTensor> tensors(static_cast<std::size_t>(tensor_count));
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        ChipTensor& t = tensors[i];
        std::memset(&t, 0, sizeof t);
        t.buffer.addr = 0x100000 + i * 4096;
        t.buffer.size = 4096;
        t.ndims = 2;
        t.dtype = static_cast<std::uint8_t>(DataType::FLOAT32);
        t.address_space = static_cast<std::uint8_t>(AddressSpace::DEVICE);
        t.shapes[0] = t.shapes[1] = 32;
        t.strides[0] = 32;
        t.strides[1] = 1;
    }
    std::vector<std::uint64_t> scalars(static_cast<std::size_t>(scalar_count), 7);
    TmrEncodingCache cache;
    TmrCandidate first;
    check(cache.encode(view, binding, tensors.data(), tensors.size(), scalars.data(), scalars.size(), &first), "bench");
    cache.commit(first);
    const std::size_t packet_bytes = first.packet_bytes();
    std::vector<std::uint8_t> packet(first.packet().data, first.packet().data + packet_bytes);
    std::vector<std::uint8_t> dst(packet_bytes);
    volatile std::uint64_t sink = 0;
    bool all_hits = true;
    auto encode = [&](std::size_t i) {
        if (tensor_count) tensors[0].buffer.addr = 0x100000 + (i & 15) * 64;
        TmrCandidate c;
        if (cache.encode(view, binding, tensors.data(), tensors.size(), scalars.data(), scalars.size(), &c) !=
                InvocationStatus::Ok ||
            !c.cache_hit())
            all_hits = false;
        sink = sink + c.packet_bytes();
    };
    auto decode = [&](std::size_t) {
        TmrInvocationView v;
        if (decode_tmr_invocation(ByteSpan(packet.data(), packet.size()), view, binding, &v) != InvocationStatus::Ok)
            all_hits = false;
        sink = sink + static_cast<std::uint64_t>(v.header.tensor_count);
    };
    auto copy = [&](std::size_t i) {
        packet[0] = static_cast<std::uint8_t>(i);
        std::memcpy(dst.data(), packet.data(), packet_bytes);
        asm volatile("" : : "r"(dst.data()) : "memory");
        sink = sink + dst[packet_bytes - 1];
        packet[0] = 1;
    };
    // Same allocation pattern as the encoder: a fresh block per packet, copied, freed.
    auto alloc_copy = [&](std::size_t) {
        AlignedBytes b = allocate_aligned_bytes(packet_bytes + kTmrBlockPrefixBytes);
        std::memcpy(b.get() + kTmrBlockPrefixBytes, packet.data(), packet_bytes);
        asm volatile("" : : "r"(b.get()) : "memory");
        sink = sink + b[kTmrBlockPrefixBytes];
    };
    const std::size_t warm = iterations / 10 + 1;
    time_ns(warm, encode);
    time_ns(warm, decode);
    time_ns(warm, copy);
    nb::dict out;
    out["packet_bytes"] = packet_bytes;
    out["encode_hit_ns"] = time_ns(iterations, encode);
    out["decode_ns"] = time_ns(iterations, decode);
    out["memcpy_ns"] = time_ns(iterations, copy);
    out["alloc_memcpy_ns"] = time_ns(iterations, alloc_copy);
    out["all_ok"] = all_hits;
    return out;
}

}  // namespace

void bind_kernel(nb::module_& m) {
    m.attr("HEADER_BYTES") = kInvocationHeaderBytes;
    m.attr("BINDING_REF_BYTES") = kTmrBindingRefBytes;
    m.attr("CHIP_TENSOR_BYTES") = kChipTensorBytes;
    m.attr("MAX_CALLABLES") = kMaxCallables;
    m.attr("MAX_TENSORS") = kMaxTensors;
    m.attr("MAX_SCALARS") = kMaxScalars;
    m.attr("MAX_ARGUMENTS") = kMaxArguments;
    m.attr("MAX_TENSOR_DIMS") = kMaxTensorDims;
    m.attr("MAX_PACKET_BYTES") = kMaxTmrPacketBytes;
    m.attr("BLOCK_PREFIX_BYTES") = kTmrBlockPrefixBytes;

    nb::enum_<InvocationStatus>(m, "InvocationStatus", "Result of a kernel-invocation check (WIRE.md, Status codes).")
        .value("Ok", InvocationStatus::Ok)
        .value("InvalidArgument", InvocationStatus::InvalidArgument)
        .value("InvalidHeader", InvocationStatus::InvalidHeader)
        .value("InvalidCounts", InvocationStatus::InvalidCounts)
        .value("InvalidSignature", InvocationStatus::InvalidSignature)
        .value("InvalidSize", InvocationStatus::InvalidSize)
        .value("StaleCallable", InvocationStatus::StaleCallable)
        .value("InvalidBinding", InvocationStatus::InvalidBinding)
        .value("InvalidTensor", InvocationStatus::InvalidTensor)
        .value("AllocationFailure", InvocationStatus::AllocationFailure);
    nb::enum_<ArgDirection>(m, "ArgDirection", "Direction of a signature entry; tensors precede scalars.")
        .value("Scalar", ArgDirection::Scalar)
        .value("In", ArgDirection::In)
        .value("Out", ArgDirection::Out)
        .value("InOut", ArgDirection::InOut);
    nb::enum_<DataType> dt(m, "DataType", "Element-type code of a ChipTensor (WIRE.md).");
    for (std::uint8_t c = 0; c < kDataTypeCount; ++c) dt.value(kDataTypeNames[c], static_cast<DataType>(c));
    // The DataType table of simpler/wire/data_type.hpp, indexed by code: simpler's Python
    // derives its names and element sizes from these, never from a copy.
    nb::list names, bits;
    for (std::uint8_t c = 0; c < kDataTypeCount; ++c) {
        names.append(kDataTypeNames[c]);
        bits.append(kDataTypeBits[c]);
    }
    m.attr("DATA_TYPE_NAMES") = nb::tuple(names);
    m.attr("DATA_TYPE_BITS") = nb::tuple(bits);
    nb::enum_<AddressSpace>(m, "AddressSpace").value("HOST", AddressSpace::HOST).value("DEVICE", AddressSpace::DEVICE);
    nb::enum_<ExecutionMode>(m, "ExecutionMode")
        .value("PROGRAM", ExecutionMode::PROGRAM)
        .value("KERNEL", ExecutionMode::KERNEL);
    m.attr("DEVICE") = AddressSpace::DEVICE;
    m.attr("HOST") = AddressSpace::HOST;

    g_invocation_error = PyErr_NewExceptionWithDoc(
        "simpler.kernel.InvocationError", "A kernel invocation was rejected; .status is the InvocationStatus.",
        PyExc_ValueError, nullptr);
    m.attr("InvocationError") = nb::handle(g_invocation_error);
    nb::register_exception_translator([](const std::exception_ptr& p, void*) {
        try {
            std::rethrow_exception(p);
        } catch (const InvocationError& e) {
            nb::object status = nb::cast(e.status());
            nb::object exc = nb::steal(PyObject_CallFunction(g_invocation_error, "s", e.what()));
            if (!exc.is_valid()) return;  // the call failed and set its own error
            PyObject_SetAttrString(exc.ptr(), "status", status.ptr());
            PyErr_SetObject(g_invocation_error, exc.ptr());
        }
    });

    m.def("tmr_invocation_size", [](nb::handle t, nb::handle s) {
        const auto tc = int_arg<std::int32_t>(t, "tmr_invocation_size(tensor_count)", "in [0, 256]");
        const auto sc = int_arg<std::int32_t>(s, "tmr_invocation_size(scalar_count)", "in [0, 128]");
        if (!invocation_counts_in_limits(tc, sc))
            throw nb::value_error(("tmr_invocation_size: expected 0 <= tensor_count <= 256, 0 <= scalar_count <= 128 and "
                                   "a sum <= 256, got " + std::to_string(tc) + " and " + std::to_string(sc))
                                      .c_str());
        return tmr_invocation_size(tc, sc);
    }, nb::arg("tensor_count"), nb::arg("scalar_count"), "Bytes of a TMR packet with these counts.");

    nb::class_<ChipTensor>(m, "ChipTensor", "A 128-byte tensor descriptor (WIRE.md, ChipTensor).")
        .def("__init__",
             [](ChipTensor* self, nb::handle addr, nb::handle size, nb::handle dtype, nb::handle shapes,
                nb::handle strides, nb::handle start_offset, nb::handle address_space) {
                 new (self) ChipTensor(make_tensor(addr, size, dtype, shapes, strides, start_offset, address_space));
             },
             nb::arg("addr"), nb::arg("size"), nb::arg("dtype"), nb::arg("shapes"), nb::arg("strides"),
             nb::arg("start_offset") = 0, nb::arg("address_space") = AddressSpace::DEVICE)
        .def_prop_ro("addr", [](const ChipTensor& t) { return t.buffer.addr; })
        .def_prop_ro("size", [](const ChipTensor& t) { return t.buffer.size; })
        .def_prop_ro("start_offset", [](const ChipTensor& t) { return t.start_offset; })
        .def_prop_ro("ndims", [](const ChipTensor& t) { return t.ndims; })
        .def_prop_ro("dtype", [](const ChipTensor& t) { return dtype_object(t.dtype); },
                     "The DataType (an int when the code is unknown).")
        .def_prop_ro("address_space", [](const ChipTensor& t) -> nb::object {
            if (t.address_space <= 1) return nb::cast(static_cast<AddressSpace>(t.address_space));
            return nb::int_(t.address_space);
        })
        .def_prop_ro("shapes", [](const ChipTensor& t) {
            nb::list l;
            for (std::uint32_t i = 0; i < t.ndims && i < kMaxTensorDims; ++i) l.append(t.shapes[i]);
            return nb::tuple(l);
        })
        .def_prop_ro("strides", [](const ChipTensor& t) {
            nb::list l;
            for (std::uint32_t i = 0; i < t.ndims && i < kMaxTensorDims; ++i) l.append(t.strides[i]);
            return nb::tuple(l);
        })
        .def("to_bytes", [](const ChipTensor& t) { return nb::bytes(reinterpret_cast<const char*>(&t), sizeof t); },
             "The 128 bytes of this descriptor as stored (not canonicalised).")
        .def_static("from_bytes", [](nb::handle data) {
            BufferView b(data, "ChipTensor.from_bytes(data)");
            if (b.span().size != sizeof(ChipTensor))
                throw nb::value_error(("ChipTensor.from_bytes(data): expected 128 bytes, got " +
                                       std::to_string(b.span().size)).c_str());
            ChipTensor t;
            b.span().read_at(0, &t);
            return t;
        }, nb::arg("data"))
        .def("__eq__", [](const ChipTensor& a, nb::handle b) -> nb::object {
            if (!nb::isinstance<ChipTensor>(b)) return nb::borrow(Py_NotImplemented);
            const ChipTensor& o = nb::cast<const ChipTensor&>(b);
            return nb::bool_(std::memcmp(&a, &o, sizeof a) == 0);
        })
        .def("__hash__", [](const ChipTensor& t) {
            return nb::hash(nb::bytes(reinterpret_cast<const char*>(&t), sizeof t));
        })
        .def("__repr__", [](const ChipTensor& t) {
            std::string s = "ChipTensor(addr=" + std::to_string(t.buffer.addr) + ", size=" + std::to_string(t.buffer.size) +
                            ", dtype=" + repr_of(dtype_object(t.dtype)) + ", shapes=(";
            for (std::uint32_t i = 0; i < t.ndims && i < kMaxTensorDims; ++i) s += std::to_string(t.shapes[i]) + ",";
            s += "), strides=(";
            for (std::uint32_t i = 0; i < t.ndims && i < kMaxTensorDims; ++i) s += std::to_string(t.strides[i]) + ",";
            s += "), start_offset=" + std::to_string(t.start_offset) + ", address_space=" +
                 std::to_string(t.address_space) + ")";
            return s;
        });

    nb::class_<PreparedInvocationView>(m, "PreparedInvocationView",
                                       "Trusted metadata of a live prepared callable: id, effective counts, slot generation.")
        .def("__init__",
             [](PreparedInvocationView* self, nb::handle id, nb::handle t, nb::handle s, nb::handle gen) {
                 PreparedInvocationView v{
                     int_arg<std::int32_t>(id, "PreparedInvocationView(callable_id)", "in [0, 64)"),
                     int_arg<std::int32_t>(t, "PreparedInvocationView(tensor_count)", "in [0, 256]"),
                     int_arg<std::int32_t>(s, "PreparedInvocationView(scalar_count)", "in [0, 128]"),
                     u64_arg(gen, "PreparedInvocationView(slot_generation)")};
                 if (!callable_id_in_range(v.callable_id))
                     throw nb::value_error(("PreparedInvocationView(callable_id): expected 0 <= id < 64, got " +
                                            std::to_string(v.callable_id)).c_str());
                 if (!invocation_counts_in_limits(v.tensor_count, v.scalar_count))
                     throw nb::value_error(("PreparedInvocationView(tensor_count, scalar_count): expected 0..256 tensors, "
                                            "0..128 scalars and at most 256 together, got " +
                                            std::to_string(v.tensor_count) + " and " + std::to_string(v.scalar_count))
                                               .c_str());
                 if (v.slot_generation == 0)
                     throw nb::value_error("PreparedInvocationView(slot_generation): expected a live generation >= 1, got 0");
                 new (self) PreparedInvocationView(v);
             },
             nb::arg("callable_id"), nb::arg("tensor_count"), nb::arg("scalar_count"), nb::arg("slot_generation"))
        .def_ro("callable_id", &PreparedInvocationView::callable_id)
        .def_ro("tensor_count", &PreparedInvocationView::tensor_count)
        .def_ro("scalar_count", &PreparedInvocationView::scalar_count)
        .def_ro("slot_generation", &PreparedInvocationView::slot_generation)
        .def("__repr__", [](const PreparedInvocationView& v) {
            return "PreparedInvocationView(callable_id=" + std::to_string(v.callable_id) +
                   ", tensor_count=" + std::to_string(v.tensor_count) + ", scalar_count=" + std::to_string(v.scalar_count) +
                   ", slot_generation=" + std::to_string(v.slot_generation) + ")";
        });

    nb::class_<TmrBindingRef>(m, "TmrBindingRef", "The execution binding a TMR packet must name.")
        .def("__init__",
             [](TmrBindingRef* self, nb::handle addr, nb::handle gen) {
                 new (self) TmrBindingRef{u64_arg(addr, "TmrBindingRef(device_binding_addr)"),
                                          u64_arg(gen, "TmrBindingRef(context_generation)")};
             },
             nb::arg("device_binding_addr"), nb::arg("context_generation"))
        .def_ro("device_binding_addr", &TmrBindingRef::device_binding_addr)
        .def_ro("context_generation", &TmrBindingRef::context_generation)
        .def("__repr__", [](const TmrBindingRef& b) {
            return "TmrBindingRef(device_binding_addr=" + std::to_string(b.device_binding_addr) +
                   ", context_generation=" + std::to_string(b.context_generation) + ")";
        });

    m.def("derive_invocation_counts",
          [](nb::handle signature, std::int32_t cached_scalar_count) {
              if (!PySequence_Check(signature.ptr()))
                  throw nb::type_error(("signature: expected a sequence of ArgDirection, got " + repr_of(signature)).c_str());
              const Py_ssize_t n = PySequence_Size(signature.ptr());
              std::vector<std::uint8_t> codes;
              for (Py_ssize_t i = 0; i < n; ++i) {
                  nb::object v = nb::steal(PySequence_GetItem(signature.ptr(), i));
                  if (!v.is_valid()) throw nb::python_error();
                  const std::string name = "signature[" + std::to_string(i) + "]";
                  codes.push_back(nb::isinstance<ArgDirection>(v)
                                      ? static_cast<std::uint8_t>(nb::cast<ArgDirection>(v))
                                      : int_arg<std::uint8_t>(v, name.c_str(), "code in [0, 256) or an ArgDirection"));
              }
              InvocationCounts c{};
              check(derive_invocation_counts(codes.data(), codes.size(), cached_scalar_count, &c),
                    "derive_invocation_counts(signature): tensors (In/Out/InOut) must precede scalars, "
                    "directions must be known, and counts within the limits");
              return nb::make_tuple(c.tensor_count, c.scalar_count);
          },
          nb::arg("signature"), nb::arg("cached_scalar_count") = 0,
          "Effective (tensor_count, scalar_count) of a signature; raises InvocationError.");

    m.def("validate_invocation_header",
          [](nb::handle packet, const PreparedInvocationView& view) {
              BufferView b(packet, "validate_invocation_header(packet)");
              InvocationHeader h{};
              check(validate_invocation_header(b.span(), view, &h), "validate_invocation_header(packet)");
              nb::dict d;
              d["mode"] = h.mode;
              d["callable_id"] = h.callable_id;
              d["generation"] = h.generation;
              d["payload_bytes"] = h.payload_bytes;
              d["tensor_count"] = h.tensor_count;
              d["scalar_count"] = h.scalar_count;
              return d;
          },
          nb::arg("packet"), nb::arg("view"), "Admit a packet's 40-byte header against a trusted view.");

    nb::class_<TmrCandidate>(m, "TmrCandidate", "One encoded invocation, owned until it is enqueued and dropped.")
        .def_prop_ro("packet", [](const TmrCandidate& c) {
            return nb::bytes(reinterpret_cast<const char*>(c.packet().data), c.packet_bytes());
        })
        .def_prop_ro("block", [](const TmrCandidate& c) {
            return nb::bytes(reinterpret_cast<const char*>(c.block()), c.block_bytes());
        })
        .def_prop_ro("packet_bytes", &TmrCandidate::packet_bytes)
        .def_prop_ro("cache_hit", &TmrCandidate::cache_hit)
        .def_prop_ro("view", [](const TmrCandidate& c) { return c.view(); })
        .def_prop_ro("binding", [](const TmrCandidate& c) { return c.binding(); });

    nb::class_<TmrEncodingCache>(m, "TmrEncodingCache", "Host encoder of one prepared callable with a structural template.")
        .def(nb::init<>())
        .def("encode",
             [](const TmrEncodingCache& cache, const PreparedInvocationView& view, const TmrBindingRef& binding,
                nb::handle tensors, nb::handle scalars) {
                 const auto t = tensors_arg(tensors);
                 const auto s = scalars_arg(scalars);
                 if (t.size() == static_cast<std::size_t>(view.tensor_count))
                     for (std::size_t i = 0; i < t.size(); ++i)
                         validate_chip_tensor(t[i], "TmrEncodingCache.encode: tensors[" + std::to_string(i) + "]");
                 TmrCandidate c;
                 check(cache.encode(view, binding, t.data(), t.size(), s.data(), s.size(), &c),
                       "TmrEncodingCache.encode: got " + std::to_string(t.size()) + " tensors and " +
                           std::to_string(s.size()) + " scalars for a view of " + std::to_string(view.tensor_count) +
                           " and " + std::to_string(view.scalar_count));
                 return c;
             },
             nb::arg("view"), nb::arg("binding"), nb::arg("tensors"), nb::arg("scalars"))
        .def("commit",
             [](TmrEncodingCache& cache, TmrCandidate& c) {
                 if (!cache.commit(c))
                     raise_status(InvocationStatus::InvalidArgument,
                                  "TmrEncodingCache.commit(candidate): expected an uncommitted candidate of this cache");
             },
             nb::arg("candidate"))
        .def_prop_ro("template_bytes", &TmrEncodingCache::template_bytes);

    m.def("_decode_tmr_invocation",
          [](nb::handle packet, const PreparedInvocationView& view, const TmrBindingRef& binding) {
              BufferView b(packet, "decode_tmr_invocation(packet)");
              TmrInvocationView v;
              check(decode_tmr_invocation(b.span(), view, binding, &v), "decode_tmr_invocation(packet)");
              return decoded_tuple(v);
          },
          nb::arg("packet"), nb::arg("view"), nb::arg("binding"));

    m.def("_consume_tmr_invocation",
          [](nb::handle packet, const PreparedInvocationView& view, const TmrBindingRef& binding, bool block) {
              BufferView b(packet, "consume_tmr_invocation(packet)");
              ByteSpan span = b.span();
              if (block) check(tmr_block_packet(span.data, span.size, &span), "consume_tmr_invocation(block)");
              auto storage = std::make_unique<EntryArgsStorage>();
              check(consume_tmr_invocation(span, view, binding, storage.get()), "consume_tmr_invocation(packet)");
              nb::list tensors, scalars;
              for (std::int32_t i = 0; i < storage->tensor_count; ++i) tensors.append(storage->tensors[i]);
              for (std::int32_t i = 0; i < storage->scalar_count; ++i) scalars.append(nb::int_(storage->scalars[i]));
              return nb::make_tuple(tensors, scalars);
          },
          nb::arg("packet"), nb::arg("view"), nb::arg("binding"), nb::arg("block") = false);

    nb::class_<AicpuPayloadQueue>(m, "AicpuPayloadQueue",
                                  "A copy-on-enqueue runner that copies each block into a pool buffer and queues it.")
        .def(nb::init<>())
        .def("pop",
             [](AicpuPayloadQueue& q) -> nb::object {
                 auto b = q.queue.try_pop();
                 if (!b) return nb::none();
                 return nb::bytes(reinterpret_cast<const char*>(b->data()), b->size());
             },
             "The oldest queued block (u64 packet_bytes + packet), or None.")
        .def("clear", [](AicpuPayloadQueue& q) { return q.queue.clear(); }, "Release every queued block; returns how many.")
        .def("__len__", [](const AicpuPayloadQueue& q) { return q.queue.size(); })
        .def_prop_ro("outstanding", [](const AicpuPayloadQueue& q) { return q.pool.outstanding(); })
        .def_prop_ro("released", [](const AicpuPayloadQueue& q) { return q.pool.released(); })
        .def_prop_ro("acquired", [](const AicpuPayloadQueue& q) { return q.pool.acquired(); });

    m.def("enqueue_tmr_invocation_aicpu",
          [](AicpuPayloadQueue& runner, const TmrCandidate& candidate, const PreparedInvocationView& view,
             const TmrBindingRef& binding) {
              const EnqueueOutcome r = enqueue_tmr_invocation_aicpu(runner.runner, candidate, view, binding);
              check(r.status, "enqueue_tmr_invocation_aicpu(candidate)");
              if (r.launch_rc != 0)
                  throw std::runtime_error("enqueue_tmr_invocation_aicpu: the runner failed with code " +
                                           std::to_string(r.launch_rc));
          },
          nb::arg("runner"), nb::arg("candidate"), nb::arg("view"), nb::arg("binding"),
          "Revalidate the candidate and hand its block to the runner (copy-on-enqueue).");

    nb::class_<TmrSubmissionOwner>(m, "TmrSubmissionOwner",
                                   "The submission transaction of one prepared callable under one owner guard.")
        .def(nb::init<>())
        .def("publish",
             [](TmrSubmissionOwner& o, const PreparedInvocationView& view, const TmrBindingRef& binding) {
                 check(o.publish(view, binding), "TmrSubmissionOwner.publish(view, binding)");
             },
             nb::arg("view"), nb::arg("binding"), "Publish or replace the trusted metadata.")
        .def("close", &TmrSubmissionOwner::close, "Reject submissions (StaleCallable) until the next publish.")
        .def("submit",
             [](TmrSubmissionOwner& o, AicpuPayloadQueue& runner, nb::handle tensors, nb::handle scalars) {
                 const auto t = tensors_arg(tensors);
                 const auto s = scalars_arg(scalars);
                 EnqueueOutcome r;
                 {
                     nb::gil_scoped_release unlocked;  // the owner guard, not the GIL, serialises
                     r = o.submit(runner.runner, t.data(), t.size(), s.data(), s.size());
                 }
                 check(r.status, "TmrSubmissionOwner.submit");
                 if (r.launch_rc != 0)
                     throw std::runtime_error("TmrSubmissionOwner.submit: the runner failed with code " +
                                              std::to_string(r.launch_rc));
             },
             nb::arg("runner"), nb::arg("tensors"), nb::arg("scalars"),
             "Encode, enqueue (copy-on-enqueue), and commit on success, all under the owner guard.")
        .def_prop_ro("template_bytes", &TmrSubmissionOwner::template_bytes)
        .def_prop_ro("submissions", &TmrSubmissionOwner::submissions);

    m.def("_bench_wire", &bench_wire, nb::arg("tensor_count"), nb::arg("scalar_count"), nb::arg("iterations"));
}

}  // namespace simpler::bindings
