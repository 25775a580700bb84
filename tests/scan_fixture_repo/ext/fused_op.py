"""A fused bias+GELU kernel compiled at import time (CUDA only)."""
from pathlib import Path

from torch.utils.cpp_extension import load_inline

_SOURCE = (Path(__file__).parent / "kernels" / "fused_bias_gelu.cu").read_text()

fused = load_inline(
    name="fused_bias_gelu",
    cpp_sources="torch::Tensor fused_bias_gelu(torch::Tensor x, torch::Tensor b);",
    cuda_sources=_SOURCE,
    functions=["fused_bias_gelu"],
)
