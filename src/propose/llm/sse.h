// Server-sent events (text/event-stream) split into events as bytes arrive:
// the framing both OpenAI-compatible and Anthropic streams use.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace kopt {

struct SseEvent {
  std::string event;  ///< the `event:` field; empty when the stream names none
  std::string data;   ///< `data:` lines joined with '\n'
};

class SseParser {
 public:
  explicit SseParser(std::function<void(const SseEvent&)> on_event);
  /// Feeds bytes in any split; complete events go to the callback.
  void Feed(std::string_view bytes);
  /// End of stream: an event whose lines all arrived but whose closing blank
  /// line did not is still delivered; a half line is dropped (a cut stream).
  void Finish();
  /// Lines that are no SSE field (not data:/event:/id:/retry:/comment): a
  /// body of these is not an event stream at all.
  int foreign_lines() const { return foreign_lines_; }
  int events() const { return events_; }

 private:
  void Line(std::string_view line);
  void Dispatch();

  std::function<void(const SseEvent&)> on_event_;
  std::string partial_;
  SseEvent pending_;
  bool has_data_ = false;
  int foreign_lines_ = 0;
  int events_ = 0;
};

}  // namespace kopt
