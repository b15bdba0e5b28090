#include "io/model_dir.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <vector>

#include "util/error.h"
#include "util/mapped_file.h"

namespace qinfer {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> hub_cache_roots() {
  std::vector<std::string> roots;
  auto add = [&](const std::string& p) {
    for (const auto& r : roots)
      if (r == p) return;
    roots.push_back(p);
  };
  if (const char* c = std::getenv("HF_HUB_CACHE"); c && *c) add(c);
  if (const char* h = std::getenv("HF_HOME"); h && *h) add(std::string(h) + "/hub");
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) add(std::string(x) + "/huggingface/hub");
  if (const char* home = std::getenv("HOME"); home && *home) add(std::string(home) + "/.cache/huggingface/hub");
  return roots;
}

bool is_hub_id(std::string_view s) {
  const size_t slash = s.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == s.size()) return false;
  if (s.find('/', slash + 1) != std::string_view::npos) return false;
  for (char ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.' || ch == '/'))
      return false;
  return s.find("..") == std::string_view::npos;
}

// Whether a snapshot has its config.json: a link to a deleted blob (or
// something else in its place) makes it unusable, and another is taken.
bool has_config(const fs::path& snapshot) {
  try {
    return file_exists((snapshot / "config.json").string());
  } catch (const Error&) {
    return false;
  }
}

// The snapshot directory of one cached repo, or "" when it has none with a config.json.
std::string find_snapshot(const fs::path& repo) {
  std::error_code ec;
  const fs::path ref = repo / "refs" / "main";
  if (file_exists(ref.string())) {
    std::string rev = read_text_file(ref.string());
    while (!rev.empty() && std::isspace(static_cast<unsigned char>(rev.back()))) rev.pop_back();
    // A commit hash names a directory of snapshots/: a path (absolute, or with ..) would lead anywhere.
    const bool a_name = !rev.empty() && rev != "." && rev != ".." && rev.find('/') == std::string::npos &&
                        rev.find('\0') == std::string::npos;
    const fs::path snap = repo / "snapshots" / (a_name ? rev : "");
    if (a_name && has_config(snap)) return snap.string();
    // Taking another snapshot silently could run other weights than the user downloaded last.
    std::fprintf(stderr, "qinfer: warning: %s names snapshot '%s', which %s; taking the newest other snapshot\n",
                 ref.c_str(), rev.c_str(),
                 !a_name                      ? "is not a snapshot's name"
                 : fs::is_directory(snap, ec) ? "has no config.json (or a broken link for it)"
                                              : "is missing");
  }
  // No usable refs/main: take the most recently written snapshot that has a config.json.
  fs::path best;
  fs::file_time_type best_time{};
  for (const auto& e : fs::directory_iterator(repo / "snapshots", ec)) {
    if (!has_config(e.path())) continue;
    const auto t = fs::last_write_time(e.path(), ec);
    if (best.empty() || t > best_time) {
      best = e.path();
      best_time = t;
    }
  }
  return best.string();
}

}  // namespace

std::string resolve_model_dir(const std::string& model_arg) {
  std::error_code ec;
  if (fs::is_directory(model_arg, ec)) return model_arg;
  if (fs::is_regular_file(model_arg, ec)) {
    char magic[4] = {};
    std::ifstream(model_arg, std::ios::binary).read(magic, sizeof magic);
    const bool gguf = model_arg.size() >= 5 && model_arg.compare(model_arg.size() - 5, 5, ".gguf") == 0;
    if (gguf || std::memcmp(magic, "GGUF", 4) == 0)
      fail(model_arg,
           ": GGUF is not supported; use the Hugging Face checkpoint directory (config.json, "
           "model.safetensors, tokenizer.json), e.g. huggingface-cli download Qwen/Qwen3-0.6B");
    fail(model_arg,
         ": is a file; -m takes a checkpoint directory (config.json, model.safetensors, tokenizer.json) "
         "or a hub id like Qwen/Qwen3-0.6B");
  }
  if (fs::is_symlink(model_arg, ec))
    fail(model_arg, ": is a symbolic link to ", fs::read_symlink(model_arg, ec).string(),
         ", which is not a directory (missing, or a loop)");
  if (fs::exists(fs::symlink_status(model_arg, ec)))
    fail(model_arg, ": is not a directory; -m takes a checkpoint directory or a hub id like Qwen/Qwen3-0.6B");
  if (!is_hub_id(model_arg))
    fail("model '", model_arg, "' is neither a directory nor a Hugging Face hub id like Qwen/Qwen3-0.6B");

  std::string repo_dir = "models--" + model_arg;
  repo_dir.replace(repo_dir.find('/'), 1, "--");
  std::string looked;
  for (const std::string& root : hub_cache_roots()) {
    const fs::path repo = fs::path(root) / repo_dir;
    looked += "\n  " + (repo / "snapshots").string();
    if (!fs::is_directory(repo / "snapshots", ec)) continue;
    std::string snap = find_snapshot(repo);
    if (!snap.empty()) return snap;
  }
  if (looked.empty()) looked = " nowhere (no HF_HUB_CACHE, HF_HOME, XDG_CACHE_HOME or HOME is set)";
  fail("model '", model_arg, "' is not a directory and was not found in the Hugging Face cache; looked in:", looked,
       "\nDownload it with:  huggingface-cli download ", model_arg,
       "\n(or pass the path of a checkpoint directory holding config.json, model.safetensors and tokenizer.json)");
}

}  // namespace qinfer
