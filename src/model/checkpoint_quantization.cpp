#include "model/checkpoint_quantization.h"

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/mapped_file.h"

namespace qinfer {

namespace {

using nlohmann::json;

// fail() naming config.json's quantization_config.<key> and its value.
struct KeyError {
  const std::string& path;
  const json& q;
  [[noreturn]] void operator()(const char* key, const std::string& why) const {
    fail(path, ": quantization_config.", key, " is ", q.contains(key) ? q[key].dump() : "missing", ": ", why);
  }
};

QuantFormat qinfer_format(const json& q, const KeyError& bad) {
  const std::string f = q.contains("format") && q["format"].is_string() ? q["format"].get<std::string>() : "";
  if (f != "q8" && f != "q4") bad("format", "expected \"q8\" or \"q4\"");
  if (q.contains("version") && !q["version"].is_number_integer()) bad("version", "expected an integer");
  // Q4's layout has not changed since version 2.
  const int64_t version = q.contains("version") ? q["version"].get<int64_t>() : 0, oldest = f == "q8" ? 3 : 2;
  if (version < oldest || version > kQuantLayoutVersion)
    fail(bad.path, ": ", f, " quantized with layout version ", version, ", which this qinfer does not read (it writes ",
         kQuantLayoutVersion, "): quantize the original checkpoint again (qinfer quantize)");
  return f == "q8" ? QuantFormat::Q8 : QuantFormat::Q4;
}

bool in_range(const json& v, int64_t lo, int64_t hi) {
  return v.is_number_integer() && v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
}

Fp8BlockSize fp8_blocks(const json& q, const KeyError& bad) {
  if (q.contains("fmt") && q["fmt"] != "e4m3") bad("fmt", "qinfer reads FP8 weights in E4M3 (\"e4m3\")");
  if (q.contains("activation_scheme") && q["activation_scheme"] != "dynamic")
    bad("activation_scheme", "qinfer reads FP8 weights with dynamic activations (no stored activation scales)");
  const json& b = q.contains("weight_block_size") ? q["weight_block_size"] : json();
  if (!b.is_array() || b.size() != 2 || !in_range(b[0], 1, 1 << 20) || !in_range(b[1], 1, 1 << 20))
    bad("weight_block_size",
        "expected [rows, cols] of a scale's block, each 1 to 1048576 (FP8 with one scale per tensor is not read)");
  return {b[0].get<int64_t>(), b[1].get<int64_t>()};
}

int64_t awq_group_size(const json& q, const KeyError& bad) {
  if (!q.contains("bits") || q["bits"] != 4) bad("bits", "qinfer reads AWQ weights of 4 bits");
  if (q.contains("version") && q["version"] != "gemm" && q["version"] != "GEMM")
    bad("version", "qinfer reads AWQ's GEMM layout (\"gemm\")");
  if (q.contains("zero_point") && q["zero_point"] != true)
    bad("zero_point", "qinfer reads AWQ weights with zero points");
  if (!q.contains("group_size") || !in_range(q["group_size"], 1, 1 << 20))
    bad("group_size", "expected the input features per scale, 1 to 1048576");
  return q["group_size"].get<int64_t>();
}

GptqLayout gptq_layout(const json& q, const KeyError& bad) {
  if (!q.contains("bits") || (q["bits"] != 4 && q["bits"] != 8))
    bad("bits", "qinfer reads GPTQ weights of 4 or 8 bits");
  if (q.contains("checkpoint_format") && q["checkpoint_format"] != "gptq")
    bad("checkpoint_format", "qinfer reads AutoGPTQ's format \"gptq\" (zero points stored minus one)");
  if (!q.contains("group_size") || !(q["group_size"] == -1 || in_range(q["group_size"], 1, 1 << 20)))
    bad("group_size", "expected the inputs per scale, 1 to 1048576, or -1 (one group)");
  const int64_t group = q["group_size"].get<int64_t>();
  return {q["bits"].get<int>(), group == -1 ? 0 : group};
}

}  // namespace

CheckpointQuantization read_checkpoint_quantization(const std::string& config_path) {
  CheckpointQuantization s;
  const json config = json::parse(read_text_file(config_path), nullptr, false);
  if (config.is_discarded()) return s;  // load_qwen3_config names the fault
  // transformers 4.56 renamed torch_dtype to dtype; it reads dtype unless it is null.
  const char* dtype_key = config.contains("dtype") && !config["dtype"].is_null() ? "dtype" : "torch_dtype";
  const std::string dtype =
      config.contains(dtype_key) && config[dtype_key].is_string() ? config[dtype_key].get<std::string>() : "";
  if (dtype == "float16") s.dequantized = WeightFormat::F16;
  if (dtype == "float32") s.dequantized = WeightFormat::F32;
  if (!config.contains("quantization_config")) return s;
  const json& q = config["quantization_config"];
  if (!q.is_object() || !q.contains("quant_method")) return s;
  const KeyError bad{config_path, q};
  if (q["quant_method"] == "qinfer")
    s.qinfer = qinfer_format(q, bad);
  else if (q["quant_method"] == "fp8")
    s.fp8 = fp8_blocks(q, bad);
  else if (q["quant_method"] == "awq")
    s.awq_group_size = awq_group_size(q, bad);
  else if (q["quant_method"] == "gptq")
    s.gptq = gptq_layout(q, bad);
  else
    bad("quant_method", "qinfer reads the methods \"fp8\", \"awq\", \"gptq\" and its own \"qinfer\"");
  return s;
}

std::optional<QuantFormat> stored_quant_format(const std::string& config_path) {
  return read_checkpoint_quantization(config_path).qinfer;
}

}  // namespace qinfer
