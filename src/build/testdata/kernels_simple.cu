// A plain elementwise kernel and a templated one (mangled names with templates).
__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
template <typename T, int kUnroll>
__global__ void axpy(T* y, const T* x, T a, int n) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * kUnroll;
#pragma unroll
  for (int k = 0; k < kUnroll; ++k)
    if (i + k < n) y[i + k] += a * x[i + k];
}
template __global__ void axpy<float, 4>(float*, const float*, float, int);
template __global__ void axpy<double, 2>(double*, const double*, double, int);
extern "C" __global__ void plain_c_kernel(int* out) { out[threadIdx.x] = threadIdx.x; }
