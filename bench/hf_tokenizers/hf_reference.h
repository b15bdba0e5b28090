// Runs the Hugging Face tokenizers reference (hf_tokenize.js, on the official
// Node binding) from the C++ differential tests and the tokenizer benchmark.
// Node and the npm package are optional: when either is missing (and cannot be
// installed), find() says why and the caller skips its HF side.
#pragma once
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace qinfer::hf {

class Reference {
 public:
  // source_dir: the repository root (holds bench/hf_tokenizers). The npm
  // package is taken from bench/hf_tokenizers/node_modules, else from
  // install_dir/node_modules, else `npm install`ed into install_dir.
  // Returns the reference, or the reason it is unavailable.
  static std::variant<Reference, std::string> find(const std::filesystem::path& source_dir,
                                                   const std::filesystem::path& install_dir) {
    namespace fs = std::filesystem;
    const fs::path here = source_dir / "bench" / "hf_tokenizers";
    if (std::system("node --version >/dev/null 2>&1") != 0) return std::string("node is not installed (on PATH)");
    for (const fs::path& dir : {here, install_dir})
      if (fs::exists(dir / "node_modules" / "tokenizers" / "package.json")) return Reference(here, dir);
    std::error_code ec;
    fs::create_directories(install_dir, ec);
    // Test processes run in parallel: one installs while the others wait.
    const int lock = ::open((install_dir / ".npm-install.lock").c_str(), O_CREAT | O_RDWR, 0644);
    if (lock >= 0) ::flock(lock, LOCK_EX);
    const fs::path log = install_dir / "npm-install.log";
    if (!fs::exists(install_dir / "node_modules" / "tokenizers" / "package.json")) {
      if (install_dir != here)
        fs::copy_file(here / "package.json", install_dir / "package.json", fs::copy_options::overwrite_existing, ec);
      const std::string cmd = "timeout 180 npm install --prefix " + quote(install_dir) +
                              " --no-audit --no-fund --fetch-retries=1 >" + quote(log) + " 2>&1";
      if (ec || std::system(cmd.c_str()) != 0) fs::remove_all(install_dir / "node_modules", ec);
    }
    if (lock >= 0) ::close(lock);  // releases the lock
    if (!fs::exists(install_dir / "node_modules" / "tokenizers" / "package.json"))
      return "`npm install` of the npm package tokenizers into " + install_dir.string() + " failed (see " +
             log.string() + ")";
    return Reference(here, install_dir);
  }

  // `node hf_tokenize.js MODE ARGS...` with stdin from `input_file` (or
  // nothing); returns its stdout lines. Throws when node fails.
  std::vector<std::string> run(const std::string& mode, const std::vector<std::string>& args,
                               const std::string& input_file = "") const {
    std::string cmd = "NODE_PATH=" + quote(package_dir_ / "node_modules") + " node " +
                      quote(script_dir_ / "hf_tokenize.js") + " " + mode;
    for (const std::string& a : args) cmd.append(" ").append(quote(a));
    cmd.append(" <").append(input_file.empty() ? std::string("/dev/null") : quote(input_file));
    FILE* pipe = ::popen(cmd.c_str(), "r");
    if (pipe == nullptr) throw std::runtime_error("cannot run " + cmd);
    std::vector<std::string> lines;
    std::string line;
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) {
      for (size_t i = 0; i < n; ++i) {
        if (buf[i] == '\n')
          lines.push_back(std::move(line)), line.clear();
        else
          line += buf[i];
      }
    }
    if (::pclose(pipe) != 0) throw std::runtime_error("failed: " + cmd);
    return lines;
  }

  std::string package_dir() const { return package_dir_.string(); }

 private:
  Reference(std::filesystem::path script_dir, std::filesystem::path package_dir)
      : script_dir_(std::move(script_dir)), package_dir_(std::move(package_dir)) {}
  static std::string quote(const std::filesystem::path& p) {
    return std::string("'").append(p.string()).append("'");  // not "'" + s: GCC 12 warns falsely (-Wrestrict)
  }

  std::filesystem::path script_dir_;
  std::filesystem::path package_dir_;
};

}  // namespace qinfer::hf
