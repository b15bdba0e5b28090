#include "lora_modules_flag.h"

#include "usage_error.h"

namespace qinfer::cli {

void LoraModulesFlag::add_option(CLI::App* cmd) {
  cmd->add_option("--lora-modules", specs,
                  "NAME=DIR ...: PEFT LoRA adapters a request runs with when its \"model\" is NAME (vLLM's flag); "
                  "requests with and without them share the batch");
}

std::vector<NamedLoraAdapter> LoraModulesFlag::adapters(const std::string& base_name) const {
  std::vector<NamedLoraAdapter> adapters;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      usage_fail("--lora-modules '", spec, "': give NAME=DIR (the name requests use as \"model\", the PEFT adapter)");
    NamedLoraAdapter a{spec.substr(0, eq), spec.substr(eq + 1)};
    if (a.name == base_name)
      usage_fail("--lora-modules: '", a.name, "' is the model's own name; an adapter needs a name of its own");
    for (const NamedLoraAdapter& b : adapters)
      if (b.name == a.name) usage_fail("--lora-modules: two adapters are named '", a.name, "'");
    adapters.push_back(std::move(a));
  }
  return adapters;
}

std::string adapter_list(const std::vector<Qwen3Model::AdapterName>& adapters) {
  std::string list;
  for (const Qwen3Model::AdapterName& a : adapters) list += (list.empty() ? ", adapters '" : ", '") + a.name + "'";
  return list;
}

}  // namespace qinfer::cli
