"""Stand-ins for what a test cannot have here: a simulator build's files, never a real build."""

from pathlib import Path


def fake_build(root: Path) -> Path:
    """The files simflow needs of a built simulator tree (empty stand-ins, never a real build)."""
    config = root / "configs" / "tested-cfgs" / "SM7_QV100"
    config.mkdir(parents=True)
    (config / "gpgpusim.config").write_text("-gpgpu_n_clusters 80\n")
    (config / "config_volta_islip.icnt").write_text("topology = fly;\n")
    (root / "setup_environment").write_text("export GPGPUSIM_SETUP_ENVIRONMENT_WAS_RUN=1\n")
    (root / "version").write_text("const char *g_gpgpusim_version_string = \"GPGPU-Sim Simulator Version 4.2.0 \";\n")
    library = root / "lib" / "gcc-12.2.0" / "cuda-11080" / "release"
    library.mkdir(parents=True)
    (library / "libcudart.so").write_bytes(b"\x7fELF")
    (library / "libcudart.so.11.0").symlink_to("libcudart.so")
    return root
