#include "io/safetensors_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace qinfer {

void set_element(TensorData& t, int64_t i, float v) {
  if (t.dtype == DType::F32) {
    std::memcpy(&t.bytes[4 * i], &v, 4);
  } else if (t.dtype == DType::BF16 || t.dtype == DType::F16) {
    const uint16_t h = t.dtype == DType::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
    std::memcpy(&t.bytes[2 * i], &h, 2);
  } else {
    fail("set_element: tensor ", t.name, " is ", dtype_name(t.dtype), ", not a float type");
  }
}

void write_safetensors(const std::string& path, const std::vector<TensorSource>& tensors) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const TensorSource& t : tensors) {
    header[t.name] = {
        {"dtype", std::string(dtype_name(t.dtype))}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.nbytes}}};
    offset += t.nbytes;
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, ": cannot create file");
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(h.size()) >> (8 * i));
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  for (const TensorSource& t : tensors) {
    const std::streampos before = out.tellp();
    t.write(out);
    const auto written = static_cast<uint64_t>(out.tellp() - before);
    if (out && written != t.nbytes) {
      out.close();
      std::remove(path.c_str());
      fail(path, ": internal error: tensor ", t.name, " wrote ", written, " bytes, not ", t.nbytes);
    }
  }
  out.close();
  if (!out) {
    const int error = errno;
    std::remove(path.c_str());  // a partial file would fail to load
    fail(path, ": write failed: ", std::strerror(error));
  }
}

void write_safetensors(const std::string& path, const std::vector<TensorData>& tensors) {
  std::vector<TensorSource> sources;
  for (const TensorData& t : tensors)
    sources.push_back({t.name, t.dtype, t.shape, t.bytes.size(), [&t](std::ostream& out) {
                         out.write(reinterpret_cast<const char*>(t.bytes.data()),
                                   static_cast<std::streamsize>(t.bytes.size()));
                       }});
  write_safetensors(path, sources);
}

}  // namespace qinfer
