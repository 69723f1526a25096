"""`simflow calibrate`: measure the GPU in hand and write a GPGPU-Sim config overlay for it (measure: the
microbenchmarks, through PyCUDA; overlay: the options, each with its source)."""
