"""Convolution problems: the layer shape, its presets, and its FLOP and byte counts.

Layout is NCHW for the input, MCKK for the filters and NMHW for the output;
the same zero padding on every side, the same stride in both directions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import UserError

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
UNLABELLED = "imported"  # an imported log's problem name when its import gave no problem= label


@dataclass(frozen=True)
class Problem:
    """One forward conv layer: B images of C x H x W, M filters of C x K x K."""

    B: int
    C: int
    M: int
    H: int
    W: int
    K: int
    pad: int = 0
    stride: int = 1
    name: str = "custom"

    def __post_init__(self) -> None:
        if self.imported:
            return
        for field in ("B", "C", "M", "H", "W", "K"):
            value = getattr(self, field)
            if not isinstance(value, int) or value <= 0:
                raise UserError(f"problem {self.name}: {field} must be a positive integer, got {value!r}")
        if not isinstance(self.pad, int) or self.pad < 0:
            raise UserError(f"problem {self.name}: pad must be 0 or more, got {self.pad!r}")
        if not isinstance(self.stride, int) or self.stride < 1:
            raise UserError(f"problem {self.name}: stride must be 1 or more, got {self.stride!r}")
        if self.K > self.H + 2 * self.pad or self.K > self.W + 2 * self.pad:
            raise UserError(
                f"problem {self.name}: filter K={self.K} is larger than the padded input "
                f"{self.H + 2 * self.pad} x {self.W + 2 * self.pad} (H, W + 2*pad); "
                "use a smaller K, a larger input or more padding"
            )

    @classmethod
    def of_log(cls, name: str) -> Problem:
        """What an imported simulator log ran (`simflow import-log`): no convolution simflow knows, so
        every dimension is 0; `name` is the user's label for it."""
        return cls(0, 0, 0, 0, 0, 0, 0, name=name)

    @property
    def imported(self) -> bool:
        return not any((self.B, self.C, self.M, self.H, self.W, self.K, self.pad))

    @property
    def known(self) -> bool:
        """Whether runs of it can be set against others: a convolution's shape, or an imported log's problem=
        label. An unlabelled log could have run anything."""
        return not self.imported or self.name != UNLABELLED

    @property
    def Hout(self) -> int:
        return (self.H + 2 * self.pad - self.K) // self.stride + 1

    @property
    def Wout(self) -> int:
        return (self.W + 2 * self.pad - self.K) // self.stride + 1

    @property
    def input_shape(self) -> tuple[int, int, int, int]:
        return (self.B, self.C, self.H, self.W)

    @property
    def weight_shape(self) -> tuple[int, int, int, int]:
        return (self.M, self.C, self.K, self.K)

    @property
    def output_shape(self) -> tuple[int, int, int, int]:
        return (self.B, self.M, self.Hout, self.Wout)

    @property
    def flops(self) -> int:
        """2 * B * M * C * K * K * Hout * Wout: one multiply and one add per tap."""
        return 2 * self.B * self.M * self.C * self.K * self.K * self.Hout * self.Wout

    def min_bytes(self, dtype: str = "float32") -> int:
        """Fewest bytes through device memory: input and weights read once, output written once."""
        elems = (
            self.B * self.C * self.H * self.W
            + self.M * self.C * self.K * self.K
            + self.B * self.M * self.Hout * self.Wout
        )
        return elems * DTYPE_BYTES[dtype]

    @property
    def shape_text(self) -> str:
        text = f"{self.B},{self.C},{self.M},{self.H},{self.W},{self.K},{self.pad}"
        return text + (f",{self.stride}" if self.stride != 1 else "")

    def describe(self) -> str:
        if self.imported:
            if not self.known:
                return "unknown problem (a log imported without -l problem=NAME)"
            return f"{self.name} (an imported log)"
        stride = f" stride={self.stride}" if self.stride != 1 else ""
        return (
            f"{self.name}: B={self.B} C={self.C} M={self.M} {self.H}x{self.W} K={self.K} "
            f"pad={self.pad}{stride} -> {self.Hout}x{self.Wout}"
        )

    def with_batch(self, batch: int) -> Problem:
        return dataclasses.replace(self, B=batch)

    def as_dict(self) -> dict:
        """The fields; stride only when it is not 1, so records made before stride existed read the same."""
        out = dataclasses.asdict(self)
        if self.stride == 1:
            del out["stride"]
        return out


DEFAULT_PROBLEM = "batch3x3"  # what a command without --problem or --shape runs

PRESETS: dict[str, Problem] = {
    p.name: p
    for p in (
        Problem(B=100, C=1, M=4, H=86, W=86, K=7, name="fmnist-conv1"),
        Problem(B=100, C=4, M=16, H=40, W=40, K=7, name="fmnist-conv2"),
        Problem(B=4, C=1, M=4, H=16, W=16, K=3, pad=1, name="batch3x3"),
        Problem(B=1, C=256, M=256, H=228, W=228, K=5, name="toycnn"),
        Problem(B=64, C=1, M=12, H=28, W=28, K=7, name="k7net-conv1"),
        Problem(B=64, C=12, M=24, H=22, W=22, K=7, name="k7net-conv2"),
    )
}

PRESET_NOTES = {
    "fmnist-conv1": "Fashion-MNIST net, layer 1 (users ran B = 100 / 1000 / 5000 / 10000)",
    "fmnist-conv2": "Fashion-MNIST net, layer 2",
    "batch3x3": "course assignment: 3x3 filters, 1-pixel padding, 16 maps of 16x16 outputs",
    "toycnn": "toy CNN layer, 256 -> 256 channels, 5x5 (then ReLU + 2x2 max-pool)",
    "k7net-conv1": "deeper K=7 net, layer 1 (weights fit __constant__)",
    "k7net-conv2": "deeper K=7 net, layer 2 (input is layer 1's 22x22 output)",
}


def _resnet50(batch: int = 32) -> tuple[Problem, ...]:
    """Every distinct convolution of ResNet-50 (torchvision v1.5: the stride on the 3x3 of a
    bottleneck) on 224 x 224 images: the 7x7 stem, the 1x1 and 3x3 layers of the four stages, the
    strided 3x3s and the strided 1x1 projection shortcuts. (C, M, input size, K, stride)."""
    layers = [(3, 64, 224, 7, 2)]
    for width, size, blocks_in in ((64, 56, 64), (128, 28, 256), (256, 14, 512), (512, 7, 1024)):
        first_size = size if width == 64 else 2 * size  # a stage's first block gets the larger input
        stride = 1 if width == 64 else 2
        layers += [(blocks_in, width, first_size, 1, 1), (width, width, first_size, 3, stride),
                   (width, 4 * width, size, 1, 1), (blocks_in, 4 * width, first_size, 1, stride),
                   (4 * width, width, size, 1, 1), (width, width, size, 3, 1)]
    def name(c: int, m: int, h: int, k: int, stride: int) -> str:
        return "resnet50-conv1" if k == 7 else f"resnet50-{k}x{k}-{c}-{m}-{h}" + ("-s2" if stride > 1 else "")

    return tuple(Problem(B=batch, C=c, M=m, H=h, W=h, K=k, pad=k // 2, stride=st, name=name(c, m, h, k, st))
                 for c, m, h, k, st in dict.fromkeys(layers))


def _vgg16(batch: int = 16) -> tuple[Problem, ...]:
    """The 13 convolutions of VGG-16 on 224 x 224 images: 3x3, pad 1, stride 1."""
    stages = ((224, 3, 64, 2), (112, 64, 128, 2), (56, 128, 256, 3), (28, 256, 512, 3), (14, 512, 512, 3))
    out = []
    for stage, (size, c_in, width, count) in enumerate(stages, 1):
        for i in range(1, count + 1):
            out.append(Problem(B=batch, C=c_in if i == 1 else width, M=width, H=size, W=size, K=3, pad=1,
                               name=f"vgg16-conv{stage}_{i}"))
    return tuple(out)


SUITES: dict[str, tuple[Problem, ...]] = {
    "resnet50": _resnet50(),
    "vgg16": _vgg16(),
    "presets": tuple(PRESETS.values()),
}
SUITE_NOTES = {
    "resnet50": "every distinct convolution of ResNet-50 (v1.5, 224 x 224), 1x1 and strided included, batch 32",
    "vgg16": "the 13 convolutions of VGG-16 (224 x 224), batch 16",
    "presets": "simflow's presets (the users' layers)",
}
SUITE_PROBLEMS = {p.name: p for problems in SUITES.values() for p in problems}


def suite(name: str) -> tuple[Problem, ...]:
    if name not in SUITES:
        raise UserError(f"unknown suite {name!r}; suites: {', '.join(SUITES)}")
    return SUITES[name]


def parse_shape(text: str) -> Problem:
    """Parse 'B,C,M,H,W,K[,pad[,stride]]'."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) not in (6, 7, 8):
        raise UserError(f"--shape takes B,C,M,H,W,K[,pad[,stride]] (6 to 8 integers), got {text!r}")
    try:
        values = [int(p) for p in parts]
    except ValueError:
        raise UserError(f"--shape takes integers B,C,M,H,W,K[,pad[,stride]], got {text!r}") from None
    values += [0, 1][len(values) - 6:]
    B, C, M, H, W, K, pad, stride = values
    return Problem(B=B, C=C, M=M, H=H, W=W, K=K, pad=pad, stride=stride, name="custom")


def get_problem(name: str | None = None, *, shape: str | None = None, batch: int | None = None) -> Problem:
    """A preset by name, or a full shape; `batch` overrides B of either."""
    if shape is not None:
        problem = parse_shape(shape)
        if name is not None and name != "custom":
            problem = dataclasses.replace(problem, name=name)
    else:
        name = name or DEFAULT_PROBLEM
        if name not in PRESETS and name not in SUITE_PROBLEMS:
            raise UserError(f"unknown problem {name!r}; presets: {', '.join(PRESETS)}, or a layer of a suite "
                            f"({', '.join(SUITES)}: simflow problems --suite NAME), "
                            "or --shape B,C,M,H,W,K[,pad[,stride]]")
        problem = PRESETS.get(name) or SUITE_PROBLEMS[name]
    if batch is not None:
        problem = problem.with_batch(batch)
    return problem
