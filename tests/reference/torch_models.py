"""Independent PyTorch definitions of the encoders: the equivalence tests' references and the benchmarks'.

Written for the tests (``tests/models``) with torchvision's and the dicarlolab/CORnet reference
module names, so that their state dicts have exactly the keys of the real checkpoints (torchvision
is not installed here); :mod:`bench.step.training_step` times training steps of the same definitions
against the Flax models.  Lives in ``tests/reference/`` so that both reach it without the tests
importing ``bench/``; the package itself never imports torch.
"""

from __future__ import annotations

import torch
from torch import nn


# ---------------------------------------------------------------- torchvision-layout ResNet
class TVBasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        idt = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + idt)


class TVBottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        idt = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + idt)


class TVResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make(block, 64, layers[0], 1)
        self.layer2 = self._make(block, 128, layers[1], 2)
        self.layer3 = self._make(block, 256, layers[2], 2)
        self.layer4 = self._make(block, 512, layers[3], 2)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512 * block.expansion, num_classes)

    def _make(self, block, planes, n, stride):
        down = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            down = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion),
            )
        blocks = [block(self.inplanes, planes, stride, down)]
        self.inplanes = planes * block.expansion
        blocks += [block(self.inplanes, planes) for _ in range(1, n)]
        return nn.Sequential(*blocks)

    def embed(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return torch.flatten(self.avgpool(x), 1)

    def forward(self, x):
        return self.fc(self.embed(x))


TV_DEPTHS = {
    18: (TVBasicBlock, (2, 2, 2, 2)),
    34: (TVBasicBlock, (3, 4, 6, 3)),
    50: (TVBottleneck, (3, 4, 6, 3)),
    101: (TVBottleneck, (3, 4, 23, 3)),
    152: (TVBottleneck, (3, 8, 36, 3)),
}


def tv_resnet(depth, num_classes=1000):
    block, layers = TV_DEPTHS[depth]
    return TVResNet(block, layers, num_classes)


# ---------------------------------------------------------------- CORnet reference layouts
class _Decoder(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.linear = nn.Linear(512, num_classes)

    def embed(self, x):
        return torch.flatten(self.avgpool(x), 1)

    def forward(self, x):
        return self.linear(self.embed(x))


class RefBlockZ(nn.Module):
    def __init__(self, cin, cout, k=3, stride=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride, k // 2)
        self.nonlin = nn.ReLU(inplace=True)
        self.pool = nn.MaxPool2d(3, 2, 1)

    def forward(self, x):
        return self.pool(self.nonlin(self.conv(x)))


class RefCORnetZ(nn.Module):
    def __init__(self):
        super().__init__()
        self.V1 = RefBlockZ(3, 64, 7, 2)
        self.V2 = RefBlockZ(64, 128)
        self.V4 = RefBlockZ(128, 256)
        self.IT = RefBlockZ(256, 512)
        self.decoder = _Decoder()

    def embed(self, x):
        return self.decoder.embed(self.IT(self.V4(self.V2(self.V1(x)))))

    def forward(self, x):
        return self.decoder.linear(self.embed(x))


class RefBlockRT(nn.Module):
    def __init__(self, cin, cout, k=3, stride=1, out_shape=None):
        super().__init__()
        self.cout, self.out_shape = cout, out_shape
        self.conv_input = nn.Conv2d(cin, cout, k, stride, k // 2)
        self.norm_input = nn.GroupNorm(32, cout)
        self.nonlin_input = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.norm1 = nn.GroupNorm(32, cout)
        self.nonlin1 = nn.ReLU(inplace=True)

    def forward(self, inp=None, state=None, batch_size=None):
        if inp is None:
            inp = torch.zeros(batch_size, self.cout, self.out_shape, self.out_shape)
        else:
            inp = self.nonlin_input(self.norm_input(self.conv_input(inp)))
        skip = inp + (0 if state is None else state)
        x = self.nonlin1(self.norm1(self.conv1(skip)))
        return x, x


class RefCORnetRT(nn.Module):
    """Reference unrolling; the zero inputs have the 224x224-input shapes, as in the reference."""

    def __init__(self, times=5):
        super().__init__()
        self.times = times
        self.V1 = RefBlockRT(3, 64, 7, 4, 56)
        self.V2 = RefBlockRT(64, 128, stride=2, out_shape=28)
        self.V4 = RefBlockRT(128, 256, stride=2, out_shape=14)
        self.IT = RefBlockRT(256, 512, stride=2, out_shape=7)
        self.decoder = _Decoder()

    def embed(self, x):
        names = ["inp", "V1", "V2", "V4", "IT"]
        outputs, states = {"inp": x}, {}
        for b in names[1:]:
            this = x if b == "V1" else None
            outputs[b], states[b] = getattr(self, b)(this, batch_size=x.shape[0])
        for _ in range(1, self.times):
            new = {"inp": x}
            for i, b in enumerate(names[1:], start=1):
                new[b], states[b] = getattr(self, b)(outputs[names[i - 1]], states[b])
            outputs = new
        return self.decoder.embed(outputs["IT"])

    def forward(self, x):
        return self.decoder.linear(self.embed(x))


class RefBlockS(nn.Module):
    scale = 4

    def __init__(self, cin, cout, times=1):
        super().__init__()
        self.times = times
        c4 = cout * self.scale
        self.conv_input = nn.Conv2d(cin, cout, 1, bias=False)
        self.skip = nn.Conv2d(cout, cout, 1, stride=2, bias=False)
        self.norm_skip = nn.BatchNorm2d(cout)
        self.conv1 = nn.Conv2d(cout, c4, 1, bias=False)
        self.nonlin1 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c4, c4, 3, stride=2, padding=1, bias=False)
        self.nonlin2 = nn.ReLU(inplace=True)
        self.conv3 = nn.Conv2d(c4, cout, 1, bias=False)
        self.nonlin3 = nn.ReLU(inplace=True)
        for t in range(times):
            setattr(self, f"norm1_{t}", nn.BatchNorm2d(c4))
            setattr(self, f"norm2_{t}", nn.BatchNorm2d(c4))
            setattr(self, f"norm3_{t}", nn.BatchNorm2d(cout))

    def forward(self, inp):
        x = self.conv_input(inp)
        for t in range(self.times):
            if t == 0:
                skip = self.norm_skip(self.skip(x))
                self.conv2.stride = (2, 2)
            else:
                skip = x
                self.conv2.stride = (1, 1)
            x = self.nonlin1(getattr(self, f"norm1_{t}")(self.conv1(x)))
            x = self.nonlin2(getattr(self, f"norm2_{t}")(self.conv2(x)))
            x = getattr(self, f"norm3_{t}")(self.conv3(x))
            x = self.nonlin3(x + skip)
        return x


class RefV1S(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.norm1 = nn.BatchNorm2d(64)
        self.nonlin1 = nn.ReLU(inplace=True)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.conv2 = nn.Conv2d(64, 64, 3, 1, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(64)
        self.nonlin2 = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.pool(self.nonlin1(self.norm1(self.conv1(x))))
        return self.nonlin2(self.norm2(self.conv2(x)))


class RefCORnetS(nn.Module):
    def __init__(self):
        super().__init__()
        self.V1 = RefV1S()
        self.V2 = RefBlockS(64, 128, 2)
        self.V4 = RefBlockS(128, 256, 4)
        self.IT = RefBlockS(256, 512, 2)
        self.decoder = _Decoder()

    def embed(self, x):
        return self.decoder.embed(self.IT(self.V4(self.V2(self.V1(x)))))

    def forward(self, x):
        return self.decoder.linear(self.embed(x))


# ---------------------------------------------------------------- LeNet-5 and the perceptron
class RefLeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def embed(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        return torch.relu(self.fc2(torch.relu(self.fc1(x))))

    def forward(self, x):
        return self.fc3(self.embed(x))


def ref_mlp():
    return nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 1))


# ---------------------------------------------------------------- helpers
def randomize_(model: nn.Module, seed: int = 0) -> nn.Module:
    """Random non-trivial BatchNorm/GroupNorm affine parameters and running statistics, eval mode."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                n = m.weight.shape[0]
                m.weight.copy_(0.5 + torch.rand(n, generator=g))
                m.bias.copy_(0.2 * torch.randn(n, generator=g))
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(0.1 * torch.randn(n, generator=g))
                m.running_var.copy_(0.5 + torch.rand(n, generator=g))
                m.num_batches_tracked.fill_(7)
            if isinstance(m, (nn.Conv2d, nn.Linear)) and m.bias is not None:
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=g))
    return model.eval()


def n_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
