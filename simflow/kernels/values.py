"""How a parameter's value reads on the command line and in labels: the one light helper that the job, the
store and the terminal share without loading the kernels (and numpy)."""


def show_value(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
