// An error the API answers with: its HTTP status and OpenAI's error object
// {"error": {"message", "type", "param", "code"}}.
#pragma once
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "util/error.h"

namespace qinfer::server {

// Client input quoted in an error message: at most `max_bytes` of it (cut
// where a UTF-8 character starts), then its length; a NUL byte spelled
// \u0000, since the message is read back as a C string.
inline std::string input_excerpt(std::string_view text, size_t max_bytes = 64) {
  size_t end = std::min(text.size(), max_bytes);
  if (end < text.size())
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  std::string out;
  for (const char c : text.substr(0, end)) c == '\0' ? out += "\\u0000" : out += c;
  if (end < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

// The 503 of a request the queue has no room for (--max-queue).
inline constexpr const char* kBusy = "the server is busy: too many requests are waiting; retry later";

class ApiError : public Error {
 public:
  ApiError(int status, std::string message, std::string param = "", std::string type = "")
      : Error(message), status(status), param(std::move(param)), type(type.empty() ? default_type(status) : type) {}

  // {"error": {...}}: the body of its answer, or an SSE event once a stream began.
  nlohmann::ordered_json to_json() const {
    return {{"error",
             {{"message", what()},
              {"type", type},
              {"param", param.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(param)},
              {"code", status}}}};
  }

  int status;
  std::string param;  // the request field at fault ("" = none)
  std::string type;   // invalid_request_error, authentication_error, ...

 private:
  static std::string default_type(int status) {
    switch (status) {
      case 401:
        return "authentication_error";
      case 404:
        return "not_found_error";
      case 503:
        return "service_unavailable_error";
      default:
        return status >= 500 ? "server_error" : "invalid_request_error";
    }
  }
};

// The 400 of a request field that is wrong: `param` names it.
[[noreturn]] inline void bad(const std::string& param, const std::string& message) {
  throw ApiError(400, message, param);
}

// Whether a request body gives `key`: a null field is an absent one, as OpenAI's API reads it.
inline bool given(const nlohmann::ordered_json& body, const char* key) {
  return body.contains(key) && !body[key].is_null();
}

// A float with an integral value (10.0) counts as that integer, as pydantic
// (so vLLM) and llama-server take it: clients that compute a length send one.
template <class Json>
bool integral_float(const Json& v) {
  return v.is_number_float() && std::trunc(v.template get<double>()) == v.template get<double>();
}

// OpenAI's API refuses a field it does not know, so a misspelt one is a 400
// naming it rather than a silent default.
inline void check_known_fields(const nlohmann::ordered_json& body, std::initializer_list<std::string_view> known) {
  for (const auto& item : body.items())
    if (std::find(known.begin(), known.end(), item.key()) == known.end())
      bad(input_excerpt(item.key()), "Unrecognized request argument supplied: " + input_excerpt(item.key()));
}

// `user` labels a request (OpenAI's abuse monitoring): taken and ignored, but a string when given.
inline void check_user_field(const nlohmann::ordered_json& body) {
  if (given(body, "user") && !body["user"].is_string()) bad("user", "'user' must be a string");
}

}  // namespace qinfer::server
