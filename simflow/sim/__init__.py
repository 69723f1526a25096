"""GPGPU-Sim: finding the user's build and probing it, config overlays, the standalone program, containers and
images, the log parser and its stat catalogue, importing logs, sampled simulation."""
