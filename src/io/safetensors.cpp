#include "io/safetensors.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "util/error.h"
#include "util/json_error.h"

namespace qinfer {

using nlohmann::json;

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

bool parse_dtype(const std::string& s, DType* out) {
  if (s == "F32")
    *out = DType::F32;
  else if (s == "F16")
    *out = DType::F16;
  else if (s == "BF16")
    *out = DType::BF16;
  else if (s == "U8")
    *out = DType::U8;  // packed quantized weights
  else if (s == "F8_E4M3")
    *out = DType::F8_E4M3;  // an FP8 checkpoint's codes
  else if (s == "I32")
    *out = DType::I32;  // an AWQ checkpoint's packed codes
  else
    return false;
  return true;
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(path) {
  const uint8_t* base = file_.data();
  const size_t size = file_.size();
  if (size < 8) fail(path, ": truncated safetensors file: ", size, " bytes, too short for the 8-byte header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | base[i];  // little-endian u64
  if (header_len > kMaxHeaderBytes) fail(path, ": safetensors header length ", header_len, " exceeds the 100 MB limit");
  if (header_len > size - 8)
    fail(path, ": safetensors header length ", header_len, " runs beyond the end of the file (", size,
         " bytes): truncated or not a safetensors file");

  json header;
  try {
    header = json::parse(base + 8, base + 8 + header_len);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number too large
    fail(path, ": the safetensors header is not valid JSON (", json_error_text(e), ")");
  }
  if (!header.is_object()) fail(path, ": safetensors header is not a JSON object");

  const uint8_t* data = base + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  struct Span {
    uint64_t begin, end;
    const std::string* name;
  };
  std::vector<Span> spans;

  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") continue;
    const json& e = it.value();
    auto bad = [&](const std::string& what) { fail(path, ": tensor '", name, "': ", what); };
    if (!e.is_object()) bad("header entry is not an object");
    if (!e.contains("dtype") || !e["dtype"].is_string()) bad("missing or non-string 'dtype'");
    if (!e.contains("shape") || !e["shape"].is_array()) bad("missing or non-array 'shape'");
    if (!e.contains("data_offsets") || !e["data_offsets"].is_array() || e["data_offsets"].size() != 2)
      bad("missing 'data_offsets' [begin, end]");

    TensorView t;
    t.name = name;
    const std::string dtype = e["dtype"].get<std::string>();
    if (!parse_dtype(dtype, &t.dtype))
      bad("unsupported dtype " + dtype + " (supported: BF16, F16, F32, U8, F8_E4M3, I32)");

    uint64_t numel = 1;
    for (const json& d : e["shape"]) {
      if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<int64_t>() >= 0))
        bad("shape has a non-integer or negative dimension");
      const uint64_t dim = d.get<uint64_t>();
      if (dim != 0 && numel > std::numeric_limits<uint64_t>::max() / 8 / dim) bad("shape is too large");
      numel *= dim;
      t.shape.push_back(static_cast<int64_t>(dim));
    }
    const json& off = e["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) bad("data_offsets are not non-negative integers");
    const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    if (begin > end) bad("data_offsets begin " + std::to_string(begin) + " > end " + std::to_string(end));
    if (end > data_size)
      bad("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
          "] out of range: the data section has " + std::to_string(data_size) + " bytes");
    const uint64_t expect = numel * dtype_size(t.dtype);
    if (end - begin != expect)
      bad("byte length " + std::to_string(end - begin) + " does not match shape " + shape_str(t.shape) + " x " +
          std::string(dtype_name(t.dtype)) + " = " + std::to_string(expect) + " bytes");
    t.data = data + begin;
    t.nbytes = end - begin;
    auto [pos, inserted] = tensors_.emplace(name, std::move(t));
    if (end > begin) spans.push_back({begin, end, &pos->first});  // an empty tensor holds no bytes to share
  }

  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].begin < spans[i - 1].end)
      fail(path, ": tensors '", *spans[i - 1].name, "' and '", *spans[i].name, "' overlap in the data section");
  }
}

Checkpoint Checkpoint::open(const std::string& dir) {
  Checkpoint ck;
  ck.dir_ = dir;
  const std::string single = dir + "/model.safetensors";
  const std::string index_path = dir + "/model.safetensors.index.json";
  std::map<std::string, std::string> expected_shard;  // tensor -> shard file, from the index
  if (file_exists(single)) {
    ck.files_.push_back(std::make_unique<SafetensorsFile>(single));
  } else if (file_exists(index_path)) {
    json index;
    try {
      index = json::parse(read_text_file(index_path));
    } catch (const json::exception& e) {  // parse_error, or out_of_range for a number too large
      fail(index_path, " is not valid JSON (", json_error_text(e), ")");
    }
    if (!index.contains("weight_map") || !index["weight_map"].is_object())
      fail(index_path, ": missing the 'weight_map' object");
    std::set<std::string> shards;
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
      if (!it.value().is_string()) fail(index_path, ": weight_map entry '", it.key(), "' is not a file name");
      const std::string shard = it.value().get<std::string>();
      if (shard.find('/') != std::string::npos || shard == "..")
        fail(index_path, ": shard name '", shard, "' must be a plain file name in the checkpoint directory");
      expected_shard[it.key()] = shard;
      shards.insert(shard);
    }
    if (shards.empty()) fail(index_path, ": the 'weight_map' lists no tensors");
    for (const std::string& shard : shards) {
      const std::string p = dir + "/" + shard;
      if (!file_exists(p)) fail(index_path, ": shard ", shard, " is listed but ", p, " does not exist");
      ck.files_.push_back(std::make_unique<SafetensorsFile>(p));
    }
  } else {
    fail(dir, ": no model.safetensors or model.safetensors.index.json in the checkpoint directory");
  }

  for (const auto& f : ck.files_) {
    for (const auto& [name, t] : f->tensors()) {
      auto [it, inserted] = ck.index_.emplace(name, &t);
      if (!inserted) fail(dir, ": tensor '", name, "' appears in more than one shard (", f->path(), ")");
    }
  }
  for (const auto& [name, shard] : expected_shard) {
    auto it = ck.index_.find(name);
    if (it == ck.index_.end())
      fail(index_path, ": tensor '", name, "' is listed in shard ", shard, " but not found there");
  }
  return ck;
}

const TensorView* Checkpoint::find(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return nullptr;
  read_.insert(it->second);
  return it->second;
}

std::vector<std::string> Checkpoint::unread() const {
  std::vector<std::string> names;
  for (const auto& [name, view] : index_)
    if (!read_.count(view)) names.push_back(name);
  return names;
}

const TensorView& Checkpoint::require(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorView* t = find(name);
  if (!t) fail(dir_, ": checkpoint is missing tensor '", name, "' (expected shape ", shape_str(shape), ")");
  if (t->shape != shape)
    fail(dir_, ": tensor '", name, "' has shape ", shape_str(t->shape), ", the config implies ", shape_str(shape));
  return *t;
}

size_t Checkpoint::total_bytes() const {
  size_t n = 0;
  for (const auto& [name, t] : index_) n += t->nbytes;
  return n;
}

}  // namespace qinfer
