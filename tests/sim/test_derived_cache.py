"""The simulator's cache of values derived from device buffers (a weight's 2-D view, its fp32 copy) lives exactly as
long as the buffers: a model's weights must be freed when the model is, or every model built in one process (a test
session, the checkpoint matrix) stays in memory."""

import gc
import weakref

import torch

from ttnn_sim.compute import _DERIVED, derived


def test_a_derived_view_does_not_keep_its_source_alive():
    w = torch.randn(1, 1, 64, 32)
    view = derived(w, "2d", lambda t: t.reshape(64, 32))
    assert view.data_ptr() == w.data_ptr()  # a view, not a copy
    assert derived(w, "2d", lambda t: t.reshape(64, 32)) is view  # computed once
    alive = weakref.ref(w)
    key = ("2d", id(w))
    assert key in _DERIVED
    del w, view
    gc.collect()
    # The entry itself, not the count: the collection also frees what earlier tests in this process left behind.
    assert alive() is None and key not in _DERIVED
