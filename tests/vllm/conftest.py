import os

import pytest

os.environ["TT_BACKEND"] = "sim"


@pytest.fixture(scope="session")
def smollm2_dir():
    from tt_models.checkpoint import default_model_dir

    return str(default_model_dir())


@pytest.fixture(scope="session")
def llm(smollm2_dir):
    """One engine for the tests that only need a working server-side: 4 sequences at a time, reference profile
    (fp32, token-exact with HF)."""
    from vllm import LLM

    engine = LLM(model=smollm2_dir, max_num_seqs=4, max_model_len=512, block_size=64, seed=0,
                 additional_config={"tt": {"optimizations": "reference"}})
    yield engine
    shutdown(engine)


def shutdown(engine) -> None:
    """Stop the engine-core process now, while pytest's output streams are still open."""
    import contextlib

    with contextlib.suppress(Exception):
        engine.llm_engine.engine_core.shutdown()
