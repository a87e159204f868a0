// SPDX-License-Identifier: MIT
// An array travels as ditask::torch's tensors do ("DTT1" | dtype (1) | flags (1) | dimensions (2) |
// sizes (8 each) | [autograd ids (16) when flags & 2] | elements, contiguous, native order;
// integers little-endian), so a C++ worker with ditask::torch receives it as an at::Tensor.
#include "convert.hpp"

#include <cstring>
#include <string_view>

#include <ditask/detail/rpc_wire.hpp>
#include <ditask/error.hpp>

namespace ditask::python {

namespace {

constexpr char kMagic[4] = {'D', 'T', 'T', '1'};
constexpr std::size_t kHeader = 4 + 1 + 1 + 2;
constexpr std::uint8_t kRecorded = 2;

// c10::ScalarType numbers and the NumPy dtype of each (one table for both directions).
struct DtypeCode {
  char kind;
  int itemsize;
  std::uint8_t code;
  const char* numpy;
};
constexpr DtypeCode kDtypes[] = {
    {'u', 1, 0, "uint8"},    {'i', 1, 1, "int8"},      {'i', 2, 2, "int16"},         {'i', 4, 3, "int32"},
    {'i', 8, 4, "int64"},    {'f', 2, 5, "float16"},   {'f', 4, 6, "float32"},       {'f', 8, 7, "float64"},
    {'c', 8, 9, "complex64"}, {'c', 16, 10, "complex128"}, {'b', 1, 11, "bool"},
};

std::string type_name(py::handle value) { return Py_TYPE(value.ptr())->tp_name; }

// " (argument 0[1])": where in the arguments a value is; empty for a value on its own.
std::string place(const std::string& where) { return where.empty() ? "" : " (" + where + ")"; }

[[noreturn]] void refuse(py::handle value, const std::string& where, const std::string& event) {
  throw Error("cannot send a value of type '" + type_name(value) + "'" + place(where) + " in event '" + event + "'",
              "events carry None, bool, int, float, str, bytes, lists, tuples, dicts with str keys and "
              "NumPy arrays; ditask.allow_pickle('" + event + "') on both sides pickles the rest (a pickle "
              "runs the sender's code on the receiver)");
}

void put_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
}

std::uint64_t get_u64(const std::uint8_t* at) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= static_cast<std::uint64_t>(at[i]) << (8 * i);
  }
  return v;
}

json array_to_json(py::handle value, const std::string& event) {
  auto numpy = py::module_::import("numpy");
  py::object array = numpy.attr("ascontiguousarray")(value);
  py::object dtype = array.attr("dtype");
  if (!dtype.attr("isnative").cast<bool>()) {
    array = array.attr("astype")(dtype.attr("newbyteorder")("="));
    dtype = array.attr("dtype");
  }
  const auto kind = dtype.attr("kind").cast<std::string>();
  const auto itemsize = dtype.attr("itemsize").cast<int>();
  const DtypeCode* found = nullptr;
  for (const auto& d : kDtypes) {
    if (!kind.empty() && d.kind == kind[0] && d.itemsize == itemsize) {
      found = &d;
    }
  }
  if (found == nullptr) {
    throw Error("cannot send a NumPy array of dtype " + py::str(dtype).cast<std::string>() + " in event '" + event + "'",
                "arrays travel as uint8, int8-int64, float16-float64, complex64, complex128 or bool (the dtypes "
                "a LibTorch tensor has); convert it with .astype()");
  }
  auto shape = array.attr("shape").cast<py::tuple>();
  py::buffer_info info = py::buffer(array).request();
  const auto bytes = static_cast<std::size_t>(info.size) * static_cast<std::size_t>(info.itemsize);
  std::vector<std::uint8_t> out;
  out.reserve(kHeader + 8 * shape.size() + bytes);
  out.insert(out.end(), kMagic, kMagic + 4);
  out.push_back(found->code);
  out.push_back(0);
  out.push_back(static_cast<std::uint8_t>(shape.size() & 0xff));
  out.push_back(static_cast<std::uint8_t>(shape.size() >> 8));
  for (auto size : shape) {
    put_u64(out, size.cast<std::uint64_t>());
  }
  const auto* data = static_cast<const std::uint8_t*>(info.ptr);
  out.insert(out.end(), data, data + bytes);
  return json::binary(std::move(out), kArraySubtype);
}

py::object array_to_python(const std::vector<std::uint8_t>& bytes, const std::string& event) {
  auto bad = [&](const std::string& why) {
    return Error("event '" + event + "' carries an array that cannot be read: " + why);
  };
  if (bytes.size() < kHeader || std::memcmp(bytes.data(), kMagic, 4) != 0) {
    throw bad("no DTT1 header");
  }
  const std::uint8_t code = bytes[4];
  const std::uint8_t flags = bytes[5];
  const std::size_t dims = bytes[6] | (static_cast<std::size_t>(bytes[7]) << 8);
  std::size_t at = kHeader + 8 * dims + ((flags & kRecorded) ? 16 : 0);
  if (bytes.size() < at) {
    throw bad("its header is cut");
  }
  const DtypeCode* found = nullptr;
  for (const auto& d : kDtypes) {
    if (d.code == code) {
      found = &d;
    }
  }
  if (found == nullptr) {
    throw bad("its dtype (torch scalar type " + std::to_string(code) + ") has no NumPy equivalent");
  }
  py::list shape;
  std::size_t count = 1;
  for (std::size_t i = 0; i < dims; ++i) {
    const auto size = get_u64(bytes.data() + kHeader + 8 * i);
    count *= size;
    shape.append(size);
  }
  if (bytes.size() - at != count * static_cast<std::size_t>(found->itemsize)) {
    throw bad("its size does not match its shape");
  }
  auto numpy = py::module_::import("numpy");
  py::object array = numpy.attr("empty")(py::tuple(shape), found->numpy);
  py::buffer_info info = py::buffer(array).request(true);
  if (count != 0) {
    std::memcpy(info.ptr, bytes.data() + at, bytes.size() - at);
  }
  return array;
}

thread_local Handles t_handles = Handles::refuse;
thread_local std::size_t t_handles_seen = 0;

json handle_to_json(py::handle value, const std::string& where, const std::string& event) {
  switch (t_handles) {
    case Handles::refuse:
      throw Error("cannot send a remote-object handle (RRef)" + place(where) + " in event '" + event + "'",
                  "an RRef travels only as an argument or the result of a remote call (rpc.call, rref.rpc_sync())");
    case Handles::placeholder:
      ++t_handles_seen;
      return nullptr;
    case Handles::registered:
      ++t_handles_seen;
      return rref_to_json(value);
  }
  return nullptr;
}

json value_to_json(py::handle value, const std::string& where, const std::string& event, bool pickle) {
  PyObject* p = value.ptr();
  if (p == Py_None) {
    return nullptr;
  }
  if (PyBool_Check(p)) {
    return p == Py_True;
  }
  if (PyLong_Check(p)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
    if (overflow == 0) {
      return static_cast<std::int64_t>(v);
    }
    const unsigned long long u = overflow > 0 ? PyLong_AsUnsignedLongLong(p) : 0;
    if (overflow > 0 && !PyErr_Occurred()) {
      return static_cast<std::uint64_t>(u);
    }
    PyErr_Clear();
    throw Error("cannot send the int" + place(where) + " in event '" + event + "': it does not fit in 64 bits",
                "send it as a str, or pickle it with ditask.allow_pickle('" + event + "')");
  }
  if (PyFloat_Check(p)) {
    return PyFloat_AS_DOUBLE(p);
  }
  if (PyUnicode_Check(p)) {
    return value.cast<std::string>();
  }
  if (PyBytes_Check(p) || PyByteArray_Check(p)) {
    const std::string_view text =
        PyBytes_Check(p) ? std::string_view(PyBytes_AS_STRING(p), static_cast<std::size_t>(PyBytes_GET_SIZE(p)))
                         : std::string_view(PyByteArray_AS_STRING(p), static_cast<std::size_t>(PyByteArray_GET_SIZE(p)));
    return json::binary(std::vector<std::uint8_t>(text.begin(), text.end()));
  }
  if (PyList_Check(p) || PyTuple_Check(p)) {
    json out = json::array();
    std::size_t i = 0;
    for (auto item : value) {
      out.push_back(value_to_json(item, where + "[" + std::to_string(i++) + "]", event, pickle));
    }
    return out;
  }
  if (PyDict_Check(p)) {
    json out = json::object();
    for (auto [key, item] : value.cast<py::dict>()) {
      if (!PyUnicode_Check(key.ptr())) {
        throw Error("cannot send a dict with a key of type '" + type_name(key) + "'" + place(where) + " in event '" + event + "'",
                    "dict keys travel as str only (MessagePack maps of JSON)");
      }
      auto name = key.cast<std::string>();
      out[name] = value_to_json(item, where + "['" + name + "']", event, pickle);
    }
    return out;
  }
  if (is_rref(value)) {
    return handle_to_json(value, where, event);
  }
  const std::string name = type_name(value);
  if (name == "numpy.ndarray") {
    return array_to_json(value, event);
  }
  if (name.rfind("numpy.", 0) == 0 && py::hasattr(value, "item")) {  // a NumPy scalar
    return value_to_json(value.attr("item")(), where, event, pickle);
  }
  if (pickle) {
    auto data = py::module_::import("pickle").attr("dumps")(value).cast<std::string>();
    return json::binary(std::vector<std::uint8_t>(data.begin(), data.end()), kPickleSubtype);
  }
  refuse(value, where, event);
}

}  // namespace

json to_json(py::handle value, const std::string& event, bool pickle) { return value_to_json(value, "", event, pickle); }

HandleScope::HandleScope(Handles mode) : previous_mode_(t_handles), previous_seen_(t_handles_seen) {
  t_handles = mode;
  t_handles_seen = 0;
}

HandleScope::~HandleScope() {
  t_handles = previous_mode_;
  t_handles_seen = previous_seen_;
}

std::size_t HandleScope::seen() const { return t_handles_seen; }

json result_to_json(py::handle value, const std::string& call, bool pickle) {
  {
    HandleScope first(Handles::placeholder);
    json plain = to_json(value, call, pickle);
    if (first.seen() == 0) {
      return plain;
    }
  }
  detail::begin_reply();  // the result's handles are registered for the caller
  HandleScope handles(Handles::registered);
  return to_json(value, call, pickle);
}

py::object to_python(const json& value, const std::string& event, bool pickle) {
  switch (value.type()) {
    case json::value_t::null:
    case json::value_t::discarded:
      return py::none();
    case json::value_t::boolean:
      return py::bool_(value.get<bool>());
    case json::value_t::number_integer:
      return py::int_(value.get<std::int64_t>());
    case json::value_t::number_unsigned:
      return py::int_(value.get<std::uint64_t>());
    case json::value_t::number_float:
      return py::float_(value.get<double>());
    case json::value_t::string:
      return py::str(value.get_ref<const std::string&>());
    case json::value_t::array: {
      py::list out(value.size());
      for (std::size_t i = 0; i < value.size(); ++i) {
        out[i] = to_python(value[i], event, pickle);
      }
      return out;
    }
    case json::value_t::object: {
      if (value.contains("$rref")) {
        return rref_from_json(value);
      }
      py::dict out;
      for (const auto& [key, item] : value.items()) {
        out[py::str(key)] = to_python(item, event, pickle);
      }
      return out;
    }
    case json::value_t::binary: {
      const auto& bin = value.get_binary();
      if (bin.has_subtype() && bin.subtype() == kArraySubtype) {
        return array_to_python(bin, event);
      }
      if (bin.has_subtype() && bin.subtype() == kPickleSubtype) {
        if (!pickle) {
          throw Error("event '" + event + "' carries a pickled value, and this node does not unpickle it",
                      "call ditask.allow_pickle('" + event + "') here to accept it (unpickling runs the sender's code)");
        }
        return py::module_::import("pickle").attr("loads")(
            py::bytes(reinterpret_cast<const char*>(bin.data()), bin.size()));
      }
      return py::bytes(reinterpret_cast<const char*>(bin.data()), bin.size());
    }
  }
  return py::none();
}

EventArgs to_event_args(const py::tuple& args, const py::dict& kwargs, const std::string& event, bool pickle) {
  EventArgs out;
  std::size_t i = 0;
  for (auto item : args) {
    out.args.push_back(value_to_json(item, "argument " + std::to_string(i++), event, pickle));
  }
  for (auto [key, item] : kwargs) {
    auto name = key.cast<std::string>();
    out.kwargs[name] = value_to_json(item, "argument '" + name + "'", event, pickle);
  }
  return out;
}

std::pair<py::tuple, py::dict> to_python_args(const EventArgs& args, const std::string& event, bool pickle) {
  py::tuple positional(args.args.size());
  for (std::size_t i = 0; i < args.args.size(); ++i) {
    positional[i] = to_python(args.args[i], event, pickle);
  }
  py::dict named;
  for (const auto& [key, item] : args.kwargs.items()) {
    named[py::str(key)] = to_python(item, event, pickle);
  }
  return {positional, named};
}

}  // namespace ditask::python
