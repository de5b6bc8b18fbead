"""STAND-IN (ours) for tt-metal's ``tracy`` package (the Tracy profiler's Python side), which the ttnn 0.81.1 wheel
ships beside ttnn. tests/nightly/t3000/ccl/test_all_gather.py imports ``signpost`` to mark the start and end of its
trace replays in a profile; a marker has no effect on what the ops compute, so here it only logs the header, as the
real one does besides sending the Tracy message."""

from loguru import logger


def signpost(header: str, message: str | None = None) -> None:
    logger.info(f"{header} : {message} " if message else f"{header}")
