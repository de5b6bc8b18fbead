"""STAND-IN (ours) for the third-party ``llama_models`` package, which tt-metal's models/tt_transformers/tt/common.py
imports at module level for one name (``ImageMedia``, used only by its multimodal chat encoder). The package is not
installed here; the unit tests that import common.py (for precompute_freqs, get_rot_transformation_mat, RopeScaling)
never build an ImageMedia. A placeholder class keeps ``isinstance`` checks well-formed."""


class ImageMedia:
    def __init__(self, image=None):
        self.image = image
