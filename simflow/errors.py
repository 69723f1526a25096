"""The kinds of error simflow keeps apart.

- UserError: something the user can fix; the CLI prints it without a traceback, exit 1.
- LimitError: a UserError for a kernel that would break a hardware limit.
- ToolError: an external tool (nvcc, the simulator) failed; carries the command and output. Exit 3.
- MissingTool: a ToolError for a tool that is not here at all (the simulator, CUDA 11, PyCUDA, ncu); the
  message says how to get it. Exit 3, as every command's --help states.
A variant that fails at run time (wrong result, crash) is not an exception: it is a
status in its result.
"""

from __future__ import annotations


class UserError(Exception):
    """A problem the user can fix; the message says what to change."""


class LimitError(UserError):
    """A launch that would break a hardware limit; names the limit, the need and the fix."""

    def __init__(self, limit: str, required: str, allowed: str, fix: str):
        self.limit, self.required, self.allowed, self.fix = limit, required, allowed, fix
        super().__init__(f"{limit}: needs {required}, the limit is {allowed}; {fix}")


class ToolError(Exception):
    """An external tool failed; keeps its command line and output."""

    def __init__(self, message: str, command: list[str] | None = None, output: str = ""):
        self.command = command or []
        self.output = output
        text = message
        if command:
            text += "\ncommand: " + " ".join(command)
        if output:
            text += "\n" + output.rstrip()
        super().__init__(text)


class MissingTool(UserError, ToolError):
    """An external tool simflow needs is not installed here; the message says where simflow looked and how to
    get it. A UserError too (the user can install it), so whatever handles a user's problem handles it; the
    command line tells it apart (exit 3)."""
