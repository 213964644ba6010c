// Python bindings (the _posattn extension): NumPy arrays in any strides in, NumPy arrays out;
// the GIL is released while a kernel runs; posattn::Error becomes posattn.Error (a ValueError).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>

#include "posattn/posattn.hpp"

namespace py = pybind11;
using posattn::DType;
using posattn::Tensor;

namespace {

[[noreturn]] void invalid(const std::string &api, const std::string &message) {
    throw posattn::Error(posattn::Error::Kind::invalid_argument, "posattn." + api + ": " + message);
}

std::string type_name(const py::handle &value) { return py::str(py::type::handle_of(value).attr("__name__")); }

// A value of the wrong Python type: posattn.ArgumentTypeError, a posattn.Error and a TypeError.
struct ArgumentTypeError : posattn::Error {
    explicit ArgumentTypeError(const std::string &message) : Error(Kind::invalid_argument, message) {}
};

// Entry `key` of dict argument `argument` is `value`, of the wrong type.
ArgumentTypeError wrong_entry(const std::string &api, const char *argument, const std::string &key, const py::handle &value,
                              const char *expected) {
    return ArgumentTypeError("posattn." + api + ": argument '" + argument + "' has '" + key + "' = " +
                             std::string(py::repr(value)).substr(0, 80) + " (" + type_name(value) + "); expected " + expected);
}

// Argument `name` is an extent (Halide's buffers hold 32-bit ones).
void check_extent(const std::string &api, const char *name, int64_t value) {
    if (value < 0 || value > INT32_MAX)
        invalid(api, std::string("argument '") + name + "' is " + std::to_string(value) + "; expected 0 <= " + name + " <= 2^31-1");
}

// Entry `key` of dict argument `argument` as T (bool: True or False only, as NumPy's bool), or an
// ArgumentTypeError naming both.
template <typename T>
T entry(const std::string &api, const char *argument, const std::string &key, const py::handle &value) {
    const char *expected = std::is_same_v<T, bool>          ? "True or False"
                           : std::is_same_v<T, std::string> ? "a string"
                           : std::is_same_v<T, int64_t>     ? "an integer (int64)"
                           : std::is_same_v<T, double>      ? "a number"
                                                            : "a list of numbers";
    auto wrong = [&] { return wrong_entry(api, argument, key, value, expected); };
    if constexpr (std::is_same_v<T, bool>) {
        if (!py::isinstance<py::bool_>(value) && type_name(value) != "bool")
            throw wrong();
    }
    if constexpr (std::is_same_v<T, int64_t>) {
        if (py::isinstance<py::bool_>(value)) throw wrong();
    }
    try {
        return value.cast<T>();
    } catch (const py::cast_error &) {
        throw wrong();
    }
}

// A device buffer the caller owns (posattn.DeviceArray): its native handle (a CUdeviceptr or a
// cl_mem as an int) and the layout of its elements. Every float32 operand of a kernel call may be
// one; what the runtime reads itself (positions, token ids, key lengths, slopes) is host memory.
struct DeviceArray {
    uint64_t handle;
    std::vector<int64_t> shape;
    std::string dtype;
    std::vector<int64_t> strides;  // elements; empty: row-major

    Tensor tensor(const std::string &api, const char *name) const {
        static const std::map<std::string, DType> storage{{"float32", DType::float32}, {"float16", DType::float16}, {"bfloat16", DType::bfloat16}};
        auto found = storage.find(dtype);
        if (found == storage.end())
            invalid(api, std::string("argument '") + name + "' has dtype " + dtype + "; expected float32, float16 or bfloat16");
        return Tensor{reinterpret_cast<void *>(handle), found->second, shape, strides, posattn::Memory::device};
    }
};

// NumPy's float16, and bfloat16 as ml_dtypes (JAX's NumPy dtypes) defines it: a type NumPy has no
// number for, known by its name.
bool is_float16(const py::dtype &dt) { return dt.kind() == 'f' && dt.itemsize() == 2; }
bool is_bfloat16(const py::dtype &dt) { return dt.kind() == 'V' && dt.itemsize() == 2 && std::string(py::str(dt)) == "bfloat16"; }
bool is_storage(const py::dtype &dt) { return dt.is(py::dtype::of<float>()) || is_float16(dt) || is_bfloat16(dt); }

Tensor view(const std::string &api, const py::array &a, const char *name, bool output = false) {
    Tensor t;
    py::dtype dt = a.dtype();
    if (dt.is(py::dtype::of<float>())) t.dtype = DType::float32;
    else if (is_float16(dt)) t.dtype = DType::float16;
    else if (is_bfloat16(dt)) t.dtype = DType::bfloat16;
    else if (dt.is(py::dtype::of<double>())) t.dtype = DType::float64;
    else if (dt.is(py::dtype::of<int32_t>())) t.dtype = DType::int32;
    else if (dt.is(py::dtype::of<int64_t>())) t.dtype = DType::int64;
    else if (dt.is(py::dtype::of<bool>())) t.dtype = DType::boolean;
    else invalid(api, std::string("argument '") + name + "' has dtype " + std::string(py::str(dt)) +
                          "; expected float32 (or float16, bfloat16) or int32 as documented");
    if (output && !a.writeable()) invalid(api, std::string("argument '") + name + "' is read-only");
    t.data = const_cast<void *>(a.data());
    t.shape.reserve(size_t(a.ndim())), t.strides.reserve(size_t(a.ndim()));
    for (py::ssize_t d = 0; d < a.ndim(); d++) {
        t.shape.push_back(a.shape(d));
        if (a.strides(d) % a.itemsize() != 0)
            invalid(api, std::string("argument '") + name + "' has a stride of " + std::to_string(a.strides(d)) +
                             " bytes, not a multiple of its element size");
        t.strides.push_back(a.strides(d) / a.itemsize());
    }
    return t;
}

std::string shape_string(const std::vector<py::ssize_t> &shape) {
    return posattn::shape_string(std::vector<int64_t>(shape.begin(), shape.end()));
}

// The dtype of a new output: like's where like is an array of a storage type (the call's first
// input: q, x, a table), the storage type like names (a table's dtype=), else float32.
py::dtype output_dtype(const std::string &api, const py::object &like) {
    if (py::isinstance<py::array>(like)) {
        py::dtype dt = py::reinterpret_borrow<py::array>(like).dtype();
        return is_storage(dt) ? dt : py::dtype::of<float>();
    }
    if (like.is_none() || py::isinstance<DeviceArray>(like)) return py::dtype::of<float>();
    if (py::isinstance<py::str>(like) && like.cast<std::string>() == "bfloat16") {
        try {
            return py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
        } catch (const py::error_already_set &) {
            invalid(api, "argument 'dtype' is 'bfloat16', which needs the ml_dtypes package (pip install ml_dtypes)");
        }
    }
    py::dtype dt;
    try {
        dt = py::dtype::from_args(like);
    } catch (const py::error_already_set &) {
        invalid(api, "argument 'dtype' is " + std::string(py::repr(like)) + "; expected float32, float16 or bfloat16");
    }
    if (!is_storage(dt)) invalid(api, "argument 'dtype' is " + std::string(py::str(dt)) + "; expected float32, float16 or bfloat16");
    return dt;
}

// The caller's `out` (checked against the inputs by the C++ API), or a new array of like's dtype
// (output_dtype), 64-byte aligned: the x86 kernels' non-temporal stores write a whole line at once
// there (at NumPy's 16 mod 64 they stream ~1.25x slower; cmake/nontemporal_outputs.py).
py::object output(const std::string &api, const py::object &out, std::vector<py::ssize_t> shape, const py::object &like) {
    if (!out.is_none()) return out;
    const py::dtype dtype = output_dtype(api, like);
    size_t bytes = size_t(dtype.itemsize());
    for (py::ssize_t e : shape) {
        if (e < 0) invalid(api, "the output shape " + shape_string(shape) + " has a negative extent");
        if (e > 0 && bytes > SIZE_MAX / 2 / size_t(e))
            invalid(api, "the output shape " + shape_string(shape) + " is too large to allocate");
        bytes *= size_t(e);
    }
    void *data = posattn::allocate_output(bytes);
    if (!data)
        invalid(api, "the output shape " + shape_string(shape) + " (" + std::to_string(bytes) +
                         " bytes) is too large to allocate; expected a smaller shape, or out=");
    py::capsule owner(data, [](void *p) { posattn::free_output(p); });
    return py::array(dtype, shape, data, owner);
}

posattn::SinusoidalOptions sinusoidal_options(double base, const std::string &layout, const std::string &convention) {
    posattn::SinusoidalOptions o;
    o.base = base;
    if (layout == "interleaved") o.layout = posattn::Layout::interleaved;
    else if (layout == "half") o.layout = posattn::Layout::half;
    else invalid("sinusoidal", "argument 'layout' is '" + layout + "'; expected 'interleaved' or 'half'");
    if (convention == "vaswani") o.convention = posattn::Convention::vaswani;
    else if (convention == "t2t") o.convention = posattn::Convention::t2t;
    else invalid("sinusoidal", "argument 'convention' is '" + convention + "'; expected 'vaswani' or 't2t'");
    return o;
}

// An argument that may be a device buffer: a DeviceArray, or a NumPy array (not converted here:
// the view must point into the caller's own array).
Tensor operand(const std::string &api, const py::object &a, const char *name, bool output = false) {
    if (py::isinstance<DeviceArray>(a)) return a.cast<const DeviceArray &>().tensor(api, name);
    if (!py::isinstance<py::array>(a))
        invalid(api, std::string("argument '") + name + "' is a " + type_name(a) +
                         "; expected a NumPy array or a posattn.DeviceArray");
    return view(api, py::reinterpret_borrow<py::array>(a), name, output);
}

std::vector<py::ssize_t> shape_of(const py::object &a) {
    if (py::isinstance<DeviceArray>(a)) {
        const std::vector<int64_t> &shape = a.cast<const DeviceArray &>().shape;
        return {shape.begin(), shape.end()};
    }
    py::array array = a.cast<py::array>();  // (a converted copy only lends its shape)
    return {array.shape(), array.shape() + array.ndim()};
}

// An encoding call, the table form (x absent: out is positions' shape + [d]) or the fused form
// (out has x's shape). Runs run(x, positions, out) on tensor views without the GIL.
// A new out has x's dtype, or for a table the dtype `like` gives (output_dtype).
template <typename Run>
py::object encoding(const std::string &api, const py::object &x, const py::array &positions, int64_t d,
                    const py::object &out, Run run, const py::object &like = py::none()) {
    std::vector<py::ssize_t> shape;
    if (!x.is_none()) {
        shape = shape_of(x);
    } else {
        if (d < 0) invalid(api, "argument 'd' is " + std::to_string(d) + "; expected d >= 0");
        shape = shape_of(positions);
        shape.push_back(d);
        // The width d exists only here: the C++ API reads it from `out`.
        if (!out.is_none() && shape_of(out) != shape)
            invalid(api, "argument 'out' has shape " + shape_string(shape_of(out)) + "; expected " +
                             shape_string(shape) + " (positions' shape + [d])");
    }
    py::object result = output(api, out, shape, x.is_none() ? like : x);
    std::optional<Tensor> xv;
    if (!x.is_none()) xv = operand(api, x, "x");
    Tensor p = view(api, positions, "positions"), o = operand(api, result, "out", true);
    py::gil_scoped_release release;
    run(xv ? &*xv : nullptr, p, o);
    return result;
}

posattn::NormalizedOptions normalized_options(const std::string &api, std::optional<int64_t> length,
                                              const std::string &mode) {
    posattn::NormalizedOptions o;
    if (length) {
        if (*length < 1) invalid(api, "argument 'length' is " + std::to_string(*length) + "; expected length >= 1");
        o.length = *length;
    }
    if (mode == "minus_one") o.mode = posattn::NormalizedMode::minus_one;
    else if (mode == "length") o.mode = posattn::NormalizedMode::length;
    else invalid(api, "argument 'mode' is '" + mode + "'; expected 'minus_one' or 'length'");
    return o;
}

// An HF-style rope_scaling dict ({"type" or "rope_type": ..., "factor": ..., ...}) as RopeScaling.
posattn::RopeScaling rope_scaling(const std::string &api, const std::optional<py::dict> &dict) {
    using T = posattn::RopeScalingType;
    posattn::RopeScaling s;
    if (!dict) return s;
    static const std::map<std::string, T> types{{"default", T::none}, {"linear", T::linear}, {"ntk", T::ntk},
                                                {"dynamic", T::dynamic}, {"yarn", T::yarn}, {"llama3", T::llama3},
                                                {"longrope", T::longrope}};
    for (auto [key, value] : *dict) {
        std::string name = py::str(key);
        auto as = [&](auto type) { return entry<decltype(type)>(api, "scaling", name, value); };
        auto number = [&] { return as(0.0); };
        auto integer = [&] { return as(int64_t(0)); };
        if (name == "type" || name == "rope_type") {
            auto it = types.find(as(std::string()));
            if (it == types.end())
                invalid(api, "argument 'scaling' has type '" + as(std::string()) +
                                 "'; expected default, linear, ntk, dynamic, yarn, llama3 or longrope");
            s.type = it->second;
        } else if (name == "factor") s.factor = number();
        else if (name == "original_max_position_embeddings") s.original_max_position_embeddings = integer();
        else if (name == "max_position_embeddings") s.max_position_embeddings = integer();
        else if (name == "beta_fast") s.beta_fast = number();
        else if (name == "beta_slow") s.beta_slow = number();
        else if (name == "truncate") s.truncate = as(false);
        else if (name == "mscale") s.mscale = number();
        else if (name == "mscale_all_dim") s.mscale_all_dim = number();
        else if (name == "attention_factor") s.attention_factor = number();
        else if (name == "low_freq_factor") s.low_freq_factor = number();
        else if (name == "high_freq_factor") s.high_freq_factor = number();
        else if (name == "short_factor") s.short_factor = as(std::vector<double>());
        else if (name == "long_factor") s.long_factor = as(std::vector<double>());
        else invalid(api, "argument 'scaling' has an unknown key '" + name + "'");
    }
    if (!dict->contains("type") && !dict->contains("rope_type"))
        invalid(api, "argument 'scaling' has no 'type'; expected linear, ntk, dynamic, yarn, llama3 or longrope");
    return s;
}

posattn::AlibiForm alibi_form(const std::string &api, const char *name, const std::string &form) {
    static const std::map<std::string, posattn::AlibiForm> forms{{"relative", posattn::AlibiForm::relative},
                                                                 {"key_position", posattn::AlibiForm::key_position},
                                                                 {"symmetric", posattn::AlibiForm::symmetric}};
    auto it = forms.find(form);
    if (it == forms.end())
        invalid(api, std::string("argument '") + name + "' is '" + form + "'; expected 'relative', 'key_position' or 'symmetric'");
    return it->second;
}

posattn::RopeLayout rope_layout(const std::string &layout) {
    if (layout == "neox") return posattn::RopeLayout::neox;
    if (layout == "gptj") return posattn::RopeLayout::gptj;
    invalid("rope", "argument 'layout' is '" + layout + "'; expected 'neox' or 'gptj'");
}

// The entries of a variant's dict: take(name, value) uses one or returns false for an unknown key.
template <typename Take>
void for_each_key(const char *argument, const py::dict &dict, Take take) {
    for (auto [key, value] : dict) {
        std::string name = py::str(key);
        if (!take(name, py::reinterpret_borrow<py::object>(value)))
            invalid("attention", std::string("argument '") + argument + "' has an unknown key '" + name + "'");
    }
}

// An array entry of a variant's dict (the Python layer made array-likes arrays): a NumPy array.
Tensor array_entry(const char *argument, const std::string &key, const py::handle &value) {
    if (!py::isinstance<py::array>(value)) throw wrong_entry("attention", argument, key, value, "an array");
    return view("attention", py::reinterpret_borrow<py::array>(value), key.c_str());
}

// A dict entry of a dict argument (rope's scaling).
py::dict dict_entry(const char *argument, const std::string &key, const py::handle &value) {
    if (!py::isinstance<py::dict>(value)) throw wrong_entry("attention", argument, key, value, "a dict");
    return py::reinterpret_borrow<py::dict>(value);
}

// An optional array entry (None: not given).
std::optional<Tensor> optional_array(const char *argument, const py::object &value, const std::string &key) {
    if (value.is_none()) return std::nullopt;
    return array_entry(argument, key, value);
}

// A required array entry.
Tensor dict_array(const py::dict &dict, const char *argument, const char *key) {
    if (!dict.contains(key) || dict[key].is_none())
        invalid("attention", std::string("argument '") + argument + "' has no '" + key + "'; expected an array");
    return array_entry(argument, key, dict[key]);
}

// attention(rope={...}): base, layout, rotary_dim, scaling, q_positions, k_positions, seq_len.
posattn::RopeAttention rope_attention(const py::dict &dict) {
    posattn::RopeAttention r;
    for_each_key("rope", dict, [&](const std::string &name, const py::object &value) {
        auto as = [&](auto type) { return entry<decltype(type)>("attention", "rope", name, value); };
        if (name == "base") r.base = as(0.0);
        else if (name == "layout") r.layout = rope_layout(as(std::string()));
        else if (name == "rotary_dim") r.rotary_dim = value.is_none() ? 0 : as(int64_t(0));
        else if (name == "scaling") r.scaling = rope_scaling("attention", value.is_none() ? std::nullopt : std::optional<py::dict>(dict_entry("rope", name, value)));
        else if (name == "q_positions") r.q_positions = optional_array("rope", value, name);
        else if (name == "k_positions") r.k_positions = optional_array("rope", value, name);
        else if (name == "seq_len") r.seq_len = value.is_none() ? 0 : as(int64_t(0));
        else return false;
        return true;
    });
    return r;
}

posattn::ShawAttention shaw_attention(const py::dict &dict) {
    for_each_key("shaw", dict, [](const std::string &name, const py::object &) { return name == "rel_k" || name == "rel_v"; });
    return {dict_array(dict, "shaw", "rel_k"), dict_array(dict, "shaw", "rel_v")};
}

posattn::TransformerXLAttention transformer_xl_attention(const py::dict &dict) {
    const char *arg = "transformer_xl";
    posattn::TransformerXLAttention xl;
    for_each_key(arg, dict, [&](const std::string &name, const py::object &value) {
        if (name == "clamp_len") xl.clamp_len = entry<int64_t>("attention", arg, name, value);
        else if (name == "same_length") xl.same_length = entry<int64_t>("attention", arg, name, value);
        else if (name == "r_order") {
            std::string order = entry<std::string>("attention", arg, name, value);
            if (order != "ascending" && order != "descending")
                invalid("attention", "argument 'transformer_xl' has r_order '" + order + "'; expected 'ascending' or 'descending'");
            xl.descending = order == "descending";
        }
        else return name == "r" || name == "u" || name == "v_bias";
        return true;
    });
    xl.r = dict_array(dict, arg, "r");
    xl.u = dict_array(dict, arg, "u");
    xl.v_bias = dict_array(dict, arg, "v_bias");
    return xl;
}

// attention(custom={"kernel": name, "inputs": {name: array}, "scalars": {name: number}}).
posattn::CustomAttention custom_attention(const py::dict &dict) {
    posattn::CustomAttention c;
    const char *arg = "custom";
    for_each_key(arg, dict, [&](const std::string &name, const py::object &value) {
        if (name == "kernel") c.kernel = entry<std::string>("attention", arg, name, value);
        else if (name == "inputs")
            for (auto [key, array] : dict_entry(arg, name, value)) {
                std::string input = py::str(key);
                c.inputs[input] = array_entry("custom.inputs", input, array);
            }
        else if (name == "scalars")
            for (auto [key, number] : dict_entry(arg, name, value)) {
                std::string scalar = py::str(key);
                c.scalars[scalar] = entry<double>("attention", "custom.scalars", scalar, number);
            }
        else return false;
        return true;
    });
    if (!dict.contains("kernel")) invalid("attention", "argument 'custom' has no 'kernel'; expected the name of a kernel added with load_kernel");
    return c;
}

posattn::DebertaAttention deberta_attention(const py::dict &dict) {
    posattn::DebertaAttention de;
    const char *arg = "deberta";
    for_each_key(arg, dict, [&](const std::string &name, const py::object &value) {
        if (name == "rel_embeddings") return true;
        else if (name == "w_key") de.w_key = optional_array(arg, value, name);
        else if (name == "b_key") de.b_key = optional_array(arg, value, name);
        else if (name == "w_query") de.w_query = optional_array(arg, value, name);
        else if (name == "b_query") de.b_query = optional_array(arg, value, name);
        else if (name == "position_buckets") de.position_buckets = entry<int64_t>("attention", arg, name, value);
        else if (name == "max_relative_positions") de.max_relative_positions = entry<int64_t>("attention", arg, name, value);
        else if (name == "p2c_index") {
            std::string index = entry<std::string>("attention", arg, name, value);
            if (index != "code" && index != "paper")
                invalid("attention", "argument 'deberta' has p2c_index '" + index + "'; expected 'code' or 'paper'");
            de.p2c_index = index == "paper" ? posattn::DebertaP2cIndex::paper : posattn::DebertaP2cIndex::code;
        } else return false;
        return true;
    });
    de.rel_embeddings = dict_array(dict, "deberta", "rel_embeddings");
    return de;
}

}  // namespace

PYBIND11_MODULE(_posattn, m) {
    namespace defaults = posattn::defaults;
    // The defaults of every call (posattn.hpp's posattn::defaults), for the Python package's signatures.
    m.attr("DEFAULTS") = py::dict(
        py::arg("base") = defaults::base, py::arg("t5_bidirectional") = defaults::t5_bidirectional,
        py::arg("t5_num_buckets") = defaults::t5_num_buckets, py::arg("t5_max_distance") = defaults::t5_max_distance,
        py::arg("deberta_max_relative_positions") = defaults::deberta_max_relative_positions,
        py::arg("floater_dt") = defaults::floater_dt, py::arg("floater_substeps") = defaults::floater_substeps,
        py::arg("schedule") = defaults::schedule, py::arg("device") = defaults::device);
    m.doc() = "posattn kernels (AOT-compiled Halide) over NumPy arrays.";
    auto error = py::register_exception<posattn::Error>(m, "Error", PyExc_ValueError);
    // Both a posattn.Error and a TypeError (pybind11 gives an exception one base; Python's own
    // constructor takes several). Registered after Error's, so its translator is tried first.
    static py::handle type_error = PyErr_NewException("posattn.ArgumentTypeError", py::make_tuple(error, py::handle(PyExc_TypeError)).ptr(), nullptr);
    m.add_object("ArgumentTypeError", type_error);
    py::register_exception_translator([](std::exception_ptr thrown) {
        try {
            if (thrown) std::rethrow_exception(thrown);
        } catch (const ArgumentTypeError &e) {
            PyErr_SetString(type_error.ptr(), e.what());
        }
    });

    m.def("sinusoidal",
          [](py::array positions, int64_t d, double base, std::string layout, std::string convention,
             py::object out, py::object dtype, std::string schedule, std::string device) {
              auto options = sinusoidal_options(base, layout, convention);
              return encoding("sinusoidal", py::none(), positions, d, out, [&](const Tensor *, const Tensor &p, const Tensor &o) {
                  posattn::sinusoidal(p, o, options, {schedule, device});
              }, dtype);
          },
          py::arg("positions"), py::arg("d"), py::kw_only(), py::arg("base") = posattn::defaults::base,
          py::arg("layout") = "interleaved", py::arg("convention") = "vaswani", py::arg("out") = py::none(), py::arg("dtype") = py::none(),
          py::arg("schedule") = posattn::defaults::schedule, py::arg("device") = posattn::defaults::device);

    m.def("sinusoidal_add",
          [](py::object x, py::array positions, double base, std::string layout, std::string convention,
             py::object out, std::string schedule, std::string device) {
              auto options = sinusoidal_options(base, layout, convention);
              return encoding("sinusoidal_add", x, positions, 0, out, [&](const Tensor *xv, const Tensor &p, const Tensor &o) {
                  posattn::sinusoidal_add(*xv, p, o, options, {schedule, device});
              });
          },
          py::arg("x"), py::arg("positions"), py::kw_only(), py::arg("base") = posattn::defaults::base,
          py::arg("layout") = "interleaved", py::arg("convention") = "vaswani", py::arg("out") = py::none(),
          py::arg("schedule") = posattn::defaults::schedule, py::arg("device") = posattn::defaults::device);

    m.def("learned",
          [](py::object table, py::array positions, int64_t offset, py::object out, std::string schedule, std::string device) {
              Tensor t = operand("learned", table, "table");
              int64_t d = t.shape.size() == 2 ? t.shape[1] : 0;
              return encoding("learned", py::none(), positions, d, out, [&](const Tensor *, const Tensor &p, const Tensor &o) {
                  posattn::learned(t, p, o, offset, {schedule, device});
              }, table);
          },
          py::arg("table"), py::arg("positions"), py::kw_only(), py::arg("offset") = 0, py::arg("out") = py::none(),
          py::arg("schedule") = posattn::defaults::schedule, py::arg("device") = posattn::defaults::device);

    m.def("learned_add",
          [](py::object x, py::object table, py::array positions, int64_t offset, py::object out,
             std::string schedule, std::string device) {
              Tensor t = operand("learned_add", table, "table");
              return encoding("learned_add", x, positions, 0, out, [&](const Tensor *xv, const Tensor &p, const Tensor &o) {
                  posattn::learned_add(*xv, t, p, o, offset, {schedule, device});
              });
          },
          py::arg("x"), py::arg("table"), py::arg("positions"), py::kw_only(), py::arg("offset") = 0,
          py::arg("out") = py::none(), py::arg("schedule") = posattn::defaults::schedule, py::arg("device") = posattn::defaults::device);

    m.def("integer",
          [](py::array positions, int64_t d, py::object out, py::object dtype, std::string schedule, std::string device) {
              return encoding("integer", py::none(), positions, d, out, [&](const Tensor *, const Tensor &p, const Tensor &o) {
                  posattn::integer(p, o, {schedule, device});
              }, dtype);
          },
          py::arg("positions"), py::arg("d"), py::kw_only(), py::arg("out") = py::none(), py::arg("dtype") = py::none(), py::arg("schedule") = posattn::defaults::schedule, py::arg("device") = posattn::defaults::device);

    m.def("integer_add",
          [](py::object x, py::array positions, py::object out, std::string schedule, std::string device) {
              return encoding("integer_add", x, positions, 0, out, [&](const Tensor *xv, const Tensor &p, const Tensor &o) {
                  posattn::integer_add(*xv, p, o, {schedule, device});
              });
          },
          py::arg("x"), py::arg("positions"), py::kw_only(), py::arg("out") = py::none(), py::arg("schedule") = posattn::defaults::schedule, py::arg("device") = posattn::defaults::device);

    m.def("normalized",
          [](py::array positions, int64_t d, std::optional<int64_t> length, std::string mode,
             py::object out, py::object dtype, std::string schedule, std::string device) {
              auto options = normalized_options("normalized", length, mode);
              return encoding("normalized", py::none(), positions, d, out, [&](const Tensor *, const Tensor &p, const Tensor &o) {
                  posattn::normalized(p, o, options, {schedule, device});
              }, dtype);
          },
          py::arg("positions"), py::arg("d"), py::kw_only(), py::arg("length") = py::none(),
          py::arg("mode") = "minus_one", py::arg("out") = py::none(), py::arg("dtype") = py::none(), py::arg("schedule") = posattn::defaults::schedule, py::arg("device") = posattn::defaults::device);

    m.def("normalized_add",
          [](py::object x, py::array positions, std::optional<int64_t> length, std::string mode,
             py::object out, std::string schedule, std::string device) {
              auto options = normalized_options("normalized_add", length, mode);
              return encoding("normalized_add", x, positions, 0, out, [&](const Tensor *xv, const Tensor &p, const Tensor &o) {
                  posattn::normalized_add(*xv, p, o, options, {schedule, device});
              });
          },
          py::arg("x"), py::arg("positions"), py::kw_only(), py::arg("length") = py::none(),
          py::arg("mode") = "minus_one", py::arg("out") = py::none(), py::arg("schedule") = posattn::defaults::schedule, py::arg("device") = posattn::defaults::device);

    m.def("binary",
          [](py::array positions, int64_t d, bool signed_values, bool msb_first, py::object out, py::object dtype,
             std::string schedule, std::string device) {
              return encoding("binary", py::none(), positions, d, out, [&](const Tensor *, const Tensor &p, const Tensor &o) {
                  posattn::binary(p, o, {signed_values, msb_first}, {schedule, device});
              }, dtype);
          },
          py::arg("positions"), py::arg("d"), py::kw_only(), py::arg("signed").noconvert() = false, py::arg("msb_first").noconvert() = false,
          py::arg("out") = py::none(), py::arg("dtype") = py::none(), py::arg("schedule") = posattn::defaults::schedule, py::arg("device") = posattn::defaults::device);

    m.def("binary_add",
          [](py::object x, py::array positions, bool signed_values, bool msb_first, py::object out,
             std::string schedule, std::string device) {
              return encoding("binary_add", x, positions, 0, out, [&](const Tensor *xv, const Tensor &p, const Tensor &o) {
                  posattn::binary_add(*xv, p, o, {signed_values, msb_first}, {schedule, device});
              });
          },
          py::arg("x"), py::arg("positions"), py::kw_only(), py::arg("signed").noconvert() = false, py::arg("msb_first").noconvert() = false,
          py::arg("out") = py::none(), py::arg("schedule") = posattn::defaults::schedule, py::arg("device") = posattn::defaults::device);

    m.def("sin_only",
          [](py::array positions, int64_t d, double base, py::object out, py::object dtype, std::string schedule, std::string device) {
              return encoding("sin_only", py::none(), positions, d, out, [&](const Tensor *, const Tensor &p, const Tensor &o) {
                  posattn::sin_only(p, o, base, {schedule, device});
              }, dtype);
          },
          py::arg("positions"), py::arg("d"), py::kw_only(), py::arg("base") = posattn::defaults::base, py::arg("out") = py::none(), py::arg("dtype") = py::none(),
          py::arg("schedule") = posattn::defaults::schedule, py::arg("device") = posattn::defaults::device);

    m.def("sin_only_add",
          [](py::object x, py::array positions, double base, py::object out, std::string schedule, std::string device) {
              return encoding("sin_only_add", x, positions, 0, out, [&](const Tensor *xv, const Tensor &p, const Tensor &o) {
                  posattn::sin_only_add(*xv, p, o, base, {schedule, device});
              });
          },
          py::arg("x"), py::arg("positions"), py::kw_only(), py::arg("base") = posattn::defaults::base, py::arg("out") = py::none(),
          py::arg("schedule") = posattn::defaults::schedule, py::arg("device") = posattn::defaults::device);

    m.def("rope_frequencies",
          [](int64_t rotary_dim, double base, std::optional<py::dict> scaling, int64_t seq_len) {
              auto f = posattn::rope_frequencies(rotary_dim, base, rope_scaling("rope_frequencies", scaling), seq_len);
              return py::make_tuple(py::array_t<double>(f.inv_freq.size(), f.inv_freq.data()), f.attention_factor);
          },
          py::arg("rotary_dim"), py::kw_only(), py::arg("base") = posattn::defaults::base, py::arg("scaling") = py::none(),
          py::arg("seq_len") = 0);

    m.def("rope",
          [](py::object x, std::optional<py::array> positions, double base, std::string layout, int64_t rotary_dim,
             std::optional<py::dict> scaling, int64_t seq_len, py::object out, std::string schedule, std::string device) {
              posattn::RopeOptions options;
              options.base = base;
              options.layout = rope_layout(layout);
              options.rotary_dim = rotary_dim;
              options.scaling = rope_scaling("rope", scaling);
              options.seq_len = seq_len;
              if (positions) options.positions = view("rope", *positions, "positions");
              Tensor xv = operand("rope", x, "x");
              py::object result = output("rope", out, {xv.shape.begin(), xv.shape.end()}, x);
              Tensor o = operand("rope", result, "out", true);
              py::gil_scoped_release release;
              posattn::rope(xv, o, options, {schedule, device});
              return result;
          },
          py::arg("x"), py::arg("positions") = py::none(), py::kw_only(), py::arg("base") = posattn::defaults::base,
          py::arg("layout") = "neox", py::arg("rotary_dim") = 0, py::arg("scaling") = py::none(),
          py::arg("seq_len") = 0, py::arg("out") = py::none(), py::arg("schedule") = posattn::defaults::schedule, py::arg("device") = posattn::defaults::device);

    m.def("complex_order",
          [](py::array token_ids, py::array positions, py::object amplitude, py::object frequency,
             py::object phase, py::object real, py::object imag,
             std::string schedule, std::string device) {
              const char *api = "complex_order";
              std::vector<py::ssize_t> shape = shape_of(token_ids);
              Tensor amp = operand(api, amplitude, "amplitude"), freq = operand(api, frequency, "frequency");
              shape.push_back(amp.shape.size() == 2 ? amp.shape[1] : 0);
              py::object re = output(api, real, shape, py::none()), im = output(api, imag, shape, py::none());
              std::optional<Tensor> ph;
              if (!phase.is_none()) ph = operand(api, phase, "phase");
              Tensor ids = view(api, token_ids, "token_ids"), p = view(api, positions, "positions"),
                     rv = operand(api, re, "real", true), iv = operand(api, im, "imag", true);
              py::gil_scoped_release release;
              posattn::complex_order(ids, p, amp, freq, ph, rv, iv, {schedule, device});
              py::gil_scoped_acquire acquire;
              return py::make_tuple(re, im);
          },
          py::arg("token_ids"), py::arg("positions"), py::arg("amplitude"), py::arg("frequency"),
          py::arg("phase") = py::none(), py::kw_only(), py::arg("real") = py::none(), py::arg("imag") = py::none(),
          py::arg("schedule") = posattn::defaults::schedule, py::arg("device") = posattn::defaults::device);

    m.def("complex_order_frequency_init", [](int64_t vocab, int64_t d, std::string kind) {
        const char *api = "complex_order_frequency_init";
        check_extent(api, "vocab", vocab);
        check_extent(api, "d", d);
        if (d > 0 && vocab > (int64_t(1) << 40) / d)
            invalid(api, "arguments 'vocab' and 'd' give a table of " + std::to_string(vocab) + " x " + std::to_string(d) +
                             " values; expected at most 2^40");
        posattn::ComplexOrderInit k = posattn::ComplexOrderInit::translation;
        if (kind == "classification") k = posattn::ComplexOrderInit::classification;
        else if (kind != "translation")
            invalid("complex_order_frequency_init", "argument 'kind' is '" + kind + "'; expected 'translation' or 'classification'");
        py::array result = output("complex_order_frequency_init", py::none(), {vocab, d}, py::none()).cast<py::array>();
        posattn::complex_order_frequency_init(view("complex_order_frequency_init", result, "out", true), k);
        return result;
    }, py::arg("vocab"), py::arg("d"), py::arg("kind") = "translation");

    m.def("floater",
          [](int64_t num_positions, py::object p0, py::object W1, py::object b1, py::object W2, py::object b2, double dt,
             int64_t substeps, std::string method, py::object out, std::string schedule, std::string device) {
              static const std::map<std::string, posattn::FloaterMethod> methods{
                  {"rk4_38", posattn::FloaterMethod::rk4_38}, {"rk4", posattn::FloaterMethod::rk4},
                  {"midpoint", posattn::FloaterMethod::midpoint}, {"euler", posattn::FloaterMethod::euler}};
              auto it = methods.find(method);
              if (it == methods.end())
                  invalid("floater", "argument 'method' is '" + method + "'; expected 'rk4_38', 'rk4', 'midpoint' or 'euler'");
              if (num_positions < 0) invalid("floater", "argument 'num_positions' is " + std::to_string(num_positions) + "; expected >= 0");
              std::vector<py::ssize_t> shape = shape_of(p0);
              shape.insert(shape.end() - (shape.empty() ? 0 : 1), num_positions);
              if (!out.is_none() && shape_of(out) != shape)
                  invalid("floater", "argument 'out' has shape " + shape_string(shape_of(out)) + "; expected " + shape_string(shape));
              py::object result = output("floater", out, shape, py::none());
              Tensor p = operand("floater", p0, "p0"), w1 = operand("floater", W1, "W1"), v1 = operand("floater", b1, "b1"),
                     w2 = operand("floater", W2, "W2"), v2 = operand("floater", b2, "b2"), o = operand("floater", result, "out", true);
              py::gil_scoped_release release;
              posattn::floater(p, w1, v1, w2, v2, o, {dt, substeps, it->second}, {schedule, device});
              return result;
          },
          py::arg("num_positions"), py::arg("p0"), py::arg("W1"), py::arg("b1"), py::arg("W2"), py::arg("b2"),
          py::kw_only(), py::arg("dt") = posattn::defaults::floater_dt, py::arg("substeps") = posattn::defaults::floater_substeps, py::arg("method") = "rk4_38",
          py::arg("out") = py::none(), py::arg("schedule") = posattn::defaults::schedule, py::arg("device") = posattn::defaults::device);

    m.def("alibi_slopes", [](int64_t heads) {
        auto s = posattn::alibi_slopes(heads);
        return py::array_t<double>(s.size(), s.data());
    }, py::arg("heads"));

    m.def("alibi_bias",
          [](py::array slopes, int64_t Lq, int64_t Lk, std::string form, py::object out,
             std::string schedule, std::string device) {
              posattn::AlibiForm alibi = alibi_form("alibi_bias", "form", form);
              check_extent("alibi_bias", "Lq", Lq);
              check_extent("alibi_bias", "Lk", Lk);
              std::vector<py::ssize_t> shape{slopes.ndim() ? slopes.shape(0) : 0, Lq, Lk};
              if (!out.is_none() && shape_of(out) != shape)
                  invalid("alibi_bias", "argument 'out' has shape " + shape_string(shape_of(out)) + "; expected [H, Lq, Lk]");
              py::object result = output("alibi_bias", out, shape, py::none());
              Tensor s = view("alibi_bias", slopes, "slopes"), o = operand("alibi_bias", result, "out", true);
              py::gil_scoped_release release;
              posattn::alibi_bias(s, o, alibi, {schedule, device});
              return result;
          },
          py::arg("slopes"), py::arg("Lq"), py::arg("Lk"), py::kw_only(), py::arg("form") = "relative",
          py::arg("out") = py::none(), py::arg("schedule") = posattn::defaults::schedule, py::arg("device") = posattn::defaults::device);

    py::class_<DeviceArray>(m, "DeviceArray",
                            "A device buffer the caller owns: handle (a CUdeviceptr or a cl_mem, as an int), shape, "
                            "dtype 'float32', strides in elements (None: row-major). Every float32 operand of a kernel "
                            "call takes it on device='cuda' or 'opencl', used in place; positions, token ids, key "
                            "lengths and slopes stay host arrays.")
        .def(py::init([](uint64_t handle, std::vector<int64_t> shape, std::string dtype, std::optional<std::vector<int64_t>> strides) {
                 return DeviceArray{handle, std::move(shape), std::move(dtype), strides.value_or(std::vector<int64_t>{})};
             }),
             py::arg("handle"), py::arg("shape"), py::arg("dtype") = "float32", py::arg("strides") = py::none())
        .def_readonly("handle", &DeviceArray::handle)
        .def_property_readonly("shape", [](const DeviceArray &a) { return py::tuple(py::cast(a.shape)); })
        .def_readonly("dtype", &DeviceArray::dtype)
        .def("__array__", [](const DeviceArray &, py::args, py::kwargs) -> py::object {
            throw posattn::Error(posattn::Error::Kind::invalid_argument,
                                 "posattn: a DeviceArray is device memory, not an array of the host; "
                                 "kernels take one as a float32 operand on device='cuda' or 'opencl' (not as positions, token ids, "
                                 "key lengths, slopes or attention's variant tables)");
        })
        .def("__repr__", [](const DeviceArray &a) {
            return "DeviceArray(handle=" + std::to_string(a.handle) + ", shape=" + posattn::shape_string(a.shape) + ")";
        });
    m.def("device_context", [](const std::string &device) {
              posattn::DeviceContext c = posattn::device_context(device);
              return py::make_tuple(reinterpret_cast<uint64_t>(c.context), reinterpret_cast<uint64_t>(c.queue));
          },
          py::arg("device"),
          "(context, queue) as ints: the context posattn's kernels on 'cuda' or 'opencl' run in, where DeviceArray "
          "buffers are made, and its queue (OpenCL) or stream (CUDA).");

    m.def("attention",
          [](py::object q, py::object k, py::object v, std::optional<double> scale, bool causal,
             std::optional<py::array> key_lengths, std::optional<py::array> key_starts, std::optional<py::array> q_segments,
             std::optional<py::array> k_segments, std::optional<py::array> query_lengths, std::optional<py::array> mask,
             py::object bias, std::optional<py::array> alibi_slopes, std::string alibi_form_name,
             std::optional<py::array> t5_table, bool t5_bidirectional, int64_t t5_max_distance,
             std::optional<py::dict> rope, int64_t window, std::optional<py::dict> shaw,
             std::optional<py::dict> transformer_xl, std::optional<py::dict> deberta, std::optional<py::dict> custom, bool check_finite,
             py::object out, std::string schedule, std::string device) {
              Tensor qv = operand("attention", q, "q"), kv = operand("attention", k, "k"), vv = operand("attention", v, "v");
              // A new output (host memory) takes q's shape with v's channels.
              std::vector<py::ssize_t> shape(qv.shape.begin(), qv.shape.end());
              if (shape.size() == 4 && vv.shape.size() == 4) shape[3] = vv.shape[3];
              py::object result = output("attention", out, shape, q);
              Tensor o = operand("attention", result, "out", true);
              posattn::AttentionOptions options;
              options.scale = scale;
              options.causal = causal;
              for (auto [field, given, name] : {std::tuple{&options.key_lengths, &key_lengths, "key_lengths"},
                                                {&options.key_starts, &key_starts, "key_starts"},
                                                {&options.q_segments, &q_segments, "q_segments"},
                                                {&options.k_segments, &k_segments, "k_segments"},
                                                {&options.query_lengths, &query_lengths, "query_lengths"},
                                                {&options.mask, &mask, "mask"}})
                  if (*given) *field = view("attention", **given, name);
              if (!bias.is_none()) options.bias = operand("attention", bias, "bias");  // a DeviceArray too
              if (alibi_slopes)
                  options.alibi = posattn::AlibiAttention{view("attention", *alibi_slopes, "alibi_slopes"),
                                                          alibi_form("attention", "alibi_form", alibi_form_name)};
              if (t5_table)
                  options.t5 = posattn::T5Attention{view("attention", *t5_table, "t5_table"), t5_bidirectional,
                                                    t5_max_distance};
              if (rope) options.rope = rope_attention(*rope);
              options.window = window;
              options.check_finite = check_finite;
              if (shaw) options.shaw = shaw_attention(*shaw);
              if (transformer_xl) options.transformer_xl = transformer_xl_attention(*transformer_xl);
              if (deberta) options.deberta = deberta_attention(*deberta);
              if (custom) options.custom = custom_attention(*custom);
              py::gil_scoped_release release;
              posattn::attention(qv, kv, vv, o, options, {schedule, device});
              return result;
          },
          // (posattn.attention passes every argument positionally; its own signature is keyword-only)
          py::arg("q"), py::arg("k"), py::arg("v"), py::arg("scale") = py::none(),
          py::arg("causal").noconvert() = false, py::arg("key_lengths") = py::none(), py::arg("key_starts") = py::none(),
          py::arg("q_segments") = py::none(), py::arg("k_segments") = py::none(), py::arg("query_lengths") = py::none(),
          py::arg("mask") = py::none(), py::arg("bias") = py::none(), py::arg("alibi_slopes") = py::none(),
          py::arg("alibi_form") = "relative", py::arg("t5_table") = py::none(), py::arg("t5_bidirectional").noconvert() = posattn::defaults::t5_bidirectional,
          py::arg("t5_max_distance") = posattn::defaults::t5_max_distance, py::arg("rope") = py::none(), py::arg("window") = 0,
          py::arg("shaw") = py::none(), py::arg("transformer_xl") = py::none(), py::arg("deberta") = py::none(),
          py::arg("custom") = py::none(), py::arg("check_finite").noconvert() = true, py::arg("out") = py::none(), py::arg("schedule") = posattn::defaults::schedule,
          py::arg("device") = posattn::defaults::device);

    m.def("linear",
          [](py::object x, py::object weight, py::object bias, py::object out, std::string schedule, std::string device) {
              Tensor xv = operand("linear", x, "x"), wv = operand("linear", weight, "weight");
              py::object result = output("linear", out, {xv.shape.size() == 2 ? xv.shape[0] : 0, wv.shape.size() == 2 ? wv.shape[0] : 0}, x);
              Tensor o = operand("linear", result, "out", true);
              std::optional<Tensor> bv;
              if (!bias.is_none()) bv = operand("linear", bias, "bias");
              py::gil_scoped_release release;
              posattn::linear(xv, wv, bv, o, {schedule, device});
              return result;
          },
          py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(), py::kw_only(), py::arg("out") = py::none(),
          py::arg("schedule") = posattn::defaults::schedule, py::arg("device") = posattn::defaults::device);

    m.def("deberta_bucket",
          [](py::array_t<int64_t, py::array::c_style | py::array::forcecast> delta, int64_t position_buckets,
             int64_t max_relative_positions) {
              posattn::deberta_bucket(0, position_buckets, max_relative_positions);  // its parameters, for no delta too
              py::array_t<int64_t> result(delta.request().shape);
              const int64_t *src = delta.data();
              int64_t *dst = result.mutable_data();
              for (py::ssize_t e = 0; e < delta.size(); e++)
                  dst[e] = posattn::deberta_bucket(src[e], position_buckets, max_relative_positions);
              return result;
          },
          py::arg("delta"), py::arg("position_buckets"), py::arg("max_relative_positions") = posattn::defaults::deberta_max_relative_positions);

    m.def("t5_bucket",
          [](py::array_t<int64_t, py::array::c_style | py::array::forcecast> rel, bool bidirectional,
             int64_t num_buckets, int64_t max_distance) {
              posattn::t5_bucket(0, bidirectional, num_buckets, max_distance);  // its parameters, for no rel too
              py::array_t<int64_t> result(rel.request().shape);
              const int64_t *src = rel.data();
              int64_t *dst = result.mutable_data();
              for (py::ssize_t e = 0; e < rel.size(); e++) dst[e] = posattn::t5_bucket(src[e], bidirectional, num_buckets, max_distance);
              return result;
          },
          py::arg("rel"), py::arg("bidirectional").noconvert() = posattn::defaults::t5_bidirectional,
          py::arg("num_buckets") = posattn::defaults::t5_num_buckets, py::arg("max_distance") = posattn::defaults::t5_max_distance);

    m.def("set_num_threads", &posattn::set_num_threads, py::arg("threads"));
    m.def("set_output_cache", [](int64_t bytes) {
              if (bytes < 0) invalid("set_output_cache", "argument 'bytes' is " + std::to_string(bytes) + "; expected >= 0");
              return posattn::set_output_cache(size_t(bytes));
          },
          py::arg("bytes"));
    m.def("load_kernel", &posattn::load_kernel, py::arg("path"), py::arg("symbol"), py::arg("function"),
          py::arg("schedule"), py::arg("device") = posattn::defaults::device);
    m.def(
        "jit",
        [](const std::string &function, const std::map<std::string, std::string> &params,
           const std::optional<std::string> &schedule_params, const std::string &device) {
            py::gil_scoped_release release;  // (a first call compiles for seconds)
            return posattn::jit(function, {params, schedule_params, device});
        },
        py::arg("function"), py::arg("params"), py::arg("schedule_params"), py::arg("device") = posattn::defaults::device);
    m.def("kernels", [] {
        py::list list;
        for (const auto &k : posattn::kernels())
            list.append(py::dict(py::arg("key") = k.key, py::arg("function") = k.function,
                                 py::arg("family") = k.family, py::arg("schedule") = k.schedule, py::arg("targets") = k.targets));
        return list;
    });
}
