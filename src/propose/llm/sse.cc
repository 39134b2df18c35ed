#include "propose/llm/sse.h"

namespace kopt {

SseParser::SseParser(std::function<void(const SseEvent&)> on_event)
    : on_event_(std::move(on_event)) {}

void SseParser::Feed(std::string_view bytes) {
  partial_.append(bytes);
  size_t start = 0;
  for (;;) {
    size_t nl = partial_.find('\n', start);
    if (nl == std::string::npos) break;
    std::string_view line(partial_.data() + start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    Line(line);
    start = nl + 1;
  }
  partial_.erase(0, start);
}

void SseParser::Finish() {
  partial_.clear();
  Dispatch();
}

void SseParser::Line(std::string_view line) {
  if (line.empty()) {
    Dispatch();
    return;
  }
  if (line.front() == ':') return;  // a comment (keep-alive)
  auto colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) pending_.data += '\n';
    pending_.data.append(value);
    has_data_ = true;
  } else if (field == "event") {
    pending_.event = std::string(value);
  } else if (field == "id" || field == "retry") {
    // Not used by chat streams.
  } else {
    ++foreign_lines_;
  }
}

void SseParser::Dispatch() {
  if (has_data_) {
    ++events_;
    on_event_(pending_);
  }
  pending_ = SseEvent{};
  has_data_ = false;
}

}  // namespace kopt
