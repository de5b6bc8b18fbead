"""The error every simulated op raises when a TT rule is broken."""


class TTError(RuntimeError):
    """A TT-NN precondition failed; the message names the op and the rule, as TT_FATAL does on hardware."""

    def __init__(self, op: str, rule: str) -> None:
        super().__init__(f"ttnn.{op}: {rule}")
        self.op = op
        self.rule = rule
