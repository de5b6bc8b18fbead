"""Checks of the model code against the real ttnn on a mock Tenstorrent device (scripts/check_real_ttnn.sh).

Only `report` and `corpus` import without the real ttnn; the rest runs in the checker's Python 3.12 environment.
"""
