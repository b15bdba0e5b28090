// Element types of stored tensors and their exact widening to f32. U8 holds
// raw bytes: the packed blocks of quantized weights (see ops/quant.h).
// F8_E4M3 is the codes of an FP8 checkpoint, which mean a weight only with
// their block's scale (ops/fp8_blocks.h); I32 the packed codes of an AWQ
// checkpoint (ops/awq_groups.h).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace qinfer {

enum class DType : uint8_t { F32, F16, BF16, U8, F8_E4M3, I32 };

inline size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32:
    case DType::I32:
      return 4;
    case DType::F16:
    case DType::BF16:
      return 2;
    case DType::U8:
    case DType::F8_E4M3:
      return 1;
  }
  return 0;
}

inline std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "F32";
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    case DType::U8:
      return "U8";
    case DType::F8_E4M3:
      return "F8_E4M3";
    case DType::I32:
      return "I32";
  }
  return "?";
}

inline float bf16_to_f32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// IEEE half -> float, exact for every value including subnormals, inf and NaN.
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    exp = 113;
    while ((mant & 0x400) == 0) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// OCP FP8 E4M3 (PyTorch's float8_e4m3fn) -> float, exact: sign, 4 exponent
// bits of bias 7, 3 fraction bits; no infinities, S.1111.111 is NaN, the
// largest value 448.
inline float f8e4m3_to_f32(uint8_t c) {
  const uint32_t sign = static_cast<uint32_t>(c & 0x80) << 24, exp = (c >> 3) & 0xf, mant = c & 0x7;
  uint32_t bits;
  if (exp == 0xf && mant == 0x7) {
    bits = sign | 0x7fc00000u;
  } else if (exp != 0) {
    bits = sign | ((exp + 120) << 23) | (mant << 20);
  } else {  // zero or subnormal: mant x 2^-9, exact in float
    float f = static_cast<float>(mant) * 0x1p-9f;
    std::memcpy(&bits, &f, 4);
    bits |= sign;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round-to-nearest-even f32 -> FP8 E4M3, saturating at +-448 as transformers
// clamps before it casts; NaN stays NaN (used to write test checkpoints).
inline uint8_t f32_to_f8e4m3(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint8_t>(sign | 0x7f);
  if (abs >= 0x43e00000u) return static_cast<uint8_t>(sign | 0x7e);  // 448 and beyond
  if (abs < 0x3c800000u) {  // below 2^-6: a multiple of 2^-9 (8 of them is the smallest normal, code 8)
    float scaled;
    std::memcpy(&scaled, &abs, 4);
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(std::nearbyint(scaled * 0x1p9f)));
  }
  const uint32_t exp = (abs >> 23) - 120, rest = abs & 0xfffffu;  // rebias 127 -> 7
  uint32_t code = (exp << 3) | ((abs >> 20) & 0x7);
  if (rest > 0x80000u || (rest == 0x80000u && (code & 1))) ++code;
  return static_cast<uint8_t>(sign | code);
}

// Round-to-nearest-even f32 -> bf16 (used to write test checkpoints).
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // NaN
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

// Round-to-nearest-even f32 -> IEEE half (overflow to inf, subnormals kept).
inline uint16_t f32_to_f16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00);   // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {               // below the smallest normal half: subnormal or zero
    if (abs < 0x33000000u) return sign;  // below half the smallest subnormal
    const uint32_t mant = (abs & 0x7fffff) | 0x800000;
    const int shift = 126 - static_cast<int>(abs >> 23);  // 14 .. 24
    uint32_t h = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = ((abs - 0x38000000u) >> 13);  // rebias exponent 127 -> 15
  const uint32_t rest = abs & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

// Element i of a row stored as `t`, widened to f32.
inline float load_as_f32(const void* data, DType t, size_t i) {
  switch (t) {
    case DType::F32: {
      float f;
      std::memcpy(&f, static_cast<const uint8_t*>(data) + 4 * i, 4);
      return f;
    }
    case DType::F16: {
      uint16_t h;
      std::memcpy(&h, static_cast<const uint8_t*>(data) + 2 * i, 2);
      return f16_to_f32(h);
    }
    case DType::BF16: {
      uint16_t h;
      std::memcpy(&h, static_cast<const uint8_t*>(data) + 2 * i, 2);
      return bf16_to_f32(h);
    }
    case DType::U8:
      return static_cast<const uint8_t*>(data)[i];
    case DType::F8_E4M3:
      return f8e4m3_to_f32(static_cast<const uint8_t*>(data)[i]);
    case DType::I32: {
      int32_t v;
      std::memcpy(&v, static_cast<const uint8_t*>(data) + 4 * i, 4);
      return static_cast<float>(v);
    }
  }
  return 0.0f;
}

}  // namespace qinfer
