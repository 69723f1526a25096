"""The CUDA driver calls the GPU backend makes itself (ctypes on libcuda): loading a compiled module, its
functions' attributes, and launches through cuLaunchKernelEx.

PyCUDA keeps the context, the memory, the events and the compiler; it has no launch attributes, and a later
launch of a variant may start before the one before it ends only through one: programmatic dependent launch
(sm_90 and newer). Such a kernel waits for the earlier launch itself (`griddepcontrol.wait`, before it reads what
that launch wrote), so its blocks are on the SMs, set up, when the earlier one's last blocks end, instead of
after a launch's round trip."""

from __future__ import annotations

import ctypes
from functools import cache

import numpy as np

ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6  # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
FUNC_ATTRIBUTES = {  # CUfunction_attribute: what a run reports of each kernel
    "max_threads_per_block": 0, "shared_size_bytes": 1, "const_size_bytes": 2, "local_size_bytes": 3,
    "num_regs": 4,
}


class LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: an id, padding to 8 bytes, a 64-byte union of values."""

    _fields_ = [("id", ctypes.c_uint32), ("pad", ctypes.c_char * 4), ("value", ctypes.c_int32),
                ("rest", ctypes.c_char * 60)]


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig."""

    _fields_ = [("grid_x", ctypes.c_uint32), ("grid_y", ctypes.c_uint32), ("grid_z", ctypes.c_uint32),
                ("block_x", ctypes.c_uint32), ("block_y", ctypes.c_uint32), ("block_z", ctypes.c_uint32),
                ("shared_bytes", ctypes.c_uint32), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(LaunchAttribute)), ("num_attrs", ctypes.c_uint32)]


class DriverError(RuntimeError):
    """A driver call failed; the message names the call and CUDA's name for the error."""


@cache
def _libcuda():
    return ctypes.CDLL("libcuda.so.1")


def _check(result: int, call: str) -> None:
    if result:
        name = ctypes.c_char_p()
        _libcuda().cuGetErrorName(result, ctypes.byref(name))
        raise DriverError(f"{call}: {name.value.decode() if name.value else result}")


class Function:
    """One kernel of a loaded module."""

    def __init__(self, module: Module, name: str) -> None:
        self.module, self.name = module, name  # the module stays loaded while its functions live
        self.handle = ctypes.c_void_p()
        _check(_libcuda().cuModuleGetFunction(ctypes.byref(self.handle), module.handle, name.encode()),
               f"cuModuleGetFunction({name})")

    def attribute(self, name: str) -> int:
        value = ctypes.c_int()
        _check(_libcuda().cuFuncGetAttribute(ctypes.byref(value), FUNC_ATTRIBUTES[name], self.handle),
               f"cuFuncGetAttribute({self.name}, {name})")
        return value.value

    def allow_dynamic_smem(self, nbytes: int) -> None:
        _check(_libcuda().cuFuncSetAttribute(self.handle, FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes),
               f"cuFuncSetAttribute({self.name}, max dynamic shared memory {nbytes})")

    def launch(self, grid, block, shared: int, args, stream=None, programmatic: bool = False) -> None:
        """Launch on `stream` (a PyCUDA Stream; None: the default stream). args: device allocations or pointers
        (ints), np.int32 or np.uint64 values. programmatic: may start before the launch before it in the stream
        ends (the kernel waits for it itself)."""
        values = [_c_value(a) for a in args]
        pointers = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
        attr = LaunchAttribute(id=ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, value=1)
        config = LaunchConfig(*grid, *block, shared, stream.handle if stream is not None else None,
                              ctypes.pointer(attr) if programmatic else None, 1 if programmatic else 0)
        _check(_libcuda().cuLaunchKernelEx(ctypes.byref(config), self.handle, pointers, None),
               f"cuLaunchKernelEx({self.name})")


class Module:
    """A compiled module (cubin bytes) loaded into the current context."""

    def __init__(self, image: bytes) -> None:
        self.handle = ctypes.c_void_p()
        self._image = ctypes.create_string_buffer(image, len(image))
        _check(_libcuda().cuModuleLoadData(ctypes.byref(self.handle), self._image), "cuModuleLoadData")
        self._functions: dict[str, Function] = {}

    def function(self, name: str) -> Function:
        if name not in self._functions:
            self._functions[name] = Function(self, name)
        return self._functions[name]

    def global_symbol(self, name: str) -> tuple[int, int]:
        """A __device__ or __constant__ symbol's device address and size in bytes."""
        ptr, size = ctypes.c_uint64(), ctypes.c_size_t()
        _check(_libcuda().cuModuleGetGlobal_v2(ctypes.byref(ptr), ctypes.byref(size), self.handle, name.encode()),
               f"cuModuleGetGlobal({name})")
        return ptr.value, size.value

    def __del__(self) -> None:
        if self.handle:
            _libcuda().cuModuleUnload(self.handle)  # the context may be gone at exit: its result is ignored


def _c_value(arg):
    """np.int32 as 32 bits; anything else (np.uint64, a device pointer, a PyCUDA allocation) as 64."""
    return ctypes.c_int32(int(arg)) if isinstance(arg, np.int32) else ctypes.c_uint64(int(arg))
