// A library call with a fused tail, as a hybrid candidate (a KernelBench
// ModelNew file): the ops before the tail run as PyTorch operators
// (torch.ops.aten: cuBLAS, cuDNN, whatever PyTorch picks), replayed from the
// captured graph, and the tail runs as one generated kernel (FuseTail)
// loaded with kopt.load_cuda. ModelNew subclasses the task's own Model (its
// source is embedded), so its parameters and state_dict are the Model's.
// ReplaySource writes the general form: the whole forward replayed, or with
// a tail, and optionally with its convolutions in channels-last order.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "plan/fusion.h"
#include "plan/op_graph.h"

namespace kopt {

/// The ModelNew source, or nullopt with `why` when a replayed op's
/// arguments cannot be written in Python or an output's shape is not one
/// the kernel's inputs give.
std::optional<std::string> HybridSource(const OpGraph& g, std::size_t first_tail_node,
                                        const FusedKernel& tail, const std::string& task_source,
                                        std::string* why);

/// How ReplaySource writes the forward.
struct ReplayOptions {
  /// Convolutions (2-D) and the ops after them in channels-last (NHWC)
  /// order: the inputs and weights convolutions read are converted, views
  /// become reshapes, the outputs come back NCHW-contiguous. Adds the knob
  /// CHANNELS_LAST (and LAYOUT_KERNEL for the conversions). With
  /// any rewrite and a tail, the knob FUSED_TAIL chooses between the
  /// tail's kernel and its ops replayed.
  bool channels_last = false;
  /// Keep each convolution weight's NHWC copy across calls, remade when the
  /// parameter changes (storage or version): only where the contract allows
  /// pre-transformed weights.
  bool reuse_weights = false;
  /// A nondecreasing activation (ReLU, ReLU6, sigmoid, tanh, ...) whose only
  /// reader is a max pool with unused indices runs after the pool, on its
  /// smaller output: max(f(x)) == f(max(x)). Adds the knob POOL_FIRST.
  bool pool_first = false;
  /// Each attention region (AttentionRegions) as one call of PyTorch's
  /// fused scaled_dot_product_attention. Adds the knob SDPA.
  bool sdpa = false;
  /// Each LibraryEpilogues pair as one _addmm_activation call (cuBLASLt's
  /// bias + ReLU / GELU epilogue). Adds the knob LT_EPILOGUE.
  bool lt_epilogue = false;
  /// kopt's GEMM kernel (the source of a kernels/gemm template with the
  /// slots KOPT_TRANS_B, KOPT_BIAS and KOPT_EPILOGUE) for each KernelGemms
  /// GEMM, its bias and activation applied as it stores. Adds the knob
  /// GEMM_3XTF32. Empty: none.
  std::string gemm_source;
  /// kopt's channels-last BatchNorm kernel (kernels/norm/batch_norm_cl.cu)
  /// for each KernelBatchNorms BatchNorm whose input is NHWC or [N, C] at
  /// run time (PyTorch's otherwise), with the residual add and ReLU after it
  /// applied as it stores. Adds the knob BN_KERNEL. Empty: none.
  std::string bn_source;
  /// With channels_last: kopt's transpose kernel (kernels/layout) for the
  /// NCHW <-> NHWC conversions of float32 activations on the GPU. Adds the
  /// knob LAYOUT_KERNEL. Empty: PyTorch's copies.
  std::string transpose_source;
  /// With channels_last: kopt's NHWC max-pool kernel
  /// (kernels/pool/max_pool2d_nhwc.cu) for each KernelPools pool, the
  /// convolution's bias and the activation before it applied after the max
  /// (the convolution then runs without its bias). Adds the knob
  /// POOL_KERNEL. Empty: none.
  std::string pool_source;
};

/// A GEMM kopt's GEMM kernel takes whole: addmm(bias [N], x [M, K], w [K,
/// N]) with beta = alpha = 1, or mm(x, w), all float32, and the activation
/// its output reaches through layout ops with one reader each, when the
/// kernel applies it (ReLU, GELU exact or tanh).
struct KernelGemm {
  std::size_t gemm = 0;
  std::optional<std::size_t> act;  ///< node index of the fused activation
  int act_code = 0;                ///< KOPT_EPILOGUE: 0 none, 1 ReLU, 2 GELU, 3 GELU (tanh)
  bool bias = false;               ///< addmm (bias first) rather than mm
};
std::vector<KernelGemm> KernelGemms(const OpGraph& g);

/// A BatchNorm in training mode kopt's channels-last kernel takes: a
/// float32 input of rank 2 or 4, weight and bias both given or neither,
/// running statistics both or neither, 0 <= momentum < 1, only its first
/// output read. Then, each the only reader of the value before it: an add
/// of a residual of the same shape (alpha 1) made before the BatchNorm, and
/// a ReLU, which the kernel applies as it stores.
struct KernelBatchNorm {
  std::size_t bn = 0;
  std::optional<std::size_t> add;  ///< node index of the fused residual add
  int residual = -1;               ///< the value it adds
  std::optional<std::size_t> act;  ///< node index of the fused ReLU
  std::size_t rank = 0;            ///< 2 ([N, C]) or 4 (NCHW)
};
std::vector<KernelBatchNorm> KernelBatchNorms(const OpGraph& g);

/// A 2-D max pool (dilation 1, float32 4-D input, its indices unread) kopt's
/// NHWC pool kernel takes, with what it can apply after the max, bit for
/// bit (both monotone): the activation before it (ReLU or ReLU6) when the
/// pool is its only reader, and, before that, the bias of the convolution
/// that makes the pooled value when that activation (or the pool) is the
/// convolution's only reader.
struct KernelPool {
  std::size_t pool = 0;
  std::optional<std::size_t> act;   ///< node index of the activation applied after the max
  int act_code = 0;                 ///< KOPT_ACT: 0 none, 1 ReLU, 2 ReLU6
  std::optional<std::size_t> conv;  ///< the convolution that runs without its bias
  int bias = -1;                    ///< that bias (a value id), added after the max
  int input = -1;                   ///< the value the kernel pools (the convolution's output)
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  bool ceil_mode = false;
};
std::vector<KernelPool> KernelPools(const OpGraph& g);

/// The graph with each 2-D convolution whose output only nodes from
/// `tail_from` on read (or the forward returns) run without its 1-D bias,
/// the bias added back by a broadcast add placed right before the tail, so
/// a fused tail applies it in its own pass (PyTorch adds a convolution's
/// bias in a pass of its own). The bias is viewed as [C, 1, 1] right where
/// the convolution ran; `tail_from` is then the first of those adds. With
/// `tail_from` past the last node, the adds are a tail of their own at the
/// end (a returned convolution output). nullopt when no convolution
/// qualifies.
struct MovedConvBiases {
  OpGraph graph;
  std::size_t tail_from = 0;
  int moved = 0;
};
std::optional<MovedConvBiases> ConvBiasesIntoTail(const OpGraph& g, std::size_t tail_from);

/// The graph with each group norm (native_group_norm over [N, C, *], its
/// mean and rstd unread) whose output only nodes from `tail_from` on read
/// split in two: its statistics, as a node `kopt_group_norm_affine` where
/// it ran that makes the per-(sample, channel) scale A and shift B, both
/// [N, C, 1, ...] (A = rstd * weight, B = bias - mean * A, PyTorch's own
/// fused parameters), and the normalization itself, x * A + B, as a
/// broadcast mul and add placed right before the tail. A fused tail then
/// applies the norm in its own pass: the norm's separate read and write of
/// the whole tensor go (PyTorch's CUDA group norm reads its input twice
/// and writes it once, and the tail reads that output again). `tail_from`
/// is then the first of those muls.
struct FoldedGroupNorms {
  OpGraph graph;
  std::size_t tail_from = 0;
  int folded = 0;
};
std::optional<FoldedGroupNorms> GroupNormsIntoTail(const OpGraph& g, std::size_t tail_from);

/// A GEMM with a 1-D bias (addmm, beta = alpha = 1) whose output reaches an
/// activation cuBLASLt can apply in its epilogue (ReLU, or GELU with the
/// tanh approximation) through layout ops alone, each with one reader.
struct LibraryEpilogue {
  std::size_t gemm = 0, act = 0;  ///< node indices
  bool gelu = false;
};
std::vector<LibraryEpilogue> LibraryEpilogues(const OpGraph& g);

/// Attention written out as ops: softmax over the last dim of
/// scale * (Q K^T), optionally masked with -inf above the diagonal
/// (masked_fill by triu(ones(T, T), 1)), times V, with only layout ops
/// (expand, clone, views) between, nothing outside reading what it makes
/// but its result.
struct AttentionRegion {
  int q = -1, k = -1, v = -1;  ///< value ids, [..., T, D] each
  int out = -1;                ///< the result, [..., Tq, Dv]
  bool causal = false;
  double scale = 1.0;
  std::set<std::size_t> nodes;  ///< the ops it replaces, by index
  std::size_t last = 0;         ///< the node that makes `out`
};
std::vector<AttentionRegion> AttentionRegions(const OpGraph& g);

/// The forward replayed as PyTorch operators from the captured graph (a
/// KernelBench ModelNew subclassing the task's Model); with `tail`, the
/// nodes from `tail_from` on run as that one generated kernel instead.
/// nullopt with `why` as HybridSource, or when channels-last order is asked
/// and WhyNotChannelsLast says no.
std::optional<std::string> ReplaySource(const OpGraph& g, const FusedKernel* tail,
                                        std::size_t tail_from, const std::string& task_source,
                                        const ReplayOptions& options, std::string* why);

/// Why the forward cannot be replayed with its convolutions in NHWC order,
/// or "" when it can: it needs a 2-D convolution, no op that reads strides
/// (as_strided), and no in-place write to an input or weight the replay
/// would swap for its NHWC copy.
std::string WhyNotChannelsLast(const OpGraph& g);

/// A hybrid ModelNew that runs `eager_class`'s forward (the task's `Model`,
/// or a ModelNew already defined in `module_source`) from a CUDA graph:
/// captured once per input signature (shapes, strides, dtypes, devices and
/// the parameters' storage) after two warm-up calls on a side stream, then
/// replayed on the caller's stream. Inputs are copied into the graph's own
/// buffers and outputs cloned out of them, so every call recomputes from its
/// inputs and no two calls share an output. Calls it cannot graph
/// (non-tensor or CPU arguments, a capture already running) run eagerly.
/// For forwards that write no state: a replay repeats every in-place update,
/// and the warm-up calls would add updates the reference never made.
std::string GraphedSource(const std::string& module_source, const std::string& eager_class);

}  // namespace kopt
