"""What a kernel variant is: its parameters, the kernel one render gives, how that kernel is launched.

A variant is a Jinja2 template plus declared parameters, and renders to one source. It knows how its
kernels are launched for a problem (grid, block, dynamic shared memory, which buffers each kernel
takes), so every backend launches the rendered source the same way. The rendered source, with the
compile options, is the variant's fingerprint. The families (simflow.kernels.families) and a user's declared
variants (simflow.kernels.user_variants) build on the `Variant` here; simflow.kernels.variants is the registry.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from functools import cache

import jinja2

from .. import resources
from ..errors import LimitError, UserError
from .limits import DeviceLimits, check_constant_memory, check_threads
from .problems import Problem
from .reference import TOLERANCE, Tolerance
from .values import show_value  # noqa: F401  (re-exported: variants, families and templates use it)

TRUE_WORDS = {"1", "true", "on", "yes"}
FALSE_WORDS = {"0", "false", "off", "no"}


@dataclass(frozen=True)
class Param:
    """A template parameter: its allowed values (the first type decides parsing) and default. A host
    parameter changes how the kernels are run, not their code (only the source's header names it)."""

    name: str
    choices: tuple
    default: object
    help: str
    host: bool = False

    def parse(self, text: str, variant: str) -> object:
        kind = type(self.default)
        if kind is bool:
            word = text.strip().lower()
            if word in TRUE_WORDS | FALSE_WORDS:
                value = word in TRUE_WORDS
            else:
                raise UserError(f"{variant}: parameter {self.name} is on/off, got {text!r}")
        elif kind is int:
            try:
                value = int(text)
            except ValueError:
                raise UserError(
                    f"{variant}: parameter {self.name} takes one of {self.choices_text()}, got {text!r}"
                ) from None
        else:
            value = text
        self.check(value, variant)
        return value

    def check(self, value: object, variant: str) -> None:
        if value not in self.choices or type(value) is not type(self.default):
            raise UserError(
                f"{variant}: parameter {self.name} takes one of {self.choices_text()}, got {value!r}"
            )

    def choices_text(self) -> str:
        return ", ".join(show_value(c) for c in self.choices)


@dataclass(frozen=True)
class Launch:
    """One kernel launch: its name, geometry and the buffers it takes, in order."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_smem: int = 0
    args: tuple[str, ...] = ("x", "w", "y", "batch")
    # n > 0: grid[0] counts tiles and each block loops over its share of them, so a launcher may start only as many
    # blocks as the device holds at once, a multiple of n (any such grid[0] gives the same result)
    persistent: int = 0
    # True: its kernels begin with griddepcontrol.wait (_async.cu.j2 programmatic), so a launcher may start it before
    # the launch before it ends (programmatic dependent launch, sm_90 and newer)
    programmatic: bool = False

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


@dataclass(frozen=True)
class Kernel:
    """A rendered variant for one layer geometry; the batch size is chosen at launch."""

    variant: str
    params: dict
    problem: Problem
    source: str
    precision: str
    constant_symbols: dict[str, str] = field(default_factory=dict)  # symbol -> host buffer
    features: tuple[str, ...] = ()  # what it uses that a backend may lack (Variant.features)
    output: str = "conv"  # what y holds: "conv", or "conv_relu_pool" (see reference.OPS)
    family: Variant | None = field(default=None, repr=False, compare=False)  # the Variant that rendered it
    tolerance: Tolerance | None = None  # the elementwise check's bound (None: the precision's, TOLERANCE)
    io: str = "float32"  # element type of x, w and y in device memory ("float16", "bfloat16": 16-bit tensors)
    arch: str = ""  # the one architecture its instructions exist on ("sm_90a": wgmma), "" for any from sm_70
    wmma_forms: tuple[str, ...] = ()  # the WMMA forms it uses (simflow.sim.probe names): a simulator build
                                      # whose model gets one wrong refuses it
    only: str = ""  # the one kernel whose launch a program makes, for sampled simulation ('' = every launch)

    def build_arch(self, device_arch: str) -> str:
        """nvcc's -arch for a device of `device_arch`: that, or the architecture-specific target this kernel
        needs, which only that device's generation runs."""
        if not self.arch:
            return device_arch
        if self.arch.rstrip("a") != device_arch:
            raise LimitError(f"GPU architecture of {self.variant} (instructions that exist on {self.arch} only)",
                             device_arch, f"{self.arch.rstrip('a')} (H100/H200)",
                             f"use {self.variant.replace('wgmma', 'mma')}, its mma.sync counterpart (sm_80+)")
        return self.arch

    @property
    def check_tolerance(self) -> Tolerance:
        return self.tolerance or TOLERANCE[self.precision]

    def launches(self, batch: int) -> list[Launch]:
        launches = self.family.launches(self, batch)
        return [launch for launch in launches if launch.kernel == self.only] if self.only else launches

    def fingerprint(self, options: tuple[str, ...] = ()) -> str:
        digest = hashlib.sha256(self.source.encode())
        if self.only:  # the same source making one launch is another run
            digest.update(b"\0only=" + self.only.encode())
        for opt in options:
            digest.update(b"\0" + opt.encode())
        return digest.hexdigest()[:16]

    @property
    def kernel_names(self) -> list[str]:
        return [launch.kernel for launch in self.launches(1)]

    def workspace(self, batch: int) -> dict[str, int]:
        """Device buffers the kernels share besides x, w and y: name -> float count."""
        return self.family.workspace(self, batch)

    def output_shape(self, batch: int) -> tuple[int, int, int, int]:
        from .reference import output_shape

        return output_shape(self.problem.with_batch(batch), self.output)


FAMILIES: dict[str, type] = {}  # variants.toml's `family` -> its class; each family registers itself


@dataclass(frozen=True)
class Variant:
    """A variant: a template and its parameters, and the family code that turns a rendering into
    launches. This base class is the direct-convolution family (one thread per output, a tile x tile
    block); other families override the methods below, each documented with what it must return."""

    name: str
    template: str
    summary: str
    params: tuple[Param, ...]
    fixed: dict  # template context the variant fixes (e.g. where weights live)
    precision: str = "float32"
    template_dir: str = ""  # a user's variant folder ('' for simflow's own templates)
    # The layer simflow's tests render and run it on where their common odd layer does not fit it (Problem's
    # fields, from variants.toml's test_layer): WMMA takes M in 16s, wgmma_nchw only 1x1 layers ...
    test_layer: dict = field(default_factory=dict)
    # What `simflow tune` tries first, per precision (variants.toml's starts.PRECISION): each the parameters it sets.
    starts: dict = field(default_factory=dict)

    def __init_subclass__(cls, family: str = "", **kwargs) -> None:
        """A family registers itself by name (`class X(Variant, family="name")`): variants.toml's `family = "name"`
        then makes its variants of this class."""
        super().__init_subclass__(**kwargs)
        if family:
            FAMILIES[family] = cls

    # Sampled simulation's waves when the user names none (simflow.sim.sampling.SampleSpec): three samples of about
    # 1, 2 and 3 waves of the launch's blocks. A family whose waves keep changing past the third overrides it.
    SAMPLE_WAVES = (1.0, 2.0, 3.0)
    # ... and how far its cycle rate past the largest sample may drift from the samples' (a share of the rate; None:
    # simflow.sim.estimate.RATE_FLOOR), where its waves are measured to keep changing.
    SAMPLE_DRIFT = None  # float

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        valid = ", ".join(p.name for p in self.params)
        raise UserError(f"{self.name}: unknown parameter {name!r}; valid parameters: {valid}")

    def resolve(self, given: dict | None = None) -> dict:
        """Defaults filled in, every given value checked; text values (from a CLI) parsed."""
        given = dict(given or {})
        resolved = {}
        for p in self.params:
            if p.name in given:
                value = given.pop(p.name)
                if isinstance(value, str) and not isinstance(p.default, str):
                    value = p.parse(value, self.name)
                p.check(value, self.name)
                resolved[p.name] = value
            else:
                resolved[p.name] = p.default
        for name in given:
            self.param(name)  # raises with the valid names
        return resolved

    def smem_floats(self, problem: Problem, params: dict) -> int:
        """Dynamic shared memory of a block, in floats (0: none)."""
        return 0

    def launches(self, kernel: Kernel, batch: int) -> list[Launch]:
        """The kernel launches of one run on `batch` images, in order: name, grid, block, dynamic
        shared memory and argument names (x, w, y, batch, or a workspace buffer)."""
        p, tile = kernel.problem, kernel.params["tile"]
        tiles = math.ceil(p.Wout / tile) * math.ceil(p.Hout / tile)
        args = ("x", "y", "batch") if self.fixed["weights"] == "constant" else ("x", "w", "y", "batch")
        return [
            Launch(
                kernel=f"conv2d_{self.name}",
                grid=(tiles, p.M, batch),
                block=(tile, tile, 1),
                dynamic_smem=4 * self.smem_floats(p, kernel.params),
                args=args,
            )
        ]

    def check(self, problem: Problem, params: dict) -> None:
        """Refuse, before rendering, what this variant cannot do (names the limit)."""
        check_threads((params["tile"], params["tile"], 1), GENERIC_LIMITS, "use a smaller tile")

    def extra_context(self, problem: Problem, params: dict) -> dict:
        """Template values this family computes from the problem and parameters (besides p, params)."""
        return {}

    def precision_of(self, params: dict) -> str:
        """What the kernel computes in: float32, tf32, float16 or bfloat16 (it picks the check's tolerance)."""
        return self.precision

    def workspace(self, kernel: Kernel, batch: int) -> dict[str, int]:
        """Device buffers the launches share besides x, w and y: name -> float count ({} for one kernel)."""
        return {}

    def tolerance(self, problem: Problem, params: dict) -> Tolerance | None:
        """The check's bound where this algorithm's rounding differs from a direct sum's (None: the
        precision's own, reference.TOLERANCE)."""
        return None

    def arch(self, params: dict) -> str:
        """The one architecture this rendering's instructions exist on ('' for any from sm_70)."""
        return ""

    def wmma_forms(self, params: dict) -> tuple[str, ...]:
        """The WMMA forms (shape, layouts, accumulator, state space) this rendering uses: whether a simulator
        build runs it depends on what its model computes correctly (simflow.sim.probe)."""
        return ()

    def features(self, params: dict) -> tuple[str, ...]:
        """What this rendering uses that a backend may lack, as 'name:value', the ones a backend is to name first
        first: io:float16, streams:2, half2:, wmma:tf32, mma_sync:bf16, wgmma:tf32, stream_k:, refused:<a user variant's
        reason>. Each backend refuses them by its own table (GPGPU-Sim's: simflow.backends.gpgpusim.REFUSALS), so
        no kernel knows any backend."""
        io, streams = params.get("io", "float32"), params.get("streams")
        return ((f"io:{io}",) if io != "float32" else ()) + ((f"streams:{streams}",) if streams else ())

    def render(self, problem: Problem, params: dict | None = None) -> Kernel:
        resolved = self.resolve(params)
        self.check(problem, resolved)
        constant_symbols = {}
        if resolved.get("weights", self.fixed.get("weights")) == "constant":
            nbytes = 4 * problem.M * problem.C * problem.K * problem.K
            check_constant_memory(
                nbytes,
                f"M*C*K*K = {nbytes // 4:,} weights do not fit; use a variant with weights in "
                "global or shared memory (global, shared, shared_weights)",
            )
            constant_symbols["w_const"] = "w"
        context = {
            "variant": self.name,
            "params": {k: show_value(v) for k, v in resolved.items()},
            "p": geometry(problem),
            "kernel": f"conv2d_{self.name}",
            "smem_floats": self.smem_floats(problem, resolved),
            **self.fixed,
            **resolved,
            **self.extra_context(problem, resolved),
        }
        source = render_template(self.template, context, self.template_dir)
        return Kernel(
            variant=self.name,
            params=resolved,
            problem=problem,
            source=source.strip() + "\n",
            precision=self.precision_of(resolved),
            constant_symbols=constant_symbols,
            features=self.features(resolved),
            wmma_forms=self.wmma_forms(resolved),
            output=self.fixed.get("output", "conv"),
            family=self,
            tolerance=self.tolerance(problem, resolved),
            io=resolved.get("io", "float32"),
            arch=self.arch(resolved),
        )


FAMILIES["direct"] = Variant  # the base class is the direct family


def geometry(problem: Problem) -> dict:
    return {
        "C": problem.C, "M": problem.M, "H": problem.H, "W": problem.W, "K": problem.K,
        "pad": problem.pad, "stride": problem.stride, "Hout": problem.Hout, "Wout": problem.Wout,
    }




@cache
def template_environment(folder: str = "") -> jinja2.Environment:
    """Templates of simflow's own folder, and of a user's variant folder when given (its names first,
    so a user's template may {% include %} simflow's)."""
    folders = [folder] if folder else []
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader([*folders, str(resources.templates_dir())]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render_template(name: str, context: dict, folder: str = "") -> str:
    """A template rendered; a mistake in it (syntax, an undefined name) names the file and line."""
    try:
        return template_environment(folder).get_template(name).render(context)
    except jinja2.TemplateSyntaxError as exc:
        raise UserError(f"{exc.filename or name}:{exc.lineno}: {exc.message}") from None
    except jinja2.TemplateError as exc:
        frame = exc.__traceback__
        where = name
        while frame is not None:  # jinja2 maps the template's own frames to its file and line
            if frame.tb_frame.f_code.co_filename.endswith(".j2"):
                where = f"{frame.tb_frame.f_code.co_filename}:{frame.tb_lineno}"
            frame = frame.tb_next
        raise UserError(f"{where}: {exc}") from None



# Limits every CUDA GPU shares; device-specific ones are checked by the backends.
GENERIC_LIMITS = DeviceLimits(name="any CUDA GPU", compute_capability=(7, 0), sm_count=1)
