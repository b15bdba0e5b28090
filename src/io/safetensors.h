// safetensors checkpoints read in place through mmap: one file, or shards
// listed by model.safetensors.index.json. Every header is validated against
// its file before any tensor is used.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "util/dtype.h"
#include "util/mapped_file.h"

namespace qinfer {

struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // inside the mapping; valid while the file lives
  size_t nbytes = 0;

  int64_t numel() const;
};

class SafetensorsFile {
 public:
  static constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

  explicit SafetensorsFile(const std::string& path);  // throws Error naming the path and the fault

  const std::string& path() const { return file_.path(); }
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }

 private:
  MappedFile file_;
  std::map<std::string, TensorView> tensors_;
};

// All tensors of a checkpoint directory, single-file or sharded.
class Checkpoint {
 public:
  static Checkpoint open(const std::string& dir);

  const TensorView* find(const std::string& name) const;
  // The tensor, checked to have exactly `shape`; Error names tensor and shapes otherwise.
  const TensorView& require(const std::string& name, const std::vector<int64_t>& shape) const;
  size_t total_bytes() const;
  // The tensors no find() or require() asked for, by name: what a loader
  // left out (transformers warns of them: "weights ... were not used").
  std::vector<std::string> unread() const;

 private:
  std::string dir_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView*> index_;
  mutable std::set<const TensorView*> read_;  // found by find(), from the loading thread only
};

std::string shape_str(const std::vector<int64_t>& shape);

}  // namespace qinfer
