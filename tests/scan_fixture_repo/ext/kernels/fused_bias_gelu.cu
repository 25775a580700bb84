#include <torch/extension.h>

// y = gelu(x + b), one thread per element
__global__ void fused_bias_gelu_kernel(const float* x, const float* b, float* y, int n, int c) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i] + b[i % c];
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
}

torch::Tensor fused_bias_gelu(torch::Tensor x, torch::Tensor b) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    fused_bias_gelu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(), n, b.numel());
    return y;
}
