// The native fast path of pypto.torch.interop.CallSignature.describe_call (see
// _native_describe.py): the same checks as the generated Python fast path, on at::Tensor fields
// instead of torch attribute reads, for platforms whose device memory is CPU memory.
//
// describe(plan, args) returns the CallFrame, or None for any call outside the common case (the
// caller then hands the call to the general path, which alone decides and reports errors).
// A failed query also answers None; only a malformed plan raises (TypeError).
// describe_or(plan, general, args) is describe_call itself: the frame, else general(args).
//
// plan = (nparams, tensors, scalars, return_aliases, signature, platform_name, device,
//         current_stream, stream_device_index, Tensor, Parameter, TensorArgument,
//         ScalarArgument, CallFrame, format)   (format: the ND code the records carry)
// tensors[k] = (index, torch dtype, itemsize, dims (-1: dynamic), strides or None,
//               (index, name, direction, dtype, layout), writes)
// scalars[k] = (index, exact type, lo or None, hi or None, (index, name, dtype))
//
// pin(records) holds the storages of a frame's tensor records non-resizable for a launch (see
// pypto.torch._kernel.pins): c10's StorageImpl::set_resizable, counted per storage across the
// launches holding it; the last release restores the flag the storage had before the first pin.
// It returns a capsule that unpin(capsule) releases (its destructor releases what unpin did
// not), or the index of the first record whose storage no longer has the address it was
// described with (then nothing stays pinned).
#include <ATen/PythonTorchFunctionTLS.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/Storage.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/extension.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace {

constexpr Py_ssize_t kPlanSize = 15;
constexpr Py_ssize_t kMaxTensors = 64;

// A new instance of the tuple subclass `type` holding `n` items, all stolen from `items`.
PyObject* make_record(PyObject* type, PyObject* const* items, Py_ssize_t n) {
  PyObject* record = reinterpret_cast<PyTypeObject*>(type)->tp_alloc(reinterpret_cast<PyTypeObject*>(type), n);
  if (record == nullptr) {
    for (Py_ssize_t i = 0; i < n; ++i) Py_XDECREF(items[i]);
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < n; ++i) PyTuple_SET_ITEM(record, i, items[i]);
  return record;
}

PyObject* new_ref(PyObject* o) {
  Py_INCREF(o);
  return o;
}

struct Span {
  std::uintptr_t start;
  std::uintptr_t end;
  bool writes;
};

struct Facts {
  PyObject* tensor;
  const at::Tensor* t;
  std::uintptr_t base;
  std::int64_t offset;
  std::int64_t capacity;
  std::int64_t nbytes;
};

// The checks of the Python fast path, in C++, without the context queries: true when the call
// is a common one (facts and spans filled), false to decline (or a query raised: error set).
// `args` is a tuple the caller owns, so the borrowed items outlive every Python call made here.
bool check_common(PyObject* plan, PyObject* args, Facts* facts, Span* spans) {
  const Py_ssize_t nparams = PyLong_AsSsize_t(PyTuple_GET_ITEM(plan, 0));
  if (PyTuple_GET_SIZE(args) != nparams) return false;
  PyObject** argv = &PyTuple_GET_ITEM(args, 0);
  PyObject* tensor_plan = PyTuple_GET_ITEM(plan, 1);
  PyObject* scalar_plan = PyTuple_GET_ITEM(plan, 2);
  PyObject* tensor_type = PyTuple_GET_ITEM(plan, 9);
  PyObject* parameter_type = PyTuple_GET_ITEM(plan, 10);
  const Py_ssize_t ntensors = PyTuple_GET_SIZE(tensor_plan);
  const Py_ssize_t nscalars = PyTuple_GET_SIZE(scalar_plan);
  if (ntensors > kMaxTensors) return false;
  // A torch function mode sees every attribute read on the general path; leave such calls to it.
  if (ntensors && at::impl::torch_function_mode_enabled()) return false;

  // Scalars: exactly the declared Python type, inside the range.
  for (Py_ssize_t k = 0; k < nscalars; ++k) {
    PyObject* entry = PyTuple_GET_ITEM(scalar_plan, k);
    PyObject* value = argv[PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 0))];
    if (reinterpret_cast<PyObject*>(Py_TYPE(value)) != PyTuple_GET_ITEM(entry, 1)) return false;
    PyObject* lo = PyTuple_GET_ITEM(entry, 2);
    if (lo != Py_None) {
      const int above = PyObject_RichCompareBool(lo, value, Py_LE);
      if (above != 1) return false;
      const int below = PyObject_RichCompareBool(value, PyTuple_GET_ITEM(entry, 3), Py_LE);
      if (below != 1) return false;
    }
  }

  // Tensors.
  bool any_grad = false;
  for (Py_ssize_t k = 0; k < ntensors; ++k) {
    PyObject* entry = PyTuple_GET_ITEM(tensor_plan, k);
    PyObject* obj = argv[PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 0))];
    PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(obj));
    if (type != tensor_type && type != parameter_type) return false;
    const at::Tensor& t = THPVariable_Unpack(obj);
    const auto dtype = reinterpret_cast<THPDtype*>(PyTuple_GET_ITEM(entry, 1))->scalar_type;
    if (!t.defined() || !t.is_cpu() || t.scalar_type() != dtype || t.is_neg() || !t.is_contiguous()) return false;
    PyObject* dims = PyTuple_GET_ITEM(entry, 3);
    const Py_ssize_t rank = PyTuple_GET_SIZE(dims);
    if (t.dim() != rank) return false;
    const auto sizes = t.sizes();
    std::int64_t nbytes = PyLong_AsLongLong(PyTuple_GET_ITEM(entry, 2));
    for (Py_ssize_t axis = 0; axis < rank; ++axis) {
      const long want = PyLong_AsLong(PyTuple_GET_ITEM(dims, axis));
      if (want >= 0 && sizes[axis] != want) return false;
      nbytes *= sizes[axis];
    }
    const c10::Storage& storage = t.storage();
    const auto base = reinterpret_cast<std::uintptr_t>(storage.mutable_data());
    const std::int64_t capacity = static_cast<std::int64_t>(storage.nbytes());
    const std::int64_t offset = t.storage_offset();
    const std::int64_t itemsize = PyLong_AsLongLong(PyTuple_GET_ITEM(entry, 2));
    if (nbytes == 0 || base == 0 || offset < 0 || offset * itemsize + nbytes > capacity) return false;
    const std::uintptr_t start = base + static_cast<std::uintptr_t>(offset * itemsize);
    facts[k] = Facts{obj, &t, base, offset, capacity, nbytes};
    spans[k] = Span{start, start + static_cast<std::uintptr_t>(nbytes), PyObject_IsTrue(PyTuple_GET_ITEM(entry, 6)) == 1};
    any_grad = any_grad || t.requires_grad();
  }
  if (any_grad && at::GradMode::is_enabled()) return false;
  // A view sharing bytes with a written view must be its exact alias.
  for (Py_ssize_t i = 0; i < ntensors; ++i) {
    for (Py_ssize_t j = i + 1; j < ntensors; ++j) {
      if (!spans[i].writes && !spans[j].writes) continue;
      const bool shares = spans[i].start < spans[j].end && spans[j].start < spans[i].end;
      if (shares && (spans[i].start != spans[j].start || spans[i].end != spans[j].end)) return false;
    }
  }
  return true;
}

// A tuple of the row-major strides of `sizes` (size-1 dimensions step as 1), or the plan's.
PyObject* strides_of(PyObject* planned, c10::IntArrayRef sizes) {
  if (planned != Py_None) return new_ref(planned);
  const Py_ssize_t rank = static_cast<Py_ssize_t>(sizes.size());
  PyObject* strides = PyTuple_New(rank);
  if (strides == nullptr) return nullptr;
  std::int64_t step = 1;
  for (Py_ssize_t axis = rank - 1; axis >= 0; --axis) {
    PyObject* item = PyLong_FromLongLong(step);
    if (item == nullptr) {
      Py_DECREF(strides);
      return nullptr;
    }
    PyTuple_SET_ITEM(strides, axis, item);
    step *= sizes[axis] > 1 ? sizes[axis] : 1;
  }
  return strides;
}

PyObject* shape_of(c10::IntArrayRef sizes) {
  const Py_ssize_t rank = static_cast<Py_ssize_t>(sizes.size());
  PyObject* shape = PyTuple_New(rank);
  if (shape == nullptr) return nullptr;
  for (Py_ssize_t axis = 0; axis < rank; ++axis) {
    PyObject* item = PyLong_FromLongLong(sizes[axis]);
    if (item == nullptr) {
      Py_DECREF(shape);
      return nullptr;
    }
    PyTuple_SET_ITEM(shape, axis, item);
  }
  return shape;
}

// The frame, or nullptr with no Python error set when the call is outside the common case
// (or nullptr with an error set when a query raised).
PyObject* describe_impl(PyObject* plan, PyObject* args) {
  PyObject** argv = &PyTuple_GET_ITEM(args, 0);
  PyObject* tensor_plan = PyTuple_GET_ITEM(plan, 1);
  PyObject* scalar_plan = PyTuple_GET_ITEM(plan, 2);
  const Py_ssize_t ntensors = PyTuple_GET_SIZE(tensor_plan);
  const Py_ssize_t nscalars = PyTuple_GET_SIZE(scalar_plan);
  Facts facts[kMaxTensors];
  Span spans[kMaxTensors];
  if (!check_common(plan, args, facts, spans)) return nullptr;
  // The context queries come last, as on the general path.
  PyObject* device = PyTuple_GET_ITEM(plan, 6);
  PyObject* stream = PyObject_CallOneArg(PyTuple_GET_ITEM(plan, 7), device);
  if (stream == nullptr) return nullptr;
  PyObject* stream_device = PyObject_CallOneArg(PyTuple_GET_ITEM(plan, 8), stream);
  if (stream_device == nullptr) {
    Py_DECREF(stream);
    return nullptr;
  }
  const int same = PyObject_RichCompareBool(stream_device, device, Py_EQ);
  Py_DECREF(stream_device);
  if (same != 1) {
    Py_DECREF(stream);
    return nullptr;
  }

  // The records.
  PyObject* tensors = PyTuple_New(ntensors);
  if (tensors == nullptr) {
    Py_DECREF(stream);
    return nullptr;
  }
  PyObject* tensor_record = PyTuple_GET_ITEM(plan, 11);
  for (Py_ssize_t k = 0; k < ntensors; ++k) {
    PyObject* entry = PyTuple_GET_ITEM(tensor_plan, k);
    PyObject* prefix = PyTuple_GET_ITEM(entry, 5);
    const Facts& f = facts[k];
    const auto sizes = f.t->sizes();
    // The one call here that can throw a C++ exception: made before anything of this record is
    // allocated, and caught, so that the release below covers every failure.
    PyObject* storage = nullptr;
    try {
      storage = THPStorage_Wrap(f.t->storage());
    } catch (...) {
      storage = nullptr;
    }
    PyObject* shape = shape_of(sizes);
    PyObject* strides = strides_of(PyTuple_GET_ITEM(entry, 4), sizes);
    PyObject* items[16] = {
        new_ref(PyTuple_GET_ITEM(prefix, 0)),
        new_ref(PyTuple_GET_ITEM(prefix, 1)),
        new_ref(PyTuple_GET_ITEM(prefix, 2)),
        new_ref(PyTuple_GET_ITEM(prefix, 3)),
        new_ref(PyTuple_GET_ITEM(prefix, 4)),
        shape,
        strides,
        PyLong_FromLongLong(f.offset),
        new_ref(PyTuple_GET_ITEM(plan, 14)),
        PyLong_FromUnsignedLongLong(spans[k].start),
        PyLong_FromUnsignedLongLong(f.base),
        PyLong_FromLongLong(f.capacity),
        PyLong_FromLongLong(f.nbytes),
        new_ref(Py_None),
        new_ref(f.tensor),
        storage,
    };
    bool ok = true;
    for (PyObject* item : items) ok = ok && item != nullptr;
    if (!ok) {
      for (PyObject* item : items) Py_XDECREF(item);
      Py_DECREF(tensors);
      Py_DECREF(stream);
      return nullptr;
    }
    PyObject* record = make_record(tensor_record, items, 16);
    if (record == nullptr) {
      Py_DECREF(tensors);
      Py_DECREF(stream);
      return nullptr;
    }
    PyTuple_SET_ITEM(tensors, k, record);
  }
  PyObject* scalars = PyTuple_New(nscalars);
  if (scalars == nullptr) {
    Py_DECREF(tensors);
    Py_DECREF(stream);
    return nullptr;
  }
  for (Py_ssize_t k = 0; k < nscalars; ++k) {
    PyObject* entry = PyTuple_GET_ITEM(scalar_plan, k);
    PyObject* prefix = PyTuple_GET_ITEM(entry, 4);
    PyObject* items[4] = {
        new_ref(PyTuple_GET_ITEM(prefix, 0)),
        new_ref(PyTuple_GET_ITEM(prefix, 1)),
        new_ref(PyTuple_GET_ITEM(prefix, 2)),
        new_ref(argv[PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 0))]),
    };
    PyObject* record = make_record(PyTuple_GET_ITEM(plan, 12), items, 4);
    if (record == nullptr) {
      Py_DECREF(scalars);
      Py_DECREF(tensors);
      Py_DECREF(stream);
      return nullptr;
    }
    PyTuple_SET_ITEM(scalars, k, record);
  }
  PyObject* aliases = PyTuple_GET_ITEM(plan, 3);
  const Py_ssize_t nreturned = PyTuple_GET_SIZE(aliases);
  PyObject* returned = PyTuple_New(nreturned);
  if (returned == nullptr) {
    Py_DECREF(scalars);
    Py_DECREF(tensors);
    Py_DECREF(stream);
    return nullptr;
  }
  for (Py_ssize_t k = 0; k < nreturned; ++k) {
    PyTuple_SET_ITEM(returned, k, new_ref(argv[PyLong_AsSsize_t(PyTuple_GET_ITEM(aliases, k))]));
  }
  PyObject* frame_items[7] = {
      new_ref(PyTuple_GET_ITEM(plan, 4)), new_ref(PyTuple_GET_ITEM(plan, 5)), tensors, scalars,
      new_ref(device), stream, returned,
  };
  return make_record(PyTuple_GET_ITEM(plan, 13), frame_items, 7);
}

// The frame of a common call, or nullptr with no error set (declined), or nullptr with an
// error set (a malformed plan or call).
PyObject* describe_common(PyObject* plan, PyObject* args, const char* what) {
  if (!PyTuple_CheckExact(plan) || PyTuple_GET_SIZE(plan) != kPlanSize) {
    PyErr_Format(PyExc_TypeError, "%s: plan must be the 15-tuple CallSignature builds", what);
    return nullptr;
  }
  if (PyList_CheckExact(args)) {
    args = PyList_AsTuple(args);
    if (args == nullptr) return nullptr;
  } else if (PyTuple_CheckExact(args)) {
    Py_INCREF(args);
  } else {
    return nullptr;
  }
  PyObject* frame = nullptr;
  try {
    frame = describe_impl(plan, args);
  } catch (...) {  // a torch query threw: the general path asks again and reports it
    frame = nullptr;
  }
  Py_DECREF(args);
  if (frame == nullptr) PyErr_Clear();
  return frame;
}

PyObject* describe(PyObject* /*module*/, PyObject* const* argv, Py_ssize_t argc) {
  if (argc != 2) {
    PyErr_SetString(PyExc_TypeError, "describe(plan, args): expected 2 arguments");
    return nullptr;
  }
  PyObject* frame = describe_common(argv[0], argv[1], "describe(plan, args)");
  if (frame == nullptr && !PyErr_Occurred()) Py_RETURN_NONE;
  return frame;
}

// describe_or(plan, general, args): the frame of a common call, else general(args) (whose
// result or exception is the call's): describe_call in one native call.
PyObject* describe_or(PyObject* /*module*/, PyObject* const* argv, Py_ssize_t argc) {
  if (argc != 3) {
    PyErr_SetString(PyExc_TypeError, "describe_or(plan, general, args): expected 3 arguments");
    return nullptr;
  }
  PyObject* frame = describe_common(argv[0], argv[2], "describe_or(plan, general, args)");
  if (frame != nullptr || PyErr_Occurred()) return frame;
  return PyObject_CallOneArg(argv[1], argv[2]);
}

// -- pins -------------------------------------------------------------------------------------

struct PinEntry {
  std::size_t count;
  bool restore;  // the flag before the first pin
};

std::mutex pin_mutex;
// Every pinned StorageImpl, kept alive by the Held lists that count it.
std::unordered_map<c10::StorageImpl*, PinEntry>& pin_table() {
  static auto* table = new std::unordered_map<c10::StorageImpl*, PinEntry>();  // never destroyed
  return *table;
}

using Held = std::vector<c10::Storage>;  // each holds its StorageImpl alive
constexpr const char* kPinsCapsule = "pypto.torch.pins";

// Release one count of each storage in `held` (pin_mutex held); the last restores the flag.
void release_locked(Held& held) noexcept {
  auto& table = pin_table();
  for (auto& storage : held) {
    c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
    auto found = table.find(impl);
    if (found == table.end()) continue;
    if (--found->second.count != 0) continue;
    const bool restore = found->second.restore;
    table.erase(found);
    if (restore) {
      try {
        impl->set_resizable(true);  // asserts an allocator: one that lost it stays non-resizable
      } catch (...) {
      }
    }
  }
  held.clear();
}

void release(Held* held) noexcept {
  std::lock_guard<std::mutex> lock(pin_mutex);
  release_locked(*held);
}

void pins_destructor(PyObject* capsule) {
  auto* held = static_cast<Held*>(PyCapsule_GetPointer(capsule, kPinsCapsule));
  if (held == nullptr) {
    PyErr_Clear();
    return;
  }
  release(held);
  delete held;
}

PyObject* pin(PyObject* /*module*/, PyObject* records) {
  if (!PyTuple_Check(records)) {
    PyErr_SetString(PyExc_TypeError, "pin(records): expected the tuple of a frame's tensor records");
    return nullptr;
  }
  static PyObject* storage_name = PyUnicode_InternFromString("storage");
  static PyObject* ptr_name = PyUnicode_InternFromString("storage_ptr");
  if (storage_name == nullptr || ptr_name == nullptr) return nullptr;
  const Py_ssize_t n = PyTuple_GET_SIZE(records);
  // The storages and the addresses they were described with, read before anything is pinned.
  std::vector<std::pair<c10::Storage, std::uintptr_t>> wanted;
  wanted.reserve(static_cast<std::size_t>(n));
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject* record = PyTuple_GET_ITEM(records, k);
    PyObject* storage = PyObject_GetAttr(record, storage_name);
    if (storage == nullptr) return nullptr;
    if (!THPStorage_Check(storage)) {
      Py_DECREF(storage);
      PyErr_Format(PyExc_TypeError, "pin(records): record %zd holds no torch storage", k);
      return nullptr;
    }
    c10::Storage held_storage = THPStorage_Unpack(storage);  // a counted reference
    Py_DECREF(storage);
    PyObject* ptr = PyObject_GetAttr(record, ptr_name);
    if (ptr == nullptr) return nullptr;
    const unsigned long long address = PyLong_AsUnsignedLongLong(ptr);
    Py_DECREF(ptr);
    if (address == static_cast<unsigned long long>(-1) && PyErr_Occurred()) return nullptr;
    wanted.emplace_back(std::move(held_storage), static_cast<std::uintptr_t>(address));
  }
  auto held = std::make_unique<Held>();
  held->reserve(wanted.size());
  {
    std::lock_guard<std::mutex> lock(pin_mutex);
    auto& table = pin_table();
    for (std::size_t k = 0; k < wanted.size(); ++k) {
      c10::StorageImpl* impl = wanted[k].first.unsafeGetStorageImpl();
      auto found = table.find(impl);
      if (found == table.end()) {
        table.emplace(impl, PinEntry{1, impl->resizable()});
        impl->set_resizable(false);
      } else {
        ++found->second.count;
      }
      held->push_back(wanted[k].first);
      // Pinned: from here on its memory stays; check it is the memory described.
      if (reinterpret_cast<std::uintptr_t>(impl->data_ptr().get()) != wanted[k].second) {
        release_locked(*held);
        return PyLong_FromSsize_t(static_cast<Py_ssize_t>(k));
      }
    }
  }
  PyObject* capsule = PyCapsule_New(held.get(), kPinsCapsule, pins_destructor);
  if (capsule == nullptr) {
    release(held.get());
    return nullptr;
  }
  held.release();
  return capsule;
}

PyObject* unpin(PyObject* /*module*/, PyObject* capsule) {
  auto* held = static_cast<Held*>(PyCapsule_GetPointer(capsule, kPinsCapsule));
  if (held == nullptr) return nullptr;  // not a pins capsule: TypeError/ValueError set
  release(held);
  Py_RETURN_NONE;
}

PyObject* pinned_count(PyObject* /*module*/, PyObject* /*unused*/) {
  std::lock_guard<std::mutex> lock(pin_mutex);
  return PyLong_FromSize_t(pin_table().size());
}

// -- simpler's materialised tensors ----------------------------------------------------------

// chip_tensors(records, codes): per TensorArgument record (a 16-field tuple) and wire dtype
// code, simpler's ChipStorageTaskArgs tensor tuple (storage_ptr, storage_nbytes, code, shape,
// strides, storage_offset), the fields shared with the record, not copied.
PyObject* chip_tensors(PyObject* /*module*/, PyObject* const* argv, Py_ssize_t argc) {
  if (argc != 2 || !PyTuple_Check(argv[0]) || !PyTuple_Check(argv[1]) ||
      PyTuple_GET_SIZE(argv[0]) != PyTuple_GET_SIZE(argv[1])) {
    PyErr_SetString(PyExc_TypeError, "chip_tensors(records, codes): expected two tuples of one length");
    return nullptr;
  }
  const Py_ssize_t n = PyTuple_GET_SIZE(argv[0]);
  PyObject* out = PyTuple_New(n);
  if (out == nullptr) return nullptr;
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject* record = PyTuple_GET_ITEM(argv[0], k);
    if (!PyTuple_Check(record) || PyTuple_GET_SIZE(record) != 16) {
      Py_DECREF(out);
      PyErr_Format(PyExc_TypeError, "chip_tensors(records): record %zd is not a TensorArgument", k);
      return nullptr;
    }
    PyObject* items[6] = {
        new_ref(PyTuple_GET_ITEM(record, 10)), new_ref(PyTuple_GET_ITEM(record, 11)),
        new_ref(PyTuple_GET_ITEM(argv[1], k)), new_ref(PyTuple_GET_ITEM(record, 5)),
        new_ref(PyTuple_GET_ITEM(record, 6)),  new_ref(PyTuple_GET_ITEM(record, 7)),
    };
    PyObject* entry = PyTuple_New(6);
    if (entry == nullptr) {
      for (PyObject* item : items) Py_DECREF(item);
      Py_DECREF(out);
      return nullptr;
    }
    for (Py_ssize_t i = 0; i < 6; ++i) PyTuple_SET_ITEM(entry, i, items[i]);
    PyTuple_SET_ITEM(out, k, entry);
  }
  return out;
}

// -- the bound launch -------------------------------------------------------------------------

// A kernel context's admission for bound launches (one per context): shutdown clears `admits`,
// then waits until `inflight` is 0, so no bound launch is between admission and retirement
// when the Worker closes (the counterpart of the manager's `enqueuing` count).
struct LaunchGate {
  std::atomic<bool> admits{true};
  std::atomic<long> inflight{0};
};
constexpr const char* kGateCapsule = "pypto.torch.launch_gate";

void gate_destructor(PyObject* capsule) {
  delete static_cast<LaunchGate*>(PyCapsule_GetPointer(capsule, kGateCapsule));
  PyErr_Clear();
}

PyObject* launch_gate(PyObject* /*module*/, PyObject* /*unused*/) {
  auto* gate = new LaunchGate();
  PyObject* capsule = PyCapsule_New(gate, kGateCapsule, gate_destructor);
  if (capsule == nullptr) delete gate;
  return capsule;
}

LaunchGate* gate_of(PyObject* capsule) {
  return static_cast<LaunchGate*>(PyCapsule_GetPointer(capsule, kGateCapsule));
}

// close_gate(gate): refuse bound launches from now on; returns how many are still inside.
PyObject* close_gate(PyObject* /*module*/, PyObject* capsule) {
  LaunchGate* gate = gate_of(capsule);
  if (gate == nullptr) return nullptr;
  gate->admits.store(false);
  return PyLong_FromLong(gate->inflight.load());
}

// gate_inflight(gate): how many bound launches are between admission and retirement.
PyObject* gate_inflight(PyObject* /*module*/, PyObject* capsule) {
  LaunchGate* gate = gate_of(capsule);
  if (gate == nullptr) return nullptr;
  return PyLong_FromLong(gate->inflight.load());
}

constexpr Py_ssize_t kBoundSize = 6;

// The 64-bit scalar bits simpler's encode_scalar gives a value check_common accepted (an int in
// its dtype's range, a bool, a finite float within +-FLT_MAX), by kind: 0 an integer dtype
// (two's complement), 1 BOOL, 2 FP32 (round to nearest, as struct.pack("<f")). nullptr with no
// error set to decline (a value this cannot encode exactly as Python would).
PyObject* scalar_bits(PyObject* value, long kind) {
  if (kind == 1) return PyLong_FromUnsignedLongLong(value == Py_True ? 1 : 0);
  if (kind == 2) {
    const double d = PyFloat_AsDouble(value);
    if (d == -1.0 && PyErr_Occurred()) return nullptr;
    const float f = static_cast<float>(d);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &f, sizeof bits);
    return PyLong_FromUnsignedLongLong(bits);
  }
  if (kind != 0) return nullptr;
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow != 0 || (v == -1 && PyErr_Occurred())) return nullptr;
  return PyLong_FromUnsignedLongLong(static_cast<unsigned long long>(v));
}

// launch(bound, args): one kernel-mode call of a registered kernel on a simulator, waited for:
// describe (check_common), the default stream only, pin, chip.kernel_launch with waits, retire.
// bound = (plan, gate, codes, stream_local, cell, scalar_kinds),
// cell = [kernel_launch, slot, settings, finish]
//   plan: describe's 15-tuple; gate: launch_gate(); codes: the wire dtype code per tensor;
//   scalar_kinds: per scalar parameter, how its bits are encoded (scalar_bits);
//   stream_local: the simulator's thread-local stream stack (its `stack` must be empty: the
//   default stream); kernel_launch: the chip's bound method; slot: the kernel's slot;
//   settings: the RunSettings of a waited launch; finish(run, args, pins): the Python tail for
//   a run that did not finish on this thread or failed (it waits, unpins, raises as the general
//   path does). Shutdown empties the cell once no launch is inside the closed gate.
// Returns False without a side effect when the call is outside this path (the caller then
// takes the general path, which alone decides and reports errors), else None or finish's result.
PyObject* launch(PyObject* /*module*/, PyObject* const* argv, Py_ssize_t argc) {
  if (argc != 2 || !PyTuple_CheckExact(argv[0]) || PyTuple_GET_SIZE(argv[0]) != kBoundSize) {
    PyErr_SetString(PyExc_TypeError, "launch(bound, args): expected the 6-tuple pypto.torch._kernel.bound builds and the args");
    return nullptr;
  }
  PyObject* bound = argv[0];
  PyObject* args = argv[1];
  PyObject* plan = PyTuple_GET_ITEM(bound, 0);
  LaunchGate* gate = gate_of(PyTuple_GET_ITEM(bound, 1));
  if (gate == nullptr) return nullptr;
  if (!PyTuple_CheckExact(args)) Py_RETURN_FALSE;
  PyObject* tensor_plan = PyTuple_GET_ITEM(plan, 1);
  const Py_ssize_t ntensors = PyTuple_GET_SIZE(tensor_plan);
  Facts facts[kMaxTensors];
  Span spans[kMaxTensors];
  bool common = false;
  try {
    common = check_common(plan, args, facts, spans);
  } catch (...) {
    common = false;
  }
  if (!common) {
    PyErr_Clear();
    Py_RETURN_FALSE;
  }
  static PyObject* stack_name = PyUnicode_InternFromString("stack");
  PyObject* stack = PyObject_GetAttr(PyTuple_GET_ITEM(bound, 3), stack_name);
  if (stack == nullptr) {
    PyErr_Clear();
    Py_RETURN_FALSE;
  }
  const bool default_stream = PyList_CheckExact(stack) && PyList_GET_SIZE(stack) == 0;
  Py_DECREF(stack);
  if (!default_stream) Py_RETURN_FALSE;

  // The scalar bits and the descriptors, built before admission (nothing to undo on failure).
  PyObject* scalar_plan = PyTuple_GET_ITEM(plan, 2);
  PyObject* kinds = PyTuple_GET_ITEM(bound, 5);
  const Py_ssize_t nscalars = PyTuple_GET_SIZE(scalar_plan);
  if (PyTuple_GET_SIZE(kinds) != nscalars) Py_RETURN_FALSE;
  PyObject* scalars = PyTuple_New(nscalars);
  if (scalars == nullptr) return nullptr;
  for (Py_ssize_t k = 0; k < nscalars; ++k) {
    PyObject* value = PyTuple_GET_ITEM(args, PyLong_AsSsize_t(PyTuple_GET_ITEM(PyTuple_GET_ITEM(scalar_plan, k), 0)));
    PyObject* bits = scalar_bits(value, PyLong_AsLong(PyTuple_GET_ITEM(kinds, k)));
    if (bits == nullptr) {
      Py_DECREF(scalars);
      PyErr_Clear();
      Py_RETURN_FALSE;
    }
    PyTuple_SET_ITEM(scalars, k, bits);
  }
  // The descriptors.
  PyObject* tensors = PyTuple_New(ntensors);
  if (tensors == nullptr) {
    Py_DECREF(scalars);
    return nullptr;
  }
  PyObject* codes = PyTuple_GET_ITEM(bound, 2);
  for (Py_ssize_t k = 0; k < ntensors; ++k) {
    const Facts& f = facts[k];
    const auto sizes = f.t->sizes();
    PyObject* items[6] = {
        PyLong_FromUnsignedLongLong(f.base), PyLong_FromLongLong(f.capacity),
        new_ref(PyTuple_GET_ITEM(codes, k)), shape_of(sizes),
        strides_of(PyTuple_GET_ITEM(PyTuple_GET_ITEM(tensor_plan, k), 4), sizes), PyLong_FromLongLong(f.offset),
    };
    PyObject* entry = PyTuple_New(6);
    bool ok = entry != nullptr;
    for (PyObject* item : items) ok = ok && item != nullptr;
    if (!ok) {
      for (PyObject* item : items) Py_XDECREF(item);
      Py_XDECREF(entry);
      Py_DECREF(tensors);
      Py_DECREF(scalars);
      return nullptr;
    }
    for (Py_ssize_t i = 0; i < 6; ++i) PyTuple_SET_ITEM(entry, i, items[i]);
    PyTuple_SET_ITEM(tensors, k, entry);
  }

  // Admission: counted before the flag is read, so shutdown sees this launch or refuses it.
  gate->inflight.fetch_add(1);
  PyObject* cell = PyTuple_GET_ITEM(bound, 4);
  if (!gate->admits.load() || !PyList_CheckExact(cell) || PyList_GET_SIZE(cell) != 4) {
    gate->inflight.fetch_sub(1);
    Py_DECREF(tensors);
    Py_DECREF(scalars);
    Py_RETURN_FALSE;  // the general path raises KernelClosedError
  }
  // Held for this call (shutdown empties the cell only once no launch is inside).
  PyObject* kernel_launch = new_ref(PyList_GET_ITEM(cell, 0));
  PyObject* slot = new_ref(PyList_GET_ITEM(cell, 1));
  PyObject* settings = new_ref(PyList_GET_ITEM(cell, 2));
  PyObject* finish = new_ref(PyList_GET_ITEM(cell, 3));
  auto drop_cell = [&]() {
    Py_DECREF(kernel_launch);
    Py_DECREF(slot);
    Py_DECREF(settings);
    Py_DECREF(finish);
  };
  // Pins: each storage non-resizable for the run, at the address it was described with.
  auto held = std::make_unique<Held>();
  held->reserve(static_cast<std::size_t>(ntensors));
  bool moved = false;
  {
    std::lock_guard<std::mutex> lock(pin_mutex);
    auto& table = pin_table();
    for (Py_ssize_t k = 0; k < ntensors && !moved; ++k) {
      const c10::Storage& storage = facts[k].t->storage();
      c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
      auto found = table.find(impl);
      if (found == table.end()) {
        table.emplace(impl, PinEntry{1, impl->resizable()});
        impl->set_resizable(false);
      } else {
        ++found->second.count;
      }
      held->push_back(storage);
      moved = reinterpret_cast<std::uintptr_t>(impl->data_ptr().get()) != facts[k].base;
    }
    if (moved) release_locked(*held);
  }
  if (moved) {  // the general path describes it again and reports it
    drop_cell();
    gate->inflight.fetch_sub(1);
    Py_DECREF(tensors);
    Py_DECREF(scalars);
    Py_RETURN_FALSE;
  }
  PyObject* call[4] = {slot, tensors, scalars, settings};
  PyObject* run = PyObject_Vectorcall(kernel_launch, call, 4, nullptr);
  Py_DECREF(tensors);
  Py_DECREF(scalars);
  if (run == nullptr) {  // refused before anything was enqueued: nothing uses the memory
    release(held.get());
    drop_cell();
    gate->inflight.fetch_sub(1);
    return nullptr;
  }
  static PyObject* done_name = PyUnicode_InternFromString("done");
  static PyObject* error_name = PyUnicode_InternFromString("error");
  int finished = 0;
  PyObject* done = PyObject_GetAttr(run, done_name);
  if (done != nullptr) {
    finished = PyObject_IsTrue(done);
    Py_DECREF(done);
  }
  if (finished == 1) {
    PyObject* error = PyObject_GetAttr(run, error_name);
    const int failed = error == nullptr ? -1 : PyObject_IsTrue(error);
    Py_XDECREF(error);
    if (failed == 0) {  // ran on this thread and succeeded: retired here
      Py_DECREF(run);
      release(held.get());
      drop_cell();
      gate->inflight.fetch_sub(1);
      Py_RETURN_NONE;
    }
  }
  PyErr_Clear();
  // Still running (queued behind other launches) or failed: the Python tail owns the pins.
  PyObject* pins = PyCapsule_New(held.get(), kPinsCapsule, pins_destructor);
  if (pins == nullptr) {
    release(held.get());
    Py_DECREF(run);
    drop_cell();
    gate->inflight.fetch_sub(1);
    return nullptr;
  }
  held.release();
  PyObject* tail[3] = {run, args, pins};
  PyObject* result = PyObject_Vectorcall(finish, tail, 3, nullptr);
  Py_DECREF(pins);
  Py_DECREF(run);
  drop_cell();
  gate->inflight.fetch_sub(1);
  return result;
}

PyMethodDef methods[] = {
    {"describe", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(describe)), METH_FASTCALL,
     "describe(plan, args): the CallFrame of a common call, or None"},
    {"describe_or", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(describe_or)), METH_FASTCALL,
     "describe_or(plan, general, args): the CallFrame of a common call, else general(args)"},
    {"chip_tensors", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(chip_tensors)), METH_FASTCALL,
     "chip_tensors(records, codes): simpler's materialised tensor tuples of a frame's records"},
    {"pin", pin, METH_O, "pin(records): hold the records' storages non-resizable; a capsule, or the index of a moved one"},
    {"unpin", unpin, METH_O, "unpin(capsule): release what pin() holds (idempotent)"},
    {"launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(launch)), METH_FASTCALL,
     "launch(bound, args): a waited kernel-mode launch of a common call in one native call, or False"},
    {"launch_gate", launch_gate, METH_NOARGS, "launch_gate(): a new admission gate for bound launches"},
    {"close_gate", close_gate, METH_O, "close_gate(gate): refuse bound launches; how many are inside"},
    {"gate_inflight", gate_inflight, METH_O, "gate_inflight(gate): bound launches inside now"},
    {"pinned_count", pinned_count, METH_NOARGS, "pinned_count(): how many storages are pinned now"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  if (PyModule_AddFunctions(m.ptr(), methods) != 0) throw pybind11::error_already_set();
}
