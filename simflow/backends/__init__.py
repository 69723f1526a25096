"""Backends run a job: `gpu` (PyCUDA on a real GPU), `gpgpusim` (the cycle simulator), `gpu-ncu` (the GPU
path once under Nsight Compute, its counters under the simulator's names). Each is one module with a Backend
subclass (simflow.backends.base); simflow.registry names them and imports one only when asked for.
"""
