"""The subcommands of `simflow`, grouped by what they do; simflow.cli builds the parser from their registry."""

from .common import COMMANDS, command

__all__ = ["COMMANDS", "command"]
