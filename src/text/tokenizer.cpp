#include "text/tokenizer.h"

#include <algorithm>
#include <array>
#include <deque>
#include <mutex>

#include "text/byte_level.h"
#include "text/nfc.h"
#include "text/pretokenizer.h"
#include "text/tokenizer_json.h"
#include "util/error.h"
#include "util/mapped_file.h"
#include "util/utf8.h"

namespace qinfer {

namespace {

// Calls prepare(i, slot) for a batch of indices, then finish(i, slot) for the
// same batch (slot = i's place in the batch). Loading looks up 600k strings
// at random places of a 6 MB table: prepare hashes and prefetches, so the
// cache misses of a batch overlap instead of coming one after another.
constexpr size_t kBatch = 32;
template <class Prepare, class Finish>
void in_batches(size_t n, Prepare prepare, Finish finish) {
  for (size_t base = 0; base < n; base += kBatch) {
    const size_t end = std::min(n, base + kBatch);
    for (size_t i = base; i < end; ++i) prepare(i, i - base);
    for (size_t i = base; i < end; ++i) finish(i, i - base);
  }
}

// The id of each single-byte token: BPE starts every word from them.
std::array<int32_t, 256> byte_token_ids(const StringTable<int32_t>& vocab, const std::string& origin) {
  std::array<int32_t, 256> ids;
  for (int b = 0; b < 256; ++b) {
    const std::string piece = byte_level::from_bytes(std::string(1, static_cast<char>(b)));
    const int32_t* id = vocab.find(piece);
    if (id == nullptr) fail(origin, ": model.vocab has no token for byte 0x", std::hex, b, " (\"", piece, "\")");
    ids[b] = *id;
  }
  return ids;
}

// Merges as ids: left, right and the token they make, all in the vocabulary.
std::vector<BpeMerge> resolve_merges(const TokenizerJson& spec, const StringTable<int32_t>& vocab,
                                     const std::string& origin) {
  std::vector<BpeMerge> merges(spec.merges.size());
  std::array<std::string, kBatch> joined;
  std::array<std::array<uint64_t, 3>, kBatch> hashes;
  const auto id_of = [&](size_t rank, std::string_view piece, uint64_t hash) {
    const int32_t* id = vocab.find(piece, hash);
    if (id == nullptr) fail(origin, ": model.merges[", rank, "]: \"", piece, "\" is not in model.vocab");
    return *id;
  };
  in_batches(
      spec.merges.size(),
      [&](size_t rank, size_t slot) {
        const auto& [left, right] = spec.merges[rank];
        joined[slot].assign(left).append(right);
        hashes[slot] = {vocab.hash_of(left), vocab.hash_of(right), vocab.hash_of(joined[slot])};
        for (uint64_t h : hashes[slot]) vocab.prefetch(h);
      },
      [&](size_t rank, size_t slot) {
        const auto& [left, right] = spec.merges[rank];
        const auto& h = hashes[slot];
        merges[rank] = {id_of(rank, left, h[0]), id_of(rank, right, h[1]), id_of(rank, joined[slot], h[2])};
      });
  return merges;
}

// Appends the ids of text with `added`'s tokens cut out: each token's id, and
// what encode_between appends for each stretch between them. False as soon
// as ids would exceed max_tokens (or encode_between says so).
template <class EncodeBetween>
bool encode_around(const AddedTokenMatcher& added, std::string_view text, size_t max_tokens, std::vector<int32_t>& ids,
                   EncodeBetween encode_between) {
  for (size_t pos = 0; pos < text.size();) {
    const auto match = added.find(text, pos);
    const size_t stretch_end = match ? match->begin : text.size();
    if (stretch_end > pos && !encode_between(text.substr(pos, stretch_end - pos))) return false;
    if (!match) break;
    if (ids.size() == max_tokens) return false;
    ids.push_back(match->id);
    pos = match->end;
  }
  return true;
}

}  // namespace

struct Tokenizer::SharedCache {
  std::mutex mutex;
  BpeCache cache;
};

Tokenizer Tokenizer::from_file(const std::string& tokenizer_json_path) {
  const std::string text = read_text_file(tokenizer_json_path);
  return Tokenizer(parse_tokenizer_json(text, tokenizer_json_path), tokenizer_json_path);
}

Tokenizer Tokenizer::from_json(std::string_view json_text) {
  return Tokenizer(parse_tokenizer_json(json_text, "tokenizer.json"), "tokenizer.json");
}

Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer::Tokenizer(const TokenizerJson& spec, const std::string& origin)
    : id_of_piece_(spec.vocab.size() + spec.added_tokens.size()),
      nfc_(spec.nfc),
      cache_(std::make_unique<SharedCache>()) {
  int32_t max_id = -1;
  for (const auto& [token, id] : spec.vocab) max_id = std::max(max_id, id);
  for (const AddedToken& t : spec.added_tokens) max_id = std::max(max_id, t.id);
  kind_.assign(max_id + 1, kNone);
  std::vector<std::string_view> piece_of(max_id + 1);

  std::array<uint64_t, kBatch> hashes;
  in_batches(
      spec.vocab.size(),
      [&](size_t i, size_t slot) {
        hashes[slot] = id_of_piece_.hash_of(spec.vocab[i].first);
        id_of_piece_.prefetch(hashes[slot]);
      },
      [&](size_t i, size_t slot) {
        const auto& [token, id] = spec.vocab[i];
        if (kind_[id] != kNone)
          fail(origin, ": model.vocab gives id ", id, " to both \"", piece_of[id], "\" and \"", token, "\"");
        if (!id_of_piece_.insert(token, id, hashes[slot])) fail(origin, ": model.vocab lists \"", token, "\" twice");
        kind_[id] = kVocab;
        piece_of[id] = token;
      });

  bpe_ = BpeModel(byte_token_ids(id_of_piece_, origin), resolve_merges(spec, id_of_piece_, origin));

  std::vector<AddedToken> raw, raw_plain, normalized, normalized_plain;
  std::deque<std::string> normalized_contents;  // what piece_of views for normalized tokens
  for (const AddedToken& t : spec.added_tokens) {
    const int32_t* existing = id_of_piece_.find(t.content);
    if (existing && *existing != t.id)
      fail(origin, ": added token \"", t.content, "\" with id ", t.id, ": it already has id ", *existing,
           " (ids of added tokens must agree with model.vocab)");
    if (kind_[t.id] != kNone && piece_of[t.id] != t.content)
      fail(origin, ": added token \"", t.content, "\" with id ", t.id, " clashes with \"", piece_of[t.id],
           "\" (ids of added tokens must agree with model.vocab)");
    id_of_piece_.insert(t.content, t.id);
    kind_[t.id] = t.special ? kSpecial : kAdded;
    piece_of[t.id] = t.content;
    AddedToken matched = t;
    if (t.normalized && nfc_) {  // matched as the text it is matched in; HF decodes that form too
      matched.content = normalized_contents.emplace_back(nfc(t.content));
      piece_of[t.id] = normalized_contents.back();
    }
    (t.normalized ? normalized : raw).push_back(matched);
    if (!t.special) (t.normalized ? normalized_plain : raw_plain).push_back(matched);
  }
  added_ = {AddedTokenMatcher(raw), AddedTokenMatcher(normalized)};
  added_plain_ = {AddedTokenMatcher(raw_plain), AddedTokenMatcher(normalized_plain)};
  for (const std::vector<int32_t>* ids : {&spec.special_prefix, &spec.special_suffix})
    for (int32_t id : *ids)
      if (static_cast<size_t>(id) >= kind_.size() || kind_[id] == kNone)
        fail(origin, ": post_processor: special token id ", id, " names no token");
  special_prefix_ = spec.special_prefix;
  special_suffix_ = spec.special_suffix;

  // Per id: its string, and the bytes it decodes to. HF's ByteLevel decoder
  // maps a token through the byte-level alphabet when every character is in
  // it, and takes the token's own UTF-8 otherwise.
  piece_offsets_.reserve(kind_.size() + 1);
  byte_offsets_.reserve(kind_.size() + 1);
  piece_offsets_.push_back(0);
  byte_offsets_.push_back(0);
  for (size_t id = 0; id < kind_.size(); ++id) {
    pieces_.append(piece_of[id]);
    const auto bytes = byte_level::to_bytes(piece_of[id]);
    bytes_.append(bytes ? std::string_view(*bytes) : piece_of[id]);
    piece_offsets_.push_back(static_cast<uint32_t>(pieces_.size()));
    byte_offsets_.push_back(static_cast<uint32_t>(bytes_.size()));
    longest_token_bytes_ = std::max<size_t>(longest_token_bytes_, byte_offsets_[id + 1] - byte_offsets_[id]);
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool allow_special) const {
  std::vector<int32_t> ids;
  encode_into(text, allow_special, SIZE_MAX, ids);
  return ids;
}

std::optional<std::vector<int32_t>> Tokenizer::encode_at_most(std::string_view text, size_t max_tokens,
                                                              bool allow_special) const {
  std::vector<int32_t> ids;
  if (!encode_into(text, allow_special, max_tokens, ids)) return std::nullopt;
  return ids;
}

bool Tokenizer::encode_into(std::string_view text, bool allow_special, size_t max_tokens,
                            std::vector<int32_t>& ids) const {
  if (const size_t bad = utf8::first_invalid(text); bad != std::string_view::npos)
    fail("tokenizer: the text to encode is not valid UTF-8 at byte offset ", bad);
  ids.reserve(std::min(text.size() / 3, max_tokens) + 4);
  std::unique_lock lock(cache_->mutex, std::try_to_lock);
  BpeCache* cache = lock.owns_lock() ? &cache_->cache : nullptr;
  const AddedTokenSplits& added = allow_special ? added_ : added_plain_;
  return encode_around(added.raw, text, max_tokens, ids, [&](std::string_view stretch) {
    return encode_stretch(stretch, added.normalized, ids, cache, max_tokens);
  });
}

bool Tokenizer::encode_stretch(std::string_view text, const AddedTokenMatcher& normalized_added,
                               std::vector<int32_t>& ids, BpeCache* cache, size_t max_tokens) const {
  std::string normalized;
  if (nfc_ && !nfc_quick_yes(text)) {
    normalized = nfc(text);
    text = normalized;
  }
  return encode_around(normalized_added, text, max_tokens, ids,
                       [&](std::string_view words) { return encode_words(words, ids, cache, max_tokens); });
}

bool Tokenizer::encode_words(std::string_view text, std::vector<int32_t>& ids, BpeCache* cache,
                             size_t max_tokens) const {
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = qwen2_piece_end(text, pos);
    const std::string_view word = text.substr(pos, end - pos);
    pos = end;
    if (word.size() / longest_token_bytes_ > max_tokens - ids.size()) return false;
    const auto hit = word.size() > 1 && cache != nullptr ? cache->find(word) : std::span<const int32_t>();
    if (!hit.empty()) {
      ids.insert(ids.end(), hit.begin(), hit.end());
    } else {
      const size_t first = ids.size();
      bpe_.encode_word(word, ids);
      if (word.size() > 1 && cache != nullptr) cache->insert(word, std::span<const int32_t>(ids).subspan(first));
    }
    if (ids.size() > max_tokens) return false;
  }
  return true;
}

std::vector<int32_t> Tokenizer::with_special_tokens(std::vector<int32_t> ids) const {
  ids.insert(ids.begin(), special_prefix_.begin(), special_prefix_.end());
  ids.insert(ids.end(), special_suffix_.begin(), special_suffix_.end());
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string bytes;
  for (const int32_t id : ids)
    if (!(skip_special_tokens && is_special(id))) bytes.append(token_bytes(id));
  std::string text;
  text.reserve(bytes.size());
  utf8::append_lossy(text, bytes);
  return text;
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
  const int32_t* id = id_of_piece_.find(token);
  return id ? std::optional<int32_t>(*id) : std::nullopt;
}

bool Tokenizer::names_token(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < kind_.size() && kind_[id] != kNone;
}

bool Tokenizer::is_special(int32_t id) const { return names_token(id) && kind_[id] == kSpecial; }

std::string_view Tokenizer::slice(const std::string& arena, const std::vector<uint32_t>& offsets, int32_t id) {
  return std::string_view(arena).substr(offsets[id], offsets[id + 1] - offsets[id]);
}

std::string Tokenizer::id_to_piece(int32_t id) const {
  return names_token(id) ? std::string(slice(pieces_, piece_offsets_, id)) : std::string();
}

std::string_view Tokenizer::token_bytes(int32_t id) const {
  return names_token(id) ? slice(bytes_, byte_offsets_, id) : std::string_view();
}

}  // namespace qinfer
