import pytest

from simflow.errors import LimitError
from simflow.kernels.limits import (
    KNOWN_DEVICES,
    check_constant_memory,
    check_grid,
    check_shared_memory,
    theoretical_occupancy,
)

H100, V100 = KNOWN_DEVICES["sm_90"], KNOWN_DEVICES["sm_70"]


def test_occupancy_limited_by_warps():
    occ = theoretical_occupancy(H100, 256, 32, 0)
    assert (occ.blocks_per_sm, occ.occupancy, occ.limited_by) == (8, 1.0, "warps")


def test_occupancy_limited_by_registers():
    # 64 regs x 32 threads = 2048 regs a warp; 65536 / 2048 = 32 warps = one 1024-thread block
    occ = theoretical_occupancy(H100, 1024, 64, 0)
    assert (occ.blocks_per_sm, occ.occupancy, occ.limited_by) == (1, 0.5, "registers")


def test_occupancy_limited_by_shared_memory():
    # 40 KB + 1 KB reserved per block on sm_90: 228 KB / 41 KB = 5 blocks of 4 warps
    occ = theoretical_occupancy(H100, 128, 16, 40 * 1024)
    assert (occ.blocks_per_sm, occ.limited_by) == (5, "shared memory")
    assert occ.occupancy == pytest.approx(20 / 64)
    # V100: no reserve, 96 KB / 40 KB = 2 blocks
    assert theoretical_occupancy(V100, 128, 16, 40 * 1024).blocks_per_sm == 2


def test_shared_memory_limits():
    check_shared_memory(48 * 1024, 48 * 1024, H100, "fix")
    check_shared_memory(100 * 1024, 100 * 1024, H100, "fix")  # dynamic may opt in up to 227 KB
    with pytest.raises(LimitError, match=r"opt-in maximum\): needs 102,400 bytes, the limit is 98,304"):
        check_shared_memory(100 * 1024, 100 * 1024, V100, "use a smaller tile")
    with pytest.raises(LimitError, match="static shared memory per block"):
        check_shared_memory(60 * 1024, 0, H100, "fix")


def test_grid_and_constant_limits():
    check_grid((2**31 - 1, 65535, 65535), H100, "fix")
    with pytest.raises(LimitError, match="grid dimension z: needs 70,000 blocks, the limit is 65,535; smaller"):
        check_grid((1, 1, 70000), H100, "smaller batch")
    with pytest.raises(LimitError, match="constant memory"):
        check_constant_memory(65537, "fix")
