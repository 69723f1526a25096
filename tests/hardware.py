"""What this machine has, as pytest skip markers (one place for hardware detection)."""

from __future__ import annotations

import pytest

from simflow.backends import backend_class
from simflow.toolkits import find_toolkits

_gpu = backend_class("gpu").probe()
requires_gpu = pytest.mark.skipif(not _gpu.available, reason=f"no GPU backend: {_gpu.detail}")

MODERN_NVCC = next((tk for tk in find_toolkits() if tk.can_target("sm_90")), None)
requires_nvcc = pytest.mark.skipif(MODERN_NVCC is None, reason="no nvcc that targets sm_90 (CUDA 12 or newer)")

CUDA11 = next((tk for tk in find_toolkits() if tk.version[0] == 11), None)
requires_cuda11 = pytest.mark.skipif(CUDA11 is None, reason="no CUDA 11.x toolkit (see simflow doctor)")

_sim = backend_class("gpgpusim").probe()
requires_gpgpusim = pytest.mark.skipif(not _sim.available, reason=f"no GPGPU-Sim: {_sim.detail}")
