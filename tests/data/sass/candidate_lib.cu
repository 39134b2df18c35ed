// A candidate-like shared object: a C++ template kernel (mangled name) and an
// extern "C" one, compiled with the builder's flags. Commands: README.md.
template <typename T, int kVec>
__global__ void axpy(T* __restrict__ y, const T* __restrict__ x, T a, int n) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * kVec;
#pragma unroll
  for (int k = 0; k < kVec; ++k)
    if (i + k < n) y[i + k] += a * x[i + k];
}

extern "C" __global__ void zero_fill(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 0.f;
}

template __global__ void axpy<float, 4>(float*, const float*, float, int);
template __global__ void axpy<double, 2>(double*, const double*, double, int);
