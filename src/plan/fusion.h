// The fusion generator: one CUDA kernel for a whole op graph made of
// elementwise operators and reductions along the last dimension (softmax,
// log-softmax, layer norm, sums, means, maxima, variances, norms and the
// chains around them), written as a complete kopt `cuda` candidate whose
// block size and vector width are knobs the search can tune.
//
// What it covers: every value of the graph is, relative to the iteration
// shape F (the shape the elementwise work runs over), either an element value
// (F's shape, or an ABI input broadcast to it) or a row value (one per row of
// F's last dimension, made by a reduction over that dimension). A graph whose
// one output reduces everything (a loss: mean((p - t) ** 2), nn.MSELoss,
// F.huber_loss summed, an absmax) is a "total" kernel: the row kernel of
// that reduction over the last dim, then one block combining the row values
// in a fixed order. A reduction over several trailing dims (a mean over H
// and W, a layer norm over [C, H, W]) is a row reduction over those dims
// merged into one. Inputs constant along each row (a bias [C, 1, 1]) or
// broadcast in the rows' shape (a bias [C] added to the pooled [N, C]) are
// row values, read once per row. Matrix ops,
// convolutions, reductions over other dimensions, data-dependent indexing and
// constants made inside the forward are outside it: FuseGraph says which op
// stopped it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/op_graph.h"

namespace kopt {

struct FusedKernel {
  std::string kind;    ///< "elementwise" (one pass), "row" (a block or warp per row), "column" (a
                       ///< thread per line), "total" (rows, then their values combined)
  std::string source;  ///< a complete cuda candidate, with knob lines
  std::string about;   ///< one line: what it fuses and how
  std::vector<std::string> ops;  ///< the aten ops it replaces, in graph order
  int passes = 1;  ///< passes over each row (row kernels: reductions that depend on each other + 1)
  long long lines = 0;  ///< column kernels: the lines at the captured shape
  int split = 1;        ///< column kernels: threads per line by default (knob SPLIT)
  /// FuseTail only: the value ids the kernel reads, in in[] order.
  std::vector<int> inputs;
  /// The in[] index whose shape is the iteration shape (an input read
  /// element by element); -1 when none is.
  int shape_input = -1;
  /// Per output: one value per row (true) or per element.
  std::vector<bool> output_rows;
};

struct FusionResult {
  std::optional<FusedKernel> kernel;
  std::string why_not;  ///< when there is no kernel: the op or value that stopped it, in words
};

/// One kernel for the whole graph, or why not.
FusionResult FuseGraph(const OpGraph& graph);

/// One kernel for nodes [first_node, end) that returns the graph's outputs;
/// the values made before first_node are its inputs with the ABI inputs,
/// numbered in order of first use (FusedKernel::inputs).
FusionResult FuseTail(const OpGraph& graph, std::size_t first_node);

}  // namespace kopt
