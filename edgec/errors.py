"""The one exception type edgec shows to people.

Every error a user can cause (bad file, unsupported op, wrong data, unknown
board...) is raised as EdgecError with a single line saying what is wrong,
where, and what to do. The CLI prints it without a traceback and exits 2.
"""


class EdgecError(Exception):
    """A user-facing error: one clear line; the CLI exits with code 2."""

    exit_code = 2
