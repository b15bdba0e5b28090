// --lora-modules NAME=DIR ... (serve and batch; vLLM's flag): named LoRA
// adapters a request runs with when its "model" is NAME. One definition, so
// both commands parse and check the names alike.
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "model/lora.h"
#include "model/qwen3.h"

namespace qinfer::cli {

struct LoraModulesFlag {
  std::vector<std::string> specs;  // NAME=DIR, as given

  void add_option(CLI::App* cmd);
  // The adapters; a usage error for a spec without a name or a directory, a
  // name twice, or `base_name` (what requests name the model itself by).
  std::vector<NamedLoraAdapter> adapters(const std::string& base_name) const;
};

// ", adapters 'a', 'b'" (nothing without any): for a command's summary line.
std::string adapter_list(const std::vector<Qwen3Model::AdapterName>& adapters);

}  // namespace qinfer::cli
