"""torchvision's MobileNetV2 rebuilt by hand: the definition now lives in the zoo (avdnn.zoo.mobilenet_v2).

``load(path)`` returns the network with the ImageNet normalisation built in, so it takes what
io_proc gives a float model: RGB NCHW pixels / 255.
"""

from __future__ import annotations

from avdnn.zoo.mobilenet_v2 import InvertedResidual, MobileNetV2, load

__all__ = ["InvertedResidual", "MobileNetV2", "load"]
