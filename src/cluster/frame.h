#pragma once
// Framing of one node's document on a shared stdout. srun --label prefixes every line with the
// task number, but it cuts lines longer than 1,024 bytes into pieces and interleaves the pieces of
// different tasks, so a whole JSON document per line cannot be trusted. `cmax collect --frame`
// writes its document as short lines instead:
//
//   @cmax1 B <node> <bytes> <fnv1a64 hex>
//   @cmax1 D <up to kFrameChunk bytes of the document>
//   ...
//   @cmax1 E
//
// and the controller reassembles them per task, checking length and hash. Lines that are not
// frames (a warning a node printed) are kept per task as that node's other output. Pure: no I/O.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace cmax::cluster {

inline constexpr std::size_t kFrameChunk = 900;  ///< document bytes per line, under srun's 1,024

/// 64-bit FNV-1a of `bytes`.
std::uint64_t fnv1a64(std::string_view bytes);

/// The frame lines for `document` (which must hold no newline: compact JSON never does).
std::string encode_frames(std::string_view node, std::string_view document);

/// One task's reassembled document, or why it could not be.
struct FramedDocument {
  int task = -1;       ///< srun's task label; -1 for unlabelled input
  std::string node;    ///< from the begin frame
  std::string document;
  std::string error;   ///< non-empty: length or hash mismatch, a frame out of order
};

/// Reassembles framed documents from a byte stream (srun --label output, a pod log, a file), fed
/// in arbitrary pieces. Bounded: a task's document may not exceed max_document_bytes.
class FrameDecoder {
 public:
  using OnDocument = std::function<void(FramedDocument)>;
  explicit FrameDecoder(OnDocument on_document, std::size_t max_document_bytes = 64u << 20)
      : on_document_(std::move(on_document)), max_bytes_(max_document_bytes) {}

  void feed(std::string_view bytes);
  /// Ends the stream: a document begun and not ended is reported with an error ("truncated").
  void finish();
  /// What each task printed besides frames (clipped), for error messages.
  const std::map<int, std::string>& other_output() const { return other_; }

 private:
  struct Partial {
    std::string node;
    std::string data;
    std::size_t expect_bytes = 0;
    std::uint64_t expect_hash = 0;
    bool open = false;
  };
  void line(std::string_view text);

  OnDocument on_document_;
  std::size_t max_bytes_;
  std::string pending_;  // a line not yet ended
  std::map<int, Partial> tasks_;
  std::map<int, std::string> other_;
};

}  // namespace cmax::cluster
