"""STAND-IN (ours) for models/demos/llama3_70b_galaxy/tt/llama_rope.py.

test_rotary_embedding_llama.py imports TtLlamaRotarySetup at module level, but only its helper
run_test_row_major_rotary_embedding_llama uses it, and no test in that file calls that helper (the Galaxy tests under
models/demos/llama3_70b_galaxy do, on an 8x4 mesh). The real module pulls the Galaxy model package
(llama3_70b_galaxy.tt.llama_common); this stand-in lets the import succeed and refuses to be used.
"""


class TtLlamaRotarySetup:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("stand-in: the Galaxy rotary setup is not provided by this harness")
