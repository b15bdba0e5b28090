// Every malformed-checkpoint case must produce its own clear Error, never a crash.
#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/safetensors_writer.h"
#include "test_util.h"
#include "util/error.h"
#include "util/mapped_file.h"

using namespace qinfer;
using qinfer::test::ScratchDir;

namespace {

void write_raw(const std::string& path, const std::string& header, size_t data_bytes,
               uint64_t header_len_override = 0) {
  std::ofstream out(path, std::ios::binary);
  uint64_t n = header_len_override ? header_len_override : header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>(n >> (8 * i)));
  out << header;
  out << std::string(data_bytes, '\0');
}

// Expects SafetensorsFile(path) to throw an Error whose message contains `needle`.
void expect_error(const std::string& path, const std::string& needle) {
  try {
    SafetensorsFile f(path);
    FAIL() << "no error; expected one containing: " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  }
}

TensorData f32_tensor(const std::string& name, std::vector<int64_t> shape) {
  TensorData t{name, DType::F32, shape, {}};
  int64_t n = 1;
  for (auto d : shape) n *= d;
  t.bytes.resize(n * 4);
  for (int64_t i = 0; i < n; ++i) {
    float v = static_cast<float>(i) * 0.5f;
    std::memcpy(&t.bytes[i * 4], &v, 4);
  }
  return t;
}

}  // namespace

TEST(Safetensors, RoundTripThroughWriter) {
  ScratchDir dir("st");
  write_safetensors(dir.file("a.safetensors"), {f32_tensor("x", {2, 3}), f32_tensor("y", {5})});
  SafetensorsFile f(dir.file("a.safetensors"));
  ASSERT_EQ(f.tensors().size(), 2u);
  const TensorView& x = f.tensors().at("x");
  EXPECT_EQ(x.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(x.nbytes, 24u);
  EXPECT_FLOAT_EQ(load_as_f32(x.data, x.dtype, 5), 2.5f);
  EXPECT_FLOAT_EQ(load_as_f32(f.tensors().at("y").data, DType::F32, 4), 2.0f);
}

// Tensors written from memory the caller keeps (a model saved without a
// second copy of it): the file is the same; a source that writes another
// size than it declared leaves no file behind.
TEST(Safetensors, SourcesWrittenInPlaceGiveTheSameFile) {
  ScratchDir dir("st-src");
  const TensorData x = f32_tensor("x", {2, 3}), y = f32_tensor("y", {5});
  write_safetensors(dir.file("owned.safetensors"), {x, y});
  auto from = [](const TensorData& t, size_t n) {
    return TensorSource{t.name, t.dtype, t.shape, t.bytes.size(), [&t, n](std::ostream& out) {
                          out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(n));
                        }};
  };
  write_safetensors(dir.file("sources.safetensors"), {from(x, 24), from(y, 20)});
  EXPECT_EQ(read_text_file(dir.file("sources.safetensors")), read_text_file(dir.file("owned.safetensors")));
  try {
    write_safetensors(dir.file("short.safetensors"), {from(x, 24), from(y, 16)});
    FAIL() << "a source 4 bytes short was written";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor y wrote 16 bytes, not 20"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("short.safetensors")));
}

TEST(Safetensors, TruncatedFile) {
  ScratchDir dir("st");
  std::ofstream(dir.file("t.safetensors"), std::ios::binary) << "abc";
  expect_error(dir.file("t.safetensors"), "truncated");
}

TEST(Safetensors, TruncatedData) {
  ScratchDir dir("st");
  write_raw(dir.file("t.safetensors"), R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8);
  expect_error(dir.file("t.safetensors"), "out of range");
}

TEST(Safetensors, HeaderLengthBeyondFile) {
  ScratchDir dir("st");
  write_raw(dir.file("t.safetensors"), R"({})", 0, 5000);
  expect_error(dir.file("t.safetensors"), "beyond the end of the file");
}

TEST(Safetensors, HeaderLengthOverLimit) {
  ScratchDir dir("st");
  write_raw(dir.file("t.safetensors"), R"({})", 0, (100ull << 20) + 1);
  expect_error(dir.file("t.safetensors"), "100 MB");
}

TEST(Safetensors, HeaderNotJson) {
  ScratchDir dir("st");
  write_raw(dir.file("t.safetensors"), "{not json", 0);
  expect_error(dir.file("t.safetensors"), "not valid JSON");
  // A hunt finding: the message was nlohmann's own, with the bytes it read echoed raw.
  write_raw(dir.file("t.safetensors"), "{\"x\": \xff}", 0);
  expect_error(dir.file("t.safetensors"),
               "t.safetensors: the safetensors header is not valid JSON (line 1, column 7: syntax error while parsing "
               "value - invalid literal)");
}

// A fuzz finding: a number too large for a double is nlohmann's out_of_range, which escaped as an internal error.
TEST(Safetensors, HeaderNumberOverflow) {
  ScratchDir dir("st");
  write_raw(dir.file("t.safetensors"), R"({"x":{"dtype":"F32","shape":[2E999],"data_offsets":[0,8]}})", 8);
  expect_error(dir.file("t.safetensors"), "not valid JSON");
}

TEST(Safetensors, OffsetsOutOfRange) {
  ScratchDir dir("st");
  write_raw(dir.file("t.safetensors"), R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[100,108]}})", 16);
  expect_error(dir.file("t.safetensors"), "out of range");
}

TEST(Safetensors, OffsetsReversed) {
  ScratchDir dir("st");
  write_raw(dir.file("t.safetensors"), R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 16);
  expect_error(dir.file("t.safetensors"), "begin 8 > end 0");
}

TEST(Safetensors, OverlappingTensors) {
  ScratchDir dir("st");
  write_raw(
      dir.file("t.safetensors"),
      R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
      16);
  expect_error(dir.file("t.safetensors"), "overlap");
}

TEST(Safetensors, WrongByteLength) {
  ScratchDir dir("st");
  write_raw(dir.file("t.safetensors"), R"({"x":{"dtype":"BF16","shape":[3],"data_offsets":[0,8]}})", 8);
  expect_error(dir.file("t.safetensors"), "does not match shape [3]");
}

TEST(Safetensors, UnsupportedDtype) {
  ScratchDir dir("st");
  write_raw(dir.file("t.safetensors"), R"({"w":{"dtype":"I8","shape":[4],"data_offsets":[0,4]}})", 4);
  expect_error(dir.file("t.safetensors"), "tensor 'w': unsupported dtype I8");
}

TEST(Safetensors, MalformedEntries) {
  ScratchDir dir("st");
  write_raw(dir.file("a.safetensors"), R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4);
  expect_error(dir.file("a.safetensors"), "negative");
  write_raw(dir.file("b.safetensors"), R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", 4);
  expect_error(dir.file("b.safetensors"), "shape");
  write_raw(dir.file("c.safetensors"), R"([1,2])", 0);
  expect_error(dir.file("c.safetensors"), "not a JSON object");
  write_raw(dir.file("d.safetensors"), R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})",
            4);
  expect_error(dir.file("d.safetensors"), "too large");
}

TEST(Safetensors, MissingFile) { expect_error("/nonexistent/dir/model.safetensors", "cannot open"); }

TEST(Checkpoint, RequireChecksPresenceAndShape) {
  ScratchDir dir("ck");
  write_safetensors(dir.file("model.safetensors"), {f32_tensor("w", {2, 3})});
  Checkpoint ck = Checkpoint::open(dir.path());
  EXPECT_EQ(ck.require("w", {2, 3}).nbytes, 24u);
  try {
    ck.require("missing.weight", {1});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing tensor 'missing.weight'"), std::string::npos) << e.what();
  }
  try {
    ck.require("w", {3, 2});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has shape [2, 3], the config implies [3, 2]"), std::string::npos) << e.what();
  }
}

TEST(Checkpoint, ShardedFixtureOpens) {
  Checkpoint ck = Checkpoint::open(qinfer::test::data_path("models/tiny2"));
  EXPECT_NE(ck.find("lm_head.weight"), nullptr);
  EXPECT_NE(ck.find("model.embed_tokens.weight"), nullptr);
}

TEST(Checkpoint, ShardListedButMissing) {
  ScratchDir dir("ck");
  std::ofstream(dir.file("model.safetensors.index.json"))
      << R"({"weight_map":{"w":"model-00001-of-00002.safetensors"}})";
  try {
    Checkpoint::open(dir.path());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

TEST(Checkpoint, NoWeightsInDirectory) {
  ScratchDir dir("ck");
  try {
    Checkpoint::open(dir.path());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no model.safetensors"), std::string::npos) << e.what();
  }
}
