#include "task/contract.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace kopt {
namespace fs = std::filesystem;
namespace {

// Operators that allocate, view, describe, copy or fill memory: what glue
// code around a custom kernel calls. Anything else computes. Names without
// the overload, as torch's dispatcher spells them.
const std::set<std::string>& StructuralOps() {
  static const std::set<std::string> ops = {
      // allocation
      "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros",
      "zeros_like", "ones", "ones_like", "full", "full_like", "new_zeros", "new_ones", "new_full",
      "scalar_tensor", "lift_fresh", "lift_fresh_copy", "resize_", "resize_as_", "set_",
      "record_stream",
      // fills
      "fill_", "zero_",
      // views and metadata
      "alias", "detach", "detach_", "view", "_unsafe_view", "reshape", "_reshape_alias",
      "as_strided", "as_strided_", "expand", "expand_as", "permute", "transpose", "transpose_", "t",
      "t_", "unsqueeze", "unsqueeze_", "squeeze", "squeeze_", "flatten", "unflatten", "view_as",
      "narrow", "slice", "select", "split", "split_with_sizes", "chunk", "unbind", "movedim",
      "diagonal", "unfold", "size", "stride", "numel", "dim", "is_contiguous", "sym_size",
      "sym_stride", "sym_numel", "sym_storage_offset", "storage_offset", "is_pinned",
      "_local_scalar_dense", "item", "is_same_size", "is_nonzero",
      // copies and conversions
      "contiguous", "clone", "copy_", "_copy_from", "_copy_from_and_resize", "_to_copy", "to",
      "_has_compatible_shallow_copy_type"};
  return ops;
}

Precision ParsePrecision(const std::string& s, const std::string& where) {
  if (s == "strict" || s == "fp32") return Precision::kStrict;
  if (s == "tf32") return Precision::kTf32;
  if (s == "bf16") return Precision::kBf16;
  throw Error(fmt::format("{}: precision \"{}\" is not one of strict, tf32, bf16.", where, s));
}

bool IsIdentifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::vector<std::string> ParseDistributionList(const Json& value, const std::string& where) {
  if (!value.is_array())
    throw Error(
        where +
        ": \"distributions\" must be a list such as [\"signed\", \"wide\"] (or [] for none).");
  std::vector<std::string> out;
  for (const auto& v : value) {
    std::string name = v.is_string() ? v.get<std::string>() : v.dump();
    const auto& known = KnownDistributions();
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw Error(fmt::format("{}: \"{}\" is not an input distribution kopt knows (signed, wide).",
                              where, name));
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

}  // namespace

const std::vector<std::string>& KnownDistributions() {
  static const std::vector<std::string> names = {"signed", "wide"};
  return names;
}

const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kStrict:
      return "strict";
    case Precision::kTf32:
      return "tf32";
    case Precision::kBf16:
      return "bf16";
  }
  return "strict";
}

fs::path ContractPath(const Task& task) {
  return task.path.parent_path() / (task.path.stem().string() + ".contract.json");
}

Contract ContractFromJson(const Json& j, const std::string& where) {
  if (!j.is_object()) throw Error(where + ": a contract must be a JSON object.");
  Contract c;
  c.source = where;
  for (const auto& [key, value] : j.items()) {
    if (key == "precision") {
      if (!value.is_string())
        throw Error(where + ": \"precision\" must be a string (strict, tf32 or bf16).");
      c.precision = ParsePrecision(value.get<std::string>(), where);
    } else if (key == "torch_ops") {
      if (!value.is_boolean()) throw Error(where + ": \"torch_ops\" must be true or false.");
      c.torch_ops = value.get<bool>();
    } else if (key == "second_shape") {
      if (!value.is_object())
        throw Error(
            where +
            ": \"second_shape\" must be an object of task globals, e.g. {\"batch_size\": 8193}.");
      for (const auto& [name, v] : value.items()) {
        if (!IsIdentifier(name))
          throw Error(fmt::format("{}: \"{}\" is not a Python name.", where, name));
        if (!v.is_number_integer())
          throw Error(fmt::format("{}: second_shape.{} must be an integer.", where, name));
        c.second_shape[name] = v.get<long long>();
      }
    } else if (key == "distributions") {
      if (value.is_string() && value.get<std::string>() == "auto")
        c.distributions.reset();
      else
        c.distributions = ParseDistributionList(value, where);
    } else if (key == "libraries") {
      if (!value.is_array())
        throw Error(where + ": \"libraries\" must be a list, e.g. [\"cublas\", \"cudnn\"].");
      c.libraries.clear();
      const auto known = Contract::KnownLibraries();
      for (const Json& l : value) {
        if (!l.is_string() ||
            std::find(known.begin(), known.end(), l.get<std::string>()) == known.end())
          throw Error(
              fmt::format("{}: \"libraries\" may list only {}.", where, fmt::join(known, ", ")));
        c.libraries.push_back(l.get<std::string>());
      }
    } else if (key == "pre_transform_weights") {
      if (!value.is_boolean())
        throw Error(where + ": \"pre_transform_weights\" must be true or false.");
      c.pre_transform_weights = value.get<bool>();
    } else if (key == "training") {
      if (!value.is_string()) throw Error(where + ": \"training\" must be a sentence (a string).");
      c.training = value.get<std::string>();
    } else if (key == "inferred") {
      if (value.is_array())
        for (const Json& l : value)
          if (l.is_string()) c.inferred.push_back(l.get<std::string>());
    } else if (key == "comment" || key == "source" || key == "distributions_checked" ||
               key.rfind("_", 0) == 0) {
      // Notes for people; "source" and "distributions_checked" are what
      // ToJson and a record add, so a saved contract reads back.
      // Notes for people.
    } else {
      throw Error(
          fmt::format("{}: unknown contract field \"{}\" (known: precision, torch_ops, "
                      "second_shape, distributions, "
                      "libraries, pre_transform_weights, training).",
                      where, key));
    }
  }
  return c;
}

Contract LoadContract(const Task& task) {
  fs::path p = ContractPath(task);
  if (!fs::exists(p)) return Contract{};
  return ContractFromJson(ReadJsonFile(p), p.string());
}

bool ContractOverrides::Empty() const {
  return file.empty() && precision.empty() && !forbid_torch_ops && !allow_torch_ops &&
         second_shape.empty() && distributions.empty();
}

Contract ApplyOverrides(Contract c, const ContractOverrides& o) {
  if (o.forbid_torch_ops && o.allow_torch_ops)
    throw Error("--forbid-torch-ops and --allow-torch-ops contradict each other: give one.");
  bool changed = false;
  if (!o.precision.empty()) {
    c.precision = ParsePrecision(o.precision, "--precision");
    changed = true;
  }
  if (o.forbid_torch_ops || o.allow_torch_ops) {
    c.torch_ops = o.allow_torch_ops;
    changed = true;
  }
  for (const auto& kv : o.second_shape) {
    auto eq = kv.find('=');
    std::string name = kv.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : kv.substr(eq + 1);
    long long v = 0;
    size_t used = 0;
    bool ok = eq != std::string::npos && IsIdentifier(name) && !value.empty();
    if (ok) {
      try {
        v = std::stoll(value, &used);
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok || used != value.size())
      throw Error(fmt::format(
          "--second-shape {}: give NAME=INTEGER, a module-level integer of the task file "
          "(e.g. batch_size=8193).",
          kv));
    c.second_shape[name] = v;
    changed = true;
  }
  if (!o.distributions.empty()) {
    if (o.distributions == "auto") {
      c.distributions.reset();
    } else if (o.distributions == "none") {
      c.distributions = std::vector<std::string>{};
    } else {
      Json list = Json::array();
      size_t start = 0;
      while (start <= o.distributions.size()) {
        size_t comma = o.distributions.find(',', start);
        if (comma == std::string::npos) comma = o.distributions.size();
        list.push_back(o.distributions.substr(start, comma - start));
        start = comma + 1;
      }
      c.distributions = ParseDistributionList(list, "--distributions");
    }
    changed = true;
  }
  if (changed)
    c.source = c.source == "default" ? "command line" : c.source + " and the command line";
  return c;
}

Contract ResolveContract(const Task& task, const ContractOverrides& o) {
  Contract base =
      o.file.empty() ? LoadContract(task) : ContractFromJson(ReadJsonFile(o.file), o.file);
  return ApplyOverrides(std::move(base), o);
}

Json ToJson(const Contract& c) {
  Json shape = Json::object();
  for (const auto& [k, v] : c.second_shape) shape[k] = v;
  Json j{{"precision", PrecisionName(c.precision)},
         {"torch_ops", c.torch_ops},
         {"second_shape", shape},
         {"source", c.source}};
  j["distributions"] = c.distributions ? Json(*c.distributions) : Json("auto");
  j["libraries"] = c.libraries;
  if (c.pre_transform_weights) j["pre_transform_weights"] = *c.pre_transform_weights;
  if (!c.training.empty()) j["training"] = c.training;
  if (!c.inferred.empty()) j["inferred"] = c.inferred;
  return j;
}

std::string DescribeContract(const Contract& c) {
  std::string s = fmt::format("precision {}", PrecisionName(c.precision));
  if (c.precision == Precision::kStrict) s += " (fp32)";
  if (c.precision == Precision::kTf32) s += " (TF32 matrix operands allowed)";
  if (c.precision == Precision::kBf16) s += " (bf16 matrix operands allowed)";
  s += c.torch_ops ? "; torch operators allowed"
                   : "; torch operators forbidden (allocation, views, copies only)";
  if (!c.second_shape.empty()) {
    s += "; second shape";
    for (const auto& [k, v] : c.second_shape) s += fmt::format(" {}={}", k, v);
  }
  if (c.distributions) {
    s += "; input distributions: the task's";
    for (const auto& d : *c.distributions) s += ", " + d;
    if (c.distributions->empty()) s += " only";
  }
  if (c.libraries != Contract::KnownLibraries())
    s += c.libraries.empty() ? "; no library calls"
                             : fmt::format("; libraries: {}", fmt::join(c.libraries, ", "));
  if (c.pre_transform_weights)
    s += *c.pre_transform_weights ? "; weights may be pre-transformed once"
                                  : "; weights may not be pre-transformed";
  if (!c.training.empty()) s += "; training: " + c.training;
  if (c.source != "default") s += " (from " + c.source + ")";
  return s;
}

bool IsStructuralTorchOp(const std::string& aten_name) {
  std::string base = aten_name;
  if (auto p = base.find("::"); p != std::string::npos) base = base.substr(p + 2);
  if (auto p = base.find('.'); p != std::string::npos) base = base.substr(0, p);
  return StructuralOps().count(base) > 0;
}

bool IsTorchOp(const std::string& name) {
  return name.rfind("aten::", 0) == 0 || name.rfind("prims::", 0) == 0 ||
         name.find("::") == std::string::npos;
}

}  // namespace kopt
