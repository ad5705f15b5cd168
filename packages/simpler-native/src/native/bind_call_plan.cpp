// simpler._native.CallPlan: the native repeat-call path of a program-mode call. A plan holds,
// per tensor parameter, the argument slot, the wire dtype, the buffer-protocol format its
// arrays export, the shape pattern and whether the program writes it; per scalar its slot and
// wire code; and, for a plan of one call key, the exact value each key-fixed scalar had.
// run() reads the arguments through the buffer protocol, fills the ChipTensor descriptors and
// scalar bits, submits and waits (GIL released) in one call. Whatever it does not take
// (another type, dtype or shape, a view, a non-contiguous or read-only-but-written array,
// overlapping arrays, a scalar of another type, value or range) it declines before anything
// is submitted, and the caller takes its general path, which decides and reports.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../core/chip/callable.hpp"
#include "../core/chip/chip.hpp"
#include "bindings.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace simpler::bindings {

namespace {

using chip::Chip;
using chip::ChipProgram;
using chip::Run;
using chip::RunConfig;

constexpr std::int64_t kDynamic = -1;

struct TensorSpec {
    std::size_t slot = 0;
    std::uint8_t dtype = 0;
    std::string format;              // what the arrays' buffer export reports ("f", "e", ...)
    std::size_t itemsize = 0;
    std::vector<std::int64_t> shape;  // kDynamic for a dynamic dim
    bool writes = false;
};

struct ScalarSpec {
    std::size_t slot = 0;
    std::uint8_t code = 0;
};

// Integer wire codes (simpler/_dtypes.py, WIRE.md) and their ranges.
struct IntRange {
    std::uint8_t code;
    bool is_unsigned;
    long long lo;
    unsigned long long hi;
};
constexpr IntRange kIntRanges[] = {
    {2, false, -(1LL << 31), (1ULL << 31) - 1},  // INT32
    {3, false, -(1LL << 15), (1ULL << 15) - 1},  // INT16
    {4, false, -(1LL << 7), (1ULL << 7) - 1},    // INT8
    {5, true, 0, 255},                           // UINT8
    {7, false, INT64_MIN, INT64_MAX},            // INT64
    {8, true, 0, UINT64_MAX},                    // UINT64
    {9, true, 0, (1ULL << 16) - 1},              // UINT16
    {10, true, 0, (1ULL << 32) - 1},             // UINT32
};
constexpr std::uint8_t kFloat32 = 0;

const IntRange* int_range(std::uint8_t code) noexcept {
    for (const IntRange& r : kIntRanges)
        if (r.code == code) return &r;
    return nullptr;
}

// The leading fields of a numpy array object (numpy's PyArrayObject_fields, unchanged from
// numpy 1.7 to 2.x). simpler does not build against numpy, so CallPlan.use_array_fields
// checks this layout against probe arrays through the buffer protocol before a plan reads
// arrays this way; a layout that does not match leaves the plan on the buffer protocol.
struct ArrayFields {
    PyObject_HEAD
    char* data;
    int nd;
    Py_ssize_t* dimensions;
    Py_ssize_t* strides;
    PyObject* base;
    PyObject* descr;
    int flags;
};
constexpr int kArrayCContiguous = 0x0001;  // NPY_ARRAY_C_CONTIGUOUS
constexpr int kArrayWriteable = 0x0400;    // NPY_ARRAY_WRITEABLE

// One exported buffer, released on scope exit.
struct BufferView {
    Py_buffer view{};
    bool held = false;
    BufferView() = default;
    BufferView(const BufferView&) = delete;
    BufferView& operator=(const BufferView&) = delete;
    ~BufferView() {
        if (held) PyBuffer_Release(&view);
    }
    bool get(PyObject* obj) noexcept {
        held = PyObject_GetBuffer(obj, &view, PyBUF_RECORDS_RO) == 0;
        if (!held) PyErr_Clear();
        return held;
    }
};

// The [first, last) byte spans of a call's arrays: on the stack for up to kInline arrays.
class Spans {
public:
    explicit Spans(std::size_t n) {
        if (n > kInline) heap_.reserve(n);
    }
    void add(std::uint64_t lo, std::uint64_t hi) {
        if (heap_.capacity() != 0) {
            heap_.emplace_back(lo, hi);
        } else {
            inline_[n_++] = {lo, hi};
        }
    }
    // True when no two spans share a byte.
    bool disjoint() {
        auto* first = heap_.capacity() != 0 ? heap_.data() : inline_.data();
        auto* last = first + (heap_.capacity() != 0 ? heap_.size() : n_);
        if (last - first < 2) return true;
        std::sort(first, last);
        for (auto* p = first + 1; p != last; ++p)
            if (p->first < (p - 1)->second) return false;
        return true;
    }

private:
    static constexpr std::size_t kInline = 8;
    std::array<std::pair<std::uint64_t, std::uint64_t>, kInline> inline_{};
    std::size_t n_ = 0;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> heap_;
};

class CallPlan {
public:
    CallPlan(nb::handle array_type, std::size_t nparams,
             const std::vector<std::tuple<std::size_t, int, std::string, std::size_t, std::vector<std::int64_t>, bool>>&
                 tensors,
             const std::vector<std::pair<std::size_t, int>>& scalars,
             const std::vector<std::pair<std::size_t, nb::object>>& fixed, nb::object encode_scalar)
        : array_type_(nb::borrow(array_type)),
          base_name_(nb::steal(PyUnicode_InternFromString("base"))),
          nparams_(nparams),
          encode_scalar_(std::move(encode_scalar)) {
        if (!PyType_Check(array_type.ptr()))
            throw nb::type_error("CallPlan(array_type): expected a type (numpy.ndarray)");
        for (const auto& [slot, dtype, format, itemsize, shape, writes] : tensors) {
            check_slot(slot, "tensors");
            if (dtype < 0 || dtype > 255 || !is_known_dtype(static_cast<std::uint8_t>(dtype)))
                throw std::invalid_argument("CallPlan(tensors): unknown dtype code " + std::to_string(dtype));
            if (shape.empty() || shape.size() > kMaxTensorDims)
                throw std::invalid_argument("CallPlan(tensors): expected 1.." + std::to_string(kMaxTensorDims) +
                                            " dims, got " + std::to_string(shape.size()));
            // dense_tensor's descriptors are then valid by construction (submitted unchecked)
            if (itemsize * 8 < dtype_bits(static_cast<std::uint8_t>(dtype)))
                throw std::invalid_argument("CallPlan(tensors): itemsize " + std::to_string(itemsize) +
                                            " is smaller than dtype code " + std::to_string(dtype) + "'s " +
                                            std::to_string(dtype_bits(static_cast<std::uint8_t>(dtype))) + " bits");
            tensors_.push_back(TensorSpec{slot, static_cast<std::uint8_t>(dtype), format, itemsize, shape, writes});
        }
        for (const auto& [slot, code] : scalars) {
            check_slot(slot, "scalars");
            if (code < 0 || code > 255 || !is_known_dtype(static_cast<std::uint8_t>(code)))
                throw std::invalid_argument("CallPlan(scalars): unknown dtype code " + std::to_string(code));
            scalars_.push_back(ScalarSpec{slot, static_cast<std::uint8_t>(code)});
        }
        for (const auto& [slot, value] : fixed) {
            check_slot(slot, "fixed");
            fixed_.emplace_back(slot, value);
        }
    }

    // Read the arrays' fields directly (ArrayFields) instead of through the buffer protocol,
    // once `probe` (writable, owning, C-contiguous, 2-D), `readonly` (its read-only twin) and
    // `view` (a view of it) show the layout through the buffer protocol; `dtypes`, one per
    // tensor parameter, are the dtype objects an array of each parameter must carry (numpy's
    // native-order singletons: compared by identity; an equal but distinct dtype object is
    // declined). Returns whether the plan now reads fields.
    bool use_array_fields(nb::handle probe, nb::handle readonly, nb::handle view, const std::vector<nb::object>& dtypes) {
        if (dtypes.size() != tensors_.size())
            throw std::invalid_argument("CallPlan.use_array_fields(dtypes): expected " + std::to_string(tensors_.size()) +
                                        " dtypes, got " + std::to_string(dtypes.size()));
        if (!layout_matches(probe.ptr(), false, false) || !layout_matches(readonly.ptr(), true, false) ||
            !layout_matches(view.ptr(), false, true))
            return false;
        dtypes_ = dtypes;
        fields_ = true;
        return true;
    }

    bool reads_fields() const noexcept { return fields_; }

    // The descriptors and scalar bits of `args`, or false: the caller's general path decides.
    bool fill(nb::handle args, std::vector<ChipTensor>& tensors, std::vector<std::uint64_t>& bits) const {
        if (!PyTuple_Check(args.ptr()) || static_cast<std::size_t>(PyTuple_GET_SIZE(args.ptr())) != nparams_)
            return false;
        PyObject* const* items = &PyTuple_GET_ITEM(args.ptr(), 0);
        for (const auto& [slot, value] : fixed_) {
            PyObject* v = items[slot];
            if (Py_TYPE(v) != Py_TYPE(value.ptr())) return false;
            const int eq = PyObject_RichCompareBool(v, value.ptr(), Py_EQ);
            if (eq != 1) {
                if (eq < 0) PyErr_Clear();
                return false;
            }
        }
        tensors.resize(tensors_.size());
        Spans spans(tensors_.size());
        PyObject* const array_type = array_type_.ptr();
        for (std::size_t i = 0; i < tensors_.size(); ++i) {
            const TensorSpec& s = tensors_[i];
            PyObject* a = items[s.slot];
            if (Py_TYPE(a) != reinterpret_cast<PyTypeObject*>(array_type)) return false;
            if (fields_) {
                std::uint64_t ptr = 0, nbytes = 0;
                if (!fill_fields(reinterpret_cast<const ArrayFields*>(a), s, dtypes_[i].ptr(), tensors[i], ptr, nbytes))
                    return false;
                spans.add(ptr, ptr + nbytes);
                continue;
            }
            // An array that owns its memory: the view is the whole storage, as the general
            // path describes it.
            PyObject* base = PyObject_GetAttr(a, base_name_.ptr());
            if (base == nullptr) {
                PyErr_Clear();
                return false;
            }
            const bool owns = base == Py_None;
            Py_DECREF(base);
            if (!owns) return false;
            BufferView b;
            if (!b.get(a)) return false;
            const Py_buffer& v = b.view;
            if ((s.writes && v.readonly) || v.format == nullptr || s.format != v.format ||
                static_cast<std::size_t>(v.itemsize) != s.itemsize || static_cast<std::size_t>(v.ndim) != s.shape.size() ||
                !PyBuffer_IsContiguous(&v, 'C') || v.len <= 0)
                return false;
            const auto ptr = reinterpret_cast<std::uint64_t>(v.buf);
            std::uint64_t nbytes = 0;
            if (!dense_tensor(s, v.ndim, v.shape, ptr, tensors[i], nbytes)) return false;
            spans.add(ptr, ptr + nbytes);
        }
        // The alias rule: disjoint views only here (others: the general path).
        if (!spans.disjoint()) return false;
        bits.resize(scalars_.size());
        for (std::size_t i = 0; i < scalars_.size(); ++i)
            if (!encode(items[scalars_[i].slot], scalars_[i].code, bits[i])) return false;
        return true;
    }

    // Fill, submit and wait up to `timeout` seconds (negative: forever). None when declined
    // (nothing submitted); else the run, done or not.
    nb::object run(Chip& chip, std::shared_ptr<ChipProgram> program, const RunConfig& settings, nb::handle args,
                   double timeout) const {
        std::vector<ChipTensor> tensors;
        std::vector<std::uint64_t> bits;
        Chip::argument_vectors(&tensors, &bits);
        if (!fill(args, tensors, bits)) return nb::none();
        std::shared_ptr<Run> run;
        {
            nb::gil_scoped_release release;  // the arguments stay referenced by the caller's frame
            run = chip.submit(std::move(program), std::move(tensors), std::move(bits), settings, true);
            run->wait(timeout);
        }
        return nb::cast(run);
    }

    // What fill() gives, as simpler.ChipStorageTaskArgs fields (tensor tuples, scalar bits),
    // or None when declined.
    nb::object describe(nb::handle args) const {
        std::vector<ChipTensor> tensors;
        std::vector<std::uint64_t> bits;
        if (!fill(args, tensors, bits)) return nb::none();
        nb::list ts;
        for (const ChipTensor& c : tensors) {
            nb::list shape, strides;
            for (std::uint32_t d = 0; d < c.ndims; ++d) {
                shape.append(c.shapes[d]);
                strides.append(c.strides[d]);
            }
            ts.append(nb::make_tuple(c.buffer.addr, c.buffer.size, static_cast<int>(c.dtype), nb::tuple(shape),
                                     nb::tuple(strides), c.start_offset));
        }
        nb::list bs;
        for (std::uint64_t b : bits) bs.append(b);
        return nb::make_tuple(nb::tuple(ts), nb::tuple(bs));
    }

    std::size_t nparams() const noexcept { return nparams_; }

private:
    // fill()'s reading of one array through ArrayFields: the same facts as the buffer
    // protocol path (owns its memory, dtype, rank and dims, C-contiguous, writable where
    // written, not empty).
    static bool fill_fields(const ArrayFields* f, const TensorSpec& s, PyObject* dtype, ChipTensor& c,
                            std::uint64_t& ptr, std::uint64_t& nbytes) noexcept {
        if (f->base != nullptr || f->descr != dtype || (f->flags & kArrayCContiguous) == 0 ||
            (s.writes && (f->flags & kArrayWriteable) == 0) || static_cast<std::size_t>(f->nd) != s.shape.size())
            return false;
        ptr = reinterpret_cast<std::uint64_t>(f->data);
        return dense_tensor(s, f->nd, f->dimensions, ptr, c, nbytes);
    }

    // The tensor of a C-contiguous array at `ptr` with `nd` dims (each in 1..2^32-1 and equal to
    // the spec's where the spec fixes it): row-major strides, the whole storage, its bytes in
    // `nbytes`. False when a dim is out of range or disagrees (fill() then declines the call).
    static bool dense_tensor(const TensorSpec& s, int nd, const Py_ssize_t* dims, std::uint64_t ptr, ChipTensor& c,
                             std::uint64_t& nbytes) noexcept {
        std::memset(&c, 0, sizeof c);
        std::uint64_t stride = 1;
        for (int d = nd - 1; d >= 0; --d) {
            const Py_ssize_t n = dims[d];
            if (n <= 0 || static_cast<std::uint64_t>(n) >= (1ULL << 32)) return false;
            if (s.shape[d] != kDynamic && s.shape[d] != n) return false;
            if (stride >= (1ULL << 32)) return false;
            c.shapes[d] = static_cast<std::uint32_t>(n);
            c.strides[d] = static_cast<std::uint32_t>(stride);
            stride *= static_cast<std::uint64_t>(n);
        }
        nbytes = stride * s.itemsize;
        c.buffer.addr = ptr;
        c.buffer.size = nbytes;
        c.start_offset = 0;
        c.ndims = static_cast<std::uint32_t>(nd);
        c.dtype = s.dtype;
        c.address_space = static_cast<std::uint8_t>(AddressSpace::DEVICE);
        return true;
    }

    // Whether `obj`'s ArrayFields say what its buffer export says (data, rank, shape,
    // strides, read-only), that it is C-contiguous and whether it is a view.
    bool layout_matches(PyObject* obj, bool readonly, bool is_view) const {
        if (Py_TYPE(obj) != reinterpret_cast<PyTypeObject*>(array_type_.ptr())) return false;
        BufferView b;
        if (!b.get(obj)) return false;
        const Py_buffer& v = b.view;
        const auto* f = reinterpret_cast<const ArrayFields*>(obj);
        if (f->data != v.buf || f->nd != v.ndim || v.ndim < 1 || v.shape == nullptr || v.strides == nullptr) return false;
        for (int d = 0; d < v.ndim; ++d)
            if (f->dimensions[d] != v.shape[d] || f->strides[d] != v.strides[d]) return false;
        if ((v.readonly != 0) != readonly || ((f->flags & kArrayWriteable) == 0) != readonly) return false;
        if ((f->base != nullptr) != is_view) return false;
        if ((f->flags & kArrayCContiguous) == 0 || !PyBuffer_IsContiguous(&v, 'C')) return false;
        nb::object dtype = nb::steal(PyObject_GetAttrString(obj, "dtype"));
        if (!dtype.is_valid()) {
            PyErr_Clear();
            return false;
        }
        return f->descr == dtype.ptr();
    }

    void check_slot(std::size_t slot, const char* what) const {
        if (slot >= nparams_)
            throw std::invalid_argument(std::string("CallPlan(") + what + "): slot " + std::to_string(slot) +
                                        " is past the " + std::to_string(nparams_) + " parameters");
    }

    // simpler.task_args.encode_scalar's bits for a plain int/float/bool, or false where it
    // would raise (the general path reports). FLOAT16, BFLOAT16 and BOOL go through it.
    bool encode(PyObject* v, std::uint8_t code, std::uint64_t& out) const {
        PyTypeObject* t = Py_TYPE(v);
        if (t != &PyLong_Type && t != &PyFloat_Type && t != &PyBool_Type) return false;
        if (const IntRange* r = int_range(code)) {
            if (t != &PyLong_Type) return false;
            int overflow = 0;
            const long long s = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (overflow == 0) {
                if (s == -1 && PyErr_Occurred()) {
                    PyErr_Clear();
                    return false;
                }
                if (s < r->lo || (s >= 0 && static_cast<unsigned long long>(s) > r->hi)) return false;
                out = static_cast<std::uint64_t>(s);
                return true;
            }
            if (overflow < 0 || !r->is_unsigned) return false;
            const unsigned long long u = PyLong_AsUnsignedLongLong(v);
            if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
                PyErr_Clear();
                return false;
            }
            if (u > r->hi) return false;
            out = u;
            return true;
        }
        if (code == kFloat32) {
            if (t == &PyBool_Type) return false;
            const double d = PyFloat_AsDouble(v);  // an int too large for a double raises
            if (d == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                return false;
            }
            const float f = static_cast<float>(d);
            if (std::isinf(f) && !std::isinf(d)) return false;
            std::uint32_t u = 0;
            std::memcpy(&u, &f, sizeof u);
            out = u;
            return true;
        }
        try {
            out = nb::cast<std::uint64_t>(encode_scalar_(nb::handle(v), static_cast<int>(code)));
            return true;
        } catch (const nb::python_error&) {
            return false;
        } catch (const nb::cast_error&) {
            return false;
        }
    }

    nb::object array_type_;
    nb::object base_name_;  // "base", interned: the attribute that says an array is a view
    std::size_t nparams_;
    nb::object encode_scalar_;
    std::vector<TensorSpec> tensors_;
    std::vector<ScalarSpec> scalars_;
    std::vector<std::pair<std::size_t, nb::object>> fixed_;
    bool fields_ = false;             // read arrays through ArrayFields (use_array_fields)
    std::vector<nb::object> dtypes_;  // per tensor parameter, with fields_
};

// A CallPlan bound to one chip target and result shape: calling it with a call's argument
// tuple runs the call (fill, submit, wait) and returns what the program returns (None, the
// argument it aliases, or a tuple of them), or `declined` when the plan does not take the
// call or the chip is closed (nothing submitted). A run that did not finish in `timeout` or
// failed goes to `finish(run, timeout)`, which raises as RunHandle.result does. What else
// makes the binding stale (another shared Worker, a closed mode gate) is its owner's to
// watch: it drops the binding.
class BoundCall {
public:
    BoundCall(nb::object plan, nb::object chip, std::shared_ptr<ChipProgram> program, const RunConfig& settings,
              double timeout, std::vector<std::size_t> returns, bool as_tuple, nb::object declined, nb::object finish)
        : plan_obj_(std::move(plan)),
          chip_obj_(std::move(chip)),
          plan_(nb::cast<const CallPlan*>(plan_obj_)),
          chip_(nb::cast<Chip*>(chip_obj_)),
          program_(std::move(program)),
          settings_(settings),
          timeout_(timeout),
          returns_(std::move(returns)),
          as_tuple_(as_tuple),
          declined_(std::move(declined)),
          finish_(std::move(finish)) {
        if (program_ == nullptr) throw std::invalid_argument("BoundCall(program): expected a loaded program, got None");
        for (std::size_t r : returns_)
            if (r >= plan_->nparams())
                throw std::invalid_argument("BoundCall(returns): argument " + std::to_string(r) + " is past the " +
                                            std::to_string(plan_->nparams()) + " parameters");
        if (!as_tuple_ && returns_.size() > 1)
            throw std::invalid_argument("BoundCall(returns): more than one result needs as_tuple=True");
    }

    nb::object call(nb::handle args) const {
        if (chip_->closed()) return declined_;
        std::vector<ChipTensor> tensors;
        std::vector<std::uint64_t> bits;
        Chip::argument_vectors(&tensors, &bits);
        if (!plan_->fill(args, tensors, bits)) return declined_;
        std::shared_ptr<Run> run;
        {
            nb::gil_scoped_release release;  // the arguments stay referenced by the caller's frame
            // fill()'s descriptors: dense, over arrays that own their memory (dense_host)
            run = chip_->submit(program_, std::move(tensors), std::move(bits), settings_, true);
            run->wait(timeout_);
        }
        if (!run->done() || !run->error().empty()) finish_(nb::cast(run), timeout_ < 0 ? nb::none() : nb::cast(timeout_));
        PyObject* const* items = &PyTuple_GET_ITEM(args.ptr(), 0);  // fill() checked: a tuple
        if (!as_tuple_) return returns_.empty() ? nb::none() : nb::borrow(items[returns_[0]]);
        nb::object out = nb::steal(PyTuple_New(static_cast<Py_ssize_t>(returns_.size())));
        if (!out.is_valid()) throw nb::python_error();
        for (std::size_t i = 0; i < returns_.size(); ++i) {
            Py_INCREF(items[returns_[i]]);
            PyTuple_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), items[returns_[i]]);
        }
        return out;
    }

    const nb::object& declined() const noexcept { return declined_; }

private:
    nb::object plan_obj_, chip_obj_;  // keep the plan and the chip alive
    const CallPlan* plan_;
    Chip* chip_;
    std::shared_ptr<const ChipProgram> program_;
    RunConfig settings_;
    double timeout_;
    std::vector<std::size_t> returns_;
    bool as_tuple_;
    nb::object declined_, finish_;
};

// A BoundCall called the way its function is called: `target(*args, **kwargs)` runs the bound
// call when it takes the call (no keywords, the plan takes the arguments) and returns its
// result, else returns `fallback(*args, **kwargs)` (the function's general path, which decides
// and reports). Its call is the type's C tp_call, so a caller that holds the target (a
// functools.partial: pypto's JITFunction) reaches the chip with no Python frame and no
// attribute lookup in between.
struct DirectCall {
    DirectCall(nb::object bound_call, nb::object fallback_call)
        : bound_obj(std::move(bound_call)), fallback(std::move(fallback_call)) {
        if (!nb::isinstance<BoundCall>(bound_obj))
            throw nb::type_error(("DirectCall(bound): expected a simpler.BoundCall, got " +
                                  std::string(Py_TYPE(bound_obj.ptr())->tp_name))
                                     .c_str());
        if (!PyCallable_Check(fallback.ptr()))
            throw nb::type_error(("DirectCall(fallback): expected a callable, got " +
                                  std::string(Py_TYPE(fallback.ptr())->tp_name))
                                     .c_str());
        bound = nb::cast<const BoundCall*>(bound_obj);
    }
    nb::object bound_obj;
    nb::object fallback;  // often refers back to the caller: a cycle the collector sees (tp_traverse)
    const BoundCall* bound = nullptr;
};

PyObject* direct_call(PyObject* self, PyObject* args, PyObject* kwargs) noexcept {
    // The caller may drop its reference to this target while the call runs with the GIL
    // released (a partial's target replaced by another thread): the call holds its own.
    nb::object keep = nb::borrow(self);
    const DirectCall* d = nb::inst_ptr<DirectCall>(self);
    try {
        if (kwargs == nullptr || PyDict_GET_SIZE(kwargs) == 0) {
            nb::object done = d->bound->call(args);
            if (!done.is(d->bound->declined())) return done.release().ptr();
        }
        nb::object fallback = d->fallback;
        if (!fallback.is_valid()) {
            PyErr_SetString(PyExc_RuntimeError, "DirectCall: its fallback was cleared by the garbage collector");
            return nullptr;
        }
        return PyObject_Call(fallback.ptr(), args, kwargs);
    } catch (nb::python_error& e) {
        e.restore();
    } catch (const std::bad_alloc&) {
        PyErr_NoMemory();
    } catch (const std::invalid_argument& e) {
        PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::exception& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
    }
    return nullptr;
}

int direct_traverse(PyObject* self, visitproc visit, void* arg) {
    Py_VISIT(Py_TYPE(self));
    if (!nb::inst_ready(self)) return 0;
    const DirectCall* d = nb::inst_ptr<DirectCall>(self);
    Py_VISIT(d->bound_obj.ptr());
    Py_VISIT(d->fallback.ptr());
    return 0;
}

int direct_clear(PyObject* self) {
    DirectCall* d = nb::inst_ptr<DirectCall>(self);
    d->fallback.reset();
    return 0;
}

PyType_Slot direct_slots[] = {{Py_tp_call, reinterpret_cast<void*>(direct_call)},
                              {Py_tp_traverse, reinterpret_cast<void*>(direct_traverse)},
                              {Py_tp_clear, reinterpret_cast<void*>(direct_clear)},
                              {0, nullptr}};

}  // namespace

void bind_call_plan(nb::module_& m) {
    nb::class_<CallPlan>(m, "CallPlan",
                         "A program call's native fill-submit-wait path for numpy arrays: run() declines "
                         "(returns None, nothing submitted) what it does not take; see docs/simpler-runtime.md.")
        .def(nb::init<nb::handle, std::size_t,
                      const std::vector<std::tuple<std::size_t, int, std::string, std::size_t, std::vector<std::int64_t>,
                                                   bool>>&,
                      const std::vector<std::pair<std::size_t, int>>&,
                      const std::vector<std::pair<std::size_t, nb::object>>&, nb::object>(),
             "array_type"_a, "nparams"_a, "tensors"_a, "scalars"_a, "fixed"_a, "encode_scalar"_a)
        .def("run", &CallPlan::run, "chip"_a, "program"_a, "settings"_a, "args"_a, "timeout"_a)
        .def("describe", &CallPlan::describe, "args"_a)
        .def("use_array_fields", &CallPlan::use_array_fields, "probe"_a, "readonly"_a, "view"_a, "dtypes"_a)
        .def_prop_ro("reads_fields", &CallPlan::reads_fields)
        .def_prop_ro("nparams", &CallPlan::nparams);
    nb::class_<BoundCall>(m, "BoundCall",
                          "A CallPlan bound to a chip, a program and run settings: call(args) runs a call and "
                          "returns its result, or `declined` (nothing submitted); see docs/simpler-runtime.md.")
        .def(nb::init<nb::object, nb::object, std::shared_ptr<ChipProgram>, const RunConfig&, double,
                      std::vector<std::size_t>, bool, nb::object, nb::object>(),
             "plan"_a, "chip"_a, "program"_a, "settings"_a, "timeout"_a, "returns"_a, "as_tuple"_a, "declined"_a,
             "finish"_a)
        .def("__call__", &BoundCall::call, "args"_a);
    nb::class_<DirectCall>(m, "DirectCall",
                           "A BoundCall called as its function is: target(*args, **kwargs) runs the bound call "
                           "or returns fallback(*args, **kwargs); see docs/simpler-runtime.md.",
                           nb::type_slots(direct_slots))
        .def(nb::init<nb::object, nb::object>(), "bound"_a, "fallback"_a)
        .def_prop_ro("bound", [](const DirectCall& d) { return d.bound_obj; })
        .def_prop_ro("fallback", [](const DirectCall& d) { return d.fallback; });
}

}  // namespace simpler::bindings
