#include "model/published_formats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "io/safetensors.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace qinfer {

namespace {

bool is_projection(const TensorData& t) {
  constexpr std::string_view kSuffix = "_proj.weight";
  return t.shape.size() == 2 && t.name.size() > kSuffix.size() && t.name.ends_with(kSuffix);
}

TensorData zeros(const std::string& name, std::vector<int64_t> shape, DType dtype) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return {name, dtype, std::move(shape), std::vector<uint8_t>(static_cast<size_t>(n) * dtype_size(dtype))};
}

// Every projection replaced by the tensors convert(t) gives for it, the other
// tensors kept, in checkpoint order.
template <class Convert>
std::vector<TensorData> replace_projections(std::vector<TensorData> tensors, Convert convert) {
  std::vector<TensorData> out;
  for (TensorData& t : tensors) {
    if (!is_projection(t)) {
      out.push_back(std::move(t));
      continue;
    }
    for (TensorData& r : convert(t)) out.push_back(std::move(r));
  }
  return out;
}

// AutoAWQ's packing: nibble i of each int32 holds output 8 j + kAwqOrder[i].
constexpr int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};

void pack_awq(TensorData& packed, int64_t row, int64_t output, int32_t code) {
  const int64_t words = packed.shape[1];
  const int nibble = static_cast<int>(std::find(kAwqOrder, kAwqOrder + 8, output % 8) - kAwqOrder);
  uint8_t* word = &packed.bytes[4 * (row * words + output / 8)];
  uint32_t v;
  std::memcpy(&v, word, 4);
  v |= static_cast<uint32_t>(code) << (4 * nibble);
  std::memcpy(word, &v, 4);
}

}  // namespace

nlohmann::ordered_json fp8_quantization_config() {
  return {{"activation_scheme", "dynamic"},
          {"fmt", "e4m3"},
          {"quant_method", "fp8"},
          {"weight_block_size", {kFp8Block, kFp8Block}}};
}

std::vector<TensorData> fp8_block_tensors(std::vector<TensorData> tensors, DType scale_type) {
  constexpr int64_t B = kFp8Block;
  return replace_projections(std::move(tensors), [&](const TensorData& t) {
    const int64_t rows = t.shape[0], cols = t.shape[1], block_rows = (rows + B - 1) / B,
                  block_cols = (cols + B - 1) / B;
    TensorData codes = zeros(t.name, t.shape, DType::F8_E4M3);
    TensorData scales = zeros(t.name + "_scale_inv", {block_rows, block_cols}, scale_type);
    for (int64_t br = 0; br < block_rows; ++br)
      for (int64_t bc = 0; bc < block_cols; ++bc) {
        const int64_t r1 = std::min(rows, (br + 1) * B), c1 = std::min(cols, (bc + 1) * B);
        float amax = 0;
        for (int64_t r = br * B; r < r1; ++r)
          for (int64_t c = bc * B; c < c1; ++c) amax = std::max(amax, std::fabs(element(t, r * cols + c)));
        set_element(scales, br * block_cols + bc, amax > 0 ? amax / 448.0f : 1.0f);
        const float scale = element(scales, br * block_cols + bc);
        for (int64_t r = br * B; r < r1; ++r)
          for (int64_t c = bc * B; c < c1; ++c)
            codes.bytes[r * cols + c] = f32_to_f8e4m3(element(t, r * cols + c) / scale);
      }
    return std::vector<TensorData>{std::move(codes), std::move(scales)};
  });
}

nlohmann::ordered_json awq_quantization_config(int64_t group) {
  return {{"bits", 4},         {"group_size", group}, {"modules_to_not_convert", nullptr}, {"quant_method", "awq"},
          {"version", "gemm"}, {"zero_point", true}};
}

int64_t awq_group_for(const std::vector<TensorData>& tensors) {
  int64_t g = 0;
  for (const TensorData& t : tensors)
    if (is_projection(t)) g = std::gcd(g, t.shape[1]);
  return g == 0 ? 128 : std::min<int64_t>(128, g);
}

std::vector<TensorData> awq_group_tensors(std::vector<TensorData> tensors, int64_t group) {
  return replace_projections(std::move(tensors), [&](const TensorData& t) {
    const int64_t rows = t.shape[0], cols = t.shape[1], groups = cols / group;
    if (rows % 8 != 0 || cols % group != 0)
      fail("AWQ: ", t.name, " [", rows, ", ", cols, "] is not 8 outputs per int32 and groups of ", group, " inputs");
    const std::string base = t.name.substr(0, t.name.size() - 7);
    TensorData qweight = zeros(base + ".qweight", {cols, rows / 8}, DType::I32);
    TensorData qzeros = zeros(base + ".qzeros", {groups, rows / 8}, DType::I32);
    TensorData scales = zeros(base + ".scales", {groups, rows}, DType::F16);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t g = 0; g < groups; ++g) {
        float lo = INFINITY, hi = -INFINITY;
        for (int64_t i = g * group; i < (g + 1) * group; ++i) {
          lo = std::min(lo, element(t, r * cols + i));
          hi = std::max(hi, element(t, r * cols + i));
        }
        set_element(scales, g * rows + r, std::max(hi - lo, 1e-5f) / 15);
        const float scale = element(scales, g * rows + r);
        const int32_t zero = std::clamp(static_cast<int32_t>(std::nearbyint(-lo / scale)), 0, 15);
        pack_awq(qzeros, g, r, zero);
        for (int64_t i = g * group; i < (g + 1) * group; ++i)
          pack_awq(qweight, i, r,
                   std::clamp(static_cast<int32_t>(std::nearbyint(element(t, r * cols + i) / scale)) + zero, 0, 15));
      }
    return std::vector<TensorData>{std::move(qweight), std::move(qzeros), std::move(scales)};
  });
}

nlohmann::ordered_json gptq_quantization_config(int64_t group, int bits) {
  return {{"bits", bits},           {"checkpoint_format", "gptq"}, {"desc_act", false}, {"group_size", group},
          {"quant_method", "gptq"}, {"static_groups", false},      {"sym", true}};
}

std::vector<TensorData> gptq_group_tensors(std::vector<TensorData> tensors, int64_t group, int bits) {
  const int64_t per = 32 / bits, maxq = (1 << bits) - 1, zero = 1 << (bits - 1);
  return replace_projections(std::move(tensors), [&](const TensorData& t) {
    const int64_t rows = t.shape[0], cols = t.shape[1], groups = cols / group;
    if (rows % per != 0 || cols % group != 0 || group % per != 0)
      fail("GPTQ: ", t.name, " [", rows, ", ", cols, "] is not ", per, " codes per int32 and groups of ", group);
    const std::string base = t.name.substr(0, t.name.size() - 7);
    TensorData qweight = zeros(base + ".qweight", {cols / per, rows}, DType::I32);
    TensorData qzeros = zeros(base + ".qzeros", {groups, rows / per}, DType::I32);
    TensorData scales = zeros(base + ".scales", {groups, rows}, DType::F16);
    TensorData g_idx = zeros(base + ".g_idx", {cols}, DType::I32);
    auto pack = [bits, per](TensorData& packed, int64_t word, int64_t k, int64_t value) {
      uint32_t v;
      std::memcpy(&v, &packed.bytes[4 * word], 4);
      v |= static_cast<uint32_t>(value) << (bits * (k % per));
      std::memcpy(&packed.bytes[4 * word], &v, 4);
    };
    for (int64_t i = 0; i < cols; ++i) {
      const auto g = static_cast<int32_t>(i / group);
      std::memcpy(&g_idx.bytes[4 * i], &g, 4);
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t g = 0; g < groups; ++g) {
        float amax = 0;
        for (int64_t i = g * group; i < (g + 1) * group; ++i)
          amax = std::max(amax, std::fabs(element(t, r * cols + i)));
        set_element(scales, g * rows + r, amax > 0 ? 2 * amax / static_cast<float>(maxq) : 1.0f);
        const float scale = element(scales, g * rows + r);
        pack(qzeros, g * (rows / per) + r / per, r, zero - 1);
        for (int64_t i = g * group; i < (g + 1) * group; ++i) {
          const int64_t q = std::clamp<int64_t>(std::llrint(element(t, r * cols + i) / scale) + zero, 0, maxq);
          pack(qweight, (i / per) * rows + r, i, q);
        }
      }
    return std::vector<TensorData>{std::move(qweight), std::move(qzeros), std::move(scales), std::move(g_idx)};
  });
}

void rewrite_checkpoint_as(const std::string& dir, PublishedFormat format) {
  std::vector<TensorData> tensors;
  {
    const SafetensorsFile file(dir + "/model.safetensors");
    for (const auto& [name, t] : file.tensors())
      tensors.push_back({name, t.dtype, t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes)});
  }
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(read_text_file(dir + "/config.json"));
  if (format == PublishedFormat::Fp8) {
    tensors = fp8_block_tensors(std::move(tensors));
    config["quantization_config"] = fp8_quantization_config();
  } else if (format == PublishedFormat::Awq) {
    const int64_t group = awq_group_for(tensors);
    tensors = awq_group_tensors(std::move(tensors), group);
    config["quantization_config"] = awq_quantization_config(group);
  } else {
    const int64_t group = awq_group_for(tensors);
    tensors = gptq_group_tensors(std::move(tensors), group, 4);
    config["quantization_config"] = gptq_quantization_config(group, 4);
  }
  write_safetensors(replaced_file(dir, "model.safetensors"), tensors);
  write_file(replaced_file(dir, "config.json"), config.dump(2) + "\n");
}

}  // namespace qinfer
