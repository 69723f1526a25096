"""`simflow calibrate`: measure the GPU in hand and write a simulator config for it (simflow sim --config NAME.toml)."""

from __future__ import annotations

import argparse

from ..errors import UserError
from .common import (
    _out,
    _output_args,
    _say,
    command,
)


def _calibrate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", help="the config's name (default: the GPU's, e.g. H200)")
    p.add_argument("--dir", "-d", default=".", help="where NAME.toml and NAME.measured.json go (default: here)")
    p.add_argument("--again", action="store_true", help="measure anew (default: reuse this GPU's cached figures)")
    p.add_argument("--from", dest="measured", metavar="JSON",
                   help="make the config from recorded measurements (a NAME.measured.json): no GPU needed")
    p.add_argument("--check", metavar="CONFIG",
                   help="no GPU: run the same microbenchmarks in GPGPU-Sim on CONFIG (a name or an overlay's path) "
                        "and set the simulated latencies, L2 bandwidth and FMA, integer and shared-memory rates "
                        "beside the measured ones (--from, default CONFIG's NAME.measured.json); needs CUDA 11.x "
                        "and the simulator (about 18 minutes of CPU time on the H200 overlay's 132 SMs)")
    p.add_argument("--fold", action="store_true",
                   help="with --check: keep what the simulator showed beside the overlay (NAME.check.json) and write "
                        "the overlay again with it folded in: each latency less what the simulated chase adds, the "
                        "L2 clock over the share of its bandwidth the simulated interconnect gives; --check again "
                        "to see the result")
    _output_args(p, "the figures, measured and simulated, and the kept simulator log")


@command("calibrate", _calibrate_args, help="measure the GPU in hand and write a simulator config for it "
                                             "(simflow sim --config NAME.toml)")
def cmd_calibrate(args) -> int:
    from .. import api

    if args.fold and not args.check:
        raise UserError("--fold folds a simulator check into an overlay: give --check CONFIG with it")
    if args.check:
        found = api.calibrate_check(args.check, measured=args.measured, fold=args.fold)
        rows = [{"figure": f.name, "unit": f.unit,
                 "measured (GPU)": None if f.measured is None else round(f.measured, 1),
                 "simulated": round(f.simulated, 1),
                 "simulated / measured": None if f.ratio is None else round(f.ratio, 3)} for f in found.figures]
        _out(args, found.as_dict, rows, title=f"calibrate's microbenchmarks in GPGPU-Sim on {found.config}")
        _say(f"the simulator's log: {found.log}")
        if found.folded:
            _say(f"folded in: {found.folded[0]}; written again: {found.folded[1]} (check it again to see the result)")
        return 0
    done = api.calibrate(name=args.name, output=args.dir, again=args.again, measured=args.measured, progress=_say)
    f = done.figures
    how = "recorded measurements" if args.measured else ("cached measurements (--again measures anew)"
                                                         if done.reused else f"measured in {f.get('seconds', 0):g} s")
    if done.folded:
        how += f"; folded in: {done.folded.name} (a simulator check of this overlay)"
    print(f"{f['gpu']}: {f['sms']} SMs at {f['clock_mhz']:.0f} MHz; latencies L1 {f['l1_latency_cycles']:.0f}, "
          f"shared {f['shared_latency_cycles']:.0f}, L2 {f['l2_latency_cycles']:.0f}, DRAM "
          f"{f['dram_latency_cycles']:.0f} cycles; L2 {f['l2_bandwidth_gbs']:.0f} GB/s, DRAM "
          f"{f['dram_bandwidth_gbs']:.0f} GB/s; per SM a cycle {f['fma_per_sm_per_cycle']:.0f} FMA"
          + (f", {f['int_add_per_sm_per_cycle']:.0f} integer adds, {f['int_mad_per_sm_per_cycle']:.0f} mads"
             if "int_add_per_sm_per_cycle" in f else "")
          + (f", {f['shared_load_per_sm_per_cycle']:.0f} shared-memory loads "
             f"({f['shared_load_4way_per_sm_per_cycle']:.0f} with 4-way bank conflicts)"
             if "shared_load_per_sm_per_cycle" in f else "") + f" ({how})")
    print(done.config)
    print(done.measured)
    return 0

