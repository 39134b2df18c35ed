// Static shared memory and barriers: a block-wide tile transpose and a reduction.
#define TILE 32
__global__ void transpose(const float* in, float* out, int w, int h) {
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
  if (x < w && y < h) tile[threadIdx.y][threadIdx.x] = in[y * w + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x; y = blockIdx.x * TILE + threadIdx.y;
  if (x < h && y < w) out[y * h + x] = tile[threadIdx.x][threadIdx.y];
}
namespace red {
__global__ void block_sum(const double* in, double* out, int n) {
  __shared__ double buf[256];
  int t = threadIdx.x;
  double v = 0;
  for (int i = blockIdx.x * 256 + t; i < n; i += gridDim.x * 256) v += in[i];
  buf[t] = v;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (t < s) buf[t] += buf[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = buf[0];
}
}  // namespace red
