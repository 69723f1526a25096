"""The driver structures the GPU backend hands to cuLaunchKernelEx (simflow.backends.driver), against cuda.h."""

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest

from simflow.backends import driver

CUDA_H = Path("/usr/local/cuda/include/cuda.h")


@pytest.mark.skipif(not CUDA_H.is_file() or not shutil.which("cc"), reason="needs cuda.h (a CUDA toolkit at "
                    "/usr/local/cuda) and a C compiler")
def test_launch_structures_and_ids_are_cuda_h_s(tmp_path):
    """A wrong offset would launch on another stream, or with the attribute unread, and a wrong id read another
    attribute: cuda.h's own sizes, offsets and values, printed by a C program, against simflow's."""
    program = tmp_path / "layout.c"
    program.write_text(
        "#include <cuda.h>\n#include <stddef.h>\n#include <stdio.h>\n"
        "int main(void) { printf(\"%zu %zu %zu %zu %zu %zu %d %d\\n\", sizeof(CUlaunchAttribute),"
        " offsetof(CUlaunchAttribute, value), sizeof(CUlaunchConfig), offsetof(CUlaunchConfig, hStream),"
        " offsetof(CUlaunchConfig, attrs), offsetof(CUlaunchConfig, numAttrs),"
        " (int)CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,"
        " (int)CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);"
        " printf(\"%d %d %d %d %d\\n\", CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,"
        " CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, CU_FUNC_ATTRIBUTE_NUM_REGS);"
        " return 0; }\n")
    subprocess.run(["cc", f"-I{CUDA_H.parent}", str(program), "-o", str(tmp_path / "layout")], check=True)
    printed = subprocess.run([str(tmp_path / "layout")], capture_output=True, text=True, check=True).stdout.split()
    attr, config = driver.LaunchAttribute, driver.LaunchConfig
    ours = [ctypes.sizeof(attr), attr.value.offset, ctypes.sizeof(config), config.stream.offset,
            config.attrs.offset, config.num_attrs.offset, driver.ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
            driver.FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, *(driver.FUNC_ATTRIBUTES[name] for name in (
                "max_threads_per_block", "shared_size_bytes", "const_size_bytes", "local_size_bytes", "num_regs"))]
    assert [int(v) for v in printed] == ours

