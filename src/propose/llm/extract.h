// Code out of a model's reply: fenced blocks with or without a language tag,
// prose around them, several drafts, a `.cu` beside a Python `ModelNew`, a
// reply cut off inside a block. No candidate is a value that says why.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/task.h"

namespace kopt {

/// One fenced block of a reply.
struct CodeBlock {
  std::string lang;  ///< the info string's first word, lowercased ("" when untagged)
  std::string code;
  bool closed = true;      ///< false: the reply ended inside it (truncated)
  bool final = false;      ///< the reply names it final ("Final:", "```cuda final")
  std::size_t offset = 0;  ///< where its opening fence starts in the reply
};

/// Every fenced block (``` or ~~~, three or more) in order. A reply with no
/// fence at all whose text starts like a source file is one untagged block.
std::vector<CodeBlock> FencedBlocks(const std::string& reply);

/// True when `code` defines kopt_forward (comments and strings ignored).
bool DefinesKoptForward(const std::string& code);
/// True when `code` defines `class ModelNew`.
bool DefinesModelNew(const std::string& code);

struct Extraction {
  std::optional<Candidate> candidate;  ///< kind and source; name and path left empty
  std::string failure;     ///< why there is none, one sentence (empty when there is one)
  bool truncated = false;  ///< the reply ended inside a code block
  int blocks = 0;          ///< fenced blocks seen
  std::string chosen;      ///< which block, in words ("the last python block", ...)
  std::string move;        ///< the reply's "Move: ..." line, when it has one
};

/// The candidate of a reply: the block it names final when that block is a
/// candidate, else the last complete candidate block; a ModelNew that uses
/// `CUDA_SOURCE` without defining it gets the reply's last `.cu` block there.
Extraction ExtractCandidate(const std::string& reply);

}  // namespace kopt
