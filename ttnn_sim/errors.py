"""The error every simulated op raises when a TT rule is broken."""


class TTError(RuntimeError):
    """A TT-NN precondition failed; the message names the op and the rule, as TT_FATAL does on hardware."""

    def __init__(self, op: str, rule: str) -> None:
        super().__init__(f"ttnn.{op}: {rule}")
        self.op = op
        self.rule = rule


def refuse_options(op: str, **options: object) -> None:
    """Options the real op has but the simulator does not model: accepted when left at their defaults, refused
    (instead of silently ignored) when set."""
    used = [k for k, v in options.items() if v not in (None, False)]
    if used:
        raise TTError(op, f"option(s) {used} are not supported by the simulator")
