#include "ops/matmul.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "ops/matmul_kernels.h"
#include "util/error.h"

namespace qinfer {

namespace {

// Weight rows a thread claims at a time, whole multiples of a granule: 16 for
// Q8/Q4 (a tile is one or two groups of 8 rows: quant.h), 64 for float weights
// (two panels: matmul.h). Prefill: one granule, which stays in L2
// while every activation tile passes over it. Decode: about 1 MiB, so a thread's stream
// runs long before it restarts at another group (the model's matrices are only
// 0.6-3.5 MB, and shorter groups restart the stream often enough to cost decode
// speed: docs/performance.md, "What bounds each figure there"), while the finer
// tail (row_groups) still lets both threads finish together.
size_t granule(const WeightMatrix& w) { return w.quantized() ? 16 : 64; }
size_t decode_group_rows(const WeightMatrix& w) {
  const size_t g = granule(w);
  return std::clamp<size_t>((1024u << 10) / w.row_bytes() / g * g, 64, 2048);
}

// Per-call scratch, reused across calls by the thread that calls matmul.
struct Scratch {
  std::vector<float> packed, d;
  std::vector<uint32_t> pairs;
  std::vector<int32_t> zero_dot_q8, zero_dot_q4;
  std::vector<int8_t> q;
};

bool any_format(std::span<const MatmulTarget> targets, WeightFormat f) {
  return std::any_of(targets.begin(), targets.end(), [f](const MatmulTarget& t) { return t.w.format == f; });
}

// The activation in every form the targets' formats need. Quantized weights
// meet the activation quantized per row (the same for any number of rows).
kernels::Activations prepare(const float* x, size_t n, size_t k, std::span<const MatmulTarget> targets, Scratch& s,
                             ThreadPool& pool) {
  kernels::Activations a;
  a.x = x;
  const bool floats = std::any_of(targets.begin(), targets.end(),
                                  [](const MatmulTarget& t) { return !t.w.quantized() && !t.w.bf16_products; });
  if (floats && n > 1) {
    s.packed.resize(n * k);
    const size_t tile = kernels::float_tile_rows();
    pool.parallel_for((n + tile - 1) / tile, 1, [&](size_t t0, size_t t1) {
      kernels::pack_activation(x, n, k, t0 * tile, std::min(n, t1 * tile), s.packed.data());
    });
    a.packed = s.packed.data();
  }
  if (std::any_of(targets.begin(), targets.end(), [](const MatmulTarget& t) { return t.w.bf16_products; })) {
    if (k % 2 != 0) fail("matmul: bf16 products need an even width, not ", k);
    s.pairs.resize(n * k / 2);
    const size_t tile = kernels::float_tile_rows();
    auto tiles = [&](size_t t0, size_t t1) {
      kernels::pack_bf16_pairs(x, n, k, t0 * tile, std::min(n, t1 * tile), s.pairs.data());
    };
    if (n == 1)
      tiles(0, 1);
    else
      pool.parallel_for((n + tile - 1) / tile, 1, tiles);
    a.pairs = s.pairs.data();
  }
  if (any_format(targets, WeightFormat::Q4) || any_format(targets, WeightFormat::Q8)) {
    const size_t blocks = k / kQuantBlock;
    // The AMX tiles take 16 rows at a time: the last tile's missing rows are
    // zeros (their outputs are not stored).
    a.amx = n > kernels::kStreamedRows && kernels::amx_prefill();
    const size_t tile = a.amx ? 1 : kernels::quant_tile_rows();
    const size_t padded = a.amx ? (n + kernels::kAmxTileRows - 1) / kernels::kAmxTileRows * kernels::kAmxTileRows : n;
    // At a 64-byte boundary, so that no block of a row (an AMX tile row)
    // straddles two cache lines.
    s.q.resize(padded * k + 63);
    int8_t* q = s.q.data() + (-reinterpret_cast<uintptr_t>(s.q.data()) & 63);
    s.d.resize(padded * blocks);
    std::fill(q + n * k, q + padded * k, int8_t{0});
    std::fill(s.d.begin() + static_cast<ptrdiff_t>(n * blocks), s.d.end(), 0.0f);
    s.zero_dot_q8.resize(n * blocks);
    s.zero_dot_q4.resize(n * blocks);
    auto tiles = [&](size_t t0, size_t t1) {
      kernels::quantize_activation(x, n, k, t0 * tile, std::min(n, t1 * tile), tile, q, s.d.data(),
                                   s.zero_dot_q8.data(), s.zero_dot_q4.data());
    };
    if (n == 1)
      tiles(0, 1);
    else
      pool.parallel_for((n + tile - 1) / tile, 2, tiles);
    a.q = q;
    a.d = s.d.data();
    a.zero_dot[static_cast<int>(QuantFormat::Q8)] = s.zero_dot_q8.data();
    a.zero_dot[static_cast<int>(QuantFormat::Q4)] = s.zero_dot_q4.data();
  }
  return a;
}

// One matrix of a parallel section, with its activation rows.
struct Job {
  const WeightMatrix* w;
  const kernels::Activations* a;
  size_t rows;
  float* y;  // [rows, w->rows]
};

// Weight rows [r0, r1) of a job over its activation rows [i0, i1).
struct RowGroup {
  size_t job, r0, r1, i0, i1;
};

// The activation rows a kernel takes together (a group's i0 must start one).
size_t tile_rows(const Job& j) {
  if (!j.w->quantized()) return kernels::float_tile_rows();
  return j.a->amx ? kernels::kAmxTileRows : kernels::quant_tile_rows();
}

// The jobs' weight rows cut into groups: long ones where the weights stream
// (decode; Q8/Q4 with few rows), short ones otherwise. The last long groups
// of the section are cut four times finer, so the threads finish together
// instead of one waiting for the other's last large group.
// A matrix of few rows (a LoRA adapter's lora_A, a classifier head) over
// many activation rows also cuts the activation rows, into at least this
// many groups in all, so that every thread has a share.
std::vector<RowGroup> row_groups(std::span<const Job> jobs) {
  constexpr size_t kFinerTail = 2;  // groups at the end cut into quarters
  constexpr size_t kMinGroups = 8;
  std::vector<RowGroup> groups;
  bool streamed = false;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const WeightMatrix& w = *jobs[j].w;
    const size_t n = jobs[j].rows;
    const bool stream = n == 1 || (w.quantized() && n <= kernels::kStreamedRows);
    streamed |= stream;
    const size_t m = static_cast<size_t>(w.rows), size = stream ? decode_group_rows(w) : granule(w);
    const size_t weight_groups = (m + size - 1) / size, tile = tile_rows(jobs[j]);
    const size_t pieces =
        stream ? 1 : std::min((kMinGroups + weight_groups - 1) / weight_groups, (n + tile - 1) / tile);
    const size_t chunk = ((n + tile - 1) / tile + pieces - 1) / pieces * tile;
    for (size_t i = 0; i < n; i += chunk)
      for (size_t r = 0; r < m; r += size) groups.push_back({j, r, std::min(m, r + size), i, std::min(n, i + chunk)});
  }
  if (!streamed) return groups;
  std::vector<RowGroup> tail;
  for (size_t i = groups.size() > kFinerTail ? groups.size() - kFinerTail : 0; i < groups.size(); ++i) {
    const RowGroup g = groups[i];
    const size_t unit = granule(*jobs[g.job].w);
    const size_t quarter = std::max(unit, (g.r1 - g.r0) / 4 / unit * unit);
    for (size_t r = g.r0; r < g.r1; r += quarter) tail.push_back({g.job, r, std::min(g.r1, r + quarter), g.i0, g.i1});
  }
  groups.resize(groups.size() - std::min(groups.size(), kFinerTail));
  groups.insert(groups.end(), tail.begin(), tail.end());
  return groups;
}

// The jobs' groups of weight rows, claimed by whichever thread is free.
void run_jobs(std::span<const Job> jobs, ThreadPool& pool) {
  const std::vector<RowGroup> groups = row_groups(jobs);
  pool.parallel_for_dynamic(groups.size(), 1, [&](size_t g0, size_t g1) {
    for (size_t g = g0; g < g1; ++g) {
      const RowGroup& rg = groups[g];
      const Job& j = jobs[rg.job];
      const size_t ldy = static_cast<size_t>(j.w->rows);
      kernels::dot_rows(*j.w, *j.a, rg.i0, rg.i1 - rg.i0, rg.r0, rg.r1, j.y + rg.i0 * ldy + rg.r0, ldy);
    }
  });
}

void require_panels(const WeightMatrix& w) {
  if (!w.quantized() && !w.panels) fail("matmul: float weights must be packed as panels (pack_float_panels)");
}

}  // namespace

size_t WeightMatrix::bytes() const {
  if (quantized()) return quant_matrix_bytes(quant_format(), rows, cols);
  return panels ? float_panel_bytes(format, rows, cols) : static_cast<size_t>(rows) * row_bytes();
}

size_t float_panel_bytes(WeightFormat f, int64_t rows, int64_t cols) {
  const int64_t padded = (rows + kFloatPanelRows - 1) / kFloatPanelRows * kFloatPanelRows;
  return static_cast<size_t>(padded) * WeightMatrix{f, nullptr, 1, cols}.row_bytes();
}

namespace {

// Where element (r, c) of a panel matrix lies, in elements from its start.
size_t panel_index(const WeightMatrix& w, int64_t r, int64_t c) {
  return static_cast<size_t>((r / kFloatPanelRows * w.cols + c) * kFloatPanelRows + r % kFloatPanelRows);
}

// Panel p of rows-layout w into dst, element type E; by 64 columns at a time,
// so the 32 rows read and the columns written stay in L1.
template <class E>
void pack_panel(const WeightMatrix& w, size_t p, E* dst) {
  constexpr int64_t kColumns = 64;
  const int64_t first = static_cast<int64_t>(p) * kFloatPanelRows, n = std::min(kFloatPanelRows, w.rows - first);
  for (int64_t c0 = 0; c0 < w.cols; c0 += kColumns) {
    const int64_t c1 = std::min(w.cols, c0 + kColumns);
    for (int64_t j = 0; j < kFloatPanelRows; ++j) {
      E* out = dst + c0 * kFloatPanelRows + j;
      if (j >= n) {  // padding
        for (int64_t c = c0; c < c1; ++c, out += kFloatPanelRows) *out = E{};
        continue;
      }
      const E* row = reinterpret_cast<const E*>(w.row_ptr(first + j));
      for (int64_t c = c0; c < c1; ++c, out += kFloatPanelRows) *out = row[c];
    }
  }
}

}  // namespace

WeightMatrix pack_float_panels(const WeightMatrix& w, void* out, ThreadPool& pool) {
  if (w.quantized() || w.panels) fail("pack_float_panels: not a float matrix in rows layout");
  const size_t e = dtype_size(float_dtype(w.format)), panel_bytes = static_cast<size_t>(w.cols * kFloatPanelRows) * e;
  const size_t panels = static_cast<size_t>((w.rows + kFloatPanelRows - 1) / kFloatPanelRows);
  auto* dst = static_cast<uint8_t*>(out);
  pool.parallel_for_dynamic(panels, 4, [&](size_t p0, size_t p1) {
    for (size_t p = p0; p < p1; ++p) {
      if (static_cast<int64_t>(p + 1) * kFloatPanelRows <= w.rows)
        kernels::pack_full_panel(w.row_ptr(static_cast<int64_t>(p) * kFloatPanelRows), e, static_cast<size_t>(w.cols),
                                 static_cast<size_t>(w.cols), dst + p * panel_bytes);
      else if (e == 4)
        pack_panel(w, p, reinterpret_cast<uint32_t*>(dst + p * panel_bytes));
      else
        pack_panel(w, p, reinterpret_cast<uint16_t*>(dst + p * panel_bytes));
    }
  });
  WeightMatrix packed = w;
  packed.data = out;
  packed.panels = true;
  return packed;
}

void copy_float_row(const WeightMatrix& w, int64_t r, void* out) {
  if (!w.panels) {
    std::memcpy(out, w.row_ptr(r), w.row_bytes());
    return;
  }
  const size_t e = dtype_size(float_dtype(w.format));
  const auto* data = static_cast<const uint8_t*>(w.data);
  for (int64_t c = 0; c < w.cols; ++c)
    std::memcpy(static_cast<uint8_t*>(out) + c * e, data + panel_index(w, r, c) * e, e);
}

const char* weight_format_name(WeightFormat f) {
  switch (f) {
    case WeightFormat::F32:
      return "f32";
    case WeightFormat::F16:
      return "f16";
    case WeightFormat::BF16:
      return "bf16";
    case WeightFormat::Q8:
      return "q8";
    case WeightFormat::Q4:
      return "q4";
  }
  return "?";
}

WeightFormat weight_format_of(DType t) {
  switch (t) {
    case DType::F32:
      return WeightFormat::F32;
    case DType::F16:
      return WeightFormat::F16;
    case DType::BF16:
      return WeightFormat::BF16;
    case DType::U8:
    case DType::F8_E4M3:
    case DType::I32:
      break;
  }
  fail("dtype ", dtype_name(t), " is not a float weight format");
}

DType float_dtype(WeightFormat f) {
  switch (f) {
    case WeightFormat::F32:
      return DType::F32;
    case WeightFormat::F16:
      return DType::F16;
    case WeightFormat::BF16:
      return DType::BF16;
    case WeightFormat::Q8:
    case WeightFormat::Q4:
      break;
  }
  fail("weight format ", weight_format_name(f), " is not a float dtype");
}

void matmul_each(std::span<const MatmulInput> inputs, ThreadPool& pool) {
  thread_local std::vector<Scratch> scratch;
  if (scratch.size() < inputs.size()) scratch.resize(inputs.size());
  std::vector<kernels::Activations> acts(inputs.size());
  std::vector<Job> jobs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const MatmulInput& in = inputs[i];
    if (in.n <= 0 || in.targets.empty()) continue;
    for (const MatmulTarget& t : in.targets) {
      require_panels(t.w);
      if (t.w.cols != in.targets.front().w.cols)
        fail("matmul: targets sharing an input differ in width (", t.w.cols, " vs ", in.targets.front().w.cols, ")");
    }
    acts[i] = prepare(in.x, static_cast<size_t>(in.n), static_cast<size_t>(in.targets.front().w.cols), in.targets,
                      scratch[i], pool);
    for (const MatmulTarget& t : in.targets) jobs.push_back({&t.w, &acts[i], static_cast<size_t>(in.n), t.y});
  }
  run_jobs(jobs, pool);
}

void matmul(const float* x, int64_t n, std::initializer_list<MatmulTarget> targets, ThreadPool& pool) {
  const MatmulInput input{x, n, std::span<const MatmulTarget>(targets.begin(), targets.size())};
  matmul_each(std::span<const MatmulInput>(&input, 1), pool);
}

void matmul(const float* x, int64_t n, const WeightMatrix& w, float* y, ThreadPool& pool) {
  matmul(x, n, {MatmulTarget{w, y}}, pool);
}

void widen_row(const WeightMatrix& w, int64_t r, float* out) {
  if (w.panels) {
    const DType t = float_dtype(w.format);
    for (int64_t c = 0; c < w.cols; ++c) out[c] = load_as_f32(w.data, t, panel_index(w, r, c));
    return;
  }
  kernels::widen_rows(w, static_cast<size_t>(r), static_cast<size_t>(r) + 1, out);
}

float float_dot(const float* x, const void* w_row, DType t, size_t k) {
  float total = 0;
  for (size_t b = 0; b < k; b += kFloatDotBlock) {
    float s = 0;
    for (size_t e = b; e < std::min(k, b + kFloatDotBlock); ++e) s = std::fma(x[e], load_as_f32(w_row, t, e), s);
    total = b == 0 ? s : total + s;
  }
  return total;
}

float bf16_pair_dot(const float* x, const void* w_row_bf16, size_t k) {
  auto f32 = [](uint16_t h) { return bf16_to_f32((h & 0x7f80u) != 0 ? h : h & 0x8000u); };  // subnormals to zero
  auto flush = [](float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v; };
  const auto* w = static_cast<const uint16_t*>(w_row_bf16);
  float total = 0;
  for (size_t b = 0; b < k; b += kFloatDotBlock) {
    float s = 0;
    for (size_t e = b; e < std::min(k, b + kFloatDotBlock); e += 2) {
      s = flush(std::fma(f32(bf16_operand(x[e + 1])), f32(w[e + 1]), s));
      s = flush(std::fma(f32(bf16_operand(x[e])), f32(w[e]), s));
    }
    total = b == 0 ? s : flush(total + s);
  }
  return total;
}

void matmul_ref(const float* x, int64_t n, const WeightMatrix& w, float* y) {
  std::vector<float> row(static_cast<size_t>(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    if (w.quantized())
      dequantize_row(w.quant_format(), static_cast<const uint8_t*>(w.data), r, w.cols, row.data());
    else
      widen_row(w, r, row.data());
    for (int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (int64_t c = 0; c < w.cols; ++c) s += static_cast<double>(x[i * w.cols + c]) * row[c];
      y[i * w.rows + r] = static_cast<float>(s);
    }
  }
}

}  // namespace qinfer
