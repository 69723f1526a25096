"""A user's own variants (NAME.cu.j2 + NAME.toml in a folder of theirs): examples/variants/rows through
every command, with no change to simflow's code; every mistake names the file and line."""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import simflow

from simflow.backends.gpgpusim import unsupported
from simflow.errors import UserError
from simflow.kernels.problems import Problem, get_problem
from simflow.kernels.variants import load_variants, variant_dirs

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "variants"
ENV = {"SIMFLOW_VARIANTS": str(EXAMPLE)}


def _load(folder: Path):
    return load_variants([folder, variant_dirs()[-1]])


def test_the_example_declares_its_launches():
    rows = _load(EXAMPLE)["rows"]
    kernel = rows.render(get_problem("fmnist-conv1"), {"tile": 32, "outputs": 4})
    (launch,) = kernel.launches(100)
    assert launch.kernel == "conv2d_rows" and launch.grid == (1, 80 * 4, 100) and launch.block == (32, 1, 1)
    assert launch.dynamic_smem == 4 * 1 * 7 * 7 and launch.args == ("x", "w", "y", "batch")
    assert kernel.precision == "float32" and kernel.output == "conv" and unsupported(kernel.features) == ""
    assert "constexpr int OUTPUTS = 4;" in kernel.source and kernel.kernel_names == ["conv2d_rows"]
    assert kernel.workspace(100) == {}
    with pytest.raises(UserError, match=r"grid.y is Hout x M .* \(refused where Hout \* M > 65535: .*rows.toml:\d+\)"):
        rows.render(Problem(B=1, C=1, M=64, H=1100, W=8, K=3))
    with pytest.raises(UserError, match=r"outputs takes one of 1, 2, 4, got 3"):
        rows.render(get_problem("batch3x3"), {"outputs": 3})


def test_the_reference_checks_a_user_variant_like_the_builtins():
    """The numpy path the simulator's finish step uses: the example's outputs, computed from its own
    launch geometry in numpy, are judged elementwise like every variant's."""
    from simflow.kernels.reference import check_output, conv2d_reference, make_inputs

    problem = get_problem("batch3x3")
    x, w = make_inputs(problem, 0)
    y = conv2d_reference(x, w, problem.pad).astype(np.float32)
    assert check_output(problem, x, w, y, "float32").passed
    y[0, 1, 2, 3] += 1e-3
    assert not check_output(problem, x, w, y, "float32").passed


def _folder(tmp_path: Path, toml: str, template: str | None = None, name: str = "mine") -> Path:
    folder = tmp_path / "variants"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.toml").write_text(toml)
    (folder / f"{name}.cu.j2").write_text(template if template is not None else (EXAMPLE / "rows.cu.j2").read_text())
    return folder


BASE = (EXAMPLE / "rows.toml").read_text()


@pytest.mark.parametrize("change,message", [
    (('"ceil(Wout / (tile * outputs))"', '"ceil(Wout / (tile * outputz))"'),
     r"mine.toml:\d+: 'ceil\(Wout / \(tile \* outputz\)\)' uses 'outputz'; known names: C, H, Hout"),
    (('"Hout * M"', '"Hout * M +"'), r"mine.toml:\d+: 'Hout \* M \+' is not an expression"),
    (('"batch"]', '"__import__(1)"]'), r"only ceil, floor, min, max may be called"),
    (('"batch"]', '"x.real"]'), r"Attribute is not allowed"),
    (('precision = "float32"', 'precision = "double"'),
     r"mine.toml:3: precision must be float32, tf32, float16, bfloat16"),
    (('output = "conv"', 'output = "nhwc"'), r"mine.toml:4: output must be one of conv, conv_relu_pool"),
    (('args = ["x", "w", "y", "batch"]', 'args = ["x", "w", "y", "scratch"]'),
     r"mine.toml:\d+: launch 1 takes 'scratch', which is no buffer"),
    (('summary =', 'summery ='), r"mine.toml:2: unknown key 'summery'"),
    (('[[launch]]', '[[lunch]]'), r"unknown key 'lunch'"),
    (('default = 64', 'default = 48'), r"mine.toml:\d+: \[params.tile\] needs choices and a default among them"),
    (('when = "Hout * M > 65535"', 'when = "Hout * M >"'), r"is not an expression"),
    (('block = ["tile", 1, 1]', 'block = "tile"'), r"block must be a list of 1 to 3 expressions"),
    (('[params.tile]', '[params.tile\n'), r"mine.toml: not valid TOML"),
])
def test_mistakes_in_the_toml_name_the_file_and_line(tmp_path, change, message):
    folder = _folder(tmp_path, BASE.replace(*change, 1))
    with pytest.raises(UserError, match=message):
        _load(folder)


def test_mistakes_in_the_template_name_the_file_and_line(tmp_path):
    folder = _folder(tmp_path, BASE, "line one\n{% if tile %}\nno end\n")
    with pytest.raises(UserError, match=r"mine.cu.j2:\d+: Unexpected end of template"):
        _load(folder)["mine"].render(get_problem("batch3x3"))
    folder = _folder(tmp_path, BASE, "line one\nline two {{ tiles }}\n")
    with pytest.raises(UserError, match=r"mine.cu.j2:2: 'tiles' is undefined"):
        _load(folder)["mine"].render(get_problem("batch3x3"))


def test_a_taken_name_a_missing_template_or_a_fraction_are_refused(tmp_path):
    folder = _folder(tmp_path, BASE, name="global")
    with pytest.raises(UserError, match=r"global.toml: variant 'global' exists already \(simflow's own\)"):
        _load(folder)
    shutil.rmtree(folder)
    folder = _folder(tmp_path, BASE)
    (folder / "mine.cu.j2").unlink()
    with pytest.raises(UserError, match=r"mine.toml: no template 'mine.cu.j2' beside it"):
        _load(folder)
    (folder / "mine.toml").write_text(BASE.replace('"4 * C * K * K"', '"C * K * K / 3"'))
    (folder / "mine.cu.j2").write_text("x")
    kernel = _load(folder)["mine"].render(get_problem("batch3x3"))  # 9/3: whole, fine
    assert kernel.launches(1)[0].dynamic_smem == 3
    with pytest.raises(UserError, match=r"mine.toml:\d+: dynamic_smem 'C \* K \* K / 3' is 8.33+\d* for this layer, "
                                        r"not a whole number \(use ceil\(\) or //\)"):
        _load(folder)["mine"].render(Problem(B=1, C=1, M=1, H=8, W=8, K=5, pad=2))


def test_a_user_variant_may_reuse_a_family_and_simflows_parameters(tmp_path):
    toml = ('summary = "the global kernel through a template of my own"\nfamily = "direct"\n'
            'fixed = { weights = "global" }\n[params.tile]\nlike = "tile"\n[params.unroll]\nlike = "unroll"\n'
            '[params.restrict]\nlike = "restrict"\n[params.streams]\nlike = "streams"\n')
    folder = _folder(tmp_path, toml, '// mine\n{% include "global.cu.j2" %}\n', name="global_mine")
    proc = simflow("render", "global_mine", "-P", "tile=8", "--variants", str(folder))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("// mine") and "conv2d_global_mine(" in proc.stdout
    (folder / "global_mine.toml").write_text(toml.replace('"direct"', '"fancy"'))
    proc = simflow("render", "global_mine", "--variants", str(folder))
    assert proc.returncode == 1 and re.search(r"global_mine.toml:2: unknown family 'fancy'; valid families: direct",
                                              proc.stderr)


def test_the_example_through_the_cli(tmp_path):
    listed = json.loads(simflow("variants", "--json", env=ENV).stdout)
    rows = next(v for v in listed if v["variant"] == "rows")
    assert "gpgpusim" in rows["backends"]
    rendered = simflow("render", "rows", "--problem", "fmnist-conv2", "-P", "outputs=4", env=ENV)
    assert rendered.returncode == 0 and "constexpr int OUTPUTS = 4;" in rendered.stdout
    bad = simflow("render", "rows", env={"SIMFLOW_VARIANTS": str(tmp_path / "nowhere")})
    assert bad.returncode == 1 and "no variant folder" in bad.stderr
    sweep = tmp_path / "sweep.toml"
    sweep.write_text('name = "mine"\nbackends = ["gpgpusim"]\nproblems = ["batch3x3"]\n\n'
                     '[[variants]]\nname = "rows"\ntile = [32, 64]\noutputs = [1, 4]\n')
    planned = simflow("sweep", str(sweep), "--dry-run", "--results", str(tmp_path / "r"), env=ENV)
    assert planned.returncode == 0, planned.stderr
    assert "4 jobs" in planned.stdout and "rows" in planned.stdout
    # a layer the variant's [[refuse]] rules out is skipped by name, like a built-in's hardware limit
    sweep.write_text('name = "mine"\nbackends = ["gpu"]\nproblems = ["batch3x3", "1,1,64,1100,8,3,1"]\n\n'
                     '[[variants]]\nname = "rows"\n')
    planned = simflow("sweep", str(sweep), "--dry-run", "--results", str(tmp_path / "r"), env=ENV)
    assert planned.returncode == 0, planned.stderr
    assert "1 to run, 1 refused" in planned.stdout and "grid.y is Hout x M" in planned.stdout


@pytest.mark.gpgpusim
def test_the_example_in_the_simulator_and_a_sweep(tmp_path):
    proc = simflow("sim", "rows", "--problem", "batch3x3", "--json", "--results", str(tmp_path / "r"), env=ENV)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "passed" and result["metrics"]["bad_elements"] == 0
    assert result["metrics"]["smem"] == 0 and result["environment"]["block"] == "64,1,1"
    sweep = tmp_path / "sweep.toml"
    sweep.write_text('name = "mine"\nbackends = ["gpgpusim"]\nproblems = ["batch3x3"]\n\n'
                     '[[variants]]\nname = "rows"\noutputs = [1, 4]\n')
    done = simflow("sweep", str(sweep), "--json", "--results", str(tmp_path / "r"), "--variants", str(EXAMPLE))
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["run"]) == 2


@pytest.mark.gpu
def test_the_example_on_the_gpu(tmp_path):
    for problem in ("batch3x3", "fmnist-conv2", "k7net-conv2"):
        proc = simflow("run", "rows", "--problem", problem, "-P", "outputs=4", "--json", "--results",
                       str(tmp_path / "r"), env=ENV)
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)
        assert result["status"] == "passed" and result["metrics"]["bad_elements"] == 0, result["reason"]
        assert result["metrics"]["smem_dynamic_bytes"] > 0


def test_a_refusal_for_the_simulator_only_is_the_simulators_and_names_its_rule(tmp_path):
    folder = tmp_path / "mine"
    shutil.copytree(EXAMPLE, folder)
    toml = folder / "rows.toml"
    toml.write_text(toml.read_text() + '\n[params.streams]\nlike = "streams"\n\n[[refuse]]\nsimulator = true\n'
                    'when = "C > 2"\nreason = "rows is not modelled past two channels"\n')
    rows = _load(folder)["rows"]
    kernel = rows.render(Problem(B=1, C=3, M=4, H=16, W=16, K=3), {"streams": 2})
    why = unsupported(kernel.features)  # the user's rule comes before the built-in streams refusal
    assert re.fullmatch(r"rows is not modelled past two channels \(refused in the simulator where C > 2: "
                        r".*rows\.toml:\d+\)", why), why
    assert unsupported(rows.render(Problem(B=1, C=2, M=4, H=16, W=16, K=3)).features) == ""  # the GPU path: no rule
