"""The subcommands of `simflow`, a module each (asv's shape): its arguments, one simflow.api call and its output;
common holds the registry (@command) and what several share. simflow.cli builds the parser from the registry,
which importing the modules fills."""

from . import (  # noqa: F401 (importing a command's module registers it)
    calibrate,
    check,
    compare,
    correlate,
    diff,
    doctor,
    explain,
    image,
    import_log,
    import_runs,
    parse,
    problems,
    render,
    report,
    run,
    runs,
    show,
    sim_exec,
    sweep,
    tune,
    variants,
)
from .common import COMMANDS, command

__all__ = ["COMMANDS", "command"]
