#include "text/tokenizer_json.h"

#include <nlohmann/json.hpp>

#include "text/json_reader.h"
#include "text/pretokenizer.h"
#include "util/error.h"
#include "util/json_error.h"

namespace qinfer {
namespace {

using nlohmann::json;

// Ids index dense tables; no real vocabulary comes near this bound.
constexpr int64_t kMaxId = 1 << 24;

// The small parts of tokenizer.json, checked as DOM values.
class Checker {
 public:
  // `text`, the whole file, must outlive the checker.
  Checker(std::string_view text, std::string origin) : text_(text), origin_(std::move(origin)) {}

  // `raw` is a value cut out of the text: a parse error names the byte of the
  // file, as the reader's errors do (a line and column of the value would mislead).
  json parse(std::string_view raw, std::string_view where) const {
    try {
      return json::parse(raw);
    } catch (const json::parse_error& e) {
      const size_t at = static_cast<size_t>(raw.data() - text_.data()) + (e.byte > 0 ? e.byte - 1 : 0);
      fail(origin_, ": byte ", at, ": ", where, " is not valid JSON (", json_error_text(e, false), ")");
    } catch (const json::exception& e) {
      fail(origin_, ": ", where, " is not valid JSON (", json_error_text(e), ")");
    }
  }

  [[noreturn]] void unsupported(std::string_view where, const json& value, std::string_view why) const {
    fail(origin_, ": ", where, " = ", value.dump(), " is not supported (", why, ")");
  }

  std::string type_of(const json& v, std::string_view where) const {
    if (!v.is_object() || !v.contains("type") || !v["type"].is_string())
      fail(origin_, ": ", where, " has no \"type\": ", v.dump());
    return v["type"].get<std::string>();
  }

  // A member that must be absent or have one of the given values.
  void require(const json& obj, const char* member, std::initializer_list<json> allowed, std::string_view where,
               std::string_view why) const {
    if (!obj.is_object() || !obj.contains(member)) return;
    for (const json& a : allowed)
      if (obj[member] == a) return;
    unsupported(std::string(where) + "." + member, obj[member], why);
  }

  bool normalizer(const json& v) const {
    if (v.is_null()) return false;
    if (type_of(v, "normalizer") != "NFC") unsupported("normalizer", v, "qinfer implements the NFC normalizer only");
    return true;
  }

  void pre_tokenizer(const json& v) const {
    const char* why =
        "qinfer implements the Qwen2 pre-tokenizer: Sequence [Split(Qwen2 regex, Isolated), "
        "ByteLevel(add_prefix_space=false, use_regex=false)]";
    if (v.is_null() || type_of(v, "pre_tokenizer") != "Sequence" || !v.contains("pretokenizers") ||
        !v["pretokenizers"].is_array() || v["pretokenizers"].size() != 2)
      unsupported("pre_tokenizer", v, why);
    const json& split = v["pretokenizers"][0];
    const json& byte_level = v["pretokenizers"][1];
    if (type_of(split, "pre_tokenizer.pretokenizers[0]") != "Split")
      unsupported("pre_tokenizer.pretokenizers[0]", split, why);
    const json& pattern = split.value("pattern", json());
    if (!pattern.is_object() || pattern.value("Regex", json()) != json(kQwen2PreTokenizerRegex))
      unsupported("pre_tokenizer.pretokenizers[0].pattern", pattern, why);
    if (split.value("behavior", json()) != "Isolated")
      unsupported("pre_tokenizer.pretokenizers[0].behavior", split.value("behavior", json()), why);
    require(split, "invert", {false}, "pre_tokenizer.pretokenizers[0]", why);
    if (type_of(byte_level, "pre_tokenizer.pretokenizers[1]") != "ByteLevel")
      unsupported("pre_tokenizer.pretokenizers[1]", byte_level, why);
    require(byte_level, "add_prefix_space", {false}, "pre_tokenizer.pretokenizers[1]", why);
    require(byte_level, "use_regex", {false}, "pre_tokenizer.pretokenizers[1]", why);
  }

  void decoder(const json& v) const {
    if (v.is_null() || type_of(v, "decoder") != "ByteLevel")
      unsupported("decoder", v, "qinfer implements the ByteLevel decoder only");
  }

  // ByteLevel only adjusts offsets. TemplateProcessing puts special tokens
  // around the text when HF encodes with add_special_tokens (Qwen3-Embedding
  // appends <|endoftext|>); only its "single" template matters here (pairs
  // are never encoded). A Sequence may hold both.
  void post_processor(const json& v, TokenizerJson& out) const {
    const char* why = "qinfer implements ByteLevel, TemplateProcessing and a Sequence of them";
    if (v.is_null()) return;
    const std::string type = type_of(v, "post_processor");
    if (type == "ByteLevel") return;
    if (type == "TemplateProcessing") return template_processing(v, "post_processor", out);
    if (type != "Sequence" || !v.contains("processors") || !v["processors"].is_array())
      unsupported("post_processor", v, why);
    bool seen_template = false;
    for (size_t i = 0; i < v["processors"].size(); ++i) {
      const json& p = v["processors"][i];
      const std::string where = "post_processor.processors[" + std::to_string(i) + "]";
      const std::string t = type_of(p, where);
      if (t == "ByteLevel") continue;
      if (t != "TemplateProcessing" || seen_template) unsupported(where, p, why);
      template_processing(p, where, out);
      seen_template = true;
    }
  }

  // "single": [SpecialToken...] {"Sequence": {"id": "A"}} [SpecialToken...],
  // each SpecialToken named in "special_tokens" with the ids it stands for.
  void template_processing(const json& v, const std::string& where, TokenizerJson& out) const {
    const json& single = v.value("single", json());
    const json& specials = v.value("special_tokens", json::object());
    if (!single.is_array() || !specials.is_object())
      fail(origin_, ": ", where, " needs a \"single\" template and a \"special_tokens\" object: ", v.dump());
    bool seen_sequence = false;
    for (size_t i = 0; i < single.size(); ++i) {
      const json& piece = single[i];
      const std::string at = where + ".single[" + std::to_string(i) + "]";
      if (piece.is_object() && piece.contains("Sequence")) {
        if (seen_sequence || piece["Sequence"].value("id", json()) != "A")
          unsupported(at, piece, "a single template holds the one sequence A");
        seen_sequence = true;
        continue;
      }
      const json name = piece.is_object() && piece.contains("SpecialToken") && piece["SpecialToken"].is_object()
                            ? piece["SpecialToken"].value("id", json())
                            : json();
      if (!name.is_string()) fail(origin_, ": ", at, " is neither a Sequence nor a SpecialToken: ", piece.dump());
      const json& token = specials.value(name.get<std::string>(), json());
      if (!token.is_object() || !token.contains("ids") || !token["ids"].is_array())
        fail(origin_, ": ", at, ": special token ", name.dump(), " is not declared in ", where,
             ".special_tokens with its \"ids\"");
      std::vector<int32_t>& ids = seen_sequence ? out.special_suffix : out.special_prefix;
      for (const json& id : token["ids"]) {
        if (!id.is_number_unsigned())
          fail(origin_, ": ", at, ": special token ", name.dump(), " has an id ", id.dump());
        ids.push_back(checked_id(id.get<uint64_t>(), at));
      }
    }
    if (!seen_sequence) unsupported(where + ".single", single, "a single template holds the one sequence A");
  }

  std::vector<AddedToken> added_tokens(const json& v) const {
    if (!v.is_array()) fail(origin_, ": added_tokens is not an array");
    std::vector<AddedToken> tokens;
    for (size_t i = 0; i < v.size(); ++i) {
      const json& t = v[i];
      const std::string where = "added_tokens[" + std::to_string(i) + "]";
      if (!t.is_object() || !t.contains("id") || !t["id"].is_number_unsigned() || !t.contains("content") ||
          !t["content"].is_string() || t["content"].get_ref<const std::string&>().empty())
        fail(origin_, ": ", where, " needs a non-negative \"id\" and a non-empty \"content\": ", t.dump());
      for (const char* flag : {"single_word", "lstrip", "rstrip"})
        require(t, flag, {false}, where, "qinfer matches added tokens verbatim, whatever is around them");
      require(t, "normalized", {false, true}, where, "expected true or false");
      tokens.push_back({t["content"].get<std::string>(), checked_id(t["id"].get<uint64_t>(), where),
                        t.value("special", false), t.value("normalized", false)});
    }
    return tokens;
  }

  void model_member(const std::string& key, const json& v) const {
    const std::string where = "model." + key;
    const char* why = "qinfer implements plain byte-level BPE";
    if (key == "type") {
      if (v != "BPE") unsupported(where, v, "qinfer implements the BPE model only");
    } else if (key == "dropout" || key == "unk_token") {
      // unk_token is never used: every byte has a token (checked when building the tokenizer).
      if (key == "dropout" && !v.is_null()) unsupported(where, v, why);
    } else if (key == "continuing_subword_prefix" || key == "end_of_word_suffix") {
      if (!v.is_null() && v != "") unsupported(where, v, why);
    } else if (key == "byte_fallback" || key == "ignore_merges") {
      if (v != false) unsupported(where, v, why);
    } else if (key != "fuse_unk") {  // fuse_unk only matters with an unknown token
      unsupported(where, v, "unknown member of the BPE model");
    }
  }

  int32_t checked_id(int64_t id, std::string_view where) const {
    if (id < 0 || id >= kMaxId) fail(origin_, ": ", where, ": id ", id, " is out of range [0, ", kMaxId, ")");
    return static_cast<int32_t>(id);
  }

  const std::string& origin() const { return origin_; }

 private:
  std::string_view text_;
  std::string origin_;
};

// A string of the JSON text, kept as a view: into the text, or into
// out.unescaped when it had escapes (then `scratch` holds it).
std::string_view keep(std::string_view s, const std::string& scratch, TokenizerJson& out) {
  if (s.data() != scratch.data()) return s;
  return out.unescaped.emplace_back(scratch);
}

void read_vocab(JsonReader& r, TokenizerJson& out) {
  out.vocab.reserve(200000);
  std::string scratch;
  for (bool more = r.enter('{', '}'); more; more = r.more('}')) {
    const std::string_view token = keep(r.key(scratch), scratch, out);
    const size_t at = r.offset();
    const int64_t id = r.integer();
    if (id < 0 || id >= kMaxId) r.error_at(at, "model.vocab: the id of \"" + std::string(token) + "\" is out of range");
    out.vocab.emplace_back(token, static_cast<int32_t>(id));
  }
}

void read_merges(JsonReader& r, TokenizerJson& out) {
  out.merges.reserve(200000);
  std::string scratch;
  for (bool more = r.enter('[', ']'); more; more = r.more(']')) {
    if (r.peek() == '"') {  // "left right"
      const size_t at = r.offset();
      const std::string_view merge = keep(r.string(scratch), scratch, out);
      const size_t space = merge.find(' ');
      if (space == std::string_view::npos || merge.find(' ', space + 1) != std::string_view::npos)
        r.error_at(at, "model.merges: \"" + std::string(merge) + "\" is not two tokens separated by one space");
      out.merges.emplace_back(merge.substr(0, space), merge.substr(space + 1));
    } else {  // ["left", "right"]
      if (!r.enter('[', ']')) r.error("empty merge pair");
      const std::string_view left = keep(r.string(scratch), scratch, out);
      if (!r.more(']')) r.error("merge pair with one element");
      const std::string_view right = keep(r.string(scratch), scratch, out);
      if (r.more(']')) r.error("merge pair with more than two elements");
      out.merges.emplace_back(left, right);
    }
  }
}

}  // namespace

TokenizerJson parse_tokenizer_json(std::string_view text, const std::string& origin) {
  JsonReader r(text, origin);
  const Checker check(text, origin);
  TokenizerJson out;
  bool has_model = false, has_pre_tokenizer = false, has_decoder = false;
  for (bool more = r.enter('{', '}'); more; more = r.more('}')) {
    std::string scratch;
    const std::string key(r.key(scratch));
    if (key == "model") {
      has_model = true;
      for (bool in_model = r.enter('{', '}'); in_model; in_model = r.more('}')) {
        const std::string member(r.key(scratch));
        if (member == "vocab")
          read_vocab(r, out);
        else if (member == "merges")
          read_merges(r, out);
        else
          check.model_member(member, check.parse(r.raw_value(), "model." + member));
      }
      continue;
    }
    const json value = check.parse(r.raw_value(), key);
    if (key == "normalizer") {
      out.nfc = check.normalizer(value);
    } else if (key == "pre_tokenizer") {
      check.pre_tokenizer(value);
      has_pre_tokenizer = true;
    } else if (key == "decoder") {
      check.decoder(value);
      has_decoder = true;
    } else if (key == "post_processor") {
      check.post_processor(value, out);
    } else if (key == "truncation" || key == "padding") {
      // Ignored, as transformers ignores them: its tokenizer turns both off
      // for a call that does not ask for them (and no model input asks).
      // They are in a tokenizer.json saved after a call that did.
    } else if (key == "added_tokens") {
      out.added_tokens = check.added_tokens(value);
    }  // "version" and members HF ignores
  }
  r.end();
  if (!has_model) fail(origin, ": no \"model\" (not a tokenizer.json?)");
  if (!has_pre_tokenizer) fail(origin, ": no \"pre_tokenizer\" (qinfer implements the Qwen2 pre-tokenizer only)");
  if (!has_decoder) fail(origin, ": no \"decoder\" (qinfer implements the ByteLevel decoder only)");
  return out;
}

}  // namespace qinfer
