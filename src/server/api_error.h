// An error the API answers with: its HTTP status and OpenAI's error object
// {"error": {"message", "type", "param", "code"}}.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "util/error.h"

namespace qinfer::server {

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

}  // namespace qinfer::server
