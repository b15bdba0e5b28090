// A tool call as a reply carries it (OpenAI's shape), or a piece of one in
// a stream.
#pragma once
#include <cstddef>
#include <string>

namespace qinfer::server {

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object, as text (OpenAI's shape)
  // Bytes of the content (of its delta, or of the whole answer once deltas
  // are joined) written before the call: where the Responses API, whose
  // output is a list of items in order, puts it between message items.
  size_t content_before = 0;
  // More arguments of the call a previous delta announced (no name): the
  // stream sends them as that call's, and ChatDelta::append joins them to it.
  bool continuation = false;
};

}  // namespace qinfer::server
