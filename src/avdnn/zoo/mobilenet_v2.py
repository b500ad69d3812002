"""torchvision's MobileNetV2, rebuilt by hand with torchvision's key names.

torchvision cannot be used next to the CPU torch wheel here (its pinned build fails on import,
an unpinned one pulls a CUDA torch), and the zoo's MobileNetV2 is a torchvision ``state_dict``,
so the 40-line network lives here. The ImageNet mean/std are buffers inside the net and the
input range is a constructor choice, so an export takes exactly what avdnn feeds a float
tensor: 0..255 pixels for detect/classify (``pixel_range=255``) or /255 for dnn_processing (1).
Imports torch: only :mod:`avdnn.zoo.export` imports this module, and only when torch exists.
"""

from __future__ import annotations

import torch
from torch import nn


def _cbr(cin: int, cout: int, k: int = 3, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU6(inplace=True),
    )


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expand, 3x3 depthwise, 1x1 project, residual when shapes allow."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        layers: list[nn.Module] = [_cbr(cin, hidden, 1)] if expand != 1 else []
        layers += [
            _cbr(hidden, hidden, 3, stride, hidden),
            nn.Conv2d(hidden, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = x + self.conv(x) if self.use_res else self.conv(x)
        return out


class MobileNetV2(nn.Module):
    """RGB NCHW pixels in ``0..pixel_range`` -> ImageNet softmax [N, 1000]."""

    SETTINGS = (
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    )

    def __init__(self, classes: int = 1000, pixel_range: float = 1.0) -> None:
        super().__init__()
        layers: list[nn.Module] = [_cbr(3, 32, stride=2)]
        cin = 32
        for t, c, n, s in self.SETTINGS:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(_cbr(cin, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))
        self.pixel_range = float(pixel_range)  # a plain attribute: the state_dict keys stay torchvision's
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1) * self.pixel_range)
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1) * self.pixel_range)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean, std = self.get_buffer("mean"), self.get_buffer("std")
        x = self.features((x - mean) / std)
        return torch.softmax(self.classifier(x.mean((2, 3))), 1)


def load(path: str, pixel_range: float = 1.0) -> MobileNetV2:
    """The network with torchvision's weights from ``path`` (a state_dict), in eval mode."""
    net = MobileNetV2(pixel_range=pixel_range)
    state = torch.load(path, map_location="cpu", weights_only=True)
    missing, unexpected = net.load_state_dict(state, strict=False)
    if set(missing) != {"mean", "std"} or unexpected:
        raise ValueError(f"not a torchvision MobileNetV2 state_dict (missing {missing}, unexpected {unexpected})")
    return net.eval()


__all__ = ["InvertedResidual", "MobileNetV2", "load"]
