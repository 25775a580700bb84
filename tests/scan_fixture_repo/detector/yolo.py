"""A YOLO-like detector: conv blocks, an upsampling neck and NMS post-processing."""
import torch
import torchvision
from torch import nn
import torch.nn.functional as F
from torchvision.ops import nms as tv_nms


class Conv(nn.Module):
    default_act = nn.SiLU()

    def __init__(self, c1, c2, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = self.default_act

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Neck(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.reduce = nn.Sequential(
            nn.Conv2d(c, c // 2, 1),
            nn.BatchNorm2d(c // 2),
            nn.ReLU(),
        )

    def forward(self, x, skip):
        x = F.interpolate(self.reduce(x), scale_factor=2.0, mode="nearest")
        return torch.cat([x, skip], dim=1)


def warp(features, flow):
    return F.grid_sample(features, flow, align_corners=False)


def postprocess(pred, conf_thres=0.25, iou_thres=0.45):
    out = []
    for x in pred:
        x = x[x[..., 4] > conf_thres]
        boxes, scores = x[:, :4], x[:, 4]
        keep = tv_nms(boxes, scores, iou_thres)
        out.append(x[keep])
    return out


def postprocess_multiclass(boxes, scores, classes, iou_thres=0.5):
    keep = torchvision.ops.batched_nms(boxes, scores, classes, iou_thres)
    valid = scores > 0.1
    idx = torch.nonzero(valid).squeeze(1)
    boxes[~valid] = 0.0
    scores.index_put_((idx,), torch.ones_like(idx, dtype=scores.dtype))
    return boxes[keep], idx
