#include "model_files.h"

#include <filesystem>
#include <system_error>

#include "io/model_dir.h"
#include "util/error.h"

namespace qinfer::cli {

std::vector<std::string> model_dirs(const std::string& model_dir, const LoadOptions& options,
                                    const std::string& draft_model) {
  std::vector<std::string> dirs{model_dir};
  dirs.insert(dirs.end(), options.lora_adapters.begin(), options.lora_adapters.end());
  for (const NamedLoraAdapter& adapter : options.lora_modules) dirs.push_back(adapter.dir);
  if (!draft_model.empty()) dirs.push_back(resolve_model_dir(draft_model));
  return dirs;
}

void refuse_model_file(const char* flag, const std::string& path, const std::vector<std::string>& dirs) {
  std::error_code ec;
  for (const std::string& dir : dirs)
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
      if (std::filesystem::equivalent(entry.path(), path, ec))
        fail(path, ": is ", dir, "'s ", entry.path().filename().string(), "; ", flag, " would overwrite it");
}

}  // namespace qinfer::cli
