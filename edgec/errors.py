"""The one exception type edgec shows to people.

Every error a user can cause (bad file, unsupported op, wrong data, unknown
board...) is raised as EdgecError with a single line saying what is wrong,
where, and what to do. The CLI prints it without a traceback and exits 2.
"""


class EdgecError(Exception):
    """A user-facing error: one clear line; the CLI exits with code 2."""

    exit_code = 2
    MAX_CHARS = 600

    def __init__(self, message: str = ""):
        # one line, whatever the message quotes (an exception's text, a file's bytes...)
        text = " ".join(str(message).split())
        if len(text) > self.MAX_CHARS:
            text = text[:self.MAX_CHARS - 3] + "..."
        super().__init__(text)


def node_error(node, what: str) -> EdgecError:
    """The error for an ONNX node edgec cannot build: names the node and its operator."""
    return EdgecError(f"node '{node.name}' ({node.op_type}): {what}")
