"""Distributed training entry point (written for CUDA GPUs)."""
import os

import torch
import torch.distributed as dist
from torch.cuda.amp import GradScaler, autocast
from torch.nn.parallel import DistributedDataParallel as DDP

from detector.yolo import Conv
from transformer.block import Attention


def main():
    dist.init_process_group(backend="nccl")
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    device = torch.device("cuda", rank)
    model = Attention(256, 8).cuda()
    model = DDP(model, device_ids=[rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = GradScaler()
    x = torch.randn(8, 128, 256, device="cuda")
    cos = torch.ones(128, 16, device=device)
    for step in range(10):
        with autocast():
            loss = model(x, cos, cos).float().pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        dist.all_reduce(loss.detach())
    dist.broadcast(x, src=0)


if __name__ == "__main__":
    main()
