"""Kernels as data: problems, hardware limits, the variants and their families, your own variants, the reference
convolution and the CUDA toolkits that compile them."""
