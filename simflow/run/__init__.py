"""Making runs: jobs, sweeps and sweep files, the tuner, simflow check, child processes that do not outlive
simflow."""
